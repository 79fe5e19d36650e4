/* -- the workers' contract as data: what the system copies into react_cells and
      role_cells when it starts (it parses this comment's lines).
   REACT <role> <task> <memory> <memory after> <reply> <slots>; numbered as the
   #defines above (T_, M_, Y_, SL_); ROLE <role> <initial memory> <bounded> <bound>
$reactions
*/

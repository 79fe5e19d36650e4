/* Contract §4 advance, with start()'s first action ($order): the first
   rule that holds names the action due in active mode (due0; 0: none). */
inline advance_due() {
  due0 = 0;
  $rules
  if :: due0 == 0 && seen_source_freed -> due0 = A_Complete :: else -> skip fi
}

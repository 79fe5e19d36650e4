/* -- the chart's cells: what chart_step reads (it parses this comment's lines).
   CELL <state> <event> $fields <check>*$nchecks <issued> (<action> <completion>)*$most
   kind: $dropped dropped, $refused refused, $taken taken; names are numbered as the #defines above
CHART $states $events
$cells
*/

/* -- liveness.  Fairness: none needed.  Once calm the system only starts handoffs and
      delivers, and every delivery consumes a message, so a calm run is finite unless the
      chart loops; a calm run that ends (no move possible) with a handoff incomplete, or
      never ends, breaks W4.  W5: once calm after a terminal fact (reported, or a lost
      message's timeout), every run ends with every handoff it was reported for complete
      CANCELED.  W7: once calm with no fault so far (so the whole run is fault-free),
      every run ends with every handoff complete SUCCESS.  An early fact waits until the
      coordinator would take it. -- */
ltl W4 { [] (calm -> <> (QUIET && ALL_COMPLETE)) }
ltl W5 { [] ((calm && TERMINATED) -> <> (QUIET && TERMINATED_CANCELED)) }
ltl W7 { [] ((calm && FAULT_FREE) -> <> (QUIET && ALL_COMPLETE && ALL_SUCCESS)) }

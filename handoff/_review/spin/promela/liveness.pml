/* -- liveness properties.  Fairness assumed: once cooperating (or cancelling), the
      environment makes every call it is willing to make, in turn, forever (a round robin
      over the numbered calls), so a run that stops changing is stuck, not lazy; and it
      repeats a call the SPEC drops only after a whole round in which nothing changed, so
      a chart that grows on repeats is judged by Bound, and one that needs a repeat to go
      on still gets it.  A run cut off (Bound) or crashed (Errors) stops and never
      completes, so a cut in a cooperating or cancelling run breaks L1 or L2.
   L1: cooperating means: start(), usable non-terminal facts and fitting acknowledgements
       only, entered from a configuration reached without accepting an unusable payload
       and not yet complete; it must then complete.
   L2: cancelling means: one terminal fact, then fitting acknowledgements only, entered from
       a configuration that has not completed CANCELED; it must then complete CANCELED. -- */
ltl L1 { [] (mode == M_COOPERATING -> <> RUN_COMPLETE) }
ltl L2 { [] (mode == M_CANCELING -> <> RUN_CANCELED) }

/* -- the system: one move at a time, chosen among those enabled, then made in one step -- */
active proctype system() {
  d_step {
    c_code {
      handoff_state_flags(PanSource, state_flags, STATES);
      handoff_contract(PanSource, react_cells, role_cells, CONTRACT_TASKS, CONTRACT_MEMORIES);
    };
    for (y : 0 .. HANDOFFS - 1) { MEM(0, y) = M_INITIAL_0; MEM(1, y) = M_INITIAL_1 };
    y = 0
  };
end:
  do
  :: atomic {
       if
       $choices
       :: !stopped && !calm -> mv = MV_CALM
       fi;
       d_step {
         if
         :: mv == MV_START -> started[hc] = 1; c_kind = K_START; c_event = E_start
         :: mv == MV_DELIVER || mv == MV_FAIL -> dequeue(); deliver()
         :: mv == MV_DUPLICATE ->   /* delivered, and a copy sent again behind it */
              dequeue(); nm = qm; enqueue(); duplicated[hc]++; deliver()
         :: mv == MV_LOSE ->        /* lost; the runtime's timer reports TimedOut */
              dequeue(); lost[hc]++; term[hc] = 1;
              c_kind = K_FACT; c_fact = F_TimedOut; c_event = E_terminated
         :: mv == MV_RESTART -> restart()
         :: mv == MV_TERMINAL -> term[hc] = 1; c_kind = K_FACT; c_event = E_terminated; faults++
         :: mv == MV_CALM -> calm = 1
         fi;
         /* what moved, read back from a trail: the move, its message (or fact), its id (or
            the worker, or the handoff) */
         printf("MOVE %d %d %d\n", mv, (mv == MV_TERMINAL -> c_fact : qm),
                (mv == MV_START || mv == MV_TERMINAL -> hc : k))
       };
       d_step { if :: c_kind != 0 -> call_coordinator() :: else -> skip fi };
       d_step { judge(); mv = 0; k = 0; qc = 0; qp = 0; qm = 0; hc = 0 }
     }
  od
}

/* -- the nondeterministic environment: any call, from any configuration -- */
#define NO_CALL 255
inline choose_call() {
  if
  :: FREE ->
       if
       $calls
       fi
  :: mode == M_CANCEL_ENTRY ->
       if
       $terminal
       fi;
       mode = M_CANCELING
  :: mode == M_COOPERATING || mode == M_CANCELING ->
       turn = (turn + 1) % NCALLS; c = turn; decode(); spec_answer();
       if
       :: SPEC_DROPS && !REPEATS -> c = NO_CALL   /* a repeat only when stuck */
       :: (!SPEC_DROPS || REPEATS) && c_kind == K_OUTCOME && c_id < nlog &&
            FITS(log[c_id], c_out) -> skip
       :: (!SPEC_DROPS || REPEATS) && mode == M_COOPERATING && c_kind != K_OUTCOME &&
            c_usable && !c_terminal -> skip
       :: else -> c = NO_CALL
       fi
  fi
}

active proctype environment() {
  c_code { now.live = (getenv("HANDOFF_SPIN_LIVENESS") != 0); };
end:
  do
  :: atomic {
       !stopped ->
       choose_call();
       d_step { if :: c != NO_CALL -> make_call() :: else -> skip fi };
       d_step {
         if :: c != NO_CALL -> judge_call() :: else -> heard(false); scrub() fi
       };
       c = 0
     }
  :: atomic {
       live && FREE && !unusable_taken && !RUN_COMPLETE -> mode = M_COOPERATING;
       printf("MODE cooperating\n")
     }
  :: atomic {
       live && FREE && !RUN_CANCELED -> mode = M_CANCEL_ENTRY;
       printf("MODE cancelling\n")
     }
  od
}

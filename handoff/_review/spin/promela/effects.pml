inline snapshot() {
  s_state = state; s_next_id = next_id; s_timing = timing; s_tokens = tokens;
  s_nlife = nlife; s_completion = completion;
  for (s_k : 0 .. LOG_SIZE - 1) {
    s_issued[s_k] = issued[s_k]; s_delay_of[s_k] = delay_of[s_k]; s_recorded[s_k] = recorded[s_k]
  };
  for (s_k : 0 .. LIFECYCLE_SIZE - 1) { s_lifecycle[s_k] = lifecycle[s_k] }
}

inline compare() {
  s_changed = (state != s_state || next_id != s_next_id || timing != s_timing ||
               tokens != s_tokens || nlife != s_nlife || completion != s_completion);
  for (s_k : 0 .. LOG_SIZE - 1) {
    if
    :: recorded[s_k] != s_recorded[s_k] -> s_journaled = 1
    :: issued[s_k] != s_issued[s_k] || delay_of[s_k] != s_delay_of[s_k] -> s_changed = 1
    :: else -> skip
    fi
  };
  for (s_k : 0 .. LIFECYCLE_SIZE - 1) {
    if :: lifecycle[s_k] != s_lifecycle[s_k] -> s_changed = 1 :: else -> skip fi
  };
  s_changed = s_changed || s_journaled
}

/* Progress: an action of a kind the run had not received (or a Complete). */
inline fresh() {
  for (s_k : 0 .. MOST_PER_CALL - 1) {
    if
    :: s_k < nout && out[s_k] == A_Complete -> s_fresh = 1
    :: s_k < nout && out[s_k] != A_Complete ->
         s_known = 0;
         for (s_m : 0 .. LOG_SIZE - 1) {
           if :: s_m < nlog && log[s_m] == out[s_k] -> s_known = 1 :: else -> skip fi
         };
         if :: !s_known -> s_fresh = 1 :: else -> skip fi
    :: else -> skip
    fi
  }
}

/* Once the SPEC's answer to the call is known, before the watch takes it: S6 and the stall
   cut.  A crash ends the run (Errors) and is judged no further. */
inline effects() {
  if
  :: result == CRASHED -> skip
  :: else ->
       compare();
       if
       :: s_changed && (result == REFUSED || (SPEC_DROPS && nout == 0)) -> S6_broken = 1
       :: else -> skip
       fi;
       fresh();
       if
       :: s_changed && !s_fresh && state == s_state && !s_journaled -> stalls++
       :: else -> skip
       fi;
       if :: stalls > MAX_STALLS -> Bound_broken = 1; stopped = 1 :: else -> skip fi;
       heard(s_changed || nout > 0)
  fi;
  s_state = 0; s_next_id = 0; s_timing = 0; s_tokens = 0; s_nlife = 0; s_completion = 0;
  for (s_k : 0 .. LOG_SIZE - 1) { s_issued[s_k] = 0; s_delay_of[s_k] = 0; s_recorded[s_k] = 0 };
  for (s_k : 0 .. LIFECYCLE_SIZE - 1) { s_lifecycle[s_k] = 0 };
  s_changed = 0; s_journaled = 0; s_fresh = 0; s_known = 0; s_k = 0; s_m = 0
}

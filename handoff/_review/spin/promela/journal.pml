/* -- refusals: the error a refused call raises, by class and phrase:
     $kinds
   timing_refusal(t): what the adapter's timing check refuses timing t with -- */
$numbers
byte refusal;               /* scratch: the refusal of a refused call */
#define timing_refusal(t) \
  $cases
  0$closing

/* -- the journal's rules (handoff._coordinator.binding): an outcome's event -- */
inline classify_outcome() {
  if
  :: issued[c_id] == 0 -> c_event = E_unknown_action
  :: issued[c_id] != 0 && recorded[c_id] == c_out -> c_event = E_duplicate_outcome
  :: issued[c_id] != 0 && recorded[c_id] != 0 && recorded[c_id] != c_out ->
       c_event = E_conflicting_outcome
  :: issued[c_id] != 0 && recorded[c_id] == 0 ->
       if
    $acks
       :: else -> c_event = E_mismatched_outcome
       fi
  fi
}

inline record_lifecycle(EVENT) {
  if
  :: nlife < LIFECYCLE_SIZE -> lifecycle[nlife] = EVENT; nlife++
  :: else -> stopped = 1; Bound_broken = 1
  fi
}

inline clear_journal() {
  for (i : 0 .. LOG_SIZE - 1) { issued[i] = 0; delay_of[i] = 0; recorded[i] = 0 }
}

/* Issue an action: journal it (or complete, clearing the journal), hand it out. */
inline issue(ACTION, COMPLETION) {
  if
  :: result == CRASHED -> skip
  :: ACTION == A_StartTransfer && delay == 0 ->
       result = CRASHED;   /* the adapter's assertion, in its own words: */
       printf("CRASH $crash_delay\n")
  :: else ->
       out[nout] = ACTION; out_id[nout] = next_id; nout++;
       if
       :: COMPLETION != 0 ->
            completion = COMPLETION;
            if
            :: COMPLETION == C_SUCCESS -> record_lifecycle(L_Completed)
            :: else -> skip
            fi;
            clear_journal()
       :: else -> issued[next_id] = ACTION; delay_of[next_id] = delay
       fi;
       next_id++
  fi
}

/* The payload checks a step runs, in order, before anything changes. */
inline check_transfer_timing_is_valid() {
  if
  :: result != TAKEN -> skip
  :: c_fact != F_SourceHeld ->
       result = CRASHED; printf("CRASH $crash_timing\n")
  :: c_fact == F_SourceHeld && timing_valid(c_timing) -> skip
  :: else -> result = REFUSED; refusal = timing_refusal(c_timing)
  fi
}

inline check_transfer_delay_is_valid() {
  if
  :: result != TAKEN -> skip
  :: else ->
       delay_of_pair();
       if
       :: result == REFUSED && (D_T == 0 || D_N == 0) ->
            refusal = R_UNPLANNED_TRANSFER
       :: result == REFUSED && D_T != 0 && D_N != 0 -> refusal = R_INVALID_DELAY
       :: else -> skip
       fi
  fi
}

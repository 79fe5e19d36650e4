/* Contract §4: how the SPEC answers call c, judged from the watch alone. */
inline refuse(R) {
  ans = ANS_REFUSE; ans_refusal = R
}

inline spec_answer() {
  ans = ANS_TAKE; ans_refusal = 0; ans_payload = 0;
  if
  :: c_kind == K_START ->
       if :: spec_mode != SPEC_ACTIVE || seen_started -> ans = ANS_DROP :: else -> skip fi
  :: c_kind == K_FACT && c_foreign -> refuse(R_FOREIGN_FACT)
  :: c_kind == K_FACT && !c_foreign && spec_mode == SPEC_COMPLETE ->
       if :: c_terminal && seen_succeeded -> skip :: else -> ans = ANS_DROP fi   /* reopen */
  :: c_kind == K_FACT && !c_foreign && spec_mode == SPEC_CLEANING -> ans = ANS_DROP
  :: c_kind == K_FACT && !c_foreign && spec_mode == SPEC_ACTIVE -> active_fact_answer()
  :: c_kind == K_OUTCOME -> outcome_answer()
  fi
}

inline active_fact_answer() {
  if
  :: c_terminal -> skip
  $ordered
  :: else -> payload_answer()
  fi
}

/* validate_transfer_timing on a SourceHeld, then the delay of the transfer the fact makes due. */
inline payload_answer() {
  pt = (c_fact == F_SourceHeld -> c_timing : spec_timing);
  pn = (c_fact == F_DestinationReserved -> c_tokens : spec_tokens);
  if
  :: c_fact == F_SourceHeld && spec_timing_refusal(c_timing) != 0 ->
       refuse(spec_timing_refusal(c_timing)); ans_payload = 1
  :: pt != 0 && pn != 0 && spec_delay_unusable(pt, pn) &&
     !(c_fact == F_SourceHeld && spec_timing_refusal(c_timing) != 0) ->
       refuse(R_INVALID_DELAY); ans_payload = 1
  :: else -> skip
  fi
}

inline outcome_answer() {
  if
  :: spec_mode == SPEC_COMPLETE -> ans = ANS_DROP
  :: spec_mode != SPEC_COMPLETE && !IN_JOURNAL(c_id) -> refuse(R_UNKNOWN_ACTION)
  :: spec_mode != SPEC_COMPLETE && IN_JOURNAL(c_id) ->
       if
       :: spec_outcome[c_id] == c_out -> ans = ANS_DROP
       :: spec_outcome[c_id] != 0 && spec_outcome[c_id] != c_out ->
            refuse(R_CONFLICTING_OUTCOME)
       :: spec_outcome[c_id] == 0 && c_out == O_Failed && IS_CANCEL(log[c_id]) ->
            refuse(R_CLEANUP_ACTION_FAILED)
       :: spec_outcome[c_id] == 0 && c_out != O_Failed && !FITS(log[c_id], c_out) ->
            refuse(R_MISMATCHED_OUTCOME)
       :: else -> skip
       fi
  fi
}

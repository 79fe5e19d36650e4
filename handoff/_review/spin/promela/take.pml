/* The watch after the SPEC takes call c (before the actions it issued are received). */
inline spec_record(EVENT) {
  if
  :: spec_nlife < LIFECYCLE_SIZE -> spec_life[spec_nlife] = EVENT; spec_nlife++
  :: else -> skip
  fi
}

inline spec_take() {
  if
  :: c_kind == K_START -> seen_started = 1
  :: c_kind == K_FACT && c_terminal -> spec_mode = SPEC_CLEANING   /* begins or reopens */
  $facts
  :: c_kind == K_OUTCOME -> spec_outcome[c_id] = c_out; spec_acknowledged(log[c_id])
  fi
}

inline spec_acknowledged(A) {
  if
  :: c_out == O_Failed -> spec_mode = SPEC_CLEANING
  $acknowledged
  fi
}

/* The watch after receiving action A: a Complete ends the journal and says how it ended. */
inline spec_receive(A) {
  log[nlog] = A; nlog++; received = received | (1 << (A - 1));
  if
  :: A == A_Complete ->
       if
       :: spec_mode == SPEC_ACTIVE -> seen_succeeded = 1; spec_record(L_Completed)
       :: else -> seen_succeeded = 0
       fi;
       spec_mode = SPEC_COMPLETE; spec_journal = nlog;
       for (k : 0 .. LOG_SIZE - 1) { spec_outcome[k] = 0 };
       k = 0
  :: else -> skip
  fi
}

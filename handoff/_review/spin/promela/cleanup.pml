/* Contract §4 cleanup step: the cancels still owed, in order, else Complete when no owner is
   engaged (due0, due1; ndue of them).  A reopened cleanup owes a CancelDestination anew. */
inline cleanup_due() {
  ndue = 0; found = 0;
  for (k : 0 .. LOG_SIZE - 1) {
    if
    :: k >= spec_journal && k < nlog && log[k] == A_CancelDestination -> found = 1
    :: else -> skip
    fi
  };
  k = 0;
  if
  :: SOURCE_ENGAGED && !EVER(A_CancelSource) -> due0 = A_CancelSource; ndue = 1
  :: else -> skip
  fi;
  if
  :: DESTINATION_ENGAGED && !found && ndue == 0 -> due0 = A_CancelDestination; ndue = 1
  :: DESTINATION_ENGAGED && !found && ndue == 1 -> due1 = A_CancelDestination; ndue = 2
  :: else -> skip
  fi;
  if
  :: ndue == 0 && !SOURCE_ENGAGED && !DESTINATION_ENGAGED -> due0 = A_Complete; ndue = 1
  :: else -> skip
  fi
}

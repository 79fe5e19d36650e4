$watch

/* -- the safety monitors: each sets its property's flag, asserted at the call's end -- */
byte $broken;

/* R1, R2, P1: the coordinator's answer to call c against the SPEC's. */
inline answer_broken() {
  if :: c_kind == K_OUTCOME -> R2_broken = 1 :: else -> R1_broken = 1 fi
}

inline judge_answer() {
  if
  :: ans == ANS_REFUSE && !(result == REFUSED && refusal == ans_refusal) ->
       if :: ans_payload -> P1_broken = 1 :: else -> answer_broken() fi
  :: ans != ANS_REFUSE && result == REFUSED -> answer_broken()   /* refused what it may not */
  :: ans == ANS_DROP && result != REFUSED && nout > 0 -> answer_broken()   /* acted on a drop */
  :: ans == ANS_TAKE && result != REFUSED && c_kind == K_FACT && nout == 0 ->
       answer_broken()   /* a fact the SPEC takes, silently dropped */
  :: else -> skip
  fi
}

/* Q1: the call issues what the SPEC makes due in it. */
inline judge_prompt() {
  ngot = 0; found = 0;
  for (j : 0 .. MOST_PER_CALL - 1) {
    if
    :: j < nout && (IS_CANCEL(out[j]) || out[j] == A_Complete) ->
         if :: ngot == 0 -> got0 = out[j] :: ngot == 1 -> got1 = out[j] :: else -> skip fi;
         ngot++
    :: else -> skip
    fi;
    if :: j < nout && out[j] == due0 -> found = 1 :: else -> skip fi
  };
  j = 0;
  if
  :: spec_mode == SPEC_ACTIVE && due0 != 0 && !found -> Q1_broken = 1
  :: spec_mode == SPEC_CLEANING &&
     !(ngot == ndue && (ndue < 1 || got0 == due0) && (ndue < 2 || got1 == due1)) -> Q1_broken = 1
  :: else -> skip
  fi
}

/* S1-S4, S7, C1: action A issued under id ID, judged before the watch receives it. */
#define MISPLACED(A) (EVER(A) || (FORWARD(A) && spec_mode != SPEC_ACTIVE) || \
  (A == FIRST && c_kind != K_START) || (A == SECOND && !READY) || \
  (IS_CANCEL(A) && spec_mode != SPEC_CLEANING) || \
  (A == A_CancelSource && !SOURCE_ENGAGED) || (A == A_CancelDestination && !DESTINATION_ENGAGED))

inline judge_action(A, ID) {
  if :: ID != nlog -> S7_broken = 1 :: else -> skip fi;
  if :: spec_mode == SPEC_COMPLETE -> S4_broken = 1 :: else -> skip fi;
  if
  :: A == A_ActivateDestination && !seen_transferred -> S1_broken = 1
  :: A == A_ReleaseSource && !seen_activated -> S2_broken = 1
  :: A == A_StartTransfer && !(seen_source_held && seen_reserved) -> S3_broken = 1
  :: else -> skip
  fi;
  if
  :: A != A_Complete && MISPLACED(A) -> C1_broken = 1
  :: A == A_Complete && spec_mode == SPEC_ACTIVE -> judge_success()
  :: A == A_Complete && spec_mode == SPEC_CLEANING -> judge_canceled()
  :: else -> skip
  fi
}

/* S5 and C2 at a completion: the owners freed, the lifecycle the calls taken record. */
inline judge_success() {
  if :: !(seen_activated && seen_source_freed) -> S5_broken = 1 :: else -> skip fi;
  judge_lifecycle(1);
  if :: !(nlife == $nlife && $lifecycle) -> C2_broken = 1 :: else -> skip fi
}

inline judge_canceled() {
  if :: SOURCE_ENGAGED || DESTINATION_ENGAGED -> S5_broken = 1 :: else -> skip fi;
  judge_lifecycle(0)
}

inline judge_lifecycle(SUCCESS) {
  if
  :: nlife != spec_nlife + SUCCESS -> C2_broken = 1
  :: nlife == spec_nlife + SUCCESS && SUCCESS && lifecycle[spec_nlife] != L_Completed ->
       C2_broken = 1
  :: else -> skip
  fi;
  for (k : 0 .. LIFECYCLE_SIZE - 1) {
    if :: k < spec_nlife && lifecycle[k] != spec_life[k] -> C2_broken = 1 :: else -> skip fi
  };
  k = 0
}

/* Judge call c: the answer, then (unless refused) what is due and each action issued. */
inline observe() {
  spec_answer();
  judge_answer();
  effects();
  if
  :: result == REFUSED -> skip
  :: else ->
       if
       :: ans == ANS_TAKE -> spec_take();
            if
            :: spec_mode == SPEC_ACTIVE -> advance_due()
            :: spec_mode == SPEC_CLEANING -> cleanup_due()
            :: else -> skip
            fi;
            judge_prompt()
       :: else -> skip
       fi;
       for (j : 0 .. MOST_PER_CALL - 1) {
         if
         :: j < nout -> judge_action(out[j], out_id[j]); spec_receive(out[j])
         :: else -> skip
         fi
       };
       j = 0
  fi;
  if :: nlog > MAX_ACTIONS -> Bound_broken = 1; stopped = 1 :: else -> skip fi
}

/* -- the moves: a call to the coordinator, a worker's reaction -- */
$move_names
byte mv = 0;
#define FACT_EARLY(M) ($fact_early)
#define EARLY(M) ((WHAT(M) == G_FACT && FACT_EARLY(M)) || \
                  (WHAT(M) == G_FAILED && EARLY_terminated(HANDOFF_OF(M))))
#define DELIVERABLE(M) (!EARLY(M))
#define CHANNEL(M) ($channel)
#define SORTED $sorted
#define ACK_ON_SEND(A) (ON_SEND && ON_SEND_KIND(A))
#define DONE_BEFORE(W, K) (COPIES && ((DONE(W, hc) >> (K)) & 1))

/* Put message nm in flight: behind its channel's last (FIFO), or in its sorted place. */
inline enqueue() {
  x = CHANNEL(nm);
  if
  :: q[x].n >= QMAX -> Bound_broken = 1; stopped = 1
  :: else ->
       y = q[x].n;
       if
       :: SORTED ->
            do
            :: y > 0 && q[x].m[y - 1] > nm -> q[x].m[y] = q[x].m[y - 1]; y--
            :: else -> break
            od
       :: else -> skip
       fi;
       q[x].m[y] = nm; q[x].n++; inflight[HANDOFF_OF(nm)]++
  fi;
  nm = 0; x = 0; y = 0
}

/* Take the chosen message (channel qc, place qp) out of flight, into qm; k: its id, hc: its
   handoff. */
inline dequeue() {
  qm = q[qc].m[qp];
  y = qp;
  do
  :: y + 1 < q[qc].n -> q[qc].m[y] = q[qc].m[y + 1]; y++
  :: else -> break
  od;
  q[qc].n--; q[qc].m[q[qc].n] = 0; y = 0;
  k = ID(qm); hc = HANDOFF_OF(qm); inflight[hc]--
}

/* The call c_* to handoff hc's coordinator; what it issued goes in flight. */
inline call_coordinator() {
  result = TAKEN; delay = 0; nout = 0;
  coordinator_step();
  if
  :: result == CRASHED -> Errors_broken = 1; stopped = 1
  :: else -> skip
  fi;
  if
  :: freeing != 0 && result != CRASHED && result != REFUSED ->
       w = freeing - 1;
       if :: HELD(w, hc) > 0 -> W2_broken = 1 :: else -> skip fi;
       TOLD(w, hc) = 1; w = 0
  :: else -> skip
  fi;
  freeing = 0;
  for (j : 0 .. MOST_PER_CALL - 1) {
    if
    :: j < nout && result != CRASHED && result != REFUSED ->
         KIND(hc, out_id[j]) = out[j];
         if
         :: out[j] != A_Complete ->
              nm = MSG(hc, out_id[j], G_ACT); enqueue();
              if
              :: ACK_ON_SEND(out[j]) ->
                   nm = MSG(hc, out_id[j], G_OUT + FITTING(out[j])); enqueue()
              :: else -> skip
              fi
         :: else -> skip
         fi
    :: else -> skip
    fi
  };
  c_kind = 0; c_fact = 0; c_event = 0; c_timing = 0; c_tokens = 0; c_id = 0; c_out = 0;
  c_foreign = 0; result = 0; refusal = 0; delay = 0; nout = 0; i = 0; j = 0;
  for (j : 0 .. MOST_PER_CALL - 1) { out[j] = 0; out_id[j] = 0 };
  j = 0
}

inline take_fact() {
  c_kind = K_FACT;
  if
  :: WHAT(qm) == G_FAILED -> c_fact = F_Failed; c_event = E_terminated
  :: else ->
     if
     $facts
     fi
  fi
}

/* An outcome for the coordinator; one that says a worker freed its slot is told, once the
   coordinator takes it (call_coordinator). */
inline take_outcome() {
  c_kind = K_OUTCOME; c_id = k; c_out = WHAT(qm) - G_OUT;
  if
  :: CLEANUP(KIND(hc, k)) && c_out != O_Failed -> freeing = ROLE(KIND(hc, k)) + 1
  :: else -> skip
  fi
}

$memory

/* Worker w gets action k of request hc: does what its contract says (MV_FAIL: fails it, a
   fault), or, when it remembers having done it, stays silent; then replies. */
inline perform() {
  w = ROLE(KIND(hc, k));
  /* A second delivery of an action is the network's copy: W3 judges what was issued. */
  if :: PERFORMED(hc, k) && !COPIES -> W3_broken = 1 :: else -> skip fi;
  PERFORMED(hc, k) = 1;
  remembered = REMEMBERS(w, hc); holding = (HELD(w, hc) > 0);
  if
  :: mv == MV_FAIL -> c_out = Y_FAILED; faults++
  :: mv != MV_FAIL && DONE_BEFORE(w, k) -> c_out = Y_SILENT
  :: else ->
       x = REACT_SLOTS(w, TASK(KIND(hc, k)), MEM(w, hc));
       if
       :: x == SL_TAKE && SLOT_BOUND > 0 && HELD_ALL(w) >= SLOT_BOUND ->
            c_out = Y_FAILED  /* full */
       :: else ->
            c_out = REACT_REPLY(w, TASK(KIND(hc, k)), MEM(w, hc));
            MEM(w, hc) = REACT_MEMORY(w, TASK(KIND(hc, k)), MEM(w, hc));
            if
            :: x == SL_TAKE -> HELD(w, hc)++
            :: x == SL_FREE -> HELD(w, hc) = 0
            :: else -> skip
            fi
       fi;
       x = 0
  fi;
  $remember
  place();
  remembered = 0; holding = 0;
  if :: HELD(w, hc) > 0 && TOLD(w, hc) -> W2_broken = 1 :: else -> skip fi;
  if :: HELD(w, hc) > 1 -> W6_broken = 1 :: else -> skip fi;
  if
  :: ACK_ON_SEND(KIND(hc, k)) ->
       /* acknowledged as sent: the work's fact says it was done, Failed that it was not */
       if
       :: c_out == Y_FAILED -> nm = MSG(hc, k, G_FAILED); enqueue()
       :: c_out == Y_DONE -> nm = MSG(hc, k, G_FACT); enqueue()
       :: else -> skip
       fi
  :: else ->
       if
       :: OUTCOME(KIND(hc, k), c_out) != 0 ->
            nm = MSG(hc, k, G_OUT + OUTCOME(KIND(hc, k), c_out)); enqueue()
       :: else -> skip
       fi;
       if
       :: c_out == Y_DONE && HAS_FACT(KIND(hc, k)) -> nm = MSG(hc, k, G_FACT); enqueue()
       :: else -> skip
       fi
  fi;
  c_out = 0; w = 0
}

inline deliver() {
  if
  :: IS_ACT(qm) -> perform()
  :: IS_FACT(qm) -> take_fact()
  :: else -> take_outcome()
  fi
}

/* W1 for each handoff complete with nothing of it in flight; Bound; every assertion. */
inline judge() {
  for (hc : 0 .. HANDOFFS - 1) {
    if
    :: ENDED(hc) && completion == C_CANCELED && (HELD(0, hc) > 0 || HELD(1, hc) > 0) ->
         W1_broken = 1
    :: ENDED(hc) && completion == C_SUCCESS &&
       (HELD(0, hc) > 0 || (HELD(1, hc) == 0 && !restarted[1])) -> W1_broken = 1
    :: else -> skip
    fi;
    if :: next_id > MAX_ID -> Bound_broken = 1; stopped = 1 :: else -> skip fi
  };
  hc = 0;
  assert(!W1_broken);
  assert(!W2_broken);
  assert(!W3_broken);
  assert(!W6_broken);
  assert(!Bound_broken);
  assert(!Errors_broken)
}

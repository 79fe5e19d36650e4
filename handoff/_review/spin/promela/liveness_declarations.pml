/* -- liveness: the environment may stop playing freely and start cooperating (L1) or
      report a terminal fact and then only acknowledge (L2); see the LTL at the end.  It
      does so only when pan runs with HANDOFF_SPIN_LIVENESS set in its environment, so
      that one compiled pan serves the safety search (modes off) and the LTL searches. -- */
#define M_FREE 0
#define M_COOPERATING 1
#define M_CANCEL_ENTRY 2
#define M_CANCELING 3
bit live = 0;                /* set once, at the start, from HANDOFF_SPIN_LIVENESS */
byte mode = M_FREE;
byte turn = 0;               /* the call a cooperating environment tries next */
bit unusable_taken = 0;      /* an unusable payload was accepted on the way here */
#define FREE (!stopped && mode == M_FREE)
#define NOTE_UNUSABLE \
  if :: live && c_kind == K_FACT && !c_usable && !c_terminal -> unusable_taken = 1 \
     :: else -> skip fi
byte quiet = 0;              /* calls in a liveness mode since one last changed anything */
inline heard(CHANGED) {
  if
  :: mode != M_FREE && (CHANGED) -> quiet = 0
  :: mode != M_FREE && !(CHANGED) && quiet < NCALLS -> quiet++
  :: else -> skip
  fi
}
#define REPEATS (quiet >= NCALLS)   /* a whole round changed nothing: repeats may help */
/* A run cut off or crashed did not complete, whatever its last call issued. */
#define RUN_COMPLETE (spec_mode == SPEC_COMPLETE && !stopped)
#define RUN_CANCELED (spec_mode == SPEC_COMPLETE && !seen_succeeded && !stopped)

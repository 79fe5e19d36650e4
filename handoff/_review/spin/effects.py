"""What a call changed, in a generated Promela model: S6, and the cut of runaway runs (Bound).

Each call snapshots the coordinator's configuration first; afterwards a refused call, or one
the SPEC drops (the answer of the watch of the SPEC, `handoff._review.spin.watch`, judged
from what the environment saw) that issued nothing, must have left it as it was (S6).  The
same comparison tells progress from growth: a call that changes the configuration without a
new kind of action, a state change or a new outcome in the journal is a stall, and a run
with more than `MAX_STALLS` of them is cut off and breaks Bound, as the review cuts it
(`handoff._review.progress`).
"""

from __future__ import annotations

from handoff._review.progress import MAX_STALLS

__all__ = ["effects", "effects_variables"]


def effects_variables() -> str:
    """The stall count and the snapshot's scratch."""
    return f"""\
/* -- S6 and the cut: what a call changed, judged against the SPEC's answer -- */
#define MAX_STALLS {MAX_STALLS}
#define SPEC_DROPS (ans == ANS_DROP)
byte stalls = 0;             /* changes of the configuration without progress, this run */

/* scratch: the configuration before the call, and what the call did to it */
byte s_state, s_next_id, s_timing, s_tokens, s_nlife, s_completion;
byte s_issued[LOG_SIZE];
byte s_delay_of[LOG_SIZE];
byte s_recorded[LOG_SIZE];
byte s_lifecycle[LIFECYCLE_SIZE];
bit s_changed, s_journaled, s_fresh, s_known;
byte s_k, s_m;"""


def effects() -> str:
    """The inlines that snapshot the configuration and judge what a call changed."""
    return """\
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
}"""

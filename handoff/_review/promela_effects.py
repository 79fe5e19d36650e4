"""What a call changed, in a generated Promela model: S6, and the cut of runaway runs (Bound).

S6 needs the SPEC's answer to a call (dropped, refused or taken), judged from what the
environment saw, never from the coordinator's records: a small watch of its own (`w_…`)
follows SPEC.md §4 as far as that answer needs.  Each call snapshots the coordinator's
configuration first; afterwards a refused call, or one the SPEC drops that issued nothing,
must have left it as it was (S6).  The same comparison tells progress from growth: a call
that changes the configuration without a new kind of action, a state change or a new
outcome in the journal is a stall, and a run with more than `MAX_STALLS` of them is cut
off and breaks Bound, as the review cuts it (`handoff._review.explore`).
"""

from __future__ import annotations

from handoff._messages import HandoffAction
from handoff._review.progress import MAX_STALLS
from handoff._review.promela_vocabulary import (
    ACTIONS,
    OUTCOME_KINDS,
    acknowledgement_event,
    action_name,
)
from handoff._vocabulary import ChartEvent

__all__ = ["effects", "effects_variables"]


def effects_variables() -> str:
    """The SPEC watch S6 and the cut need, the stall count, and the snapshot's scratch."""
    return f"""\
/* -- S6 and the cut: the SPEC's own answer to a call, as the environment can tell it -- */
#define W_ACTIVE 0
#define W_CLEANING 1
#define W_COMPLETE 2
#define MAX_STALLS {MAX_STALLS}
byte w_mode = W_ACTIVE;
bit w_started, w_submitted, w_accepted, w_scheduled, w_held, w_reserved, w_transferred;
bit w_succeeded;             /* the latest completion was a SUCCESS */
byte w_timing, w_tokens;     /* payload classes the SPEC took */
byte w_first = 0;            /* the journal: ids from w_first to the last one received */
byte w_rec[LOG_SIZE];        /* outcome kind the SPEC recorded, by id */
byte stalls = 0;             /* changes of the configuration without progress, this run */

/* scratch: the configuration before the call, and what the call did to it */
byte s_state, s_next_id, s_timing, s_tokens, s_nlife, s_completion;
byte s_issued[LOG_SIZE];
byte s_delay_of[LOG_SIZE];
byte s_recorded[LOG_SIZE];
byte s_lifecycle[LIFECYCLE_SIZE];
bit s_changed, s_journaled, s_fresh, s_known, s_taking;
byte s_k, s_m;"""


def _fits() -> str:
    pairs = [
        f"(A == {action_name(action)} && O == O_{kind.value})"
        for action in ACTIONS
        if action is not HandoffAction.Complete
        for kind in OUTCOME_KINDS
        if acknowledgement_event(action, kind) is not ChartEvent.MISMATCHED_OUTCOME
        and kind.value != "Failed"
    ]
    return "#define W_FITS(A, O) (" + " || \\\n  ".join(pairs) + ")"


def effects() -> str:
    """The SPEC's answer as macros, and the inlines that snapshot and judge a call."""
    return f"""\
/* The SPEC's answer to call c in the configuration the environment saw (SPEC.md §4). */
{_fits()}
#define W_CANCEL(A) (A == A_CancelSource || A == A_CancelDestination)
#define W_JOURNALED(ID) (ID >= w_first && ID < nlog)
#define W_ESTABLISHED ((c_fact == F_SourceHeld && w_held) || \\
  (c_fact == F_DestinationReserved && w_reserved) || \\
  (c_fact == F_TransferCompleted && w_transferred))
#define W_NEEDED ((c_fact == F_SourceHeld && w_submitted) || \\
  (c_fact == F_DestinationReserved && w_accepted) || \\
  (c_fact == F_TransferCompleted && w_scheduled))
#define W_T (c_fact == F_SourceHeld -> c_timing : w_timing)
#define W_N (c_fact == F_DestinationReserved -> c_tokens : w_tokens)
#define W_UNUSABLE ((c_fact == F_SourceHeld && !timing_valid(c_timing)) || \\
  (W_T != 0 && W_N != 0 && !delay_valid(W_T, W_N)))
#define SPEC_DROPS ( \\
  (c_kind == K_START && (w_started || w_mode != W_ACTIVE)) || \\
  (c_kind == K_FACT && !c_foreign && \\
    ((w_mode == W_COMPLETE && !(c_terminal && w_succeeded)) || w_mode == W_CLEANING || \\
     (w_mode == W_ACTIVE && !c_terminal && W_ESTABLISHED))) || \\
  (c_kind == K_OUTCOME && \\
    (w_mode == W_COMPLETE || (W_JOURNALED(c_id) && w_rec[c_id] == c_out))))
#define SPEC_REFUSES ( \\
  (c_kind == K_FACT && c_foreign) || \\
  (c_kind == K_FACT && !c_foreign && w_mode == W_ACTIVE && !c_terminal && !W_ESTABLISHED && \\
    (!W_NEEDED || W_UNUSABLE)) || \\
  (c_kind == K_OUTCOME && w_mode != W_COMPLETE && \\
    (!W_JOURNALED(c_id) || (w_rec[c_id] != 0 && w_rec[c_id] != c_out) || \\
     (w_rec[c_id] == 0 && c_out == O_Failed && W_CANCEL(log[c_id])) || \\
     (w_rec[c_id] == 0 && c_out != O_Failed && !W_FITS(log[c_id], c_out)))))

inline snapshot() {{
  s_state = state; s_next_id = next_id; s_timing = timing; s_tokens = tokens;
  s_nlife = nlife; s_completion = completion;
  for (s_k : 0 .. LOG_SIZE - 1) {{
    s_issued[s_k] = issued[s_k]; s_delay_of[s_k] = delay_of[s_k]; s_recorded[s_k] = recorded[s_k]
  }};
  for (s_k : 0 .. LIFECYCLE_SIZE - 1) {{ s_lifecycle[s_k] = lifecycle[s_k] }}
}}

inline compare() {{
  s_changed = (state != s_state || next_id != s_next_id || timing != s_timing ||
               tokens != s_tokens || nlife != s_nlife || completion != s_completion);
  for (s_k : 0 .. LOG_SIZE - 1) {{
    if
    :: recorded[s_k] != s_recorded[s_k] -> s_journaled = 1
    :: issued[s_k] != s_issued[s_k] || delay_of[s_k] != s_delay_of[s_k] -> s_changed = 1
    :: else -> skip
    fi
  }};
  for (s_k : 0 .. LIFECYCLE_SIZE - 1) {{
    if :: lifecycle[s_k] != s_lifecycle[s_k] -> s_changed = 1 :: else -> skip fi
  }};
  s_changed = s_changed || s_journaled
}}

/* Progress: an action of a kind the run had not received (or a Complete). */
inline fresh() {{
  for (s_k : 0 .. MOST_PER_CALL - 1) {{
    if
    :: s_k < nout && out[s_k] == A_Complete -> s_fresh = 1
    :: s_k < nout && out[s_k] != A_Complete ->
         s_known = 0;
         for (s_m : 0 .. LOG_SIZE - 1) {{
           if :: s_m < nlog && log[s_m] == out[s_k] -> s_known = 1 :: else -> skip fi
         }};
         if :: !s_known -> s_fresh = 1 :: else -> skip fi
    :: else -> skip
    fi
  }}
}}

inline clear_w_rec() {{
  for (s_k : 0 .. LOG_SIZE - 1) {{ w_rec[s_k] = 0 }}
}}

/* The SPEC takes the call: what the environment establishes by it. */
inline w_take() {{
  if
  :: c_kind == K_START -> w_started = 1
  :: c_kind == K_FACT && c_terminal && w_mode == W_COMPLETE ->
       w_mode = W_CLEANING; w_first = nlog; clear_w_rec()
  :: c_kind == K_FACT && c_terminal && w_mode != W_COMPLETE -> w_mode = W_CLEANING
  :: c_kind == K_FACT && c_fact == F_SourceHeld -> w_held = 1; w_timing = c_timing
  :: c_kind == K_FACT && c_fact == F_DestinationReserved -> w_reserved = 1; w_tokens = c_tokens
  :: c_kind == K_FACT && c_fact == F_TransferCompleted -> w_transferred = 1
  :: c_kind == K_OUTCOME ->
       w_rec[c_id] = c_out;
       if
       :: c_out == O_Failed && w_mode == W_ACTIVE -> w_mode = W_CLEANING
       :: c_out != O_Failed && log[c_id] == A_SubmitPrefill -> w_submitted = 1
       :: c_out != O_Failed && log[c_id] == A_ReserveDestination -> w_accepted = 1
       :: c_out != O_Failed && log[c_id] == A_StartTransfer -> w_scheduled = 1
       :: else -> skip
       fi
  :: else -> skip
  fi
}}

/* The actions received: a Complete ends the journal and sets the mode. */
inline w_receive() {{
  for (s_k : 0 .. MOST_PER_CALL - 1) {{
    if
    :: s_k < nout && out[s_k] == A_Complete ->
         w_succeeded = (w_mode == W_ACTIVE); w_mode = W_COMPLETE; w_first = nlog + s_k + 1;
         for (s_m : 0 .. LOG_SIZE - 1) {{ w_rec[s_m] = 0 }}
    :: else -> skip
    fi
  }}
}}

/* After the coordinator's step, before the watch judges it: S6, the stall cut, the SPEC
   watch.  A crash ends the run (Errors) and is judged no further. */
inline effects() {{
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
       heard(s_changed || nout > 0);
       if
       :: result != REFUSED ->
            s_taking = !SPEC_DROPS && !SPEC_REFUSES;
            if :: s_taking -> w_take() :: else -> skip fi;
            w_receive()
       :: else -> skip
       fi
  fi;
  s_state = 0; s_next_id = 0; s_timing = 0; s_tokens = 0; s_nlife = 0; s_completion = 0;
  for (s_k : 0 .. LOG_SIZE - 1) {{ s_issued[s_k] = 0; s_delay_of[s_k] = 0; s_recorded[s_k] = 0 }};
  for (s_k : 0 .. LIFECYCLE_SIZE - 1) {{ s_lifecycle[s_k] = 0 }};
  s_changed = 0; s_journaled = 0; s_fresh = 0; s_known = 0; s_taking = 0; s_k = 0; s_m = 0
}}"""

"""The environment's watch in Promela: what it has seen of a run, and what the contract says next.

Written from contract §4 and the words of the review's properties, as a second opinion on the
review's `Watch` rather than a transcription of it.  The watch reads only the call the
environment made, the actions it received and whether the call was refused: never the
coordinator's variables.  A call the SPEC takes updates it; a call the SPEC drops or
refuses leaves it as it was.  For a chart that follows the SPEC the watch variables are
functions of the coordinator's configuration but for two flags that, after a CANCELED
completion, still remember whether `Submitted` or `Scheduled` came before the failure (the
coordinator has cleared its journal by then): the watch adds 2 states to SourceFirst's 85
and 3 to DestinationFirst's 103.

`spec_answer` says how the SPEC answers a call (taken, dropped, or refused with which
refusal), `spec_take` and `spec_receive` follow the SPEC through a taken call and each
action received, `advance_due` and `cleanup_due` name the actions due in that call.
"""

from __future__ import annotations

from handoff._chart.vocabulary import Refusal
from handoff._review.environment import environment
from handoff._review.payload import timing_refusal, transfer_delay, usable_delay
from handoff._review.spin.vocabulary import action_name, payloads, refusal_name
from handoff._review.watch import Seen, head
from handoff._values.messages import HandoffAction
from handoff._values.values import HandoffOrder

__all__ = ["watch"]

_A = HandoffAction


def watch(order: HandoffOrder, fallback_transfer_delay_ms: float) -> str:
    """The watch's variables and the SPEC's rules over them, for a chart of `order`."""
    return "\n\n".join(
        [
            _variables(order),
            _payload_answers(fallback_transfer_delay_ms),
            _ANSWER,
            _TAKE,
            _advance(order),
            _CLEANUP,
        ]
    )


def _variables(order: HandoffOrder) -> str:
    first, second, ready_sign = head(order)
    ready = "seen_source_held" if ready_sign is Seen.SOURCE_HELD else "seen_reserved"
    return f"""\
/* -- what the environment has seen (contract §4 as the environment can tell it) -- */
byte log[LOG_SIZE];          /* action kinds received, by id */
byte nlog = 0;
byte received = 0;           /* the action kinds ever received, one bit each */
#define SPEC_ACTIVE 0
#define SPEC_CLEANING 1
#define SPEC_COMPLETE 2
byte spec_mode = SPEC_ACTIVE;
byte spec_journal = 0;       /* the SPEC's journal: the ids received since the last Complete */
byte spec_outcome[LOG_SIZE]; /* the outcome kind the SPEC recorded for each journaled id */
bit seen_started, seen_submitted, seen_source_held, seen_accepted, seen_reserved;
bit seen_scheduled, seen_transferred, seen_activated, seen_source_freed;
bit seen_destination_freed;
bit seen_succeeded;          /* the latest completion was a SUCCESS */
byte spec_timing = 0;        /* the timing class and tokens class the SPEC kept */
byte spec_tokens = 0;
byte spec_life[LIFECYCLE_SIZE];   /* the lifecycle the SPEC records for the calls taken */
byte spec_nlife = 0;

#define FIRST {action_name(first)}
#define SECOND {action_name(second)}
#define READY {ready}   /* the first owner's fact was taken */
#define EVER(A) ((received >> (A - 1)) & 1)
#define DONE(O) (O == O_Applied || O == O_Noop)
#define IS_CANCEL(A) (A == A_CancelSource || A == A_CancelDestination)
#define FORWARD(A) (A == A_SubmitPrefill || A == A_ReserveDestination || \\
  A == A_StartTransfer || A == A_ActivateDestination || A == A_ReleaseSource)
#define FITS(A, O) ((A == A_SubmitPrefill && O == O_Submitted) || \\
  (A == A_ReserveDestination && O == O_Accepted) || (A == A_StartTransfer && O == O_Scheduled) || \\
  (A == A_ActivateDestination && O == O_Applied) || \\
  ((A == A_ReleaseSource || A == A_CancelSource || A == A_CancelDestination) && DONE(O)))
#define IN_JOURNAL(ID) (ID >= spec_journal && ID < nlog && log[ID] != A_Complete)
#define SOURCE_ENGAGED (EVER(A_SubmitPrefill) && !seen_source_freed)
#define DESTINATION_ENGAGED (EVER(A_ReserveDestination) && !seen_destination_freed)
#define COMPLETED (spec_mode == SPEC_COMPLETE)
#define COMPLETED_CANCELED (COMPLETED && !seen_succeeded)

/* scratch, zeroed after every call */
#define ANS_TAKE 1
#define ANS_DROP 2
#define ANS_REFUSE 3
byte ans, ans_refusal;       /* the SPEC's answer, and its refusal */
bit ans_payload;             /* the refusal judges the payload (P1), not the order of calls */
byte pt, pn, k, found, due0, due1, ndue, got0, got1, ngot;"""


def _payload_answers(fallback: float) -> str:
    """Contract §3 on each timing class and each (timing, tokens) pair the environment offers."""
    found = payloads(environment(), fallback)
    timings = []
    for number, timing in enumerate(found.timings, start=1):
        refusal = timing_refusal(timing)
        if refusal is not None:
            timings.append(f"  (t == {number} -> R_{refusal.name} : \\")
    unusable = [
        f"(t == {t} && n == {n})"
        for t, timing in enumerate(found.timings, start=1)
        for n, tokens in enumerate(found.tokens, start=1)
        if timing_refusal(timing) is None
        and not usable_delay(transfer_delay(timing, tokens, fallback))
    ]
    return "\n".join(
        [
            "/* Contract §3: validate_transfer_timing's refusal of timing class t (0: valid),",
            "   and whether a valid timing t with tokens class n makes an unusable delay. */",
            "#define spec_timing_refusal(t) \\",
            *timings,
            "  0" + ")" * len(timings),
            f"#define spec_delay_unusable(t, n) ({' || '.join(unusable) or 'false'})",
        ]
    )


_R = {refusal: refusal_name(refusal) for refusal in Refusal}

_ANSWER = f"""\
/* Contract §4: how the SPEC answers call c, judged from the watch alone. */
inline refuse(R) {{
  ans = ANS_REFUSE; ans_refusal = R
}}

inline spec_answer() {{
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
}}

inline active_fact_answer() {{
  if
  :: c_terminal -> skip
  :: c_fact == F_SourceHeld && seen_source_held -> ans = ANS_DROP
  :: c_fact == F_SourceHeld && !seen_source_held && !seen_submitted ->
       refuse({_R[Refusal.PREFILL_NOT_SUBMITTED]})
  :: c_fact == F_DestinationReserved && seen_reserved -> ans = ANS_DROP
  :: c_fact == F_DestinationReserved && !seen_reserved && !seen_accepted ->
       refuse({_R[Refusal.OWNERSHIP_NOT_ACCEPTED]})
  :: c_fact == F_TransferCompleted && seen_transferred -> ans = ANS_DROP
  :: c_fact == F_TransferCompleted && !seen_transferred && !seen_scheduled ->
       refuse({_R[Refusal.TRANSFER_NOT_SCHEDULED]})
  :: else -> payload_answer()
  fi
}}

/* validate_transfer_timing on a SourceHeld, then the delay of the transfer the fact makes due. */
inline payload_answer() {{
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
}}

inline outcome_answer() {{
  if
  :: spec_mode == SPEC_COMPLETE -> ans = ANS_DROP
  :: spec_mode != SPEC_COMPLETE && !IN_JOURNAL(c_id) -> refuse({_R[Refusal.UNKNOWN_ACTION]})
  :: spec_mode != SPEC_COMPLETE && IN_JOURNAL(c_id) ->
       if
       :: spec_outcome[c_id] == c_out -> ans = ANS_DROP
       :: spec_outcome[c_id] != 0 && spec_outcome[c_id] != c_out ->
            refuse({_R[Refusal.CONFLICTING_OUTCOME]})
       :: spec_outcome[c_id] == 0 && c_out == O_Failed && IS_CANCEL(log[c_id]) ->
            refuse({_R[Refusal.CLEANUP_ACTION_FAILED]})
       :: spec_outcome[c_id] == 0 && c_out != O_Failed && !FITS(log[c_id], c_out) ->
            refuse({_R[Refusal.MISMATCHED_OUTCOME]})
       :: else -> skip
       fi
  fi
}}"""

_TAKE = """\
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
  :: c_kind == K_FACT && c_fact == F_SourceHeld ->
       spec_timing = c_timing; seen_source_held = 1; spec_record(L_SourceHeld)
  :: c_kind == K_FACT && c_fact == F_DestinationReserved ->
       spec_tokens = c_tokens; seen_reserved = 1; spec_record(L_DestinationReserved)
  :: c_kind == K_FACT && c_fact == F_TransferCompleted -> seen_transferred = 1
  :: c_kind == K_OUTCOME -> spec_outcome[c_id] = c_out; spec_acknowledged(log[c_id])
  fi
}

inline spec_acknowledged(A) {
  if
  :: c_out == O_Failed -> spec_mode = SPEC_CLEANING
  :: c_out != O_Failed && A == A_SubmitPrefill -> seen_submitted = 1
  :: c_out != O_Failed && A == A_ReserveDestination ->
       seen_accepted = 1; spec_record(L_DestinationAccepted)
  :: c_out != O_Failed && A == A_StartTransfer -> seen_scheduled = 1
  :: c_out != O_Failed && A == A_ActivateDestination ->
       seen_activated = 1; spec_record(L_DestinationActivated)
  :: c_out != O_Failed && A == A_ReleaseSource ->
       seen_source_freed = 1; spec_record(L_SourceReleased)
  :: c_out != O_Failed && A == A_CancelSource -> seen_source_freed = 1
  :: c_out != O_Failed && A == A_CancelDestination -> seen_destination_freed = 1
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
}"""


def _advance(order: HandoffOrder) -> str:
    rules = [
        ("seen_started", "FIRST"),
        ("READY", "SECOND"),
        ("seen_source_held && seen_reserved", action_name(_A.StartTransfer)),
        ("seen_transferred", action_name(_A.ActivateDestination)),
        ("seen_activated", action_name(_A.ReleaseSource)),
    ]
    lines = [
        f"  if :: due0 == 0 && {holds} && !EVER({action}) -> due0 = {action} :: else -> skip fi;"
        for holds, action in rules
    ]
    return "\n".join(
        [
            f"/* Contract §4 advance, with start()'s first action ({order.value}): the first",
            "   rule that holds names the action due in active mode (due0; 0: none). */",
            "inline advance_due() {",
            "  due0 = 0;",
            *lines,
            "  if :: due0 == 0 && seen_source_freed -> due0 = A_Complete :: else -> skip fi",
            "}",
        ]
    )


_CLEANUP = """\
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
}"""

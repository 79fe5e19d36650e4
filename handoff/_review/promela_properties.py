"""The review's properties, mirrored in Promela: monitors for safety, LTL for liveness.

The mirror is written from the properties' words (`handoff._review.properties.PROPERTIES`),
not derived from the Python monitors, so Spin gives a second opinion rather than an echo.
`MIRRORED` says how each property is checked; `NOT_MIRRORED` says why a property is not,
and every property the review has must be in one of the two (a test holds this).  Adding a
property to the mirror is adding its monitor lines (setting `<key>_broken`) or its LTL
formula here.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from handoff._lifecycle import NormalizedHandoffEvent
from handoff._review.promela_vocabulary import Calls

__all__ = [
    "MIRRORED",
    "NOT_MIRRORED",
    "Check",
    "liveness",
    "liveness_choices",
    "liveness_declarations",
    "liveness_switches",
    "make_call",
    "monitors",
]


class Check(enum.Enum):
    """How Spin checks a mirrored property."""

    ASSERTION = "assertion"
    """A monitor sets `<key>_broken`; the exhaustive safety search reports it."""
    LTL = "ltl"
    """An LTL formula named `<key>`; the acceptance-cycle search (`-a -N <key>`) checks it."""


MIRRORED: dict[str, Check] = {
    "S2": Check.ASSERTION,
    "S6": Check.ASSERTION,
    "S7": Check.ASSERTION,
    "L1": Check.LTL,
    "L2": Check.LTL,
    "Bound": Check.ASSERTION,
    "Errors": Check.ASSERTION,
}
"""The properties Spin checks, and how."""

_REWORDED = (
    "the review's wording of this property was rewritten after its monitor here was "
    "written; the monitor still judges the earlier wording, and the two disagree on mutants "
)
NOT_MIRRORED: dict[str, str] = {
    "S1": _REWORDED + "(IgnoresTerminalMidTransfer: the review sees an activation the "
    "environment never owed, the monitor only its order)",
    "S3": _REWORDED + "(a transfer from an unusable timing: the review's S3 asks for a usable "
    "payload, which the monitor does not track)",
    "S4": _REWORDED + "(SuccessWithoutRelease: the monitor's one-Complete rule flags what the "
    "review attributes to S5 and L3)",
    "S5": _REWORDED + "(SuccessWithoutRelease: the review asks every owner freed at any "
    "completion, the monitor only at a CANCELED one)",
    "S8": "needs the SPEC's answer to each call (is the action allowed now, is its owner "
    "engaged): the review's whole watch, which has no monitor here yet",
    "R1": "judges each fact against the SPEC's answer (taken, dropped or refused with a "
    "phrase): error classes and phrases are not in the model",
    "R2": "as R1, for acknowledgements: the model knows refused or taken, not the phrase",
    "P1": "judges when an unusable payload is refused, against the documented exception; "
    "the monitor for it is not written yet",
    "Q1": "needs the SPEC's full next-action rule per call (the review's `advance` and "
    "cleanup steps); the monitor for it is not written yet",
    "L3": _REWORDED + "(the review now checks the lifecycle at every completion, the "
    "monitor only at a success)",
    "Coverage": "a judgment on the chart's declared cells, not on runs: Spin sees no cells",
    "Table": "compares the compiled table with python-statemachine, not runs: "
    "Spin has no model of the interpreter to check",
}
"""The properties Spin does not check, and why."""

_MONITORED = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "L3", "Bound", "Errors")
"""Every flag the monitors below set; only the mirrored ones are asserted."""

_SAFETY = [key for key, check in MIRRORED.items() if check is Check.ASSERTION]


def monitors(expected: Sequence[NormalizedHandoffEvent]) -> str:
    """The environment's watch and the safety monitors over it."""
    broken = ", ".join(f"{key}_broken" for key in _MONITORED)
    lifecycle = " && ".join(
        f"lifecycle[{k}] == L_{event.value}" for k, event in enumerate(expected)
    )
    return f"""\
/* -- what the environment has seen (the review's watch): its own record of the run -- */
byte log[LOG_SIZE];          /* action kinds received, by id */
byte nlog = 0;
bit seen_submitted, seen_source_held, seen_accepted, seen_reserved, seen_scheduled;
bit seen_transferred, seen_activated, seen_source_freed, seen_destination_freed;
bit seen_canceling;          /* a terminal fact or a failure was accepted */
#define P_NONE 0
#define P_LIVE 1
#define P_DONE 2
#define P_REOPENED 3
#define P_DONE_AGAIN 4
byte phase = P_LIVE;         /* judged by the Complete actions received */
bit succeeded = 0;           /* the first completion was a success */
byte reopened = 255;         /* the id of the CancelDestination that reopened */
#define COMPLETED (phase == P_DONE || phase == P_DONE_AGAIN)
#define COMPLETED_CANCELED (phase == P_DONE_AGAIN || (phase == P_DONE && !succeeded))
#define DONE_OUTCOME (c_out == O_Applied || c_out == O_Noop)
#define IS_CANCEL(A) (A == A_CancelSource || A == A_CancelDestination)
#define ACKNOWLEDGES_REOPEN (c_kind == K_OUTCOME && c_id == reopened && DONE_OUTCOME)
#define SEEN_SUCCESS (phase_before == P_LIVE && phase != P_LIVE && succeeded)
byte np, acked, phase_before, completes;   /* scratch */
byte {broken};

inline learn() {{
  if
  :: c_terminal ->
       if
       :: phase == P_LIVE || (phase == P_DONE && succeeded) -> seen_canceling = 1
       :: else -> skip
       fi
  :: !c_terminal && COMPLETED -> skip
  :: !c_terminal && !COMPLETED && c_kind == K_FACT ->
       if
       :: c_fact == F_SourceHeld && seen_submitted -> seen_source_held = 1
       :: c_fact == F_DestinationReserved && seen_accepted -> seen_reserved = 1
       :: c_fact == F_TransferCompleted && seen_scheduled -> seen_transferred = 1
       :: else -> skip
       fi
  :: !c_terminal && !COMPLETED && c_kind == K_OUTCOME && c_id < nlog ->
       acked = log[c_id];
       if
       :: acked == A_SubmitPrefill && c_out == O_Submitted -> seen_submitted = 1
       :: acked == A_ReserveDestination && c_out == O_Accepted -> seen_accepted = 1
       :: acked == A_StartTransfer && c_out == O_Scheduled -> seen_scheduled = 1
       :: acked == A_ActivateDestination && c_out == O_Applied -> seen_activated = 1
       :: (acked == A_ReleaseSource || acked == A_CancelSource) && DONE_OUTCOME ->
            seen_source_freed = 1
       :: acked == A_CancelDestination && DONE_OUTCOME -> seen_destination_freed = 1
       :: else -> skip
       fi;
       if
       :: c_out == O_Failed && !IS_CANCEL(acked) && phase == P_LIVE -> seen_canceling = 1
       :: else -> skip
       fi
  :: else -> skip
  fi
}}

#define FITS(A, O) ((A == A_SubmitPrefill && O == O_Submitted) || \\
  (A == A_ReserveDestination && O == O_Accepted) || (A == A_StartTransfer && O == O_Scheduled) || \\
  (A == A_ActivateDestination && O == O_Applied) || \\
  ((A == A_ReleaseSource || A == A_CancelSource || A == A_CancelDestination) && \\
   (O == O_Applied || O == O_Noop)))

/* S4: after a completion nothing but a reopened cleanup's CancelDestination and Complete. */
inline next_phase(A) {{
  if
  :: phase == P_LIVE && A == A_Complete -> np = P_DONE
  :: phase == P_LIVE && A != A_Complete -> np = P_LIVE
  :: phase == P_DONE && A == A_CancelDestination && succeeded && c_terminal -> np = P_REOPENED
  :: phase == P_REOPENED && A == A_Complete && ACKNOWLEDGES_REOPEN -> np = P_DONE_AGAIN
  :: else -> np = P_NONE
  fi
}}

inline judge(A, ID) {{
  if :: ID != nlog -> S7_broken = 1 :: else -> skip fi;          /* S7 */
  next_phase(A);
  if :: np == P_NONE -> S4_broken = 1 :: else -> skip fi;        /* S4 */
  if
  :: A == A_ActivateDestination && !seen_transferred -> S1_broken = 1
  :: A == A_ReleaseSource && !seen_activated -> S2_broken = 1
  :: A == A_StartTransfer && !(seen_source_held && seen_reserved) -> S3_broken = 1
  :: else -> skip
  fi;
  if                                                              /* S5 */
  :: A == A_Complete && seen_canceling ->
       for (i : 0 .. LOG_SIZE - 1) {{
         if
         :: i < nlog && log[i] == A_SubmitPrefill && !seen_source_freed -> S5_broken = 1
         :: i < nlog && log[i] == A_ReserveDestination && !seen_destination_freed -> S5_broken = 1
         :: else -> skip
         fi
       }}
  :: else -> skip
  fi
}}

inline record(A, ID) {{
  log[nlog] = A; nlog++;
  if
  :: np == P_NONE || np == phase -> skip
  :: np == P_DONE -> succeeded = !seen_canceling; phase = P_DONE
  :: np == P_REOPENED -> reopened = ID; phase = np
  :: np == P_DONE_AGAIN -> phase = np
  fi
}}

/* Judge what an accepted call issued, in issue order; then L3 and the bound. */
inline observe() {{
  phase_before = phase;
  completes = 0;
  learn();
  for (j : 0 .. MOST_PER_CALL - 1) {{
    if
    :: j < nout -> judge(out[j], out_id[j]); record(out[j], out_id[j]);
         if :: out[j] == A_Complete -> completes = 1 :: else -> skip fi
    :: else -> skip
    fi
  }};
  if                                                              /* L3 */
  :: completes && (SEEN_SUCCESS || completion == C_SUCCESS) ->
       if
       :: nlife == {len(expected)} && {lifecycle} -> skip
       :: else -> L3_broken = 1
       fi
  :: else -> skip
  fi;
  if :: nlog > MAX_ACTIONS -> Bound_broken = 1; stopped = 1 :: else -> skip fi
}}"""


def make_call() -> str:
    """The inline that makes call `c`, lets the coordinator take it and judges the result."""
    resets = "; ".join(f"{key}_broken = 0" for key in _MONITORED)
    asserts = "\n".join(f"  assert(!{key}_broken);" for key in _SAFETY)
    return f"""\
/* Zero the scratch, so that states differ only by what the coordinator and watch keep. */
inline scrub() {{
  {resets};
  c_kind = 0; c_fact = 0; c_event = 0; c_timing = 0; c_tokens = 0; c_id = 0; c_out = 0;
  c_usable = 0; c_terminal = 0; c_foreign = 0; result = 0; delay = 0; nout = 0;
  j = 0; np = 0; acked = 0; phase_before = 0; completes = 0;
  for (i : 0 .. MOST_PER_CALL - 1) {{ out[i] = 0; out_id[i] = 0 }};
  i = 0
}}

inline make_call() {{
  printf("CALL %d\\n", c);
  decode();
  result = TAKEN; delay = 0; nout = 0;
  snapshot();
  coordinator_step();
  effects();
  if
  :: result == CRASHED -> Errors_broken = 1; stopped = 1   /* not a HandoffError */
  :: result == REFUSED -> skip
  :: result == TAKEN || result == DROPPED -> observe(); NOTE_UNUSABLE
  fi;
{asserts}
  scrub()
}}"""


def liveness_declarations() -> str:
    """The environment's modes for the liveness properties (entered only when `live`)."""
    return """\
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
#define NOTE_UNUSABLE \\
  if :: live && c_kind == K_FACT && !c_usable && !c_terminal -> unusable_taken = 1 \\
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
#define DONE (w_mode == W_COMPLETE && !stopped)
#define DONE_CANCELED (w_mode == W_COMPLETE && !w_succeeded && !stopped)"""


def liveness_choices(numbering: Calls) -> list[str]:
    """How the environment chooses its call in a liveness mode."""
    terminal = [
        f"       :: c = {number}   /* {call} */"
        for number, call in enumerate(numbering.all)
        if call.terminal
    ]
    return [
        "  :: mode == M_CANCEL_ENTRY ->",
        "       if",
        *terminal,
        "       fi;",
        "       mode = M_CANCELING",
        "  :: mode == M_COOPERATING || mode == M_CANCELING ->",
        "       turn = (turn + 1) % NCALLS; c = turn; decode();",
        "       if",
        "       :: SPEC_DROPS && !REPEATS -> c = NO_CALL   /* a repeat only when stuck */",
        "       :: (!SPEC_DROPS || REPEATS) && c_kind == K_OUTCOME && c_id < nlog &&",
        "            W_FITS(log[c_id], c_out) -> skip",
        "       :: (!SPEC_DROPS || REPEATS) && mode == M_COOPERATING && c_kind != K_OUTCOME &&",
        "            c_usable && !c_terminal -> skip",
        "       :: else -> c = NO_CALL",
        "       fi",
    ]


def liveness_switches() -> list[str]:
    """The environment's moves from playing freely into a liveness mode."""
    return [
        "  :: atomic {",
        "       live && FREE && !unusable_taken && !DONE -> mode = M_COOPERATING;",
        '       printf("MODE cooperating\\n")',
        "     }",
        "  :: atomic {",
        "       live && FREE && !DONE_CANCELED -> mode = M_CANCEL_ENTRY;",
        '       printf("MODE cancelling\\n")',
        "     }",
    ]


def liveness() -> str:
    """The LTL formulas, with the fairness they assume."""
    return """\
/* -- liveness properties.  Fairness assumed: once cooperating (or cancelling), the
      environment makes every call it is willing to make, in turn, forever (a round robin
      over the numbered calls), so a run that stops changing is stuck, not lazy; and it
      repeats a call the SPEC drops only after a whole round in which nothing changed, so
      a chart that grows on repeats is judged by Bound, and one that needs a repeat to go
      on still gets it.  A run cut off (Bound) or crashed (Errors) stops and never
      completes, so a cut in a cooperating or cancelling run breaks L1 or L2.
   L1: cooperating means: start(), usable non-terminal facts and fitting acknowledgements
       only, entered from a configuration reached without accepting an unusable payload
       and not yet complete; it must then complete.
   L2: cancelling means: one terminal fact, then fitting acknowledgements only, entered from
       a configuration that has not completed CANCELED; it must then complete CANCELED. -- */
ltl L1 { [] (mode == M_COOPERATING -> <> DONE) }
ltl L2 { [] (mode == M_CANCELING -> <> DONE_CANCELED) }"""

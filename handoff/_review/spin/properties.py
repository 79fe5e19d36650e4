"""The review's properties, mirrored in Promela: monitors for safety, LTL for liveness.

The mirror is written from the properties' words (`handoff._review.properties.PROPERTIES`),
not derived from the Python monitors, so Spin gives a second opinion rather than an echo.
How each property is mirrored, or why it is not, is part of its record
(`Property.spin`, `Property.unmirrored`); `MIRRORED` and `NOT_MIRRORED` are read off it.
Adding a property to the mirror is marking its record and adding its monitor lines
(setting `<key>_broken`) or its LTL formula here.  The monitors judge against the
environment's watch of the run (`handoff._review.spin.watch`): the SPEC's answer to each
call and the actions due.
"""

from __future__ import annotations

from handoff._review.properties import Key, SpinCheck, WorldKind, properties_of
from handoff._review.spin.vocabulary import Calls
from handoff._review.spin.watch import watch
from handoff._values.lifecycle import expected_normalized_handoff
from handoff._values.values import HandoffOrder

__all__ = [
    "MIRRORED",
    "NOT_MIRRORED",
    "liveness",
    "liveness_choices",
    "liveness_declarations",
    "liveness_switches",
    "make_call",
    "mirrored",
    "monitors",
    "not_mirrored",
]


def mirrored(world: WorldKind) -> dict[Key, SpinCheck]:
    """The properties Spin checks in `world`'s model, and how (read off each record)."""
    return {
        p.key: p.spin for p in properties_of(world) if p.spin is not None and isinstance(p.key, Key)
    }


def not_mirrored(world: WorldKind) -> dict[Key, str]:
    """The properties of `world` Spin does not check, and why."""
    return {
        p.key: p.unmirrored
        for p in properties_of(world)
        if p.spin is None and isinstance(p.key, Key)
    }


MIRRORED = mirrored(WorldKind.CHART)
"""The properties Spin checks for the chart alone, and how."""

NOT_MIRRORED = not_mirrored(WorldKind.CHART)
"""The properties of the chart alone Spin does not check, and why."""

_MONITORED = [key.value for key, check in MIRRORED.items() if check is SpinCheck.ASSERTION]
"""Every flag the monitors below set, each asserted at a call's end."""


def monitors(order: HandoffOrder, fallback_transfer_delay_ms: float = 0.0) -> str:
    """The environment's watch and the safety monitors over it."""
    broken = ", ".join(f"{key}_broken" for key in _MONITORED)
    expected = expected_normalized_handoff(order)
    lifecycle = " && ".join(
        f"lifecycle[{k}] == L_{event.value}" for k, event in enumerate(expected)
    )
    return f"""\
{watch(order, fallback_transfer_delay_ms)}

/* -- the safety monitors: each sets its property's flag, asserted at the call's end -- */
byte {broken};

/* R1, R2, P1: the coordinator's answer to call c against the SPEC's. */
inline answer_broken() {{
  if :: c_kind == K_OUTCOME -> R2_broken = 1 :: else -> R1_broken = 1 fi
}}

inline judge_answer() {{
  if
  :: ans == ANS_REFUSE && !(result == REFUSED && refusal == ans_refusal) ->
       if :: ans_payload -> P1_broken = 1 :: else -> answer_broken() fi
  :: ans != ANS_REFUSE && result == REFUSED -> answer_broken()   /* refused what it may not */
  :: ans == ANS_DROP && result != REFUSED && nout > 0 -> answer_broken()   /* acted on a drop */
  :: ans == ANS_TAKE && result != REFUSED && c_kind == K_FACT && nout == 0 ->
       answer_broken()   /* a fact the SPEC takes, silently dropped */
  :: else -> skip
  fi
}}

/* Q1: the call issues what the SPEC makes due in it. */
inline judge_prompt() {{
  ngot = 0; found = 0;
  for (j : 0 .. MOST_PER_CALL - 1) {{
    if
    :: j < nout && (IS_CANCEL(out[j]) || out[j] == A_Complete) ->
         if :: ngot == 0 -> got0 = out[j] :: ngot == 1 -> got1 = out[j] :: else -> skip fi;
         ngot++
    :: else -> skip
    fi;
    if :: j < nout && out[j] == due0 -> found = 1 :: else -> skip fi
  }};
  j = 0;
  if
  :: spec_mode == SPEC_ACTIVE && due0 != 0 && !found -> Q1_broken = 1
  :: spec_mode == SPEC_CLEANING &&
     !(ngot == ndue && (ndue < 1 || got0 == due0) && (ndue < 2 || got1 == due1)) -> Q1_broken = 1
  :: else -> skip
  fi
}}

/* S1-S4, S7, C1: action A issued under id ID, judged before the watch receives it. */
#define MISPLACED(A) (EVER(A) || (FORWARD(A) && spec_mode != SPEC_ACTIVE) || \\
  (A == FIRST && c_kind != K_START) || (A == SECOND && !READY) || \\
  (IS_CANCEL(A) && spec_mode != SPEC_CLEANING) || \\
  (A == A_CancelSource && !SOURCE_ENGAGED) || (A == A_CancelDestination && !DESTINATION_ENGAGED))

inline judge_action(A, ID) {{
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
}}

/* S5 and C2 at a completion: the owners freed, the lifecycle the calls taken record. */
inline judge_success() {{
  if :: !(seen_activated && seen_source_freed) -> S5_broken = 1 :: else -> skip fi;
  judge_lifecycle(1);
  if :: !(nlife == {len(expected)} && {lifecycle}) -> C2_broken = 1 :: else -> skip fi
}}

inline judge_canceled() {{
  if :: SOURCE_ENGAGED || DESTINATION_ENGAGED -> S5_broken = 1 :: else -> skip fi;
  judge_lifecycle(0)
}}

inline judge_lifecycle(SUCCESS) {{
  if
  :: nlife != spec_nlife + SUCCESS -> C2_broken = 1
  :: nlife == spec_nlife + SUCCESS && SUCCESS && lifecycle[spec_nlife] != L_Completed ->
       C2_broken = 1
  :: else -> skip
  fi;
  for (k : 0 .. LIFECYCLE_SIZE - 1) {{
    if :: k < spec_nlife && lifecycle[k] != spec_life[k] -> C2_broken = 1 :: else -> skip fi
  }};
  k = 0
}}

/* Judge call c: the answer, then (unless refused) what is due and each action issued. */
inline observe() {{
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
       for (j : 0 .. MOST_PER_CALL - 1) {{
         if
         :: j < nout -> judge_action(out[j], out_id[j]); spec_receive(out[j])
         :: else -> skip
         fi
       }};
       j = 0
  fi;
  if :: nlog > MAX_ACTIONS -> Bound_broken = 1; stopped = 1 :: else -> skip fi
}}"""


def make_call() -> str:
    """The inlines that make call `c` and let the coordinator take it, then judge the result."""
    resets = "; ".join(f"{key}_broken = 0" for key in _MONITORED)
    asserts = "\n".join(f"  assert(!{key}_broken);" for key in _MONITORED)
    return f"""\
/* Zero the scratch, so that states differ only by what the coordinator and watch keep. */
inline scrub() {{
  {resets};
  c_kind = 0; c_fact = 0; c_event = 0; c_timing = 0; c_tokens = 0; c_id = 0; c_out = 0;
  c_usable = 0; c_terminal = 0; c_foreign = 0; result = 0; refusal = 0; delay = 0; nout = 0;
  j = 0; ans = 0; ans_refusal = 0; ans_payload = 0; pt = 0; pn = 0; k = 0;
  found = 0; due0 = 0; due1 = 0; ndue = 0; got0 = 0; got1 = 0; ngot = 0;
  for (i : 0 .. MOST_PER_CALL - 1) {{ out[i] = 0; out_id[i] = 0 }};
  i = 0
}}

/* A call is two deterministic steps (Spin bounds the length of one d_step): the
   coordinator takes call c, then the monitors judge what it did. */
inline make_call() {{
  printf("CALL %d\\n", c);
  decode();
  result = TAKEN; delay = 0; nout = 0;
  snapshot();
  coordinator_step()
}}

inline judge_call() {{
  if
  :: result == CRASHED -> Errors_broken = 1; stopped = 1   /* not a HandoffError */
  :: result == REFUSED -> observe()
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
#define RUN_COMPLETE (spec_mode == SPEC_COMPLETE && !stopped)
#define RUN_CANCELED (spec_mode == SPEC_COMPLETE && !seen_succeeded && !stopped)"""


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
        "       turn = (turn + 1) % NCALLS; c = turn; decode(); spec_answer();",
        "       if",
        "       :: SPEC_DROPS && !REPEATS -> c = NO_CALL   /* a repeat only when stuck */",
        "       :: (!SPEC_DROPS || REPEATS) && c_kind == K_OUTCOME && c_id < nlog &&",
        "            FITS(log[c_id], c_out) -> skip",
        "       :: (!SPEC_DROPS || REPEATS) && mode == M_COOPERATING && c_kind != K_OUTCOME &&",
        "            c_usable && !c_terminal -> skip",
        "       :: else -> c = NO_CALL",
        "       fi",
    ]


def liveness_switches() -> list[str]:
    """The environment's moves from playing freely into a liveness mode."""
    return [
        "  :: atomic {",
        "       live && FREE && !unusable_taken && !RUN_COMPLETE -> mode = M_COOPERATING;",
        '       printf("MODE cooperating\\n")',
        "     }",
        "  :: atomic {",
        "       live && FREE && !RUN_CANCELED -> mode = M_CANCEL_ENTRY;",
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
ltl L1 { [] (mode == M_COOPERATING -> <> RUN_COMPLETE) }
ltl L2 { [] (mode == M_CANCELING -> <> RUN_CANCELED) }"""

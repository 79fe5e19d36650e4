"""The coordinator's part of a generated Promela model: the chart's steps and the journal.

One inline per chart event, read off the compiled table and `handoff._coordinator.binding.plan_for`;
states whose cells behave alike share one case.  Checks run before anything changes, and a
step commits in the adapter's order: journal, lifecycle, chart state, issued actions.
"""

from __future__ import annotations

from collections.abc import Iterator

from handoff._chart.vocabulary import ChartEvent
from handoff._compile.table import CompiledChart
from handoff._coordinator.binding import Keep, Plan, plan_for
from handoff._review.environment import environment
from handoff._review.spin.vocabulary import (
    ACTIONS,
    OUTCOME_KINDS,
    REFUSALS,
    acknowledgement_event,
    action_name,
    event_name,
    numbered,
    payloads,
    refusal_name,
    refused_as,
)
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffAction
from handoff._values.timing import validate_transfer_timing

__all__ = ["CRASHES", "coordinator", "event_rules", "journal_rules"]

CRASHES = (
    "a transfer is issued only after its delay was checked",
    "the timing check runs on a SourceHeld fact only",
)
"""The adapter's assertions the model stands in for: a trail's `CRASH` line names one.

The first is the adapter's own message; the second asserts without one, so its words here
say what it asserts (`isinstance(fact, HandoffFact.SourceHeld)`).
"""


def journal_rules() -> str:
    """The journal's rules, the payload checks and how an action is issued."""
    acks = [
        f"  :: issued[c_id] == {action_name(action)} && c_out == O_{kind.value} -> "
        f"c_event = {event_name(acknowledgement_event(action, kind))}"
        for action in ACTIONS
        if action is not HandoffAction.Complete
        for kind in OUTCOME_KINDS
        if acknowledgement_event(action, kind) is not ChartEvent.MISMATCHED_OUTCOME
    ]
    return "\n".join(
        [
            *_refusals(),
            "",
            "/* -- the journal's rules (handoff._coordinator.binding): an outcome's event -- */",
            "inline classify_outcome() {",
            "  if",
            "  :: issued[c_id] == 0 -> c_event = E_unknown_action",
            "  :: issued[c_id] != 0 && recorded[c_id] == c_out -> c_event = E_duplicate_outcome",
            "  :: issued[c_id] != 0 && recorded[c_id] != 0 && recorded[c_id] != c_out ->",
            "       c_event = E_conflicting_outcome",
            "  :: issued[c_id] != 0 && recorded[c_id] == 0 ->",
            "       if",
            *("  " + line for line in acks),
            "       :: else -> c_event = E_mismatched_outcome",
            "       fi",
            "  fi",
            "}",
            "",
            "inline record_lifecycle(EVENT) {",
            "  if",
            "  :: nlife < LIFECYCLE_SIZE -> lifecycle[nlife] = EVENT; nlife++",
            "  :: else -> stopped = 1; Bound_broken = 1",
            "  fi",
            "}",
            "",
            "inline clear_journal() {",
            "  for (i : 0 .. LOG_SIZE - 1) { issued[i] = 0; delay_of[i] = 0; recorded[i] = 0 }",
            "}",
            "",
            "/* Issue an action: journal it (or complete, clearing the journal), hand it out. */",
            "inline issue(ACTION, COMPLETION) {",
            "  if",
            "  :: result == CRASHED -> skip",
            "  :: ACTION == A_StartTransfer && delay == 0 ->",
            "       result = CRASHED;   /* the adapter's assertion, in its own words: */",
            f'       printf("CRASH {CRASHES[0]}\\n")',
            "  :: else ->",
            "       out[nout] = ACTION; out_id[nout] = next_id; nout++;",
            "       if",
            "       :: COMPLETION != 0 ->",
            "            completion = COMPLETION;",
            "            if",
            "            :: COMPLETION == C_SUCCESS -> record_lifecycle(L_Completed)",
            "            :: else -> skip",
            "            fi;",
            "            clear_journal()",
            "       :: else -> issued[next_id] = ACTION; delay_of[next_id] = delay",
            "       fi;",
            "       next_id++",
            "  fi",
            "}",
            "",
            "/* The payload checks a step runs, in order, before anything changes. */",
            "inline check_transfer_timing_is_valid() {",
            "  if",
            "  :: result != TAKEN -> skip",
            "  :: c_fact != F_SourceHeld ->",
            f'       result = CRASHED; printf("CRASH {CRASHES[1]}\\n")',
            "  :: c_fact == F_SourceHeld && timing_valid(c_timing) -> skip",
            "  :: else -> result = REFUSED; refusal = timing_refusal(c_timing)",
            "  fi",
            "}",
            "",
            "inline check_transfer_delay_is_valid() {",
            "  if",
            "  :: result != TAKEN -> skip",
            "  :: else ->",
            "       delay_of_pair();",
            "       if",
            "       :: result == REFUSED && (D_T == 0 || D_N == 0) ->",
            "            refusal = R_UNPLANNED_TRANSFER",
            "       :: result == REFUSED && D_T != 0 && D_N != 0 -> refusal = R_INVALID_DELAY",
            "       :: else -> skip",
            "       fi",
            "  fi",
            "}",
        ]
    )


def _refusals() -> list[str]:
    """The refusal kinds, and which one the adapter's timing check makes of each timing."""
    kinds = [f"     {name}: {kind.__name__} '{phrase}'" for name, kind, phrase in REFUSALS]
    cases = []
    for number, timing in enumerate(payloads(environment(), 0.0).timings, start=1):
        try:
            validate_transfer_timing(timing)
        except HandoffError as error:
            cases.append(f"  (t == {number} -> R_{refused_as(error)} : \\")
    return [
        "/* -- refusals: the error a refused call raises, by class and phrase:",
        *kinds,
        "   timing_refusal(t): what the adapter's timing check refuses timing t with -- */",
        *numbered([name for name, _, _ in REFUSALS], "R_"),
        "byte refusal;               /* scratch: the refusal of a refused call */",
        "#define timing_refusal(t) \\",
        *cases,
        "  0" + ")" * len(cases),
    ]


def event_rules(chart: CompiledChart, event: ChartEvent) -> str:
    """One inline for `event`: the states that treat it alike share one case."""
    groups: dict[tuple[object, ...], list[int]] = {}
    bodies: dict[tuple[object, ...], list[str]] = {}
    for state in range(len(chart.states)):
        step = chart.step(state, event)
        move = plan_for(step)
        key, body = _cell(chart, move, stays=step.target == state)
        groups.setdefault(key, []).append(state)
        bodies[key] = body
    lines = [f"inline on_{event.value}() {{", "  if"]
    dropped = None
    for key, states in groups.items():
        if key == ("dropped",):
            dropped = states
            continue
        guard = " || ".join(f"state == S_{chart.states[s]}" for s in states)
        lines.append(f"  :: {guard} ->")
        lines += [f"       {line}" for line in bodies[key]]
    if dropped is not None:
        lines.append("  :: else -> result = DROPPED")
    lines += ["  fi", "}"]
    return "\n".join(lines)


def _cell(chart: CompiledChart, move: Plan, *, stays: bool) -> tuple[tuple[object, ...], list[str]]:
    if move.ignored:
        return ("dropped",), []
    if move.refusal is not None:
        refuse = f"result = REFUSED; refusal = {refusal_name(move.refusal)}"
        return ("refused", move.refusal), [f'{refuse}   /* "{move.refusal.phrase}" */']
    commit = list(_commit(chart, move, stays=stays))
    checks = [f"check_{check.value}();" for check in move.checks]
    key = ("taken", move.checks, move.keep, move.lifecycle, stays or move.target, move.issues)
    if not checks:
        return key, _joined(commit)
    return key, [
        *checks,
        "if",
        ":: result == TAKEN ->",
        *(f"     {line}" for line in _joined(commit)),
        ":: else -> skip",
        "fi",
    ]


def _commit(chart: CompiledChart, move: Plan, *, stays: bool) -> Iterator[str]:
    if move.keep == Keep.OUTCOME:
        yield "recorded[c_id] = c_out"
    elif move.keep == Keep.TIMING:
        yield "timing = c_timing"
    elif move.keep == Keep.TOKENS:
        yield "tokens = c_tokens"
    if move.lifecycle is not None:
        yield f"record_lifecycle(L_{move.lifecycle.value})"
    if not stays:
        yield f"state = S_{chart.states[move.target]}"
    for make, completion in move.issues:
        done = f"C_{completion.name}" if completion is not None else "0"
        yield f"issue({action_name(make)}, {done})"  # type: ignore[arg-type]
    if not move.keep and move.lifecycle is None and stays and not move.issues:
        yield "skip   /* taken in place */"


def _joined(lines: list[str]) -> list[str]:
    return [line + (";" if number < len(lines) - 1 else "") for number, line in enumerate(lines)]


def coordinator() -> str:
    """The adapter: a call becomes one chart event, the chart takes the step."""
    dispatch = [
        f"  :: c_event == {event_name(event)} -> on_{event.value}()" for event in ChartEvent
    ]
    return "\n".join(
        [
            "/* -- the adapter: the call becomes one chart event, the chart takes the step -- */",
            "inline coordinator_step() {",
            "  if",
            "  :: c_foreign -> result = REFUSED; refusal = R_FOREIGN_FACT",
            "  :: !c_foreign ->",
            "       if",
            "       :: c_kind == K_OUTCOME -> classify_outcome()",
            "       :: else -> skip",
            "       fi;",
            "       if",
            *("  " + line for line in dispatch),
            "       fi",
            "  fi",
            "}",
        ]
    )

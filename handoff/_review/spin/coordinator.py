"""The coordinator's part of a generated Promela model: the chart's step and the journal.

The chart is data: one `CELL` line per (state, event) ends the model, read off the compiled
table and `handoff._coordinator.binding.plan_for`, and one inline (`chart_step`) does what the
call's cell says.  Checks run before anything changes, and a step commits in the adapter's
order: journal, lifecycle, chart state, issued actions.  Since nothing else in the model is
the chart's, one compiled verifier serves every chart of the same order and size.
"""

from __future__ import annotations

from collections.abc import Sequence

from handoff._chart.vocabulary import ChartEvent, Check
from handoff._compile.table import CompiledChart
from handoff._coordinator.binding import Keep, Plan, plan_for
from handoff._review.environment import environment
from handoff._review.spin.text import filled, fixed
from handoff._review.spin.vocabulary import (
    ACTIONS,
    COMPLETIONS,
    LIFECYCLE_EVENTS,
    OUTCOME_KINDS,
    REFUSALS,
    acknowledgement_event,
    action_name,
    event_name,
    numbered,
    payloads,
    refused_as,
)
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffAction
from handoff._values.timing import validate_transfer_timing

__all__ = [
    "CRASHES",
    "chart_cells",
    "chart_step",
    "coordinator",
    "journal_rules",
    "most_per_call",
]

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
        f":: issued[c_id] == {action_name(action)} && c_out == O_{kind.value} -> "
        f"c_event = {event_name(acknowledgement_event(action, kind))}"
        for action in ACTIONS
        if action is not HandoffAction.Complete
        for kind in OUTCOME_KINDS
        if acknowledgement_event(action, kind) is not ChartEvent.MISMATCHED_OUTCOME
    ]
    cases = _timing_refusals()
    return filled(
        "journal",
        kinds=[f"{name}: {kind.__name__} '{phrase}'" for name, kind, phrase in REFUSALS],
        numbers=numbered([name for name, _, _ in REFUSALS], "R_"),
        cases=cases,
        closing=")" * len(cases),
        acks=acks,
        crash_delay=CRASHES[0],
        crash_timing=CRASHES[1],
    )


def _timing_refusals() -> list[str]:
    """Which refusal the adapter's timing check makes of each timing it refuses."""
    cases = []
    for number, timing in enumerate(payloads(environment(), 0.0).timings, start=1):
        try:
            validate_transfer_timing(timing)
        except HandoffError as error:
            cases.append(f"(t == {number} -> R_{refused_as(error)} : \\")
    return cases


_CELL_FIELDS = ("kind", "refusal", "stays", "target", "keep", "lifecycle")
"""The first fields of a `CELL` line, after its state and event; then one per check a step
may run (`Check`, in order), how many actions it issues, and each action with its completion."""

_DROPPED, _REFUSED, _TAKEN = range(3)


def most_per_call(chart: CompiledChart) -> int:
    """The most actions one step of `chart` issues, at least 1: MOST_PER_CALL, the number of
    action slots in each cell."""
    return max(max(len(step.effects) for step in chart.steps()), 1)


_REFUSAL_NAMES = tuple(name for name, _, _ in REFUSALS)
"""The refusals as the model numbers them (`R_<name>`, from 1)."""


def chart_step() -> str:
    """The chart's step, the same for every chart: it reads the cell of (state, event) off the
    `CELL` lines that end the model (`chart_cells`), then checks and commits as that cell says.

    The chart is data, not code, so that one compiled verifier serves every chart whose model
    is otherwise the same (see `handoff._review.spin.run`)."""
    return filled(
        "chart_step",
        nchecks=len(Check),
        fields=[f"#define CF_{name.upper()} {number}" for number, name in enumerate(_CELL_FIELDS)],
        cf_check=len(_CELL_FIELDS),
        dropped=_DROPPED,
        refused=_REFUSED,
        taken=_TAKEN,
        keep_outcome=Keep.OUTCOME,
        keep_timing=Keep.TIMING,
        keep_tokens=Keep.TOKENS,
        checks=[
            f":: cell[CF_CHECK + cell_k] == {number} -> check_{check.value}()"
            for number, check in enumerate(Check, start=1)
        ],
    )


def chart_cells(chart: CompiledChart, flags: Sequence[tuple[int, str]] = ()) -> str:
    """The chart as data, to end the model with: a comment holding one `CELL` line per
    (state, event), each named in words after its numbers; and, with `flags` (each state's
    number and words, or 0 and ""), one `STATE` line per state holding its flags."""
    most = most_per_call(chart)
    cells = []
    for state in range(len(chart.states)):
        for event in ChartEvent:
            step = chart.step(state, event)
            numbers, words = _cell(chart, plan_for(step), stays=step.target == state, most=most)
            cells.append(f"CELL {state} {event.index} {numbers}   {chart.states[state]}, "
                         f"{event.value}: {words}")  # fmt: skip
    for state, (number, words) in enumerate(flags):
        cells.append(f"STATE {state} {number}   {chart.states[state]}: {words or 'no flag'}")
    return filled(
        "cells",
        fields=" ".join(f"<{name}>" for name in _CELL_FIELDS),
        nchecks=len(Check),
        most=most,
        dropped=_DROPPED,
        refused=_REFUSED,
        taken=_TAKEN,
        states=len(chart.states),
        events=len(ChartEvent),
        cells=cells,
    )


def _cell(chart: CompiledChart, move: Plan, *, stays: bool, most: int) -> tuple[str, str]:
    """One cell's numbers (after its state and event), and what it does in words."""
    fields = [0] * (len(_CELL_FIELDS) + len(Check) + 1 + 2 * most)
    checks, issued = len(_CELL_FIELDS), len(_CELL_FIELDS) + len(Check)
    if move.ignored:
        words = "dropped"
    elif move.refusal is not None:
        refusal = _REFUSAL_NAMES.index(move.refusal.name) + 1
        fields[:checks] = _named(kind=_REFUSED, refusal=refusal)
        words = f'refused, "{move.refusal.phrase}"'
    else:
        fields[:checks] = _named(
            kind=_TAKEN,
            stays=int(stays),
            target=move.target,
            keep=move.keep,
            lifecycle=_lifecycle(move),
        )
        for slot, check in enumerate(move.checks):
            fields[checks + slot] = list(Check).index(check) + 1
        fields[issued] = len(move.issues)
        said = [f"checks {check.value}" for check in move.checks]
        said += [] if stays else [f"to {chart.states[move.target]}"]
        for slot, (make, completion) in enumerate(move.issues):
            fields[issued + 1 + 2 * slot] = ACTIONS.index(make) + 1
            done = 0 if completion is None else COMPLETIONS.index(completion) + 1
            fields[issued + 2 + 2 * slot] = done
            said.append(f"issues {make.__name__}" + ("" if done == 0 else f" ({completion})"))
        words = "taken" + "".join(f", {each}" for each in said)
    return " ".join(map(str, fields)), words


def _named(**given: int) -> list[int]:
    """A cell's first fields, in `_CELL_FIELDS`' order: those `given` by name, else 0."""
    return [given.get(name, 0) for name in _CELL_FIELDS]


def _lifecycle(move: Plan) -> int:
    return 0 if move.lifecycle is None else LIFECYCLE_EVENTS.index(move.lifecycle) + 1


def coordinator() -> str:
    """The adapter: a call becomes one chart event, the chart takes the step."""
    return fixed("adapter")

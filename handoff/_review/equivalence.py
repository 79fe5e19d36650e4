"""The compiled table proved equal to the interpreted chart on every reachable (state, event).

`compare` is a pure function of the chart, usable by any test or review.  It drives real
coordinators to find the reachable states, so it sits above both the coordinator and the
interpreter, and neither has to know about the other's checker.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from handoff._chart.base import HandoffChart
from handoff._chart.shipped import CHARTS
from handoff._chart.vocabulary import ChartEvent
from handoff._compile.interpreted import InterpretedChart
from handoff._compile.table import CompiledChart, Step, compiled
from handoff._coordinator import probe as probe
from handoff._coordinator.binding import FITTING_OUTCOME
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._system.call import HANDOFF_ID
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffFact
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffOrder,
    KvTransferTimingMode,
)

__all__ = ["Comparison", "Disagreement", "Payloads", "compare", "reachable"]

_PAYLOADS: dict[ChartEvent, HandoffFact] = {
    ChartEvent.SOURCE_HELD: HandoffFact.SourceHeld(
        HANDOFF_ID, HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 1.5)
    ),
    ChartEvent.DESTINATION_RESERVED: HandoffFact.DestinationReserved(HANDOFF_ID, 10),
    ChartEvent.TRANSFER_COMPLETED: HandoffFact.TransferCompleted(HANDOFF_ID),
    ChartEvent.TERMINATED: HandoffFact.Canceled(HANDOFF_ID),
}
"""A valid payload of each fact event: the reachable states are found with these."""

_UNUSABLE_HELD = (
    # The timing check refuses a NaN bandwidth.
    HandoffFact.SourceHeld(
        HANDOFF_ID, HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, math.nan)
    ),
    # The timing check passes (no full-prompt tokens, no delay); the delay check refuses the
    # transfer of the reserved tokens, which overflows at so small a bandwidth.
    HandoffFact.SourceHeld(
        HANDOFF_ID,
        HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 0, 1024, 5e-324),
    ),
)
_COMPARED: dict[ChartEvent, tuple[HandoffFact, ...]] = {
    **{event: (fact,) for event, fact in _PAYLOADS.items()},
    ChartEvent.SOURCE_HELD: (_PAYLOADS[ChartEvent.SOURCE_HELD], *_UNUSABLE_HELD),
}
"""What `compare` gives each fact event by default: one payload each check passes, and for
`SourceHeld`, whose payload both checks judge, one that fails each."""


@attrs.frozen
class Disagreement:
    """A cell where the compiled table and python-statemachine part ways."""

    state: str
    event: ChartEvent
    compiled: str
    interpreted: str


@attrs.frozen
class Comparison:
    """Compiled vs interpreted over every reachable cell of one chart."""

    chart: str
    cells: int
    """How many (state, event) cells were compared."""
    disagreements: tuple[Disagreement, ...]

    @property
    def holds(self) -> bool:
        """Whether the two agree on every compared cell."""
        return not self.disagreements


def reachable(
    chart: HandoffOrder | type[HandoffChart], table: CompiledChart | None = None
) -> dict[str, HandoffCoordinatorCore]:
    """One compiled coordinator per reachable chart state, found breadth-first from a fresh one
    by starting it, giving it each fact, and acknowledging or failing each issued action.

    `table`: the table to run instead of the chart's own compilation (one under review)."""
    first = _coordinator(chart, table)
    found = {first.chart_state: first}
    queue = deque([first])
    while queue:
        coordinator = queue.popleft()
        for call in _calls(coordinator):
            twin = coordinator.fork()
            try:
                call(twin)
            except HandoffError:
                continue
            if twin.chart_state not in found:
                found[twin.chart_state] = twin
                queue.append(twin)
    return found


Payloads = Mapping[ChartEvent, Sequence[HandoffFact]]
"""The facts each fact event is given with, when compared: usable and unusable payloads."""


def compare(
    chart: HandoffOrder | type[HandoffChart],
    table: CompiledChart | None = None,
    payloads: Payloads | None = None,
) -> Comparison:
    """Give every event, in every reachable state, to the compiled table and to
    python-statemachine started in that state (one instance per state); report where they
    differ.  A fact event is given once with each of its `payloads` (default: one valid
    payload each, and for `SourceHeld` one each check refuses), so a check that only one of
    the two runs is a disagreement.

    `table`: the table to judge instead of the chart's own compilation (one under review)."""
    facts = payloads if payloads is not None else _COMPARED
    disagreements = []
    cells = 0
    found = reachable(chart, table)
    classes = _class_states(chart)
    for state_id, coordinator in found.items():
        if state_id not in classes:
            disagreements.append(_missing(state_id))
            continue
        interpreter = InterpretedChart(chart, state_id)
        for event in ChartEvent:
            for fact in facts.get(event, ()) or (None,):
                interpreter.move_to(state_id)
                expected = _compiled_cell(coordinator, event, fact)
                actual = _interpreted_cell(interpreter, coordinator, event, fact)
                if expected != actual:
                    disagreements.append(Disagreement(state_id, event, expected, actual))
                cells += 1
    name = next(iter(found.values())).chart_name
    return Comparison(name, cells, tuple(disagreements))


def _class_states(chart: HandoffOrder | type[HandoffChart]) -> tuple[str, ...]:
    return compiled(CHARTS[chart] if isinstance(chart, HandoffOrder) else chart).states


def _missing(state_id: str) -> Disagreement:
    return Disagreement(
        state_id, ChartEvent.START, f"has state {state_id}", "the chart class has no such state"
    )


def _coordinator(
    chart: HandoffOrder | type[HandoffChart], table: CompiledChart | None
) -> HandoffCoordinatorCore:
    if table is not None:
        return probe.for_table(HANDOFF_ID, table)
    if isinstance(chart, HandoffOrder):
        chart = CHARTS[chart]
    return HandoffCoordinatorCore(HANDOFF_ID, chart=chart)


def _calls(
    coordinator: HandoffCoordinatorCore,
) -> Iterator[Callable[[HandoffCoordinatorCore], Any]]:
    yield HandoffCoordinatorCore.start
    for fact in _PAYLOADS.values():
        yield functools.partial(_give_fact, fact=fact)
    for action_id, action in coordinator.issued_actions():
        for outcome in (FITTING_OUTCOME.get(type(action)), HandoffActionOutcome.failed("review")):
            if outcome is not None:
                yield functools.partial(_acknowledge, action_id=action_id, outcome=outcome)


def _give_fact(coordinator: HandoffCoordinatorCore, fact: HandoffFact) -> object:
    return coordinator.on_fact(fact)


def _acknowledge(
    coordinator: HandoffCoordinatorCore, action_id: HandoffActionId, outcome: HandoffActionOutcome
) -> object:
    return coordinator.on_action_outcome(action_id, outcome)


def _compiled_cell(
    coordinator: HandoffCoordinatorCore, event: ChartEvent, fact: HandoffFact | None
) -> str:
    table = probe.table(coordinator)
    step = table.step(table.index(coordinator.chart_state), event)
    # Described as the coordinator takes it (`handoff._coordinator.step.take`): a refusal or a drop
    # comes before the checks and runs none, so a check the table carries but never runs
    # is a disagreement, not a pass.
    if step.refusal is not None or step.ignored:
        return _describe(attrs.evolve(step, checks=()), None, table.states)
    try:
        delay = probe.run_checks(coordinator, step.checks, fact) if step.checks else None
    except HandoffError as error:
        return f"check failed: {error}"
    return _describe(step, delay, table.states)


def _interpreted_cell(
    interpreter: InterpretedChart,
    coordinator: HandoffCoordinatorCore,
    event: ChartEvent,
    fact: HandoffFact | None,
) -> str:
    states = interpreter.table.states
    try:
        step, delay = interpreter.decide(
            states.index(coordinator.chart_state),
            event,
            functools.partial(probe.run_checks, coordinator),
            fact,
        )
    except HandoffError as error:
        return f"check failed: {error}"
    return _describe(step, delay, states)


def _describe(step: Step, outcome: float | None, states: tuple[str, ...]) -> str:
    if step.refusal is not None:
        return f"refuses with {step.refusal.name}"
    words = ["drops it"] if step.ignored else []
    if step.target != step.source:
        words.append(f"goes to {states[step.target]}")
    elif not step.ignored:
        words.append("stays")
    if step.checks:
        words.append("checks " + ", ".join(check.value for check in step.checks))
    if step.effects:
        words.append("issues " + ", ".join(effect.name for effect in step.effects))
    if outcome is not None:
        words.append(f"with delay {outcome} ms")
    return ", ".join(words)

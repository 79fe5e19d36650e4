"""The compiled table proved equal to the interpreted chart on every reachable (state, event).

`compare` is a pure function of the chart, usable by any test or review.  It drives real
coordinators to find the reachable states, so it sits above both the coordinator and the
interpreter, and neither has to know about the other's checker.
"""

from __future__ import annotations

import functools
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from handoff import _probe as probe
from handoff._binding import FITTING_OUTCOME
from handoff._chart_base import HandoffChart
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._interpreted import InterpretedChart
from handoff._messages import HandoffFact
from handoff._table import CompiledChart, Step
from handoff._timing import HandoffTransferTiming
from handoff._values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
)
from handoff._vocabulary import ChartEvent

__all__ = ["Comparison", "Disagreement", "compare", "reachable"]

_HANDOFF_ID = HandoffId(uuid.UUID(int=1))
_PAYLOADS: dict[ChartEvent, HandoffFact] = {
    ChartEvent.SOURCE_HELD: HandoffFact.SourceHeld(
        _HANDOFF_ID, HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 1.5)
    ),
    ChartEvent.DESTINATION_RESERVED: HandoffFact.DestinationReserved(_HANDOFF_ID, 10),
    ChartEvent.TRANSFER_COMPLETED: HandoffFact.TransferCompleted(_HANDOFF_ID),
    ChartEvent.TERMINATED: HandoffFact.Canceled(_HANDOFF_ID),
}
"""A valid payload of each fact event: the reachable states are found with these."""


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


def compare(
    chart: HandoffOrder | type[HandoffChart], table: CompiledChart | None = None
) -> Comparison:
    """Give every event, in every reachable state, to the compiled table and to a fresh
    python-statemachine instance started in that state; report where they differ.

    `table`: the table to judge instead of the chart's own compilation (one under review)."""
    disagreements = []
    cells = 0
    found = reachable(chart, table)
    for state_id, coordinator in found.items():
        for event in ChartEvent:
            expected = _compiled_cell(coordinator, event)
            actual = _interpreted_cell(chart, coordinator, event)
            if expected != actual:
                disagreements.append(Disagreement(state_id, event, expected, actual))
            cells += 1
    name = next(iter(found.values())).chart_name
    return Comparison(name, cells, tuple(disagreements))


def _coordinator(
    chart: HandoffOrder | type[HandoffChart], table: CompiledChart | None
) -> HandoffCoordinatorCore:
    if table is not None:
        return probe.for_table(_HANDOFF_ID, table)
    if isinstance(chart, HandoffOrder):
        return HandoffCoordinatorCore(_HANDOFF_ID, chart)
    return HandoffCoordinatorCore(_HANDOFF_ID, chart=chart)


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


def _compiled_cell(coordinator: HandoffCoordinatorCore, event: ChartEvent) -> str:
    table = probe.table(coordinator)
    step = table.step(table.index(coordinator.chart_state), event)
    try:
        delay = (
            probe.run_checks(coordinator, step.checks, _PAYLOADS.get(event))
            if step.checks
            else None
        )
    except HandoffError as error:
        return f"check failed: {error}"
    return _describe(step, delay)


def _interpreted_cell(
    chart: HandoffOrder | type[HandoffChart], coordinator: HandoffCoordinatorCore, event: ChartEvent
) -> str:
    table = probe.table(coordinator)
    state = table.index(coordinator.chart_state)
    interpreter = InterpretedChart(chart, coordinator.chart_state)
    try:
        step, delay = interpreter.decide(
            state, event, functools.partial(probe.run_checks, coordinator), _PAYLOADS.get(event)
        )
    except HandoffError as error:
        return f"check failed: {error}"
    return _describe(step, delay)


def _describe(step: Step, outcome: float | None) -> str:
    if step.refusal is not None:
        return f"refused {step.refusal.name} at {step.target}"
    return (
        f"to {step.target}, ignored={step.ignored}, checks={[c.name for c in step.checks]}, "
        f"effects={[e.name for e in step.effects]}, delay={outcome}"
    )

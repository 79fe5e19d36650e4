"""A chart run by python-statemachine itself: the reference the compiled table must match.

`compare` proves a chart's compiled table equal to the interpreted chart on every reachable
(state, event) cell; it is a pure function of the chart, usable by any test or review.
"""

from __future__ import annotations

import functools
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from handoff._binding import FITTING_OUTCOME
from handoff._chart_base import HandoffChart
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._messages import HandoffFact
from handoff._table import Step, compiled
from handoff._timing import HandoffTransferTiming
from handoff._values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
)
from handoff._vocabulary import IGNORE, ChartEvent, Check, Effect, Refusal

CheckRunner = Callable[[tuple[Check, ...], HandoffFact | None], float | None]
"""Runs a step's payload checks for the call being decided; returns the checked delay."""

__all__ = ["Comparison", "Disagreement", "InterpretedChart", "compare", "reachable"]


class _Refused(Exception):
    """Raised by a refusal validator to stop python-statemachine before it moves."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.phrase)
        self.refusal = refusal


class _Listener:
    """Answers every word of the chart vocabulary by recording what the chart did."""

    def __init__(self) -> None:
        self.reset(None, None)

    def reset(self, run_checks: CheckRunner | None, fact: HandoffFact | None) -> None:
        self.run_checks = run_checks
        self.fact = fact
        self.effects: list[Effect] = []
        self.checks: list[Check] = []
        self.delay: float | None = None
        self.ignored = False


def _effect(effect: Effect) -> Callable[[_Listener], None]:
    def record(self: _Listener) -> None:
        self.effects.append(effect)

    return record


def _check(check: Check) -> Callable[[_Listener], None]:
    def run(self: _Listener) -> None:
        assert self.run_checks is not None
        self.checks.append(check)
        delay = self.run_checks((check,), self.fact)
        if delay is not None:
            self.delay = delay

    return run


def _refusal(refusal: Refusal) -> Callable[[_Listener], None]:
    def refuse(self: _Listener) -> None:
        raise _Refused(refusal)

    return refuse


def _ignore(self: _Listener) -> None:
    self.ignored = True


for _effect_word in Effect:
    setattr(_Listener, _effect_word.value, _effect(_effect_word))
for _check_word in Check:
    setattr(_Listener, _check_word.value, _check(_check_word))
for _refusal_word in Refusal:
    setattr(_Listener, _refusal_word.callback, _refusal(_refusal_word))
setattr(_Listener, IGNORE, _ignore)


class InterpretedChart:
    """One python-statemachine instance of a chart (or an order's chart), event by event."""

    def __init__(self, chart: HandoffOrder | type[HandoffChart], state: str | None = None) -> None:
        if isinstance(chart, HandoffOrder):
            from handoff._chart import CHARTS

            chart = CHARTS[chart]
        self._table = compiled(chart)
        self._listener = _Listener()
        self._machine: Any = chart(listeners=[self._listener], start_value=state)

    @property
    def state(self) -> str:
        """The id of the machine's current state."""
        (state,) = self._machine.configuration
        return str(state.id)

    def decide(
        self,
        state: int,
        event: ChartEvent,
        run_checks: CheckRunner,
        fact: HandoffFact | None,
    ) -> tuple[Step, float | None]:
        """Send `event`; return the step python-statemachine took and the checked delay.

        A refusal or a failed check leaves the machine where it was; a refusal comes back
        as a step carrying it, a failed check raises its `HandoffError`.
        """
        assert self.state == self._table.states[state], "interpreter out of step"
        listener = self._listener
        listener.reset(run_checks, fact)
        try:
            self._machine.send(event.value)
        except _Refused as refused:
            return Step(state, event, state, refusal=refused.refusal), None
        target = self._table.index(self.state)
        step = Step(
            source=state,
            event=event,
            target=target,
            ignored=listener.ignored,
            checks=tuple(listener.checks),
            effects=tuple(listener.effects),
        )
        return step, listener.delay


# -- equivalence ---------------------------------------------------------------------------

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


def reachable(chart: HandoffOrder | type[HandoffChart]) -> dict[str, HandoffCoordinatorCore]:
    """One compiled coordinator per reachable chart state, found breadth-first from a fresh one
    by starting it, giving it each fact, and acknowledging or failing each issued action."""
    first = _coordinator(chart)
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


def compare(chart: HandoffOrder | type[HandoffChart]) -> Comparison:
    """Give every event, in every reachable state, to the compiled table and to a fresh
    python-statemachine instance started in that state; report where they differ."""
    disagreements = []
    cells = 0
    found = reachable(chart)
    for state_id, coordinator in found.items():
        for event in ChartEvent:
            expected = _compiled_cell(coordinator, event)
            actual = _interpreted_cell(chart, coordinator, event)
            if expected != actual:
                disagreements.append(Disagreement(state_id, event, expected, actual))
            cells += 1
    name = next(iter(found.values())).chart_name
    return Comparison(name, cells, tuple(disagreements))


def _coordinator(chart: HandoffOrder | type[HandoffChart]) -> HandoffCoordinatorCore:
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
    table = coordinator.table
    step = table.step(table.index(coordinator.chart_state), event)
    try:
        delay = coordinator.run_checks(step.checks, _PAYLOADS.get(event)) if step.checks else None
    except HandoffError as error:
        return f"check failed: {error}"
    return _describe(step, delay)


def _interpreted_cell(
    chart: HandoffOrder | type[HandoffChart], coordinator: HandoffCoordinatorCore, event: ChartEvent
) -> str:
    table = coordinator.table
    state = table.index(coordinator.chart_state)
    interpreter = InterpretedChart(chart, coordinator.chart_state)
    try:
        step, delay = interpreter.decide(state, event, coordinator.run_checks, _PAYLOADS.get(event))
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

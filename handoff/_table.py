"""A chart compiled into a dense table: (state, event) → the step the chart would take.

A table is read mechanically off a python-statemachine chart class (`compile_chart`), so it
cannot drift from the chart.  `compiled` hands out one table per chart class, built on first
use; the shipped orders' tables come ready-made from a generated module, so running
handoffs of those orders needs neither python-statemachine nor the chart classes.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs

from handoff._values import HandoffCompletion, HandoffOrder
from handoff._vocabulary import IGNORE, ChartEvent, Check, Effect, Refusal

if TYPE_CHECKING:
    from statemachine import State

    from handoff._chart_base import HandoffChart

__all__ = ["CompiledChart", "Step", "StepKind", "compile_chart", "compiled"]


class StepKind(enum.StrEnum):
    """What a step does; each value equals the word it was once spelled with."""

    REFUSED = "refused"
    """The call raises and nothing changes."""
    IGNORED = "ignored"
    """Nothing changes and nothing is journaled."""
    MOVES = "moves"
    """The handoff goes to another state, or issues actions."""
    STAYS = "stays"
    """An acknowledgement is journaled in place."""


_REFUSALS = {refusal.callback: refusal for refusal in Refusal}


@attrs.frozen
class Step:
    """What a chart does with one event in one state."""

    source: int
    event: ChartEvent
    target: int
    refusal: Refusal | None = None
    """Set when the state refuses the event: the call raises and nothing changes."""
    ignored: bool = False
    """Set when the state drops the event: nothing changes and nothing is journaled."""
    checks: tuple[Check, ...] = ()
    """Payload checks run, in order, before anything changes."""
    effects: tuple[Effect, ...] = ()
    """Actions issued, in order, when the step is taken."""

    @property
    def kind(self) -> StepKind:
        """What the step does."""
        if self.refusal is not None:
            return StepKind.REFUSED
        if self.ignored:
            return StepKind.IGNORED
        if self.target != self.source or self.effects:
            return StepKind.MOVES
        return StepKind.STAYS

    @property
    def completion(self) -> HandoffCompletion | None:
        """The completion this step records, if it completes the handoff."""
        for effect in self.effects:
            if effect.completion is not None:
                return effect.completion
        return None


@attrs.frozen
class CompiledChart:
    """One chart as a table; state ids index `states`, events index rows."""

    name: str
    """The chart's title: what reports, diagrams and traces call it."""
    order: HandoffOrder
    """Which lifecycle a success must record."""
    states: tuple[str, ...]
    """State ids in definition order; `states[0]` is the initial state."""
    names: tuple[str, ...]
    """Human names of the states, for traces and diagrams."""
    rows: tuple[tuple[Step, ...], ...]
    """`rows[state][event.index]`: every pair has exactly one step."""
    complete: frozenset[int]
    """States in which the handoff is complete."""

    def step(self, state: int, event: ChartEvent) -> Step:
        """The step the chart takes for `event` in `state`."""
        return self.rows[state][event.index]

    def index(self, state_id: str) -> int:
        """The table index of a state id."""
        return self.states.index(state_id)

    def steps(self) -> Iterator[Step]:
        """Every step of the table, state by state in event order."""
        for row in self.rows:
            yield from row


@functools.cache
def compiled(chart: HandoffOrder | type[HandoffChart]) -> CompiledChart:
    """The table of a chart class, or of an order's shipped chart (built once, on first use)."""
    if isinstance(chart, HandoffOrder):
        from handoff._chart import CHARTS

        chart = CHARTS[chart]
    return compile_chart(chart)


def compile_chart(chart: type[HandoffChart]) -> CompiledChart:
    """Read `chart`'s states and transitions into a `CompiledChart` (anew on every call)."""
    states: list[State] = sorted(chart.states, key=lambda state: not state.initial)
    index = {state.id: position for position, state in enumerate(states)}
    rows = tuple(tuple(_step(state, event, index) for event in ChartEvent) for state in states)
    complete = frozenset(index[state.id] for state in states if any(_words(state.enter, Effect)))
    return CompiledChart(
        name=chart.title,
        order=chart.order,
        states=tuple(state.id for state in states),
        names=tuple(str(state.name) for state in states),
        rows=rows,
        complete=complete,
    )


def _step(state: State, event: ChartEvent, index: dict[str, int]) -> Step:
    (transition,) = (t for t in state.transitions if event.value in t.events)
    target = transition.target
    effects = list(_words(transition.on, Effect))
    if not transition.internal:
        effects += _words(target.enter, Effect)
    validators = [spec.attr_name for spec in transition.validators if not spec.is_convention]
    refusals = [_REFUSALS[name] for name in validators if name in _REFUSALS]
    return Step(
        source=index[state.id],
        event=event,
        target=index[target.id],
        refusal=refusals[0] if refusals else None,
        ignored=any(spec.attr_name == IGNORE for spec in transition.on if not spec.is_convention),
        checks=tuple(_words(transition.validators, Check)),
        effects=tuple(effects),
    )


def _words(specs: Any, vocabulary: type[Effect] | type[Check]) -> list[Any]:
    names = {member.value: member for member in vocabulary}
    return [names[spec.attr_name] for spec in specs if spec.attr_name in names]

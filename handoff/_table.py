"""A chart compiled into a dense table: (state, event) → the step the chart would take.

The table is read mechanically off the python-statemachine definition, once per order,
on first use, so it cannot drift from the chart: there is nothing to regenerate.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import attrs
from statemachine import State

from handoff._chart import CHARTS
from handoff._values import HandoffCompletion, HandoffOrder
from handoff._vocabulary import IGNORE, ChartEvent, Check, Effect, HandoffChart, Refusal

__all__ = ["CompiledChart", "Step", "compiled"]

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
    def kind(self) -> str:
        """What the step does: "refused", "ignored", "moves" (to another state or issuing
        actions) or "stays" (an acknowledgement journaled in place)."""
        if self.refusal is not None:
            return "refused"
        if self.ignored:
            return "ignored"
        if self.target != self.source or self.effects:
            return "moves"
        return "stays"

    @property
    def completion(self) -> HandoffCompletion | None:
        """The completion this step records, if it completes the handoff."""
        for effect in self.effects:
            if effect.completion is not None:
                return effect.completion
        return None


@attrs.frozen
class CompiledChart:
    """One order's chart as a table; state ids index `states`, events index rows."""

    order: HandoffOrder
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
def compiled(order: HandoffOrder) -> CompiledChart:
    """The compiled chart of `order` (built once, on first use)."""
    return compile_chart(CHARTS[order])


def compile_chart(chart: type[HandoffChart]) -> CompiledChart:
    """Read `chart`'s states and transitions into a `CompiledChart`."""
    states: list[State] = sorted(chart.states, key=lambda state: not state.initial)
    index = {state.id: position for position, state in enumerate(states)}
    rows = tuple(tuple(_step(state, event, index) for event in ChartEvent) for state in states)
    complete = frozenset(index[state.id] for state in states if any(_words(state.enter, Effect)))
    return CompiledChart(
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

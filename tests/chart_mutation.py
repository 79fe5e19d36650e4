"""Mutants derived from a real chart: its states and rules, with some events declared anew.

python-statemachine shares `State` objects with subclasses, so a mutant is never a subclass
of a real chart: `mutant` builds a fresh chart class with fresh states and copies every
transition of the real chart onto them, except for the events it is given, which the caller
declares again with the ordinary means (`s.a.to(s.b, on=...)`, `refused(...)`, `from_`).
Only the callbacks a chart names are copied; python-statemachine's convention callbacks
(`on_transition`, `on_enter_state`, ...) come back when the new class is defined.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import attrs
from statemachine import State
from statemachine.callbacks import CallbackSpec
from statemachine.exceptions import InvalidDefinition
from statemachine.transition import Transition
from statemachine.transition_list import TransitionList

from handoff._chart_base import HandoffChart
from handoff._table import CompiledChart, compile_chart
from handoff._vocabulary import ChartEvent

__all__ = ["Rule", "mutant", "patched"]

Rule = Callable[[SimpleNamespace], TransitionList]
"""An event's transitions, declared on the mutant's states (`s.transferring`, ...)."""


def mutant(chart: type[HandoffChart], name: str, doc: str, **rules: Rule) -> type[HandoffChart]:
    """A chart named `name` that is `chart` except for the events in `rules`.

    Each rule receives the new chart's states by id and returns that event's transitions;
    (state, event) pairs it leaves out get their event kind's default, as in any chart.
    """
    _check_copyable(chart)
    states = {state.id: _fresh(state) for state in chart.states}
    fresh = SimpleNamespace(**states)
    declared = {event: rule(fresh) for event, rule in rules.items()}
    copied = {
        event.value: _copied(chart, event, states)
        for event in ChartEvent
        if event.value not in rules
    }
    namespace = {"__doc__": doc, "order": chart.order, **states, **copied, **declared}
    return type(name, (HandoffChart,), namespace)


def _fresh(state: State) -> State:
    return State(
        str(state.name), initial=state.initial, final=state.final, enter=_named(state.enter)
    )


def _copied(
    chart: type[HandoffChart], event: ChartEvent, states: dict[str, State]
) -> TransitionList:
    copies = TransitionList()
    for state in chart.states:
        for transition in state.transitions:
            if event.value in transition.events:
                copies.add_transitions(_copy(transition, states))
    return copies


def _copy(transition: Transition, states: dict[str, State]) -> TransitionList:
    (target,) = transition.targets
    to: Any = states[transition.source.id].to  # python-statemachine leaves this builder untyped
    copies: TransitionList = to(
        states[target.id],
        internal=transition.internal,
        validators=_named(transition.validators),
        on=_named(transition.on),
    )
    return copies


def _named(specs: Iterable[CallbackSpec]) -> list[str]:
    """The callbacks a chart names, in order, without python-statemachine's conventions."""
    return [spec.attr_name for spec in specs if not spec.is_convention]


def _check_copyable(chart: type[HandoffChart]) -> None:
    """Refuse a chart using something `mutant` would silently drop."""
    for state in chart.states:
        dropped = _named(state.exit) + _named(state.invoke)
        if state.states or dropped:
            raise InvalidDefinition(f"mutant cannot copy {chart.__name__}.{state.id}")
        for transition in state.transitions:
            if _transition_drops(transition):
                raise InvalidDefinition(f"mutant cannot copy {chart.__name__}: {transition}")


def _transition_drops(transition: Transition) -> bool:
    extra = _named(transition.cond) + _named(transition.before) + _named(transition.after)
    return bool(extra) or len(transition.targets) != 1 or transition.initial


def patched(
    chart: type[HandoffChart], cells: dict[tuple[str, ChartEvent], dict[str, Any]]
) -> CompiledChart:
    """`chart` compiled, with the given cells' steps changed (`{(state, event): fields}`).

    For breaks the chart text cannot express because definition-time checks refuse them (a
    refusal under another event, a misplaced check): the review must still catch them in runs.
    """
    table = compile_chart(chart)
    rows = [list(row) for row in table.rows]
    for (state, event), fields in cells.items():
        source = table.index(state)
        rows[source][event.index] = attrs.evolve(rows[source][event.index], **fields)
    return attrs.evolve(table, rows=tuple(tuple(row) for row in rows))

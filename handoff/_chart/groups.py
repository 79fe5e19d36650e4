"""Groups: a chart's compound states, and how a rule on a group reaches the states inside.

A group (python-statemachine's `class name(State.Compound)`) is a state containing states.
A handoff is always in one state of its own, never in a group alone: entering a group enters
its initial state (`entered`), and a rule on a group applies to each state inside that has
no rule of its own for the event (`rule_for`: the innermost rule wins).  That is what the
compiled table, which is flat, reads; the drawings read the declared groups (`groups`).

Pure reads of python-statemachine's states, which this module never imports: the start-up
path compiles nothing, but `handoff._compile.table` imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from handoff._chart.vocabulary import ChartEvent

if TYPE_CHECKING:
    from statemachine import State
    from statemachine.transition import Transition

__all__ = ["Group", "entered", "every_state", "groups", "leaves", "rule_for", "rules_of"]


def every_state(states: Iterable[State]) -> Iterator[State]:
    """`states` and every state inside them, in the order the chart declares them."""
    for state in states:
        yield state
        yield from every_state(state.states)


def leaves(states: Iterable[State]) -> Iterator[State]:
    """The states a handoff can be in: every state that is not a group, in declared order."""
    return (state for state in every_state(states) if not state.states)


def entered(state: State) -> State:
    """The state a handoff is in once it enters `state`: a group's initial state, inwards."""
    while state.states:
        state = next(inner for inner in state.states if inner.initial)
    return state


def rules_of(state: State, event: str) -> list[Transition]:
    """The rules `state` itself declares for `event` (not python-statemachine's own entry
    transitions into a group's initial state)."""
    return [t for t in state.transitions if not t.initial and event in t.events]


def rule_for(state: State, event: str) -> Transition | None:
    """The rule that decides `event` in `state`: its own, else its nearest group's."""
    owner: State | None = state
    while owner is not None:
        found = rules_of(owner, event)
        if found:
            return found[0]
        owner = owner.parent
    return None


@attrs.frozen
class Group:
    """One declared group, as the drawings show it."""

    id: str
    name: str
    parent: str | None
    """The group it sits in, if any."""
    states: tuple[str, ...]
    """Every state inside it that a handoff can be in, in declared order."""
    cells: frozenset[tuple[str, ChartEvent]]
    """The (state, event) cells inside it that a rule on this group decides."""


def groups(chart: Any) -> tuple[Group, ...]:
    """The groups `chart` (a `HandoffChart` subclass) declares, outer before inner."""
    found = []
    for group in every_state(chart.states):
        if not group.states:
            continue
        inside = tuple(leaves(group.states))
        cells = frozenset(
            (state.id, event)
            for state in inside
            for event in ChartEvent
            if (rule := rule_for(state, event.value)) is not None and rule.source is group
        )
        parent = group.parent.id if group.parent is not None else None
        found.append(Group(group.id, str(group.name), parent, tuple(s.id for s in inside), cells))
    return tuple(found)

"""Deriving a chart from another: fresh copies of the parent's states, its rules inherited.

A derived chart's class body starts with fresh copies of its parent's states (so the parent
is never touched), inherits every event it does not declare again, and keeps only the
inherited states its rules still use: a state that a renamed one replaced in every rule is
gone, while one that some rule still leaves or enters stays (and the review's Coverage names
it when nothing enters it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from statemachine import State
from statemachine.exceptions import InvalidDefinition
from statemachine.transition import Transition
from statemachine.transition_list import TransitionList

from handoff._chart.groups import every_state, rules_of
from handoff._chart.vocabulary import ChartEvent

Chart = Any
"""A `HandoffChart` subclass (this module sits below `handoff._chart.base`, which uses it)."""

__all__ = ["adopt", "body_transitions", "drop_unused", "fresh", "inherit", "named", "restore"]


def named(specs: Iterable[Any]) -> Iterator[str]:
    """The callback names a chart wrote (python-statemachine adds conventional ones)."""
    for spec in specs:
        if not spec.is_convention:
            yield spec.attr_name


def fresh(state: State) -> State:
    """A copy of `state` (a group with copies of the states inside) with no transitions, for
    a derived chart's body."""
    inner = [fresh(child)._set_id(child.id) for child in state.states]
    return State(
        str(state.name),
        initial=state.initial,
        final=state.final,
        enter=list(named(state.enter)),
        states=inner or None,
    )


def restore(parent: Chart, marks: dict[int, int]) -> None:
    """Undo whatever a derived chart's body added to its parent's states."""
    for state in every_state(parent.states):
        del state.transitions.transitions[marks[id(state)] :]


def adopt(name: str, attrs: dict[str, Any], states: dict[str, State], parent: Chart | None) -> None:
    """Move every transition the body wrote on a state that is not the chart's own onto the
    chart's state of the same id, when it is the parent's; refuse any other foreign state.

    `states`: every state of the chart by id, those inside groups included."""
    own = {id(state) for state in states.values()}
    inherited = {id(state) for state in every_state(parent.states)} if parent is not None else set()
    foreign: list[State] = []

    def mapped(state: State) -> State:
        if id(state) in own:
            return state
        if id(state) not in inherited or state.id not in states:
            foreign.append(state)
            return state
        return states[state.id]

    for transition in body_transitions(attrs):
        source = transition.source
        if id(source) not in own:
            source.transitions.transitions[:] = [
                other for other in source.transitions.transitions if other is not transition
            ]
        transition.source = mapped(source)
        transition._targets = [mapped(target) for target in transition._targets]
        transition.is_self = transition.target is transition.source
        if id(source) not in own and id(transition.source) in own:
            transition.source.transitions.add_transitions(transition)
    if foreign:
        raise InvalidDefinition(
            f"{name}: uses {sorted({str(state.id) for state in foreign})}, not states of this "
            "chart: a chart may use its own states and its parent chart's only"
        )


def body_transitions(attrs: dict[str, Any]) -> Iterator[Transition]:
    """Every transition a class body wrote, once each."""
    seen: set[int] = set()
    for value in attrs.values():
        if isinstance(value, TransitionList):
            for transition in value.transitions:
                if id(transition) not in seen:
                    seen.add(id(transition))
                    yield transition


def inherit(parent: Chart, attrs: dict[str, Any], states: dict[str, State]) -> None:
    """Copy onto `states` (every state by id) each event of `parent` the derived chart does
    not declare."""
    for event in ChartEvent:
        if event.value in attrs:
            continue
        copies = TransitionList()
        for state in every_state(parent.states):
            for transition in rules_of(state, event.value):
                (target,) = transition.targets
                copy = Transition(
                    states[state.id],
                    states[target.id],
                    internal=transition.internal,
                    validators=list(named(transition.validators)) or None,
                    on=list(named(transition.on)) or None,
                )
                states[state.id].transitions.add_transitions(copy)
                copies.add_transitions(copy)
        if copies.transitions:
            attrs[event.value] = copies


def drop_unused(attrs: dict[str, Any], states: dict[str, State], copies: set[int]) -> None:
    """Forget the inherited state copies (`copies`, and the states inside them) that no rule
    leaves or enters; a group is kept while a rule leaves or enters it or a state inside."""
    used = set()
    for state in every_state(states.values()):
        for transition in state.transitions:
            used.add(id(transition.source))
            used.update(id(target) for target in transition.targets)

    def unused(state: State) -> bool:
        return not state.initial and not {id(inner) for inner in every_state([state])} & used

    def prune(group: State) -> None:
        for inner in list(group.states):
            if unused(inner):
                group.states.remove(inner)
                delattr(group, inner.id)
            else:
                prune(inner)

    for key, state in list(states.items()):
        if id(state) not in copies:
            continue
        if unused(state):
            del states[key]
            del attrs[key]
        else:
            prune(state)

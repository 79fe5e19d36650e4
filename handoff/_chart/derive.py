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

from handoff._chart.groups import every_state, leaves, rule_for, rules_of
from handoff._chart.vocabulary import ChartEvent

Chart = Any
"""A `HandoffChart` subclass (this module sits below `handoff._chart.base`, which uses it)."""

__all__ = [
    "adopt",
    "body_transitions",
    "check_regrouped",
    "drop_unused",
    "fresh",
    "inherit",
    "lost_group_rules",
    "named",
    "restore",
]


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


def check_regrouped(
    name: str, parent: Chart, attrs: dict[str, Any], states: dict[str, State]
) -> None:
    """Refuse a group redeclared without a state of the parent's that a rule still names (and
    a parent's state redeclared as something else): the rule would have no state to stand on.

    `states`: every state of the derived chart by id; `attrs`: its body, before inheriting."""
    for lost in every_state(parent.states):
        if lost.id in states:
            continue
        rules = _naming_rules(lost, parent, attrs)
        if not rules:
            continue  # renamed in every rule: the state is gone, as a renamed state is
        if lost.parent is None:
            raise InvalidDefinition(
                f"{name}: {lost.id!r} is not a state here, yet rules still name it: "
                f"{', '.join(rules)}; declare {lost.id!r} as a State, or leave it out"
            )
        group = _outermost_redeclared(lost, states)
        raise InvalidDefinition(
            f"{name}: redeclares {group!r} without {lost.id!r}, yet rules still name it: "
            f"{', '.join(rules)}; keep {lost.id!r} in {group!r}, or rename it there: declare "
            f"the new state inside {group!r} and name it instead of {lost.id!r} in every rule "
            "that named it, redeclaring those events"
        )


def _naming_rules(lost: State, parent: Chart, attrs: dict[str, Any]) -> list[str]:
    """The events whose rules still name `lost`, as a message says them: those the body
    wrote with the parent's state, and those the derived chart inherits."""

    def names(transitions: Iterable[Transition]) -> bool:
        return any(
            state is lost
            for transition in transitions
            for state in (transition.source, *transition.targets)
        )

    found = []
    for event in ChartEvent:
        if event.value in attrs:
            written = attrs[event.value]
            if isinstance(written, TransitionList) and names(written.transitions):
                found.append(f"{event.value!r} (written here)")
        elif names(t for state in every_state(parent.states) for t in rules_of(state, event.value)):
            found.append(f"{event.value!r} (inherited from {parent.__name__})")
    return found


def _outermost_redeclared(lost: State, states: dict[str, State]) -> str:
    """The id of the group around `lost` (inside one) that the derived chart declares anew."""
    group = lost
    while group.parent is not None and group.id not in states:
        group = group.parent
    return str(group.id)


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


# -- what a renamed state lost ---------------------------------------------------------------


def lost_group_rules(chart: Chart) -> tuple[str, ...]:
    """For each state of `chart` declared outside a group of its parent chart that held the
    state it replaces (a renamed state) or itself (a state moved out), the events the parent's
    state took from that group and this one has no rule for, said for a reviewer.

    A state declared in a chart body sits outside every group, so a state renamed that way
    loses the group's rules (its cleanup, say) unless it is declared inside the group."""
    parent = next((base for base in chart.__bases__ if getattr(base, "states", None)), None)
    if parent is None:
        return ()
    theirs = {state.id: state for state in every_state(parent.states)}
    kept = {state.id for state in every_state(chart.states)}
    gone = [state for state in leaves(parent.states) if state.id not in kept]
    notes: list[str] = []
    for new in leaves(chart.states):
        if new.id in theirs:
            notes.extend(_lost(parent, theirs[new.id], new))
            continue
        ends = _ends(chart, new)
        for old in gone:
            if ends & _ends(parent, old):
                notes.extend(_lost(parent, old, new))
    return tuple(notes)


def _ends(chart: Chart, state: State) -> set[tuple[str, str, bool]]:
    """Each (event, other state's id, whether it enters `state`) of the rules that enter or
    leave `state`: a renamed state's rules are its predecessor's with its name swapped in."""
    found = set()
    for source in every_state(chart.states):
        for transition in source.transitions:
            if transition.initial:
                continue
            for event in transition.events:
                if transition.target is state and source is not state:
                    found.add((str(event.id), str(source.id), True))
                if source is state and transition.target is not state:
                    found.add((str(event.id), str(transition.target.id), False))
    return found


def _lost(parent: Chart, old: State, new: State) -> Iterator[str]:
    """What `new`, outside a group that held `old`, lacks of the rules `old` took from it:
    one note per group."""
    around = {str(group.id) for group in _groups_around(new)}
    by_group: dict[str, list[str]] = {}
    for event in ChartEvent:
        rule = rule_for(old, event.value)
        if rule is None or rule.source is old or str(rule.source.id) in around:
            continue
        if rule_for(new, event.value) is None:
            by_group.setdefault(str(rule.source.id), []).append(event.value)
    renamed = new.id != old.id
    was = f"replaces {old.id} but " if renamed else ""
    place = f", with {new.id} in place of {old.id}" if renamed else f" with {new.id} inside"
    for group, events in by_group.items():
        yield (
            f"{new.id} {was}has no rule for {', '.join(events)}, which {old.id} took from "
            f"group {group!r} of {parent.__name__}: {new.id} is declared outside it; declare "
            f"it inside {group!r} (redeclare the group{place}), or give it those rules"
        )


def _groups_around(state: State) -> Iterator[State]:
    group = state.parent
    while group is not None:
        yield group
        group = group.parent

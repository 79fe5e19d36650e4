"""What a handoff chart is: the base class, the words as transitions, and what happens when
a chart class is defined.

Defining a chart completes it and checks it at once: every (state, event) pair the chart
leaves out gets its event kind's default, and anything the compiled table could not read
faithfully is refused with `InvalidDefinition`.  A chart may derive from another chart:
it gets fresh copies of the parent's states (so the parent is never touched), inherits
every event it does not declare again, and may add states of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, cast

from statemachine import State, StateChart
from statemachine.exceptions import InvalidDefinition
from statemachine.factory import StateMachineMetaclass
from statemachine.transition import Transition
from statemachine.transition_list import TransitionList

from handoff._chart_rules import text_problem
from handoff._public import exported
from handoff._values import HandoffOrder
from handoff._vocabulary import (
    IGNORE,
    JOURNAL_REFUSALS,
    WORDS,
    ChartEvent,
    Effect,
    EventKind,
    Refusal,
)

__all__ = ["HandoffChart", "acknowledged", "ignored", "refused"]


def refused(refusal: Refusal, *states: State) -> TransitionList:
    """Declare that `states` refuse the event with `refusal` (and stay where they are).

    Joined to an event's transitions in a chart body,
    `source_held = prefill_running.to(…) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle)`; the
    coordinator raises the refusal's error and changes nothing (docs/writing-a-chart.md).
    """
    return _self_loops(states, validators=refusal.callback)


def ignored(*states: State) -> TransitionList:
    """Declare that `states` drop the event: it changes nothing and is not journaled.

    The call returns `[]`, as a repeated fact does (docs/writing-a-chart.md).
    """
    return _self_loops(states, on=IGNORE)


def acknowledged(*states: State) -> TransitionList:
    """Declare that `states` journal the acknowledgement without moving or issuing.

    The outcome is recorded (a repeat of it is then a duplicate, a different one a conflict),
    and the call returns `[]` (docs/writing-a-chart.md).
    """
    return _self_loops(states)


def _self_loops(states: tuple[State, ...], **callbacks: str) -> TransitionList:
    loops = TransitionList()
    for state in states:
        to: Any = state.to  # python-statemachine leaves this builder untyped
        loops.add_transitions(to.itself(internal=True, **callbacks))
    return loops


class _Body(dict[str, Any]):
    """A chart class body; a derived chart's starts with fresh copies of its parent's states,
    and remembers how many transitions each parent state had before the body ran."""

    parent: type[HandoffChart] | None = None
    marks: dict[int, int]


class _HandoffChartMeta(StateMachineMetaclass):
    """Completes and checks a chart when its class is defined."""

    @classmethod
    def __prepare__(mcs, name: str, bases: tuple[type, ...], /, **kwargs: Any) -> _Body:
        body = _Body()
        parents = [base for base in bases if isinstance(base, _HandoffChartMeta) and base.states]
        if len(parents) > 1:
            raise InvalidDefinition(f"{name}: a handoff chart derives from one chart at most")
        if parents:
            parent: Any = parents[0]
            body.parent = parent
            body.marks = {id(state): len(state.transitions.transitions) for state in parent.states}
            for state in parent.states:
                body[state.id] = _fresh(state)
        return body

    def __new__(
        mcs, name: str, bases: tuple[type, ...], body: dict[str, Any], /, **kwargs: Any
    ) -> _HandoffChartMeta:
        attrs = dict(body)
        parent = body.parent if isinstance(body, _Body) else None
        if parent is not None:
            # First of all: whatever the body did to the parent's states is undone.
            _restore(parent, cast("_Body", body).marks)
        states = {key: value for key, value in attrs.items() if isinstance(value, State)}
        _adopt(name, attrs, states, parent)
        if states:
            if parent is not None:
                attrs.setdefault("order", parent.order)
                _inherit(parent, attrs, states)
            if not isinstance(attrs.get("order"), HandoffOrder):
                raise InvalidDefinition(f"{name}: a handoff chart must declare its `order`")
            title = attrs.setdefault("title", name)
            if not isinstance(title, str) or not title:
                raise InvalidDefinition(f"{name}: `title` must be a non-empty str, got {title!r}")
            attrs = _with_defaults(name, attrs, list(states.values()))
        return super().__new__(mcs, name, bases, attrs)

    def __init__(
        cls, name: str, bases: tuple[type, ...], body: dict[str, Any], /, **kwargs: Any
    ) -> None:
        # python-statemachine reads the completed class body, not the one the author wrote.
        super().__init__(name, bases, dict(vars(cls)))  # type: ignore[arg-type]
        if cls.states:
            _check_words(cls)

    def add_inherited(cls, bases: Any) -> None:
        """A derived chart holds fresh copies of everything it inherits: share nothing."""


# -- derivation ----------------------------------------------------------------------------


def _fresh(state: State) -> State:
    return State(
        str(state.name), initial=state.initial, final=state.final, enter=list(_named(state.enter))
    )


def _restore(parent: type[HandoffChart], marks: dict[int, int]) -> None:
    for state in parent.states:
        del state.transitions.transitions[marks[id(state)] :]


def _adopt(
    name: str, attrs: dict[str, Any], states: dict[str, State], parent: type[HandoffChart] | None
) -> None:
    """Move every transition the body wrote on a state that is not the chart's own onto the
    chart's state of the same id, when it is the parent's; refuse any other foreign state."""
    own = {id(state) for state in states.values()}
    inherited = {id(state) for state in parent.states} if parent is not None else set()
    foreign: list[State] = []

    def mapped(state: State) -> State:
        if id(state) in own:
            return state
        if id(state) not in inherited:
            foreign.append(state)
            return state
        return states[state.id]

    for transition in _body_transitions(attrs):
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


def _body_transitions(attrs: dict[str, Any]) -> Iterator[Transition]:
    seen: set[int] = set()
    for value in attrs.values():
        if isinstance(value, TransitionList):
            for transition in value.transitions:
                if id(transition) not in seen:
                    seen.add(id(transition))
                    yield transition


def _inherit(parent: type[HandoffChart], attrs: dict[str, Any], states: dict[str, State]) -> None:
    """Copy onto `states` every event of `parent` the derived chart does not declare."""
    for event in ChartEvent:
        if event.value in attrs:
            continue
        copies = TransitionList()
        for state in parent.states:
            for transition in state.transitions:
                if event.value in transition.events:
                    (target,) = transition.targets
                    to: Any = states[state.id].to  # python-statemachine leaves this untyped
                    copies.add_transitions(
                        to(
                            states[target.id],
                            internal=transition.internal,
                            validators=list(_named(transition.validators)),
                            on=list(_named(transition.on)),
                        )
                    )
        attrs[event.value] = copies


# -- completion and checks -----------------------------------------------------------------


_COMPLETING_WORDS = frozenset(effect.value for effect in Effect if effect.completion is not None)


def _is_complete_state(state: State) -> bool:
    return any(name in _COMPLETING_WORDS for name in _named(state.enter))


def _with_defaults(name: str, attrs: dict[str, Any], states: list[State]) -> dict[str, Any]:
    """Give every (state, event) pair the chart leaves out its event kind's default."""
    attrs = dict(attrs)
    names = {id(value): key for key, value in attrs.items() if isinstance(value, State)}
    for key, value in attrs.items():
        if isinstance(value, TransitionList) and key not in ChartEvent._value2member_map_:
            raise InvalidDefinition(f"{name}: {key!r} is not a handoff chart event")
    for event in ChartEvent:
        declared = attrs.get(event.value, TransitionList())
        handled: set[int] = set()
        for transition in declared.transitions:
            if id(transition.source) in handled:
                raise InvalidDefinition(
                    f"{name}: state {names[id(transition.source)]!r} handles {event.value!r} twice"
                )
            handled.add(id(transition.source))
        missing = [state for state in states if id(state) not in handled]
        attrs[event.value] = declared | _default_handling(event, missing)
    return attrs


def _default_handling(event: ChartEvent, states: list[State]) -> TransitionList:
    complete = [state for state in states if _is_complete_state(state)]
    live = [state for state in states if not _is_complete_state(state)]
    handling: TransitionList
    if event.kind is EventKind.ACKNOWLEDGEMENT:
        handling = acknowledged(*live) | ignored(*complete)
    elif event.kind is EventKind.JOURNAL_ERROR:
        handling = refused(JOURNAL_REFUSALS[event], *live) | ignored(*complete)
    else:
        handling = ignored(*states)
    return handling


def _check_words(chart: Any) -> None:
    name = chart.__name__
    for state in chart.states:
        if state.states or any(_named(state.exit)) or any(_named(state.invoke)):
            raise InvalidDefinition(
                f"{name}: {state.id!r} has exit or invoke callbacks or inner states; a handoff "
                "chart is flat and acts on transitions and on entering a state only"
            )
        for transition in state.transitions:
            _check_transition(name, transition, state)


def _check_transition(name: str, transition: Transition, state: State) -> None:
    guards = list(_named(transition.cond))
    if guards:
        raise InvalidDefinition(
            f"{name}: cond/unless {guards} on {transition}: a handoff chart chooses a step by "
            "state and event alone; check a payload with `validators=` (a `Check`), or add a "
            "state that tells the cases apart"
        )
    unread = [*_named(transition.before), *_named(transition.after)]
    if unread:
        # The compiled table reads validators, on and enter only.
        raise InvalidDefinition(f"{name}: {unread} on {transition}: use `on=` instead")
    for group in (transition.validators, transition.on, state.enter):
        for word in _named(group):
            if word not in WORDS:
                raise InvalidDefinition(
                    f"{name}: {word!r} on {transition} is not a handoff chart word"
                )
    problem = text_problem(transition, _named)
    if problem is not None:
        raise InvalidDefinition(f"{name}: {transition}: {problem}")


def _named(specs: Iterable[Any]) -> Iterator[str]:
    """The callback names a chart wrote (python-statemachine adds conventional ones)."""
    for spec in specs:
        if not spec.is_convention:
            yield spec.attr_name


class HandoffChart(StateChart[Any], metaclass=_HandoffChartMeta):
    """Base of every handoff chart: strict, synchronous, never swallowing errors.

    A chart declares its `order` (which lifecycle a success records) and may declare a
    `title` (its name in reports, diagrams and traces; the class name otherwise).
    """

    order: ClassVar[HandoffOrder]
    title: ClassVar[str]

    # Refusals and failed checks must reach the caller as HandoffError, not be turned into
    # `error.execution` events, and an event without a transition is a bug in the chart.
    catch_errors_as_events = False
    allow_event_without_transition = False
    # A self-loop means "stay": it must not re-run the state's entry (which may complete).
    enable_self_transition_entries = False


# Exported from `handoff`: tracebacks and reprs name the public module.
exported(HandoffChart, refused, ignored, acknowledged)

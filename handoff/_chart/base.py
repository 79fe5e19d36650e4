"""What a handoff chart is: the base class, the words as transitions, and what happens when
a chart class is defined.

Defining a chart checks it at once: anything the compiled table could not read faithfully
is refused with `InvalidDefinition`, in handoff's words, naming the chart, the rule and the
fix.  Every (state, event) pair the chart leaves out means its event kind's default (see
`EventKind`); the compiled table and the interpreter fill it in, so defining a chart builds
only the transitions it wrote.  What runs can show (a state nothing enters, a rule that
leaks an owner) is left to the model review, which shows it with a counterexample.  A chart
may derive from another chart (see `handoff._chart.derive`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar, cast

from statemachine import Event, State, StateChart
from statemachine.exceptions import InvalidDefinition
from statemachine.factory import StateMachineMetaclass
from statemachine.state import NestedStateFactory
from statemachine.transition import Transition
from statemachine.transition_list import TransitionList

from handoff._chart.derive import (
    adopt,
    body_transitions,
    check_regrouped,
    drop_unused,
    fresh,
    inherit,
    named,
    restore,
)
from handoff._chart.groups import every_state, leaves
from handoff._chart.rules import text_problem
from handoff._chart.vocabulary import IGNORE, WORDS, ChartEvent, Effect, Refusal
from handoff._public import exported
from handoff._values.values import HandoffOrder

__all__ = ["HandoffChart", "acknowledged", "ignored", "refused"]


def refused(refusal: Refusal, *states: State | NestedStateFactory) -> TransitionList:
    """Declare that `states` refuse the event with `refusal` (and stay where they are).

    Joined to an event's transitions in a chart body,
    `source_held = prefill_running.to(…) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle)`; the
    coordinator raises the refusal's error and changes nothing (docs/writing-a-chart.md).
    """
    return _self_loops(states, validators=refusal.callback)


def ignored(*states: State | NestedStateFactory) -> TransitionList:
    """Declare that `states` drop the event: it changes nothing and is not journaled.

    The call returns `[]`, as a repeated fact does (docs/writing-a-chart.md).
    """
    return _self_loops(states, on=IGNORE)


def acknowledged(*states: State | NestedStateFactory) -> TransitionList:
    """Declare that `states` journal the acknowledgement without moving or issuing.

    The outcome is recorded (a repeat of it is then a duplicate, a different one a conflict),
    and the call returns `[]` (docs/writing-a-chart.md).
    """
    return _self_loops(states)


def _self_loops(states: tuple[State | NestedStateFactory, ...], **callbacks: Any) -> TransitionList:
    loops = TransitionList()
    for state in states:
        to: Any = cast(State, state).to  # python-statemachine leaves this builder untyped
        loops.add_transitions(to.itself(internal=True, **callbacks))
    return loops


class _Body(dict[str, Any]):
    """A chart class body; a derived chart's starts with fresh copies of its parent's states,
    and remembers how many transitions each parent state had before the body ran."""

    parent: type[HandoffChart] | None = None
    marks: dict[int, int]
    copies: set[int]


class _HandoffChartMeta(StateMachineMetaclass):
    """Completes and checks a chart when its class is defined."""

    # Reachability, trap states and liveness are the model review's to judge, with a
    # counterexample: python-statemachine would refuse such a chart at import instead.
    validate_disconnected_states = False
    validate_trap_states = False
    validate_final_reachability = False

    @classmethod
    def __prepare__(mcs, name: str, bases: tuple[type, ...], /, **kwargs: Any) -> _Body:
        body = _Body()
        parents = [base for base in bases if isinstance(base, _HandoffChartMeta) and base.states]
        if len(parents) > 1:
            raise InvalidDefinition(
                f"{name}: a handoff chart derives from one chart at most: derive from one and "
                "restate the rules you want from the other"
            )
        if parents:
            parent: Any = parents[0]
            body.parent = parent
            body.marks = {
                id(state): len(state.transitions.transitions)
                for state in every_state(parent.states)
            }
            copies = {state.id: fresh(state) for state in parent.states}
            body.copies = {id(state) for state in copies.values()}
            body.update(copies)
        return body

    def __new__(
        mcs, name: str, bases: tuple[type, ...], body: dict[str, Any], /, **kwargs: Any
    ) -> _HandoffChartMeta:
        attrs = dict(body)
        parent = body.parent if isinstance(body, _Body) else None
        if parent is not None:
            # First of all: whatever the body did to the parent's states is undone.
            restore(parent, cast("_Body", body).marks)
        _refuse_callbacks(name, attrs)
        states = {key: value for key, value in attrs.items() if isinstance(value, State)}
        every = _every_state(name, states)
        _lift_group_rules(attrs, every)
        if parent is not None:
            check_regrouped(name, parent, attrs, every)
        adopt(name, attrs, every, parent)
        _expand_group_loops(name, attrs)
        written = tuple(body_transitions(attrs))
        if states:
            if parent is not None:
                attrs.setdefault("order", parent.order)
                inherit(parent, attrs, every)
                drop_unused(attrs, states, cast("_Body", body).copies)
            if not isinstance(attrs.get("order"), HandoffOrder):
                raise InvalidDefinition(
                    f"{name}: a handoff chart must declare its `order`: add "
                    "`order = HandoffOrder.SOURCE_FIRST` (or DESTINATION_FIRST)"
                )
            title = attrs.setdefault("title", name)
            if not isinstance(title, str) or not title:
                raise InvalidDefinition(
                    f"{name}: `title` must be a non-empty str, got {title!r}: write "
                    f'title = "{name}", or leave it out'
                )
            _check_events(name, attrs)
            _check_states(name, attrs, states)
        chart = super().__new__(mcs, name, bases, attrs)
        chart._handoff_written = written  # type: ignore[attr-defined]
        return chart

    def __init__(
        cls, name: str, bases: tuple[type, ...], body: dict[str, Any], /, **kwargs: Any
    ) -> None:
        # python-statemachine reads the completed class body, not the one the author wrote.
        super().__init__(name, bases, dict(vars(cls)))  # type: ignore[arg-type]
        for state in every_state(cls.states):
            # `SourceFirstChart.transferring` names a state inside a group as before groups
            # were declared: derived charts and the docs name states so.
            if state.id not in vars(cls):
                setattr(cls, state.id, state)
        if cls.states:
            _check_words(cls, vars(cls)["_handoff_written"])

    if TYPE_CHECKING:
        # A state inside a group is an attribute of the chart too (set when it is defined).
        def __getattr__(cls, name: str) -> State: ...

    def add_inherited(cls, bases: Any) -> None:
        """A derived chart holds fresh copies of everything it inherits: share nothing."""

    def _setup(cls) -> None:
        """Deferred to the first instance: only python-statemachine's own run of the chart
        needs its convention callbacks, and most charts are only ever compiled."""
        cls._handoff_set_up = False

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not vars(cls).get("_handoff_set_up", True):
            super()._setup()  # type: ignore[no-untyped-call]
            cls._handoff_set_up = True
        return super().__call__(*args, **kwargs)


# -- checks ----------------------------------------------------------------------------------


_COMPLETING_WORDS = frozenset(effect.value for effect in Effect if effect.completion is not None)
_CALLBACK_PREFIXES = ("on_", "before_", "after_")
_CALLBACK_NAMES = frozenset({"prepare_event", "listeners"})


def _is_complete_state(state: State) -> bool:
    """Whether entering `state` completes the handoff (its `enter=` names a completion)."""
    return any(name in _COMPLETING_WORDS for name in named(state.enter))


def _refuse_callbacks(name: str, attrs: dict[str, Any]) -> None:
    """Refuse python-statemachine's own callbacks and events: the compiled table never runs
    a callback, and reads rules written as transitions."""
    for key, value in attrs.items():
        if isinstance(value, Event):
            raise InvalidDefinition(
                f"{name}: {key!r} is a python-statemachine Event; write the rule as "
                f"`{key} = a.to(b, on=...)`, without Event(...)"
            )
        if isinstance(value, State | TransitionList) or key.startswith("__"):
            continue
        if key.startswith(_CALLBACK_PREFIXES) or key in _CALLBACK_NAMES or key in WORDS:
            raise InvalidDefinition(
                f"{name}: {key!r} is a python-statemachine callback, which the compiled table "
                "never runs; a handoff chart acts through its words only: name the actions a "
                'transition issues with on=[...] and a completion with enter="complete_..."'
            )


def _every_state(name: str, states: dict[str, State]) -> dict[str, State]:
    """Every state of a chart body by id, those inside groups included; refuses what a flat
    table cannot hold: parallel regions, history, and a group that acts by itself."""
    for key, state in states.items():
        if state.parent is not None:
            raise InvalidDefinition(
                f"{name}: {key!r} is {state.parent.id}.{state.id}, a state inside a group: a "
                f"state is declared once; name it {state.parent.id}.{state.id} in the rules"
            )
        state._set_id(key)  # python-statemachine names them so too, once the class exists
    every: dict[str, State] = {}
    for state in every_state(states.values()):
        _check_group(name, state)
        if every.setdefault(state.id, state) is not state:
            raise InvalidDefinition(
                f"{name}: two states are called {state.id!r}: a state inside a group is a "
                "state of the chart, so give each state its own name"
            )
    return every


def _check_group(name: str, state: State) -> None:
    if state.parallel:
        raise InvalidDefinition(
            f"{name}: {state.id!r} is a State.Parallel, which handoff does not support: a "
            "handoff is in one state at a time; write each combination of its regions as a "
            "state, and group the states that share rules with State.Compound"
        )
    if state.history:
        raise InvalidDefinition(
            f"{name}: {state.id!r} has a history state, which handoff does not support: a "
            "rule names the state it enters; drop the HistoryState"
        )
    if not state.states:
        return
    initial = [inner.id for inner in state.states if inner.initial]
    if len(initial) > 1:
        raise InvalidDefinition(
            f"{name}: group {state.id!r} has {len(initial)} initial states, {initial}: "
            "entering a group enters one state; keep initial=True on one of them"
        )
    acts = [
        *named(state.enter),
        *named(state.exit),
        *named(state.invoke),
        *(state._callbacks or ()),
    ]
    if acts or state.final:
        raise InvalidDefinition(
            f"{name}: group {state.id!r} declares {acts or 'final=True'}, but a group only "
            "gathers states: a handoff is always in one of the states inside, so put enter= "
            "or final=True on those"
        )


def _lift_group_rules(attrs: dict[str, Any], every: dict[str, State]) -> None:
    """Add the rules written inside a group's body to the chart's events of the same name,
    so that they are checked, inherited and compiled like the rules of the chart's body
    (python-statemachine has already named their events)."""
    written = {id(transition) for transition in body_transitions(attrs)}
    for state in every.values():
        for transition in state.transitions:
            if transition.initial or id(transition) in written:
                continue
            for event in transition.events:
                rules = attrs.get(event.id)
                attrs[event.id] = (
                    rules if isinstance(rules, TransitionList) else TransitionList()
                ) | [transition]


def _expand_group_loops(name: str, attrs: dict[str, Any]) -> None:
    """Turn a rule that keeps a group where it is (`refused(...)`, `ignored(...)` or
    `acknowledged(...)` of a group) into one such rule on each state inside that has no rule
    of its own for the event: python-statemachine would leave the group and enter its
    initial state instead."""
    for rules in list(attrs.values()):
        if not isinstance(rules, TransitionList):
            continue
        sources = {id(transition.source) for transition in rules.transitions}
        for loop in list(rules.transitions):
            group = loop.source
            if not (group.states and loop.internal):
                continue
            if loop.target is not group:
                raise InvalidDefinition(
                    f"{name}: {loop} is internal=True and leaves group {group.id!r}: write "
                    "the rule without internal=True"
                )
            rules.transitions.remove(loop)
            if loop in group.transitions.transitions:  # not when another event shares it
                group.transitions.transitions.remove(loop)
            for state in leaves(group.states):
                if not any(id(owner) in sources for owner in _within(state, group)):
                    rules.add_transitions(_self_loops((state,), **_words_of(loop)))


def _within(state: State, group: State) -> Iterator[State]:
    """`state` and the groups around it, up to `group` (not included)."""
    owner: State | None = state
    while owner is not None and owner is not group:
        yield owner
        owner = owner.parent


def _words_of(loop: Transition) -> dict[str, Any]:
    words: dict[str, Any] = {}
    for key, group in (("validators", loop.validators), ("on", loop.on)):
        found = list(named(group))
        if found:
            words[key] = found
    return words


def _check_events(name: str, attrs: dict[str, Any]) -> None:
    """Every rule is a chart event's, and handles each state once."""
    for key, value in attrs.items():
        if isinstance(value, TransitionList) and key not in ChartEvent._value2member_map_:
            raise InvalidDefinition(
                f"{name}: {key!r} is not a handoff chart event; the events are "
                f"{', '.join(event.value for event in ChartEvent)}"
            )
    for event in ChartEvent:
        handled: set[int] = set()
        for transition in attrs.get(event.value, TransitionList()).transitions:
            if id(transition.source) in handled:
                raise InvalidDefinition(
                    f"{name}: state {transition.source.id!r} handles {event.value!r} "
                    "twice; keep one of its rules"
                )
            handled.add(id(transition.source))


def _check_states(name: str, attrs: dict[str, Any], states: dict[str, State]) -> None:
    """One initial state; a final state completes the handoff and no rule leaves it."""
    rules = {
        id(transition): event
        for event, value in attrs.items()
        if isinstance(value, TransitionList)
        for transition in value.transitions
    }
    initial = [key for key, state in states.items() if state.initial]
    if len(initial) != 1:
        raise InvalidDefinition(
            f"{name}: a handoff chart has exactly one initial state, this one has "
            f"{initial or 'none'}: mark the state before start() with initial=True, once"
        )
    for state in every_state(states.values()):
        key = state.id
        if not state.final:
            continue
        if not _is_complete_state(state):
            raise InvalidDefinition(
                f"{name}: {key!r} is final=True but does not complete the handoff: give it "
                'enter="complete_canceled" (or "complete_success"), or drop final=True'
            )
        for transition in state.transitions:
            raise InvalidDefinition(
                f"{name}: {key!r} is final=True, yet rule {rules.get(id(transition))!r} leaves "
                f"it for {transition.target.id!r}: a final state takes no event; drop "
                f"final=True (entering {key!r} completes the handoff anyway, and a complete "
                "state drops every event it has no rule for), or drop that rule"
            )


def _check_words(chart: Any, written: tuple[Transition, ...]) -> None:
    """The words of the transitions the chart's body wrote (inherited ones were checked)."""
    name = chart.__name__
    for state in every_state(chart.states):
        if any(named(state.exit)) or any(named(state.invoke)):
            raise InvalidDefinition(
                f"{name}: {state.id!r} has exit or invoke callbacks; a handoff chart acts on "
                "transitions and on entering a state only"
            )
        for word in named(state.enter):
            if word not in WORDS:
                raise InvalidDefinition(
                    f"{name}: {word!r} on entering {state.id!r} is not a handoff chart word: "
                    'a state\'s enter= completes the handoff, "complete_success" or '
                    '"complete_canceled"'
                )
    for transition in written:
        _check_transition(name, transition)


def _check_transition(name: str, transition: Transition) -> None:
    guards = list(named(transition.cond))
    if guards:
        raise InvalidDefinition(
            f"{name}: cond/unless {guards} on {transition}: a handoff chart chooses a step by "
            "state and event alone; check a payload with `validators=` (a `Check`), or add a "
            "state that tells the cases apart"
        )
    unread = [*named(transition.before), *named(transition.after)]
    if unread:
        # The compiled table reads validators, on and enter only.
        raise InvalidDefinition(
            f"{name}: {unread} on {transition}: the compiled table reads on= only; use `on=` "
            "instead"
        )
    for group in (transition.validators, transition.on):
        for word in named(group):
            if word not in WORDS:
                raise InvalidDefinition(
                    f"{name}: {word!r} on {transition} is not a handoff chart word: use a word "
                    "of handoff.Effect (on=) or handoff.Check (validators=), or refused(...)"
                )
    problem = text_problem(transition, named)
    if problem is not None:
        raise InvalidDefinition(f"{name}: {transition}: {problem}")


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

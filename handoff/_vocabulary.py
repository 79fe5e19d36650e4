"""The words handoff charts are written in: events, effects, checks, refusals and defaults.

A chart (see `handoff._chart`) names everything it does with these words, as
python-statemachine callback names, so the same chart can be run by python-statemachine
itself, compiled into a table, drawn and model-reviewed.  `HandoffChart` refuses, when a
chart class is defined, any word outside this vocabulary and any (state, event) pair that
is handled twice; pairs a chart does not mention get the default of their event's kind.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any, ClassVar, cast

from statemachine import State, StateChart
from statemachine.exceptions import InvalidDefinition
from statemachine.factory import StateMachineMetaclass
from statemachine.transition_list import TransitionList

from handoff._errors import (
    CleanupActionFailedError,
    ConflictingOutcomeError,
    HandoffError,
    InvalidOutcomeError,
    OutOfOrderFactError,
    UnknownActionError,
)
from handoff._values import HandoffCompletion, HandoffOrder

__all__ = [
    "IGNORE",
    "ChartEvent",
    "Check",
    "Effect",
    "EventKind",
    "HandoffChart",
    "Refusal",
    "acknowledged",
    "ignored",
    "refused",
]


class EventKind(enum.Enum):
    """What an event is, which fixes how a state that does not mention it treats it."""

    FACT = "fact"
    """`start()` or a fact: dropped where not mentioned (a duplicate, or too late to matter)."""
    ACKNOWLEDGEMENT = "acknowledgement"
    """A fitting outcome: journaled without moving where not mentioned; dropped once complete."""
    JOURNAL_ERROR = "journal error"
    """An outcome the journal cannot take: refused while live; dropped once complete."""
    DUPLICATE = "duplicate"
    """An outcome already journaled with the same value: always dropped."""


class ChartEvent(enum.Enum):
    """Every event a handoff chart reacts to; the adapter turns each call into exactly one."""

    kind: EventKind
    index: int
    """Position in declaration order: compiled tables are indexed by it."""

    def __new__(cls, event_id: str, kind: EventKind) -> ChartEvent:
        member = object.__new__(cls)
        member._value_ = event_id
        member.kind = kind
        member.index = len(cls._member_names_)
        return member

    START = ("start", EventKind.FACT)
    SOURCE_HELD = ("source_held", EventKind.FACT)
    DESTINATION_RESERVED = ("destination_reserved", EventKind.FACT)
    TRANSFER_COMPLETED = ("transfer_completed", EventKind.FACT)
    TERMINATED = ("terminated", EventKind.FACT)
    """`Failed`, `TimedOut` or `Canceled`: the spec treats the three alike."""
    PREFILL_SUBMITTED = ("prefill_submitted", EventKind.ACKNOWLEDGEMENT)
    OWNERSHIP_ACCEPTED = ("ownership_accepted", EventKind.ACKNOWLEDGEMENT)
    TRANSFER_SCHEDULED = ("transfer_scheduled", EventKind.ACKNOWLEDGEMENT)
    DESTINATION_ACTIVATED = ("destination_activated", EventKind.ACKNOWLEDGEMENT)
    SOURCE_RELEASED = ("source_released", EventKind.ACKNOWLEDGEMENT)
    SOURCE_CANCELED = ("source_canceled", EventKind.ACKNOWLEDGEMENT)
    DESTINATION_CANCELED = ("destination_canceled", EventKind.ACKNOWLEDGEMENT)
    ACTION_FAILED = ("action_failed", EventKind.ACKNOWLEDGEMENT)
    """A `failed(...)` outcome of any action but a cancel."""
    UNKNOWN_ACTION = ("unknown_action", EventKind.JOURNAL_ERROR)
    CONFLICTING_OUTCOME = ("conflicting_outcome", EventKind.JOURNAL_ERROR)
    CLEANUP_ACTION_FAILED = ("cleanup_action_failed", EventKind.JOURNAL_ERROR)
    MISMATCHED_OUTCOME = ("mismatched_outcome", EventKind.JOURNAL_ERROR)
    DUPLICATE_OUTCOME = ("duplicate_outcome", EventKind.DUPLICATE)


class Effect(enum.Enum):
    """What taking a transition issues; the value is the callback name used in charts."""

    SUBMIT_PREFILL = "submit_prefill"
    RESERVE_DESTINATION = "reserve_destination"
    START_TRANSFER = "start_transfer"
    ACTIVATE_DESTINATION = "activate_destination"
    RELEASE_SOURCE = "release_source"
    CANCEL_SOURCE = "cancel_source"
    CANCEL_DESTINATION = "cancel_destination"
    COMPLETE_SUCCESS = "complete_success"
    COMPLETE_CANCELED = "complete_canceled"

    @property
    def completion(self) -> HandoffCompletion | None:
        """The completion this effect records, if it completes the handoff."""
        return _COMPLETIONS.get(self)


_COMPLETIONS = {
    Effect.COMPLETE_SUCCESS: HandoffCompletion.SUCCESS,
    Effect.COMPLETE_CANCELED: HandoffCompletion.CANCELED,
}


class Check(enum.Enum):
    """A payload check a transition runs before it is taken (a failure rejects the call)."""

    TRANSFER_TIMING_IS_VALID = "transfer_timing_is_valid"
    TRANSFER_DELAY_IS_VALID = "transfer_delay_is_valid"


class Refusal(enum.Enum):
    """A call a state refuses, with the error it raises; the phrases are the spec's.

    A phrase may name `{action_id}` or `{outcome}`: the adapter fills them in from the call.
    """

    phrase: str
    error: type[HandoffError]

    def __new__(cls, phrase: str, error: type[HandoffError]) -> Refusal:
        member = object.__new__(cls)
        member._value_ = phrase
        member.phrase = phrase
        member.error = error
        return member

    PREFILL_NOT_SUBMITTED = (
        "source held before prefill submission was acknowledged",
        OutOfOrderFactError,
    )
    OWNERSHIP_NOT_ACCEPTED = (
        "destination reserved before ownership was accepted",
        OutOfOrderFactError,
    )
    TRANSFER_NOT_SCHEDULED = ("transfer completed before it was scheduled", OutOfOrderFactError)
    UNKNOWN_ACTION = ("unknown handoff action {action_id}", UnknownActionError)
    CONFLICTING_OUTCOME = (
        "conflicting outcome for handoff action {action_id}",
        ConflictingOutcomeError,
    )
    CLEANUP_ACTION_FAILED = ("handoff cleanup action {action_id} failed", CleanupActionFailedError)
    MISMATCHED_OUTCOME = ("invalid handoff action outcome {outcome}", InvalidOutcomeError)

    @property
    def callback(self) -> str:
        """The validator name a chart uses for this refusal."""
        return f"refuse_{self.name.lower()}"


IGNORE = "ignore"
"""The callback that marks a transition as dropping its event: nothing is journaled."""

_JOURNAL_REFUSALS = {
    ChartEvent.UNKNOWN_ACTION: Refusal.UNKNOWN_ACTION,
    ChartEvent.CONFLICTING_OUTCOME: Refusal.CONFLICTING_OUTCOME,
    ChartEvent.CLEANUP_ACTION_FAILED: Refusal.CLEANUP_ACTION_FAILED,
    ChartEvent.MISMATCHED_OUTCOME: Refusal.MISMATCHED_OUTCOME,
}

WORDS: frozenset[str] = frozenset(
    [effect.value for effect in Effect]
    + [check.value for check in Check]
    + [refusal.callback for refusal in Refusal]
    + [IGNORE]
)
"""Every callback name a chart may use."""


def refused(refusal: Refusal, *states: State) -> TransitionList:
    """Declare that `states` refuse the event with `refusal` (and stay where they are)."""
    return _self_loops(states, validators=refusal.callback)


def ignored(*states: State) -> TransitionList:
    """Declare that `states` drop the event: it changes nothing and is not journaled."""
    return _self_loops(states, on=IGNORE)


def acknowledged(*states: State) -> TransitionList:
    """Declare that `states` journal the acknowledgement without moving or issuing."""
    return _self_loops(states)


def _self_loops(states: tuple[State, ...], **callbacks: str) -> TransitionList:
    loops = TransitionList()
    for state in states:
        to: Any = state.to  # python-statemachine leaves this builder untyped
        loops.add_transitions(to.itself(internal=True, **callbacks))
    return loops


class _HandoffChartMeta(StateMachineMetaclass):
    """Completes and checks a chart when its class is defined."""

    def __init__(cls, name: str, bases: Any, attrs: dict[str, Any]) -> None:
        states = [value for value in attrs.values() if isinstance(value, State)]
        if states:
            if not isinstance(attrs.get("order"), HandoffOrder):
                raise InvalidDefinition(f"{name}: a handoff chart must declare its `order`")
            attrs = _with_defaults(name, attrs, states)
        super().__init__(name, bases, attrs)
        if states:
            _check_words(cast("type[StateChart[Any]]", cls))


def _is_complete_state(state: State) -> bool:
    return any(spec.attr_name in _COMPLETING_WORDS for spec in state.enter)


_COMPLETING_WORDS = frozenset(effect.value for effect in _COMPLETIONS)


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
        handling = refused(_JOURNAL_REFUSALS[event], *live) | ignored(*complete)
    else:
        handling = ignored(*states)
    return handling


def _check_words(chart: type[StateChart[Any]]) -> None:
    _check_text_rules(chart)
    for state in chart.states:
        if any(_named(state.exit)):
            raise InvalidDefinition(f"{chart.__name__}: {state.id!r} has exit callbacks")
        for transition in state.transitions:
            unread = [*_named(transition.before), *_named(transition.after)]
            if unread:
                # The compiled table reads validators, cond, on and enter only.
                raise InvalidDefinition(f"{chart.__name__}: {unread} on {transition}")
            for spec in _named_callbacks(transition, state):
                if spec not in WORDS:
                    raise InvalidDefinition(
                        f"{chart.__name__}: {spec!r} on {transition} is not a handoff chart word"
                    )


_REFUSAL_EVENTS = {
    Refusal.PREFILL_NOT_SUBMITTED: ChartEvent.SOURCE_HELD,
    Refusal.OWNERSHIP_NOT_ACCEPTED: ChartEvent.DESTINATION_RESERVED,
    Refusal.TRANSFER_NOT_SCHEDULED: ChartEvent.TRANSFER_COMPLETED,
    **{refusal: event for event, refusal in _JOURNAL_REFUSALS.items()},
}
"""The one event each refusal's phrase speaks of."""

_CHECK_EVENTS = {
    Check.TRANSFER_TIMING_IS_VALID: frozenset({ChartEvent.SOURCE_HELD.value}),
    Check.TRANSFER_DELAY_IS_VALID: frozenset(
        {ChartEvent.SOURCE_HELD.value, ChartEvent.DESTINATION_RESERVED.value}
    ),
}
"""The events whose payload each check judges (the SPEC checks nothing else)."""


def _check_text_rules(chart: type[StateChart[Any]]) -> None:
    """Refuse what SPEC.md forbids in a chart's text, whatever runs would show.

    A refusal speaks of one event and does nothing else; checks run in the SPEC's order
    (the timing, then the delay), only on the facts whose payload they judge, and a
    transition issuing `StartTransfer` checks the delay it sends.
    """
    for state in chart.states:
        for transition in state.transitions:
            problem = _text_problem(list(_named(transition.validators)), transition)
            if problem is not None:
                raise InvalidDefinition(f"{chart.__name__}: {transition}: {problem}")


def _text_problem(validators: list[str], transition: Any) -> str | None:
    events = {event.id for event in transition.events}
    refusals = [refusal for refusal in Refusal if refusal.callback in validators]
    if refusals:
        wrong = sorted(events - {_REFUSAL_EVENTS[refusals[0]].value})
        if len(refusals) > 1 or len(validators) > 1 or list(_named(transition.on)):
            return "a refusal refuses and does nothing else"
        if wrong:
            return (
                f"{refusals[0].name} belongs to {_REFUSAL_EVENTS[refusals[0]].value!r}, not {wrong}"
            )
        return None
    checks = [Check(name) for name in validators if name in Check._value2member_map_]
    if checks != sorted(set(checks), key=list(Check).index):
        return f"checks {[check.value for check in checks]} run out of the SPEC's order"
    for check in checks:
        if not events <= _CHECK_EVENTS[check]:
            return f"{check.value} judges no payload of {sorted(events)}"
    sends = Effect.START_TRANSFER.value in _named(transition.on)
    if sends and Check.TRANSFER_DELAY_IS_VALID not in checks:
        return "StartTransfer is issued without transfer_delay_is_valid"
    return None


def _named_callbacks(transition: Any, state: State) -> Iterator[str]:
    for group in (transition.validators, transition.cond, transition.on, state.enter):
        yield from _named(group)


def _named(specs: Any) -> Iterator[str]:
    """The callback names a chart wrote (python-statemachine adds conventional ones)."""
    for spec in specs:
        if not spec.is_convention:
            yield spec.attr_name


class HandoffChart(StateChart[Any], metaclass=_HandoffChartMeta):
    """Base of the per-order charts: strict, synchronous, never swallowing errors."""

    order: ClassVar[HandoffOrder]

    # Refusals and failed checks must reach the caller as HandoffError, not be turned into
    # `error.execution` events, and an event without a transition is a bug in the chart.
    catch_errors_as_events = False
    allow_event_without_transition = False
    # A self-loop means "stay": it must not re-run the state's entry (which may complete).
    enable_self_transition_entries = False

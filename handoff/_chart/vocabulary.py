"""The words handoff charts are written in: events, effects, checks and refusals.

A chart (see `handoff._chart.base`) names everything it does with these words, as
python-statemachine callback names, so the same chart can be run by python-statemachine
itself, compiled into a table, drawn and model-reviewed.  This module needs no
python-statemachine: the compiled tables are written in the same words.
"""

from __future__ import annotations

import enum

from handoff._public import exported
from handoff._values.errors import (
    CleanupActionFailedError,
    ConflictingOutcomeError,
    InvalidOutcomeError,
    OutOfOrderFactError,
    Phrased,
    UnknownActionError,
)
from handoff._values.values import HandoffCompletion

__all__ = [
    "IGNORE",
    "JOURNAL_REFUSALS",
    "WORDS",
    "ChartEvent",
    "Check",
    "Effect",
    "EventKind",
    "Refusal",
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


class Refusal(Phrased):
    """A call a state refuses, with the error it raises; the phrases are the spec's.

    A phrase may name `{action_id}` or `{outcome}`: the adapter fills them in from the call.
    """

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

JOURNAL_REFUSALS: dict[ChartEvent, Refusal] = {
    ChartEvent.UNKNOWN_ACTION: Refusal.UNKNOWN_ACTION,
    ChartEvent.CONFLICTING_OUTCOME: Refusal.CONFLICTING_OUTCOME,
    ChartEvent.CLEANUP_ACTION_FAILED: Refusal.CLEANUP_ACTION_FAILED,
    ChartEvent.MISMATCHED_OUTCOME: Refusal.MISMATCHED_OUTCOME,
}
"""The refusal each journal error gets in a live state where a chart does not mention it."""

WORDS: frozenset[str] = frozenset(
    [effect.value for effect in Effect]
    + [check.value for check in Check]
    + [refusal.callback for refusal in Refusal]
    + [IGNORE]
)
"""Every callback name a chart may use."""

# Exported from `handoff`: tracebacks and reprs name the public module.
exported(EventKind, ChartEvent, Effect, Check, Refusal)

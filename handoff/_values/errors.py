"""One exception hierarchy for every protocol error the library raises."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from handoff._values.values import HandoffActionId, HandoffActionOutcome

__all__ = [
    "AdapterRefusal",
    "CleanupActionFailedError",
    "ConcurrentCallError",
    "ConflictingOutcomeError",
    "ConformanceError",
    "ForeignFactError",
    "HandoffError",
    "InvalidOutcomeError",
    "InvalidTransferTimingError",
    "OutOfOrderFactError",
    "Phrased",
    "TraceError",
    "UnknownActionError",
    "WireError",
]


class HandoffError(Exception):
    """A call the handoff protocol refuses; the coordinator is left exactly as it was.

    An error raised by a coordinator call says what it is about, besides its message:

    * `chart_state`: the id of the chart state the handoff was in (`"prefill_running"`);
    * `fact`: the fact the call reported (`on_fact`, one of the `AnyHandoffFact` variants),
      else None;
    * `action_id` and `outcome`: the acknowledgement the call reported (`on_action_outcome`),
      else None;
    * `expected`: the outcomes that would have been taken for that action, where there are
      some (the fitting ones for an `InvalidOutcomeError`, the one already recorded for a
      `ConflictingOutcomeError`), else `()`.

    An error raised outside a call (a value refused by `validate_transfer_timing`, a wire or a
    trace error) has them all None and `expected == ()`.
    """

    chart_state: str | None
    fact: object
    action_id: HandoffActionId | None
    outcome: HandoffActionOutcome | None
    expected: tuple[HandoffActionOutcome, ...]

    def __init__(
        self,
        *args: object,
        chart_state: str | None = None,
        fact: object = None,
        action_id: HandoffActionId | None = None,
        outcome: HandoffActionOutcome | None = None,
        expected: tuple[HandoffActionOutcome, ...] = (),
    ) -> None:
        super().__init__(*args)
        self.chart_state = chart_state
        self.fact = fact
        self.action_id = action_id
        self.outcome = outcome
        self.expected = expected


class ConcurrentCallError(HandoffError):
    """A call was made while another call on the same coordinator was still running.

    A coordinator has one caller at a time (one thread, or one asyncio task): the call that
    raises this changed nothing, and the call already running is unaffected.
    """


class ForeignFactError(HandoffError):
    """A fact carried another handoff's id.

    Checked first, in every mode; `fact` is the fact refused, `chart_state` where this handoff is.
    """


class OutOfOrderFactError(HandoffError):
    """A fact arrived before the acknowledgement it depends on.

    Nothing changed: report `fact` again once that acknowledgement is in (contract §4).
    """


class UnknownActionError(HandoffError):
    """An outcome named an action id this coordinator has not issued (or has forgotten).

    `action_id` and `outcome` are what was reported; the message lists the ids the journal holds.
    """


class ConflictingOutcomeError(HandoffError):
    """An action was acknowledged twice with different outcomes.

    `expected` holds the outcome already recorded; repeating that one is harmless.
    """


class InvalidOutcomeError(HandoffError):
    """The outcome does not fit the kind of action it acknowledges.

    `expected` holds the outcomes that fit; nothing was recorded.
    """


class CleanupActionFailedError(HandoffError):
    """A `CancelSource` or `CancelDestination` reported failure: cleanup cannot be abandoned.

    The failure is not recorded: retry the cancel and report `Applied` or `Noop` for it.
    """


class InvalidTransferTimingError(HandoffError):
    """A transfer bandwidth or delay that is negative or not finite.

    Raised by `validate_transfer_timing`, `validate_transfer_delay_ms` and by a call whose fact
    would need such a timing or delay; that call is refused whole (contract §3).
    """


class ConformanceError(HandoffError):
    """A normalized handoff summary does not match the reference fixture.

    Raised by `NormalizedHandoffConformance.validate()` for the first check that fails (§6).
    """


class WireError(HandoffError):
    """JSON that is not a valid encoding of the requested type; `path` says where, `reason` why.

    Raised by `handoff.wire.loads` (and by `dumps` for a string JSON cannot carry); `str()` is
    `"{path}: {reason}"`, e.g. `$.SourceHeld.transfer_timing.full_prompt_tokens: expected …`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class TraceError(HandoffError):
    """A trace file that cannot be read or written, or that does not fit the chart given."""


class Phrased(enum.Enum):
    """A refusal: its value is the spec's phrase, and it knows the error class raising it."""

    phrase: str
    error: type[HandoffError]

    def __new__(cls, phrase: str, error: type[HandoffError]) -> Self:
        member = object.__new__(cls)
        member._value_ = phrase
        member.phrase = phrase
        member.error = error
        return member


class AdapterRefusal(Phrased):
    """A call the adapter refuses itself, whatever the chart says: its phrase and error.

    The messages go on with what was wrong (`invalid handoff transfer delay inf: expected …`).
    """

    FOREIGN_FACT = ("fact belongs to a different handoff", ForeignFactError)
    INVALID_BANDWIDTH = ("invalid handoff transfer bandwidth", InvalidTransferTimingError)
    INVALID_DELAY = ("invalid handoff transfer delay", InvalidTransferTimingError)

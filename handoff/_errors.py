"""One exception hierarchy for every protocol error the library raises."""

from __future__ import annotations

__all__ = [
    "CleanupActionFailedError",
    "ConflictingOutcomeError",
    "ConformanceError",
    "ForeignFactError",
    "HandoffError",
    "InvalidOutcomeError",
    "InvalidTransferTimingError",
    "OutOfOrderFactError",
    "TraceError",
    "UnknownActionError",
    "WireError",
]


class HandoffError(Exception):
    """A call the handoff protocol refuses; the coordinator is left exactly as it was."""


class ForeignFactError(HandoffError):
    """A fact carried another handoff's id."""


class OutOfOrderFactError(HandoffError):
    """A fact arrived before the acknowledgement it depends on."""


class UnknownActionError(HandoffError):
    """An outcome named an action id this coordinator has not issued (or has forgotten)."""


class ConflictingOutcomeError(HandoffError):
    """An action was acknowledged twice with different outcomes."""


class InvalidOutcomeError(HandoffError):
    """The outcome does not fit the kind of action it acknowledges."""


class CleanupActionFailedError(HandoffError):
    """A `CancelSource` or `CancelDestination` reported failure: cleanup cannot be abandoned."""


class InvalidTransferTimingError(HandoffError):
    """A transfer bandwidth or delay that is negative or not finite."""


class ConformanceError(HandoffError):
    """A normalized handoff summary does not match the reference fixture."""


class WireError(HandoffError):
    """JSON that is not a valid encoding of the requested type; `path` says where, `reason` why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class TraceError(HandoffError):
    """A trace file that cannot be read or written, or that does not fit the chart given."""

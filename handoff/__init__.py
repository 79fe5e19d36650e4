"""Prefill-to-decode KV-cache handoff, defined as one statechart per handoff order."""

import typing as _typing

from handoff._conformance import NormalizedHandoffConformance, NormalizedStoredTiming
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import (
    CleanupActionFailedError,
    ConflictingOutcomeError,
    ConformanceError,
    ForeignFactError,
    HandoffError,
    InvalidOutcomeError,
    InvalidTransferTimingError,
    OutOfOrderFactError,
    UnknownActionError,
    WireError,
)
from handoff._lifecycle import NormalizedHandoffEvent, expected_normalized_handoff
from handoff._messages import (
    AnyHandoffAction,
    AnyHandoffFact,
    HandoffAction,
    HandoffFact,
    IssuedHandoffAction,
)
from handoff._timing import (
    HandoffTransferTiming,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)
from handoff._values import (
    EngineType,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
    OutcomeKind,
)

if _typing.TYPE_CHECKING:
    from handoff import wire as wire

__all__ = [
    "AnyHandoffAction",
    "AnyHandoffFact",
    "CleanupActionFailedError",
    "ConflictingOutcomeError",
    "ConformanceError",
    "EngineType",
    "ForeignFactError",
    "HandoffAction",
    "HandoffActionId",
    "HandoffActionOutcome",
    "HandoffCompletion",
    "HandoffCoordinatorCore",
    "HandoffError",
    "HandoffFact",
    "HandoffId",
    "HandoffOrder",
    "HandoffTransferTiming",
    "InvalidOutcomeError",
    "InvalidTransferTimingError",
    "IssuedHandoffAction",
    "KvTransferTimingMode",
    "NormalizedHandoffConformance",
    "NormalizedHandoffEvent",
    "NormalizedStoredTiming",
    "OutOfOrderFactError",
    "OutcomeKind",
    "UnknownActionError",
    "WireError",
    "expected_normalized_handoff",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]


if not _typing.TYPE_CHECKING:
    # Hidden from type checkers, which would otherwise accept any attribute of the package.

    def __getattr__(name: str) -> object:
        # `handoff.wire` works after a bare `import handoff`, without `import handoff` paying
        # for the codecs: the submodule is imported on first use.
        if name == "wire":
            import handoff.wire

            return handoff.wire
        raise AttributeError(f"module 'handoff' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), "wire"})


# Tracebacks, reprs and pickles name `handoff.HandoffError`, never the private module that
# defines it; the variants of each message family likewise read `handoff.HandoffFact.Failed`.
for _name in __all__:
    _value = globals()[_name]
    for _public in _typing.get_args(_value) or (_value,):
        _public.__module__ = "handoff"
del _name, _value, _public

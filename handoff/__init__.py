"""Prefill-to-decode KV-cache handoff, defined as one statechart per handoff order."""

from handoff._conformance import (
    NormalizedHandoffConformance,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    expected_normalized_handoff,
)
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
)
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
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

__all__ = [
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
    "expected_normalized_handoff",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]

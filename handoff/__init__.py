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
from handoff._vocabulary import ChartEvent, Check, Effect, EventKind, Refusal

__all__ = [
    "ChartEvent",
    "Check",
    "CleanupActionFailedError",
    "ConflictingOutcomeError",
    "ConformanceError",
    "DestinationFirstChart",
    "Effect",
    "EngineType",
    "EventKind",
    "ForeignFactError",
    "HandoffAction",
    "HandoffActionId",
    "HandoffActionOutcome",
    "HandoffChart",
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
    "Refusal",
    "SourceFirstChart",
    "UnknownActionError",
    "acknowledged",
    "expected_normalized_handoff",
    "ignored",
    "refused",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]


# Chart authoring needs python-statemachine; running the shipped orders does not, so these
# names load on first use.
_CHART_NAMES = {
    "HandoffChart": "handoff._chart_base",
    "acknowledged": "handoff._chart_base",
    "ignored": "handoff._chart_base",
    "refused": "handoff._chart_base",
    "SourceFirstChart": "handoff._chart",
    "DestinationFirstChart": "handoff._chart",
}


def __getattr__(name: str) -> object:
    module = _CHART_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'handoff' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

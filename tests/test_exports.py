"""The public face: exactly these names, each defined in the package, nothing private leaking."""

from __future__ import annotations

import types

import handoff

SPEC_NAMES = {
    # SPEC §2
    "HandoffId",
    "HandoffOrder",
    "EngineType",
    "KvTransferTimingMode",
    "HandoffTransferTiming",
    "HandoffFact",
    "HandoffAction",
    "HandoffActionId",
    "IssuedHandoffAction",
    "HandoffActionOutcome",
    "HandoffCompletion",
    "NormalizedHandoffEvent",
    "NormalizedStoredTiming",
    "NormalizedHandoffConformance",
    # SPEC §3, §4, §6
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
    "HandoffCoordinatorCore",
    "expected_normalized_handoff",
    "HandoffError",
}

EXTRA_NAMES = {
    "OutcomeKind",
    "ForeignFactError",
    "OutOfOrderFactError",
    "UnknownActionError",
    "ConflictingOutcomeError",
    "InvalidOutcomeError",
    "CleanupActionFailedError",
    "InvalidTransferTimingError",
    "ConformanceError",
    # chart authoring
    "HandoffChart",
    "SourceFirstChart",
    "DestinationFirstChart",
    "ChartEvent",
    "EventKind",
    "Effect",
    "Check",
    "Refusal",
    "refused",
    "ignored",
    "acknowledged",
}


def test_exported_names_are_pinned() -> None:
    assert set(handoff.__all__) == SPEC_NAMES | EXTRA_NAMES
    assert len(handoff.__all__) == len(set(handoff.__all__))


def test_every_exported_name_exists_and_belongs_to_the_package() -> None:
    for name in handoff.__all__:
        value = getattr(handoff, name)
        assert getattr(value, "__module__", "handoff").startswith("handoff"), name


def test_nothing_public_is_left_out_of_all() -> None:
    # Public submodules (`handoff.wire`) appear as attributes once imported; they are not names.
    public = {
        name
        for name, value in vars(handoff).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(handoff.__all__)

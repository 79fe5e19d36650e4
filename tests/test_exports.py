"""The public face: exactly these names, each reporting `handoff`, nothing private leaking."""

from __future__ import annotations

import importlib.metadata
import pickle
import subprocess
import sys
import types
import typing
import uuid
from pathlib import Path

import pytest

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
    "AnyHandoffAction",
    "AnyHandoffFact",
    "OutcomeKind",
    "ForeignFactError",
    "OutOfOrderFactError",
    "UnknownActionError",
    "ConflictingOutcomeError",
    "InvalidOutcomeError",
    "CleanupActionFailedError",
    "InvalidTransferTimingError",
    "ConformanceError",
    "ConcurrentCallError",
    "WireError",
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
    "check_trace",
    "TraceCheck",
    "PropertyVerdict",
    "TraceError",
    # integrating
    "record",
    "RecordingCoordinator",
    "HandoffCoordinator",
    # worker contracts, for the system review and the simulation
    "WorkerContract",
    "WorkerReaction",
    "WorkerReply",
    "WorkerTask",
    "RequestMemory",
    "PerRole",
    "Role",
    "Slots",
    "Message",
    "MessageKind",
    # a system configuration as a property of one's own sees it
    "SystemView",
    "HandoffView",
    "WorkerView",
    # a runtime profile of one's own (`--runtime MODULE:NAME`)
    "RuntimeProfile",
    "Acknowledge",
    "PerAction",
}

UNION_ALIASES = {"AnyHandoffFact": handoff.HandoffFact, "AnyHandoffAction": handoff.HandoffAction}

FACT_VARIANTS = [variant.__name__ for variant in typing.get_args(handoff.AnyHandoffFact)]
ACTION_VARIANTS = [
    "SubmitPrefill",
    "ReserveDestination",
    "StartTransfer",
    "ActivateDestination",
    "ReleaseSource",
    "CancelSource",
    "CancelDestination",
    "Complete",
]


def test_exported_names_are_pinned() -> None:
    assert set(handoff.__all__) == SPEC_NAMES | EXTRA_NAMES
    assert handoff.__all__ == sorted(handoff.__all__)


@pytest.mark.parametrize("name", sorted(set(handoff.__all__) - set(UNION_ALIASES)))
def test_every_exported_name_reports_the_package_not_its_private_module(name: str) -> None:
    assert getattr(handoff, name).__module__ == "handoff"


def test_an_error_names_its_public_path() -> None:
    error = handoff.OutOfOrderFactError
    assert f"{error.__module__}.{error.__qualname__}" == "handoff.OutOfOrderFactError"


@pytest.mark.parametrize(
    ("family", "variants"),
    [(handoff.HandoffFact, FACT_VARIANTS), (handoff.HandoffAction, ACTION_VARIANTS)],
)
def test_each_variant_is_a_public_class_of_its_family(family: type, variants: list[str]) -> None:
    for name in variants:
        variant = getattr(family, name)
        assert issubclass(variant, family)
        assert variant.__name__ == name
        assert variant.__qualname__ == f"{family.__name__}.{name}"
        assert variant.__module__ == "handoff"


@pytest.mark.parametrize(("alias", "family"), sorted(UNION_ALIASES.items()))
def test_each_union_alias_is_exactly_its_family_s_variants_in_order(
    alias: str, family: type
) -> None:
    # The order is the Rust enum's: the wire format and the docs list variants in it.
    names = FACT_VARIANTS if family is handoff.HandoffFact else ACTION_VARIANTS
    members = typing.get_args(getattr(handoff, alias))
    assert members == tuple(getattr(family, name) for name in names)


def test_a_variant_pickles_under_its_public_path() -> None:
    fact = handoff.HandoffFact.Canceled(handoff.HandoffId(uuid.UUID(int=7)))
    data = pickle.dumps(fact)
    assert b"handoff" in data
    assert b"_messages" not in data
    assert pickle.loads(data) == fact


def test_nothing_public_is_left_out_of_all() -> None:
    # Public submodules (`handoff.wire`) appear as attributes once imported; they are not names.
    # Every lazy name is loaded first, so the test does not depend on which tests ran before.
    for name in handoff.__all__:
        getattr(handoff, name)
    public = {
        name
        for name, value in vars(handoff).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(handoff.__all__)


def test_the_conformance_summary_loads_on_first_use_under_its_public_name() -> None:
    code = (
        "import sys, pickle, handoff; before = 'handoff._values.conformance' in sys.modules; "
        "timing = handoff.NormalizedStoredTiming(on_activation=1); "
        "print(before, repr(timing), b'_conformance' in pickle.dumps(timing))"
    )
    assert _run(code) == (
        "False NormalizedStoredTiming(before_activation=0, on_activation=1, "
        "repeated_activation_hashes_after_activation=0) False"
    )


def test_wire_is_an_attribute_of_the_package() -> None:
    assert handoff.wire.WireError is handoff.WireError
    # What a bare `import handoff` falls back on; the subprocess tests below show it is needed.
    assert getattr(handoff, "__getattr__")("wire") is handoff.wire  # noqa: B009
    assert "wire" in dir(handoff)
    assert issubclass(handoff.WireError, handoff.HandoffError)


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'handoff' has no attribute 'Wire'"):
        handoff.Wire  # type: ignore[attr-defined]  # noqa: B018


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_import_handoff_loads_neither_the_wire_nor_a_tool() -> None:
    loaded = _run("import sys, handoff; print(sorted(m for m in sys.modules if 'handoff' in m))")
    assert "'handoff._coordinator.core'" in loaded
    for module in (
        "handoff.wire",
        "handoff._wire.codecs",
        "handoff._wire.json_text",
        "handoff._values.conformance",
    ):
        assert repr(module) not in loaded
    assert "handoff._runs" not in loaded
    assert "handoff._review" not in loaded
    assert "handoff._docs" not in loaded


RUNTIME_PATH = {
    "handoff",
    "handoff._chart",
    "handoff._chart.vocabulary",
    "handoff._compile",
    "handoff._compile.table",
    "handoff._coordinator",
    "handoff._coordinator.binding",
    "handoff._coordinator.copies",
    "handoff._coordinator.core",
    "handoff._public",
    "handoff._values",
    "handoff._values.errors",
    "handoff._values.lifecycle",
    "handoff._values.messages",
    "handoff._values.timing",
    "handoff._values.validators",
    "handoff._values.values",
}
"""Every module of the package `import handoff` loads: the coordinator and its values."""

STANDARD_LIBRARY_NEEDED = {"uuid", "_uuid", "math"}
"""What the coordinator needs of the standard library beyond what `attrs` loads already."""


def test_import_handoff_loads_the_coordinator_and_nothing_else() -> None:
    # Beside attrs, which the values are made of: a change that drags a writer, the wire,
    # the snapshot or python-statemachine onto every worker's start-up shows here.
    code = (
        "import sys, attrs; before = set(sys.modules); import handoff; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    loaded = set(_run(code).split())
    assert {name for name in loaded if name.split(".")[0] == "handoff"} == RUNTIME_PATH
    assert {name for name in loaded if name.split(".")[0] != "handoff"} <= STANDARD_LIBRARY_NEEDED


def test_the_version_is_the_installed_distributions_read_on_first_use() -> None:
    code = (
        "import sys, handoff; before = 'importlib.metadata' in sys.modules; "
        "print(before, handoff.__version__, '__version__' in dir(handoff))"
    )
    assert _run(code) == f"False {importlib.metadata.version('kv-handoff')} True"


def test_a_source_tree_never_installed_has_an_unknown_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Read afresh: as the package is before its first use (undone at the end, as it was).
    monkeypatch.setitem(vars(handoff), "__version__", "read afresh below")
    monkeypatch.delitem(vars(handoff), "__version__")
    assert handoff.__version__ == importlib.metadata.version("kv-handoff")
    monkeypatch.delitem(vars(handoff), "__version__")

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert handoff.__version__ == "0+unknown"


@pytest.mark.parametrize(
    ("module", "needs", "extra"),
    [("handoff.sphinx", "docutils", "sphinx"), ("handoff.sphinx", "sphinx", "sphinx")],
)
def test_an_extra_module_without_its_extra_says_what_to_install(
    module: str, needs: str, extra: str
) -> None:
    # A package set to None in sys.modules is one Python cannot import, as if not installed.
    code = f"import sys; sys.modules[{needs!r}] = None; import {module}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"ModuleNotFoundError: handoff.sphinx needs the {extra} extra ({needs} is missing): "
        f"pip install 'kv-handoff[{extra}]'"
    )


def test_the_wire_loads_on_first_use_after_a_bare_import() -> None:
    code = (
        "import sys, handoff; before = 'handoff.wire' in sys.modules; "
        "text = handoff.wire.dumps(handoff.HandoffActionId(3)); "
        "print(before, text, 'handoff.wire' in sys.modules)"
    )
    assert _run(code) == "False 3 True"


def test_a_trace_that_does_not_fit_raises_the_public_trace_error(tmp_path: Path) -> None:
    trace = tmp_path / "not-a-trace.jsonl"
    trace.write_text("this is not JSON\n", encoding="utf-8")
    with pytest.raises(handoff.TraceError) as raised:
        handoff.check_trace(trace)
    assert isinstance(raised.value, handoff.HandoffError)
    assert type(raised.value).__module__ == "handoff"
    assert str(trace) in str(raised.value)

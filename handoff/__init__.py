"""Prefill-to-decode KV-cache handoff, defined as one statechart per handoff order.

Where things are (everything private; this module is the one public face, with `wire`,
`diagrams` and `sphinx` beside it):

* The core, which `import handoff` loads, one package a concept:
  `_chart/` the chart: the shipped charts (`shipped`), how a chart is written and checked
  when it is defined (`base`, `derive`, `rules`, `groups`), its vocabulary and binding, and
  how one is named `MODULE:CLASS` (`lookup`);
  `_compile/` its compilation: the flat table the coordinator and every tool run (`table`,
  with the shipped charts' `generated_tables`), and python-statemachine's own run of a chart
  to compare it with (`interpreted`, `equivalence`);
  `_coordinator/` the coordinator (`core`), its snapshots, copies and recorder, and the
  tools' window into it (`probe`);
  `_values/` the values it takes and gives, their validators, and its errors;
  `_wire/` their wire form, the reference's JSON.
* The wings, which build on the core and never the other way: `_runs/` drives coordinators
  (the demo, traces and replay, the simulation, workers and their faults); `_review/`
  reviews a chart in a world, alone or with its workers (one explorer, its properties,
  report, Spin); `_docs/` draws and writes what the docs show.  Imports run core, then
  `_runs/`, `_review/`, `_docs/`; the command line (`__main__`, `_cli`) sits above them all.
"""

import typing as _typing

from handoff._chart.vocabulary import ChartEvent, Check, Effect, EventKind, Refusal
from handoff._coordinator import copies as _copies  # noqa: F401 (registers copying, pickling)
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._public import exported as _exported
from handoff._values.errors import (
    CleanupActionFailedError,
    ConcurrentCallError,
    ConflictingOutcomeError,
    ConformanceError,
    ForeignFactError,
    HandoffError,
    InvalidOutcomeError,
    InvalidTransferTimingError,
    OutOfOrderFactError,
    TraceError,
    UnknownActionError,
    WireError,
)
from handoff._values.lifecycle import NormalizedHandoffEvent, expected_normalized_handoff
from handoff._values.messages import (
    AnyHandoffAction,
    AnyHandoffFact,
    HandoffAction,
    HandoffFact,
    IssuedHandoffAction,
)
from handoff._values.timing import (
    HandoffTransferTiming,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)
from handoff._values.values import (
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
    "ChartEvent",
    "Check",
    "CleanupActionFailedError",
    "ConcurrentCallError",
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
    "HandoffCoordinator",
    "HandoffCoordinatorCore",
    "HandoffError",
    "HandoffFact",
    "HandoffId",
    "HandoffOrder",
    "HandoffTransferTiming",
    "HandoffView",
    "InvalidOutcomeError",
    "InvalidTransferTimingError",
    "IssuedHandoffAction",
    "KvTransferTimingMode",
    "Message",
    "MessageKind",
    "NormalizedHandoffConformance",
    "NormalizedHandoffEvent",
    "NormalizedStoredTiming",
    "OutOfOrderFactError",
    "OutcomeKind",
    "PerRole",
    "PropertyVerdict",
    "RecordingCoordinator",
    "Refusal",
    "RequestMemory",
    "Role",
    "Slots",
    "SourceFirstChart",
    "SystemView",
    "TraceCheck",
    "TraceError",
    "UnknownActionError",
    "WireError",
    "WorkerContract",
    "WorkerReaction",
    "WorkerReply",
    "WorkerTask",
    "WorkerView",
    "acknowledged",
    "check_trace",
    "expected_normalized_handoff",
    "ignored",
    "record",
    "refused",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]


# Chart authoring needs python-statemachine; running the shipped orders does not, so these
# names load on first use, like `handoff.wire`; so do the conformance summary's classes, which
# only a check against the reference fixture needs, judging a recorded run, which uses the
# model review's rules, and recording one, which writes through the wire; so do the worker
# contracts, which the system review and the simulation run.
_LAZY = {
    "NormalizedHandoffConformance": "handoff._values.conformance",
    "NormalizedStoredTiming": "handoff._values.conformance",
    "HandoffChart": "handoff._chart.base",
    "acknowledged": "handoff._chart.base",
    "ignored": "handoff._chart.base",
    "refused": "handoff._chart.base",
    "SourceFirstChart": "handoff._chart.shipped",
    "DestinationFirstChart": "handoff._chart.shipped",
    "wire": "handoff.wire",
    "check_trace": "handoff._review.trace_check",
    "TraceCheck": "handoff._review.trace_check",
    "PropertyVerdict": "handoff._review.trace_check",
    "record": "handoff._coordinator.recorder",
    "HandoffCoordinator": "handoff._coordinator.recorder",
    "RecordingCoordinator": "handoff._coordinator.recorder",
    "RequestMemory": "handoff._runs.workers",
    "PerRole": "handoff._runs.workers",
    "Slots": "handoff._runs.workers",
    "SystemView": "handoff._runs.worker_state",
    "HandoffView": "handoff._runs.worker_state",
    "WorkerView": "handoff._runs.worker_state",
    "Message": "handoff._runs.workers",
    "MessageKind": "handoff._runs.workers",
    "Role": "handoff._runs.workers",
    "WorkerContract": "handoff._runs.workers",
    "WorkerReaction": "handoff._runs.workers",
    "WorkerReply": "handoff._runs.workers",
    "WorkerTask": "handoff._runs.workers",
}

if _typing.TYPE_CHECKING:
    __version__: str
    """The installed distribution's version (`kv-handoff`), read on first use."""

    from handoff import wire as wire
    from handoff._chart.base import HandoffChart, acknowledged, ignored, refused
    from handoff._chart.shipped import DestinationFirstChart, SourceFirstChart
    from handoff._coordinator.recorder import HandoffCoordinator, RecordingCoordinator, record
    from handoff._review.trace_check import PropertyVerdict, TraceCheck, check_trace
    from handoff._runs.worker_state import HandoffView, SystemView, WorkerView
    from handoff._runs.workers import (
        Message,
        MessageKind,
        PerRole,
        RequestMemory,
        Role,
        Slots,
        WorkerContract,
        WorkerReaction,
        WorkerReply,
        WorkerTask,
    )
    from handoff._values.conformance import NormalizedHandoffConformance, NormalizedStoredTiming
else:
    # Hidden from type checkers, which would otherwise accept any attribute of the package.

    def __getattr__(name: str) -> object:
        if name == "__version__":
            # Read from the installed metadata on first use: importlib.metadata costs more
            # than the coordinator's whole import.
            from importlib import metadata

            try:
                version = metadata.version("kv-handoff")
            except metadata.PackageNotFoundError:  # a source tree that was never installed
                version = "0+unknown"
            globals()[name] = version
            return version
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'handoff' has no attribute {name!r}")
        import importlib

        loaded = importlib.import_module(module)
        value = loaded if name == "wire" else getattr(loaded, name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__, "wire", "__version__"})


# Tracebacks, reprs and pickles name `handoff.HandoffError`, never the private module that
# defines it; the variants of each message family likewise read `handoff.HandoffFact.Failed`.
# The lazy names set their own `__module__` when their module loads.
for _name in __all__:
    if _name in _LAZY:
        continue
    _value = globals()[_name]
    _exported(*(_typing.get_args(_value) or (_value,)))
del _name, _value, _exported

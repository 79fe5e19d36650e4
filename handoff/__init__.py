"""Hand one request's KV cache from a prefill worker to a decode worker, never losing it
and never owning it twice.

A `HandoffCoordinatorCore` is one handoff's coordinator: a pure state machine that takes facts
(`HandoffFact.SourceHeld`, ...) and action outcomes, and answers with the actions your runtime
performs.  Each ordering, `HandoffOrder.SOURCE_FIRST` (vLLM, TensorRT-LLM) and
`HandoffOrder.DESTINATION_FIRST` (SGLang), is a declarative statechart; diagrams and a model
review derive from it.  The first call::

    coordinator = HandoffCoordinatorCore(handoff_id=HandoffId(uuid=uuid.uuid4()),
                                         order=HandoffOrder.SOURCE_FIRST)
    [submit] = coordinator.start()   # IssuedHandoffAction: SubmitPrefill, #0

Every call returns the actions to perform or raises `HandoffError` and changes nothing.  The
documentation (the contract, integrating a runtime, the errors, the command line `handoff`)
is at https://github.com/kv-handoff/handoff/tree/main/docs.

Where things are, for maintainers.  Everything below is private; this module is the one
public face, with `wire`, `diagrams`, `sphinx` and `conform_driver` beside it.

* The core, which `import handoff` loads, one package a concept:
* `_chart/` the chart: the shipped charts (`shipped`), how a chart is written and checked when
  it is defined (`base`, `derive`, `rules`, `groups`) and its vocabulary (`vocabulary`).
* `_compile/` its compilation: the flat table the coordinator and every tool run (`table`,
  `codec_table`, with the shipped charts' `generated_tables`), python-statemachine's own run of
  a chart to compare it with (`interpreted`), and how a chart is named `MODULE:CLASS`
  (`lookup`).
* `_coordinator/` the coordinator (`core`), how it binds a chart's events to calls
  (`binding`), its snapshots (`snapshot`, `snapshot_values`), copies (`copies`) and recorder
  (`recorder`), what it can reach (`reachable`), and the tools' one window into it (`probe`).
* `_values/` the values it takes and gives (`values`, `messages`, `timing`, `lifecycle`,
  `conformance`), their `validators`, and its `errors`.
* `_wire/` their wire form, the reference's JSON (`codecs`, `json_text`, and the codec of every
  wire type, `registry`).
* The wings, which build on the core and never the other way, in this order:
* `_system/` the system around coordinators, written once and pure: a call into a coordinator
  (`call`), the runtime's duties (`runtime`, `duties`), when it acknowledges (`acknowledge`),
  the upstream runtimes as profiles (`profiles`), the workers (`workers`, `worker_state`), the
  faults (`faults`), the configuration naming them (`config`), the properties judged of it
  (`properties`), what a step breaks (`judgments`), when a run never ends (`bound`), and the
  command line's one translation of the world's options (`cli`).
* `_runs/` schedulers that drive real coordinators: the demo (`demo`), traces and their
  replay (`trace`, `trace_file`, `replay`, `replay_cli`), the simulation (`simulation`,
  `simulated_workers`, `simulation_report`, `simulate_cli`).
* `_review/` the model review: one explorer (`explore`, `graph`, `world`) over the chart alone
  (`environment`, `watch`, `monitors`) or the system (`system`, `system_moves`,
  `system_state`, `system_faults`, `system_duties`, `system_runtime`, `system_replay`,
  `system_words`), its `verdict`, `report` (with a `meter` on a terminal), `judge` and
  `trace_check`; `equivalence` of the table and the interpreted chart; `conform/` and `spin/`.
* `_docs/` what the docs show: drawings (`diagram`, `dot`, `mermaid`, `sequence`) and the
  generated sections (`generated`, `sections`, `project`).
* The command line (`__main__`, `_cli`) sits above them all.
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
    "Acknowledge",
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
    "PerAction",
    "PerRole",
    "PropertyVerdict",
    "RecordingCoordinator",
    "Refusal",
    "RequestMemory",
    "Role",
    "RuntimeProfile",
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
    name: module
    for module, names in {
        "handoff._values.conformance": ("NormalizedHandoffConformance", "NormalizedStoredTiming"),
        "handoff._chart.base": ("HandoffChart", "acknowledged", "ignored", "refused"),
        "handoff._chart.shipped": ("SourceFirstChart", "DestinationFirstChart"),
        "handoff.wire": ("wire",),
        "handoff._review.trace_check": ("check_trace", "TraceCheck", "PropertyVerdict"),
        "handoff._coordinator.recorder": ("record", "HandoffCoordinator", "RecordingCoordinator"),
        "handoff._system.workers": (
            "RequestMemory",
            "PerRole",
            "Slots",
            "Message",
            "MessageKind",
            "Role",
            "WorkerContract",
            "WorkerReaction",
            "WorkerReply",
            "WorkerTask",
        ),
        "handoff._system.worker_state": ("SystemView", "HandoffView", "WorkerView"),
        "handoff._system.acknowledge": ("Acknowledge", "PerAction"),
        "handoff._system.profiles": ("RuntimeProfile",),
    }.items()
    for name in names
}

if _typing.TYPE_CHECKING:
    __version__: str
    """The installed distribution's version (`kv-handoff`), read on first use."""

    from handoff import wire as wire
    from handoff._chart.base import HandoffChart, acknowledged, ignored, refused
    from handoff._chart.shipped import DestinationFirstChart, SourceFirstChart
    from handoff._coordinator.recorder import HandoffCoordinator, RecordingCoordinator, record
    from handoff._review.trace_check import PropertyVerdict, TraceCheck, check_trace
    from handoff._system.acknowledge import Acknowledge, PerAction
    from handoff._system.profiles import RuntimeProfile
    from handoff._system.worker_state import HandoffView, SystemView, WorkerView
    from handoff._system.workers import (
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

"""Traces: one handoff's calls as JSON Lines, written and read with the wire codecs.

A trace is a header line, one line per call, and an end line:

    {"handoff_id":"…","order":"SourceFirst","fallback_transfer_delay_ms":0.0}
    {"call":"start","expect":[{"id":0,"action":{"SubmitPrefill":{…}}}]}
    {"call":"fact","fact":{"Canceled":{"handoff_id":"…"}},"expect":[…]}
    {"call":"outcome","id":0,"outcome":"Submitted","expect_error":"…"}
    {"end":{"calls":3}}

A trace made on a chart of one's own names it in the header too (`"chart":"MyChart"`, after the
order), so it is replayed against that chart.  A trace recorded from a coordinator that had
already moved (restored from a snapshot) carries its snapshot last in the header
(`"snapshot":{"handoff_snapshot":1,…}`), and its calls replay from the coordinator it
restores.  A run of the chart with its workers (a system review's counterexample) names the
workers in the header and has one line per move, each a delivery, a worker failing its work
or a terminal fact, as the review's report names them:

    {"handoff_id":"…","order":"SourceFirst","workers":{"contract":"forgetful","fifo":false,
     "faults":2},"fallback_transfer_delay_ms":0.0}
    {"move":"start"}
    {"move":"deliver","message":"#0 SubmitPrefill"}
    {"move":"fault","fact":"Canceled"}
    {"end":{"moves":3}}

A run with faults injected (`--faults`), work acknowledged on send or a runtime profile other
than the default names them in its workers too,
`"injected":["duplicate"],"budget":1,"acknowledge":"on-send","runtime":"live"` (each only
when asked for), and its moves may `duplicate` or `lose` a message, `restart` a worker
(`{"move":"restart","worker":"source"}`), `abandon` a handoff's session or let a worker's
tombstone `expire` (`{"move":"expire","worker":"source","handoff":"h2"}`).
  Values are spelled exactly as `handoff.wire`
spells them.  A call line may say what the call must answer: `expect` (the actions issued, in
order) or `expect_error` (the whole message of the `HandoffError` raised).  The end line counts
the calls, so a trace cut short is refused instead of replaying as a shorter, different run.
Lines are separated by `\\n` only: a string may hold any other separator (U+2028 included) and
the trace stays readable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar, cast

import attrs

from handoff import _files, wire
from handoff._compile.table import CompiledChart
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._runs import trace_file
from handoff._system.call import Call, CallKind
from handoff._system.config import (
    DEFAULT_RUNTIME,
    Acknowledge,
    AnyAcknowledge,
    Resend,
    Restart,
    System,
    acknowledge_of,
)
from handoff._system.faults import NETWORK, Fault
from handoff._system.properties import OwnKey, find_property
from handoff._system.workers import contract_spelling, find_contract
from handoff._values.errors import TraceError
from handoff._values.messages import HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffActionId, HandoffActionOutcome, HandoffId, HandoffOrder
from handoff._wire.json_text import (
    WireRefusal,
    format_f64,
    key_segment,
    mismatch,
    object_mismatch,
    parse,
    read_string,
    write_string,
)
from handoff._wire.registry import codec_of

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "Entry",
    "MoveLine",
    "Trace",
    "TraceError",
    "TraceLines",
    "Workers",
    "call_fields",
    "call_object",
    "read_call",
    "read_trace",
    "stream_trace",
    "trace_text",
    "write_trace",
]

T = TypeVar("T")

_HEADER_KEYS = (
    "handoff_id", "order", "chart", "workers", "fallback_transfer_delay_ms", "snapshot",
)  # fmt: skip
_WORKERS_KEYS = ("contract", "fifo", "faults")
_WORKERS_OPTIONAL = (
    "injected",
    "budget",
    "acknowledge",
    "concurrency",
    "slots",
    "properties",
    "runtime",
)
_RUNTIME_OPTIONAL = ("retry", "resend", "restart", "deadline", "drain_transfers")
"""The runtime's duties a header names when they are not the contract's defaults."""
_MOVE_KEYS = ("move", "message", "fact", "worker", "handoff")
_CALL_KEYS = {
    CallKind.START: (),
    CallKind.FACT: ("fact",),
    CallKind.OUTCOME: ("id", "outcome"),
}
_EXPECTATION_KEYS = ("expect", "expect_error")
_END = "end"


@attrs.frozen
class Entry:
    """One call of a trace, with what it must answer when the trace says."""

    call: Call
    expect: tuple[IssuedHandoffAction, ...] | None = None
    """The actions the call must issue, in order."""
    expect_error: str | None = None
    """The exact message of the `HandoffError` the call must raise."""
    line: int = attrs.field(default=0, eq=False)
    """Where the entry was read from (0: not read from a file)."""

    def __attrs_post_init__(self) -> None:
        if self.expect is not None and self.expect_error is not None:
            raise ValueError("a call expects actions or an error, not both")


@attrs.frozen
class Workers:
    """The workers a system run was made with, as a trace names them."""

    contract: str
    """A shipped contract's name, or `MODULE:NAME`."""
    fifo: bool = False
    faults: int = 2
    injected: frozenset[Fault] = frozenset()
    """The faults injected besides (`--faults`)."""
    budget: int = 1
    acknowledge: AnyAcknowledge = Acknowledge.ON_REPLY
    concurrency: int = 1
    """How many handoffs shared the workers."""
    slots: int | None = None
    """How many slots each worker held at most (None: unbounded)."""
    properties: tuple[str, ...] = ()
    """The properties of one's own judged too, as `MODULE:NAME`."""
    retry: bool = True
    """Whether the runtime sent a failed cancel again (`System.retry`)."""
    resend: Resend = Resend.NONE
    """What the runtime sent again once lost (`System.resend`)."""
    restart: Restart = attrs.Factory(Restart)
    """What a worker's restart did (`System.restart`)."""
    deadline: float | None = None
    """Each handoff's deadline (`System.deadline`; infinite: untimed, as a review's)."""
    runtime: str | None = None
    """The runtime profile the run assumed, when not the default (a shipped name, or
    `MODULE:NAME`); its settings apply, then `acknowledge`."""
    drains_transfers: bool = False
    """Whether the runtime held a cancel of the destination while a transfer was on its way
    (`System.drains_transfers`)."""

    @classmethod
    def of(cls, system: System) -> Workers:
        """`system` as a trace spells it, for `system` to read back."""
        own = (entry.key for entry in system.properties)
        return cls(
            contract_spelling(system.contract),
            properties=tuple(key.spelling for key in own if isinstance(key, OwnKey)),
            runtime=None if system.runtime == DEFAULT_RUNTIME else system.runtime,
            **{name: getattr(system, name) for name in _AS_WRITTEN},
        )

    def system(self, allowed: Collection[str] = ()) -> System:
        """The system these workers spell.  The spelling is data: a contract or property named
        `MODULE:NAME` is imported only if `allowed` holds the name (else `NotGiven`); a bad
        one is a `ValueError`."""
        settings: dict[str, Any] = {}
        if self.runtime is not None:
            from handoff._system.profiles import find_runtime  # only a run that names one

            settings = find_runtime(self.runtime, allowed).settings()
        # What the run's system did, as written: over the profile's own values.
        settings.update({name: getattr(self, name) for name in _AS_WRITTEN})
        return System(
            find_contract(self.contract, allowed),
            properties=tuple(find_property(name, allowed) for name in self.properties),
            **settings,
        )


_AS_WRITTEN = tuple(
    field.name
    for field in attrs.fields(Workers)
    if field.name not in ("contract", "properties", "runtime")
)
"""The fields of `Workers` that are `System`'s, spelled alike (the others are spelled as names)."""


@attrs.frozen
class MoveLine:
    """One move of a system run: `start`, `deliver` a message, `fail` one, or a `fault`."""

    move: str
    message: str | None = None
    """The message delivered or failed, as reports name it (`#0 SubmitPrefill`)."""
    fact: str | None = None
    """The terminal fact a fault reports (`Canceled`)."""
    worker: str | None = None
    """The worker that restarts (`source`, `destination`)."""
    handoff: str | None = None
    """The handoff a start or a fault is for, when several share the workers (`h2`)."""

    def __str__(self) -> str:
        """The move as its trace line spells it: `{"move":"start","handoff":"h2"}`."""
        return _move_line(self)


@attrs.frozen
class Trace:
    """A handoff's identity and its calls in order (or, with workers, its moves)."""

    handoff_id: HandoffId
    order: HandoffOrder
    fallback_transfer_delay_ms: float
    entries: tuple[Entry, ...]
    chart: str | None = None
    """The name of the chart the calls were made on, when it is not the order's own."""
    rules: type[HandoffChart] | CompiledChart | None = attrs.field(default=None, eq=False)
    """The chart class (or table) a fresh coordinator runs (None: the order's shipped chart)."""
    workers: Workers | None = None
    """The workers of a system run; its moves are then in `moves`, and `entries` is empty."""
    moves: tuple[MoveLine, ...] = ()
    snapshot: str | None = None
    """The snapshot of the coordinator the calls start from (None: a fresh one)."""

    @property
    def calls(self) -> tuple[Call, ...]:
        """The calls alone, without their expectations."""
        return tuple(entry.call for entry in self.entries)

    def coordinator(self) -> HandoffCoordinatorCore:
        """A fresh coordinator for this trace (restored from its snapshot, if it has one)."""
        if self.snapshot is not None:
            return self._restored(self.snapshot)
        if isinstance(self.rules, CompiledChart):
            return probe.for_table(self.handoff_id, self.rules, self.fallback_transfer_delay_ms)
        from handoff._chart.shipped import (
            CHARTS,  # the class, not the start-up table: tools judge edits
        )

        return HandoffCoordinatorCore(
            self.handoff_id,
            self.order,
            self.fallback_transfer_delay_ms,
            chart=self.rules or CHARTS[self.order],
        )

    def _restored(self, snapshot: str) -> HandoffCoordinatorCore:
        """The coordinator the header's snapshot describes, on the chart this trace runs on."""
        from handoff._chart.shipped import CHARTS
        from handoff._coordinator.snapshot import given_charts, read

        rules = self.rules or CHARTS[self.order]
        if isinstance(rules, CompiledChart):
            raise TraceError(
                f"chart {rules.name} is a compiled table: a trace that starts from a snapshot "
                "replays on a chart class"
            )
        # The snapshot is restored on the chart the trace is replayed on (given with --chart,
        # say), which must reach its configuration.
        data = json.loads(snapshot)
        data["chart"] = f"{rules.__module__}:{rules.__qualname__}"
        try:
            text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
            restored = read(text, charts=given_charts([rules]))  # the one it was handed
        except WireRefusal as refusal:
            raise TraceError(f"the header's snapshot: {refusal.path}: {refusal.reason}") from None
        made = (restored.handoff_id, restored.fallback_transfer_delay_ms)
        if made != (self.handoff_id, self.fallback_transfer_delay_ms):
            raise TraceError(
                "the header's snapshot is of another handoff: its handoff_id and fallback "
                "must be the header's"
            )
        return restored


# -- writing -------------------------------------------------------------------------------


def trace_text(trace: Trace) -> str:
    """`trace` as JSON Lines, end line included; `TraceError` if a value has no JSON form."""
    try:
        return "".join(line + "\n" for line in _lines(trace, trace.entries, [0]))
    except (WireRefusal, wire.WireError) as error:
        raise TraceError(f"cannot write the trace: {error}") from None


def _lines(trace: Trace, entries: Iterable[Entry], written: list[int]) -> Iterator[str]:
    """The lines of `trace` (its calls `entries`), end line included; `written[0]` counts the
    calls (or moves) as they go by."""
    yield _header(trace)
    body = map(_entry_line, entries) if trace.workers is None else map(_move_line, trace.moves)
    for line in body:
        written[0] += 1
        yield line
    unit = "calls" if trace.workers is None else "moves"
    yield f'{{"{_END}":{{"{unit}":{written[0]}}}}}'


def write_trace(trace: Trace, path: Path, entries: Iterable[Entry] | None = None) -> int:
    """Write `trace` to `path`, whole or not at all (never a half-written trace); the count of
    calls (or moves) written.

    `entries` are its calls when they are made as they are written (`handoff replay
    --record`), rather than held in `trace`.  `path` must be a regular file or a missing one
    (see `handoff._files`); `TraceError` else.
    """
    written = [0]
    lines = _lines(trace, trace.entries if entries is None else entries, written)
    try:
        _files.write_chunks(
            path, ((line + "\n").encode("utf-8", "surrogateescape") for line in lines)
        )
    except _files.OutputError as error:
        raise TraceError(str(error)) from None
    except (WireRefusal, wire.WireError) as error:
        raise TraceError(f"cannot write the trace: {error}") from None
    return written[0]


def _header(trace: Trace) -> str:
    chart = "" if trace.chart is None else f',"chart":{write_string(trace.chart)}'
    workers = trace.workers
    if workers is not None:
        fifo = "true" if workers.fifo else "false"
        chart += (
            f',"workers":{{"contract":{write_string(workers.contract)},"fifo":{fifo},'
            f'"faults":{workers.faults}{_workers_options(workers)}}}'
        )
    snapshot = "" if trace.snapshot is None else f',"snapshot":{trace.snapshot}'
    return (
        f'{{"handoff_id":{wire.dumps(trace.handoff_id)},"order":{wire.dumps(trace.order)}{chart},'
        f'"fallback_transfer_delay_ms":{format_f64(trace.fallback_transfer_delay_ms)}{snapshot}}}'
    )


def _workers_options(workers: Workers) -> str:
    """The workers' options that are not the defaults: a run without them reads as before."""
    text = ""
    if workers.injected:
        names = ",".join(write_string(f.value) for f in NETWORK if f in workers.injected)
        text += f',"injected":[{names}],"budget":{workers.budget}'
    if workers.acknowledge is not Acknowledge.ON_REPLY:
        text += f',"acknowledge":{write_string(workers.acknowledge.value)}'
    if workers.concurrency != 1:
        text += f',"concurrency":{workers.concurrency}'
    if workers.slots is not None:
        text += f',"slots":{workers.slots}'
    if workers.properties:
        text += f',"properties":[{",".join(map(write_string, workers.properties))}]'
    if not workers.retry:
        text += ',"retry":false'
    if workers.resend is not Resend.NONE:
        text += f',"resend":{write_string(workers.resend.value)}'
    if workers.restart != Restart():
        text += f',"restart":[{",".join(map(write_string, workers.restart.spelling))}]'
    if workers.deadline is not None:
        untimed = workers.deadline == math.inf
        text += f',"deadline":{"true" if untimed else format_f64(workers.deadline)}'
    if workers.runtime is not None:
        text += f',"runtime":{write_string(workers.runtime)}'
    if workers.drains_transfers:
        text += ',"drain_transfers":true'
    return text


def _move_line(line: MoveLine) -> str:
    fields = attrs.asdict(line)
    return "{" + ",".join(f'"{k}":{write_string(v)}' for k, v in fields.items() if v) + "}"


def call_fields(call: Call) -> str:
    """The call's keys as a trace line spells them, without the braces (`"call":"start"`)."""
    text = f'"call":"{call.kind.value}"'
    if call.fact is not None:
        text += f',"fact":{wire.dumps(call.fact)}'
    if call.outcome is not None:
        text += f',"id":{wire.dumps(call.action_id)},"outcome":{wire.dumps(call.outcome)}'
    return text


def _entry_line(entry: Entry) -> str:
    text = call_fields(entry.call)
    if entry.expect is not None:
        text += ',"expect":[' + ",".join(map(wire.dumps, entry.expect)) + "]"
    if entry.expect_error is not None:
        text += f',"expect_error":{write_string(entry.expect_error)}'
    return "{" + text + "}"


def call_object(call: Call) -> dict[str, Any]:
    """The call as a trace spells it, as JSON-ready values (for reports that embed calls)."""
    return cast(dict[str, Any], parse("{" + call_fields(call) + "}"))


# -- reading -------------------------------------------------------------------------------


def read_trace(path: Path, *, require_end: bool = True) -> Trace:
    """Read a trace file; a malformed one raises `TraceError` naming the file and line.

    With `require_end=False` a trace without its end line is read as complete (for rewriting
    traces written before they had one); a wrong end line is refused all the same.
    """
    trace, body = stream_trace(path, require_end=require_end)
    lines = tuple(body)
    if trace.workers is None:
        return attrs.evolve(trace, entries=cast("tuple[Entry, ...]", lines))
    return attrs.evolve(trace, moves=cast("tuple[MoveLine, ...]", lines))


def stream_trace(path: Path, *, require_end: bool = True) -> tuple[Trace, TraceLines]:
    """The header of the trace file at `path`, and its calls (or moves) read one at a time.

    The header is read, and the end line looked for, before this returns; each line after it
    is read and checked as the iterator reaches it, so memory does not grow with the file, and
    a bad line raises `TraceError` there (after the lines before it).  The file is closed when
    the iterator is exhausted or closed.
    """
    name = str(path)
    try:
        file = path.open("rb")
    except OSError as error:
        raise TraceError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        lines = trace_file.lines(file, name)
        trace = _read_header(name, next(lines, None))
        if require_end:  # a trace cut short is refused before its calls are read
            trace_file.require_last_line(file, name, _is_end_line, _no_end_line, _END)
    except BaseException as error:
        file.close()
        if isinstance(error, OSError):
            raise TraceError(f"{path}: cannot read: {error.strerror or error}") from None
        raise
    return trace, TraceLines(file, name, _body(name, trace, lines, require_end=require_end))


class TraceLines(Iterator["Entry | MoveLine"]):
    """The lines of an open trace file after its header, read one at a time; closing it (or
    reading it to its end) closes the file, read or not."""

    def __init__(self, file: BinaryIO, name: str, body: Iterator[Entry | MoveLine]) -> None:
        self._file, self._name, self._body = file, name, body

    def __next__(self) -> Entry | MoveLine:
        try:
            return next(self._body)
        except OSError as error:
            self.close()
            raise TraceError(f"{self._name}: cannot read: {error.strerror or error}") from None
        except BaseException:  # the end, or a line refused: the file is done with either way
            self.close()
            raise

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def _is_end_line(line: str) -> bool:
    try:
        data = parse(line)
    except WireRefusal:
        return False
    return isinstance(data, dict) and _END in data


def _no_end_line(calls: int) -> str:
    return (
        f"no end line after {calls} calls: the trace was cut short, or "
        "was written before traces ended with one (if it is complete, "
        "`handoff replay --record` adds the end line)"
    )


def _read_header(name: str, first: tuple[int, str] | None) -> Trace:
    """The trace the header line `first` starts, without its calls."""
    if first is None:
        raise TraceError(f"{name}: empty: a trace starts with a header line")
    header = _Line(f"{name}:{first[0]}", _object(f"{name}:{first[0]}", first[1]))
    header.only(_HEADER_KEYS)
    return Trace(
        handoff_id=header.value("handoff_id", HandoffId),
        order=header.value("order", HandoffOrder),
        fallback_transfer_delay_ms=header.delay("fallback_transfer_delay_ms"),
        entries=(),
        chart=header.text("chart") if "chart" in header.data else None,
        workers=header.workers() if "workers" in header.data else None,
        snapshot=header.snapshot() if "snapshot" in header.data else None,
    )


def _body(
    name: str, trace: Trace, lines: Iterator[tuple[int, str]], *, require_end: bool
) -> Iterator[Entry | MoveLine]:
    """Each call (or move) line after the header, in order, up to the end line it checks."""
    count = 0
    unit = "calls" if trace.workers is None else "moves"
    for number, line in lines:
        data = _Line(f"{name}:{number}", _object(f"{name}:{number}", line))
        if _END in data.data:
            _check_end(data, count, unit)
            for after, _ in lines:
                raise TraceError(f"{name}:{after}: a line after the end line")
            return
        count += 1
        yield _entry(data, number) if trace.workers is None else data.move()
    if require_end:
        raise TraceError(f"{name}: {_no_end_line(count)}")


def _object(where: str, line: str) -> dict[str, object]:
    try:
        data = parse(line)
    except WireRefusal as refusal:
        raise TraceError(f"{where}: {refusal.reason}") from None
    if not isinstance(data, dict):
        wrong = object_mismatch("a JSON object", data)
        raise TraceError(f"{where}: {wrong.path}: {wrong.reason}")
    return data


def _check_end(end: _Line, count: int, unit: str = "calls") -> None:
    end.only((_END,))
    stated = end.data[_END]
    if not isinstance(stated, dict) or set(stated) != {unit}:
        raise end.fail(f'the end line must be {{"{_END}":{{"{unit}":N}}}}')
    if type(stated[unit]) is not int or stated[unit] != count:
        raise end.fail(f"the end line counts {stated[unit]!r} {unit}, the trace has {count}")


def read_call(where: str, data: dict[str, object], others: tuple[str, ...] = ()) -> Call:
    """The call a parsed line spells, which may hold the keys `others` besides the call's.

    A key that is neither, or a value the wire codecs refuse, is a `TraceError` placed at
    `where`.
    """
    line = _Line(where, data)
    kind = line.value("call", CallKind)
    line.only(("call", *_CALL_KEYS[kind], *others))
    if kind is CallKind.FACT:
        return Call.of_fact(line.value("fact", HandoffFact))
    if kind is CallKind.OUTCOME:
        return Call.of_outcome(
            line.value("id", HandoffActionId), line.value("outcome", HandoffActionOutcome)
        )
    return Call.start()


def _entry(line: _Line, number: int) -> Entry:
    call = read_call(line.where, line.data, _EXPECTATION_KEYS)
    expect = line.expect() if "expect" in line.data else None
    expect_error = line.text("expect_error") if "expect_error" in line.data else None
    if expect is not None and expect_error is not None:
        raise line.fail("a call expects actions or an error, not both")
    return Entry(call, expect, expect_error, number)


@attrs.frozen
class _Line:
    """One parsed line, whose values are read with the wire codecs and errors placed."""

    where: str
    data: dict[str, object]

    def fail(self, message: str) -> TraceError:
        return TraceError(f"{self.where}: {message}")

    def only(self, keys: tuple[str, ...]) -> None:
        unknown = [key for key in self.data if key not in keys]
        if unknown:
            raise self.fail(f"unexpected key {unknown[0]!r} (expected {', '.join(keys)})")

    def _read(self, key: str, read: Any) -> Any:
        if key not in self.data:
            raise self.fail(f"missing {key!r}")
        try:
            return read(self.data[key])
        except WireRefusal as refusal:
            refusal.segments.append(key_segment(key))
            raise self.fail(f"{refusal.path}: {refusal.reason}") from None

    def value(self, key: str, cls: type[T]) -> T:
        if cls is CallKind:
            return cast(T, self._read(key, _call_kind))
        return cast(T, self._read(key, codec_of(cls).read))

    def text(self, key: str) -> str:
        return cast(str, self._read(key, read_string))

    def snapshot(self) -> str:
        """The header's snapshot, as compact JSON text (read in full when it is restored)."""
        data = self.data["snapshot"]
        if not isinstance(data, dict) or "workers" in self.data:
            raise self.fail("snapshot must be a coordinator snapshot object, in a trace of calls")
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    def workers(self) -> Workers:
        data = self.data["workers"]
        known = {*_WORKERS_KEYS, *_WORKERS_OPTIONAL, *_RUNTIME_OPTIONAL}
        if not isinstance(data, dict) or not set(_WORKERS_KEYS) <= set(data) <= known:
            raise self.fail(
                'workers must be {"contract":NAME,"fifo":BOOL,"faults":N} and may add '
                '"injected":[FAULT,…], "budget":N, "acknowledge":POLICY, "concurrency":N, '
                '"slots":N, "properties":[MODULE:NAME,…], "retry":BOOL, "resend":POLICY, '
                '"restart":[CHOICE,…], "deadline":MS or true, "drain_transfers":BOOL'
            )
        contract, fifo, faults = (data[key] for key in _WORKERS_KEYS)
        if not isinstance(contract, str) or not contract:
            raise self.fail(f"workers: contract must be a name, got {contract!r}")
        if not isinstance(fifo, bool):
            raise self.fail(f"workers: fifo must be true or false, got {fifo!r}")
        if type(faults) is not int or faults < 0:
            raise self.fail(f"workers: faults must be a count, got {faults!r}")
        injected, budget, acknowledge = self._workers_options(data)
        concurrency, slots = data.get("concurrency", 1), data.get("slots")
        if type(concurrency) is not int or not 1 <= concurrency <= 9:
            raise self.fail(
                f"workers: concurrency must be a count from 1 to 9, got {concurrency!r}"
            )
        if slots is not None and (type(slots) is not int or slots < 1):
            raise self.fail(f"workers: slots must be a count from 1, got {slots!r}")
        properties = data.get("properties", [])
        if not isinstance(properties, list) or not all(
            isinstance(item, str) and item for item in properties
        ):
            raise self.fail(
                f"workers: properties must be a list of MODULE:NAME, got {properties!r}"
            )
        retry = data.get("retry", True)
        if not isinstance(retry, bool):
            raise self.fail(f"workers: retry must be true or false, got {retry!r}")
        resends = {policy.value: policy for policy in Resend}
        resend = data.get("resend", Resend.NONE.value)
        if not isinstance(resend, str) or resend not in resends:
            choices = ", ".join(resends)
            raise self.fail(f"workers: resend must be one of {choices}, got {resend!r}")
        restart = data.get("restart", [])
        if not isinstance(restart, list) or not all(
            isinstance(word, str) and word in Restart.WORDS for word in restart
        ):
            choices = ", ".join(Restart.WORDS)
            raise self.fail(f"workers: restart must be a list of {choices}, got {restart!r}")
        runtime = data.get("runtime")
        if runtime is not None and not (isinstance(runtime, str) and runtime):
            raise self.fail(f"workers: runtime must be a name, got {runtime!r}")
        drains = data.get("drain_transfers", False)
        if not isinstance(drains, bool):
            raise self.fail(f"workers: drain_transfers must be true or false, got {drains!r}")
        return Workers(
            contract, fifo, faults, injected, budget, acknowledge, concurrency, slots,
            tuple(properties), retry, resends[resend], Restart.of(restart),
            self._deadline(data.get("deadline")), runtime, drains,
        )  # fmt: skip

    def _deadline(self, value: object) -> float | None:
        if value is None:
            return None
        if value is True:
            return math.inf
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf:
            return float(value)
        raise self.fail(f"workers: deadline must be a positive number of ms or true, got {value!r}")

    def _workers_options(
        self, data: dict[str, object]
    ) -> tuple[frozenset[Fault], int, AnyAcknowledge]:
        names = data.get("injected", [])
        faults = {fault.value: fault for fault in NETWORK}
        if not isinstance(names, list) or not all(
            isinstance(name, str) and name in faults for name in names
        ):
            choices = ", ".join(faults)
            raise self.fail(f"workers: injected must be a list of {choices}, got {names!r}")
        budget = data.get("budget", 1)
        if type(budget) is not int or budget < 1:
            raise self.fail(f"workers: budget must be a count from 1, got {budget!r}")
        policy = data.get("acknowledge", Acknowledge.ON_REPLY.value)
        try:
            if not isinstance(policy, str):
                raise ValueError(f"expected on-send, on-reply or on-send:KIND,…, got {policy!r}")
            found = acknowledge_of(policy)
        except ValueError as error:
            raise self.fail(f"workers: acknowledge: {error}") from None
        return frozenset(faults[name] for name in names), budget, found

    def move(self) -> MoveLine:
        self.only(_MOVE_KEYS)
        texts = {key: self.text(key) for key in _MOVE_KEYS if key in self.data}
        if "move" not in texts:
            raise self.fail("missing 'move': a system run has one move a line")
        return MoveLine(
            texts["move"],
            texts.get("message"),
            texts.get("fact"),
            texts.get("worker"),
            texts.get("handoff"),
        )

    def expect(self) -> tuple[IssuedHandoffAction, ...]:
        return cast(tuple[IssuedHandoffAction, ...], self._read("expect", _issued_list))

    def delay(self, key: str) -> float:
        value = self.data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)  # the parser already refused numbers past a float's range
        raise self.fail(f"{key} must be a finite, non-negative number, got {value!r}")


def _call_kind(data: object) -> CallKind:
    for kind in CallKind:
        if data == kind.value:
            return kind
    raise mismatch('"start", "fact" or "outcome"', data)


def _issued_list(data: object) -> tuple[IssuedHandoffAction, ...]:
    if not isinstance(data, list):
        raise mismatch("an array of issued actions", data)
    codec = codec_of(IssuedHandoffAction)
    items = []
    for index, item in enumerate(data):
        try:
            items.append(codec.read(item))
        except WireRefusal as refusal:
            refusal.segments.append(f"[{index}]")
            raise
    return tuple(items)

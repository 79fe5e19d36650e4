"""Traces: one handoff's calls as JSON Lines, replayable against a fresh coordinator.

The first line is a header, `{"handoff_id":…,"order":…,"fallback_transfer_delay_ms":…}`; each
further line is one call — `{"call":"start"}`, `{"call":"fact","fact":{…}}` or
`{"call":"outcome","id":3,"outcome":"Applied"}` — optionally with what it must answer:
`"expect":[issued actions]` or `"expect_error":"phrase"`.  Values use `handoff.wire`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from handoff import wire
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._messages import HandoffFact, IssuedHandoffAction
from handoff._values import HandoffActionId, HandoffActionOutcome, HandoffId, HandoffOrder

__all__ = [
    "Call",
    "Divergence",
    "Trace",
    "TraceError",
    "phrase_of",
    "read_trace",
    "record",
    "replay",
    "write_trace",
    "write_violations",
]


class TraceError(HandoffError):
    """A trace file that cannot be read; the message names the file and line."""


@attrs.frozen
class Call:
    """One call of a trace, with what it must answer (if the trace says)."""

    kind: str
    """"start", "fact" or "outcome"."""
    fact: HandoffFact | None = None
    action_id: HandoffActionId | None = None
    outcome: HandoffActionOutcome | None = None
    expect: tuple[IssuedHandoffAction, ...] | None = None
    expect_error: str | None = None

    def perform(self, coordinator: HandoffCoordinatorCore) -> list[IssuedHandoffAction]:
        """Make this call on `coordinator`."""
        if self.kind == "start":
            return coordinator.start()
        if self.kind == "fact":
            assert self.fact is not None
            return coordinator.on_fact(self.fact)
        assert self.action_id is not None
        assert self.outcome is not None
        return coordinator.on_action_outcome(self.action_id, self.outcome)

    def describe(self) -> str:
        """The call as code, e.g. `on_action_outcome(3, Applied)`."""
        if self.kind == "start":
            return "start()"
        if self.kind == "fact":
            return f"on_fact({self.fact!r})"
        return f"on_action_outcome({self.action_id}, {self.outcome})"


@attrs.frozen
class Trace:
    """A handoff's identity and its calls in order."""

    handoff_id: HandoffId
    order: HandoffOrder
    fallback_transfer_delay_ms: float
    calls: tuple[Call, ...]

    def coordinator(self) -> HandoffCoordinatorCore:
        """A fresh coordinator for this trace."""
        return HandoffCoordinatorCore(self.handoff_id, self.order, self.fallback_transfer_delay_ms)


@attrs.frozen
class Divergence:
    """Where a replay first answered differently from the trace."""

    line: int
    call: Call
    chart_state: str
    expected: str
    actual: str


def phrase_of(error: BaseException) -> str:
    """The spec phrase an error message starts with (the detail after it is dropped)."""
    message = str(error)
    for separator in (" (", ": "):
        message = message.split(separator, 1)[0]
    return message


def replay(trace: Trace) -> Divergence | None:
    """Replay `trace` on a fresh coordinator; the first divergence, or None."""
    coordinator = trace.coordinator()
    for line, call in enumerate(trace.calls, start=2):
        state = coordinator.chart_state
        try:
            issued: list[IssuedHandoffAction] | None = call.perform(coordinator)
            error = None
        except HandoffError as raised:
            issued, error = None, raised
        expected, actual = _expected(call), _actual(issued, error)
        if _diverges(call, issued, error):
            return Divergence(line, call, state, expected, actual)
    return None


def record(trace: Trace) -> Trace:
    """`trace` with every call's expectation filled in from a fresh replay."""
    coordinator = trace.coordinator()
    calls = []
    for call in trace.calls:
        try:
            issued = tuple(call.perform(coordinator))
            calls.append(attrs.evolve(call, expect=issued, expect_error=None))
        except HandoffError as error:
            calls.append(attrs.evolve(call, expect=None, expect_error=phrase_of(error)))
    return attrs.evolve(trace, calls=tuple(calls))


def _diverges(
    call: Call, issued: list[IssuedHandoffAction] | None, error: HandoffError | None
) -> bool:
    if call.expect_error is not None:
        return error is None or call.expect_error not in str(error)
    if error is not None:
        return True
    return call.expect is not None and tuple(issued or ()) != call.expect


def _expected(call: Call) -> str:
    if call.expect_error is not None:
        return f"error {call.expect_error!r}"
    if call.expect is None:
        return "no error"
    return _actions(call.expect)


def _actual(issued: Sequence[IssuedHandoffAction] | None, error: HandoffError | None) -> str:
    if error is not None:
        return f"error {str(error)!r}"
    return _actions(issued or ())


def _actions(actions: Iterable[IssuedHandoffAction]) -> str:
    return "[" + ", ".join(f"#{item.id} {item.action!r}" for item in actions) + "]"


# -- reading and writing -------------------------------------------------------------------


def write_trace(trace: Trace, path: Path) -> None:
    """Write `trace` to `path` as JSON Lines."""
    path.write_text("".join(line + "\n" for line in _lines(trace)), encoding="utf-8")


def _lines(trace: Trace) -> Iterable[str]:
    yield (
        f'{{"handoff_id":{wire.dumps(trace.handoff_id)},"order":{wire.dumps(trace.order)},'
        f'"fallback_transfer_delay_ms":{json.dumps(trace.fallback_transfer_delay_ms)}}}'
    )
    for call in trace.calls:
        if call.kind == "start":
            text = '{"call":"start"'
        elif call.kind == "fact":
            text = f'{{"call":"fact","fact":{wire.dumps(call.fact)}'
        else:
            text = (
                f'{{"call":"outcome","id":{wire.dumps(call.action_id)},'
                f'"outcome":{wire.dumps(call.outcome)}'
            )
        if call.expect is not None:
            text += ',"expect":[' + ",".join(wire.dumps(item) for item in call.expect) + "]"
        if call.expect_error is not None:
            text += f',"expect_error":{json.dumps(call.expect_error, ensure_ascii=False)}'
        yield text + "}"


def read_trace(path: Path) -> Trace:
    """Read a trace file; a malformed one raises `TraceError` naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise TraceError(f"{path}: cannot read: {error}") from None
    if not lines:
        raise TraceError(f"{path}: empty trace: expected a header line")
    header = _field_reader(path, 1, lines[0], {"handoff_id", "order", "fallback_transfer_delay_ms"})
    calls = tuple(
        _call(_field_reader(path, number, line, _CALL_KEYS))
        for number, line in enumerate(lines[1:], start=2)
        if line.strip()
    )
    return Trace(
        handoff_id=header.value("handoff_id", HandoffId),
        order=header.value("order", HandoffOrder),
        fallback_transfer_delay_ms=header.delay("fallback_transfer_delay_ms"),
        calls=calls,
    )


_CALL_KEYS = {"call", "fact", "id", "outcome", "expect", "expect_error"}


@attrs.frozen
class _Fields:
    """One parsed line, whose values are read with `handoff.wire` and errors placed."""

    where: str
    data: dict[str, Any]

    def fail(self, message: str) -> TraceError:
        return TraceError(f"{self.where}: {message}")

    def has(self, key: str) -> bool:
        return key in self.data

    def value(self, key: str, cls: Any) -> Any:
        if key not in self.data:
            raise self.fail(f"missing {key!r}")
        try:
            return wire.loads(json.dumps(self.data[key], allow_nan=False), cls)
        except (wire.WireError, ValueError) as error:
            raise self.fail(f"{key}: {error}") from None

    def delay(self, key: str) -> float:
        value = self.data.get(key)
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value >= 0
        ):
            return float(value)
        raise self.fail(f"{key} must be a finite, non-negative number, got {value!r}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated key would let the stdlib silently keep the last value; the wire refuses it.
    data = dict(pairs)
    if len(data) != len(pairs):
        seen = [key for key, _ in pairs]
        raise ValueError(f"repeated key {next(k for k in seen if seen.count(k) > 1)!r}")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _field_reader(path: Path, number: int, line: str, keys: set[str]) -> _Fields:
    where = f"{path}:{number}"
    try:
        data = json.loads(line, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise TraceError(f"{where}: not JSON: {error.msg}") from None
    except ValueError as error:
        raise TraceError(f"{where}: {error}") from None
    if not isinstance(data, dict):
        raise TraceError(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = set(data) - keys
    if unknown:
        raise TraceError(f"{where}: unknown keys {sorted(unknown)}")
    return _Fields(where, data)


def _call(fields: _Fields) -> Call:
    kind = fields.data.get("call")
    expect = None
    if fields.has("expect"):
        items = fields.data["expect"]
        if not isinstance(items, list):
            raise fields.fail("expect must be a list of issued actions")
        expect = tuple(
            _Fields(f"{fields.where} expect[{index}]", {"item": item}).value(
                "item", IssuedHandoffAction
            )
            for index, item in enumerate(items)
        )
    expect_error = fields.data.get("expect_error")
    if expect_error is not None and not isinstance(expect_error, str):
        raise fields.fail("expect_error must be a string")
    if kind == "start":
        return Call("start", expect=expect, expect_error=expect_error)
    if kind == "fact":
        fact = fields.value("fact", HandoffFact)
        return Call("fact", fact=fact, expect=expect, expect_error=expect_error)
    if kind == "outcome":
        return Call(
            "outcome",
            action_id=fields.value("id", HandoffActionId),
            outcome=fields.value("outcome", HandoffActionOutcome),
            expect=expect,
            expect_error=expect_error,
        )
    raise fields.fail(f'call must be "start", "fact" or "outcome", got {kind!r}')


def write_violations(records: Iterable[Any], directory: Path) -> list[Path]:
    """Write each simulated handoff that violated a check as a trace; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for record_ in records:
        calls = tuple(
            _recorded_call(kind, argument, result) for kind, argument, result in record_.calls
        )
        trace = Trace(record_.handoff_id, record_.order, record_.fallback_transfer_delay_ms, calls)
        path = directory / f"{record_.handoff_id}.jsonl"
        write_trace(trace, path)
        paths.append(path)
    return paths


def _recorded_call(kind: str, argument: Any, result: Any) -> Call:
    expect = None if isinstance(result, BaseException) else tuple(result)
    error = phrase_of(result) if isinstance(result, BaseException) else None
    if kind == "start":
        return Call("start", expect=expect, expect_error=error)
    if kind == "fact":
        return Call("fact", fact=argument, expect=expect, expect_error=error)
    action_id, outcome = argument
    return Call("outcome", action_id=action_id, outcome=outcome, expect=expect, expect_error=error)

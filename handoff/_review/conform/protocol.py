"""The conformance protocol: one JSON object a line, one answer a line (docs/conformance.md).

Requests are `Hello`, `Open` (a handoff of an order, by id), `CallRequest` (a call for an
open handoff, spelled as a trace spells it) and, from version 2, `Close`; responses are
`Hello`, `Opened`, `Reply` (what the call answered, with the handoff's completion and lifecycle
after it) and `Closed`.  From version 2 an implementation's hello says which of `completion`
and `lifecycle` it reports; a reply leaves out what it does not.  `write` spells any of
them as a line, `read` reads any line back; `ProtocolError` says why a line is not one.  Values
are spelled as `handoff.wire` spells them; an error is named by its `ErrorKind`, never by a
message, so an implementation in any language can match it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import attrs

from handoff import wire
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.conform.child import clip
from handoff._runs.trace import call_fields, read_call
from handoff._system.call import Call
from handoff._values import errors
from handoff._values.errors import HandoffError, TraceError
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import HandoffAction, IssuedHandoffAction
from handoff._values.values import HandoffCompletion, HandoffId, HandoffOrder
from handoff._wire.json_text import (
    WireRefusal,
    format_f64,
    key_segment,
    parse,
    read_string,
    write_string,
)
from handoff._wire.registry import codec_of

__all__ = [
    "REPORTED",
    "VERSION",
    "VERSIONS",
    "Answer",
    "CallRequest",
    "Close",
    "Closed",
    "ErrorKind",
    "Hello",
    "Open",
    "Opened",
    "ProtocolError",
    "ProtocolLine",
    "Reply",
    "read",
    "read_message",
    "write",
]

VERSION = 2
"""The newest protocol version this side speaks; a `Hello` names the other side's."""
VERSIONS = (1, 2)
"""Every protocol version this side speaks: version 1 implementations keep working."""
REPORTED = ("completion", "lifecycle")
"""What a reply may report beside the call's answer and `complete`, as the hello names them."""


class ErrorKind(enum.Enum):
    """A refusal by kind, as the protocol names it (each `HandoffError` class's name, less
    `Error`): what an answer is judged by, since the words of a message are the
    implementation's own."""

    FOREIGN_FACT = "ForeignFact"
    OUT_OF_ORDER_FACT = "OutOfOrderFact"
    UNKNOWN_ACTION = "UnknownAction"
    CONFLICTING_OUTCOME = "ConflictingOutcome"
    INVALID_OUTCOME = "InvalidOutcome"
    CLEANUP_ACTION_FAILED = "CleanupActionFailed"
    INVALID_TRANSFER_TIMING = "InvalidTransferTiming"
    CONCURRENT_CALL = "ConcurrentCall"

    @classmethod
    def of(cls, error: HandoffError) -> ErrorKind:
        """The kind of `error`: its class's, or the nearest base class's that has one."""
        for klass in type(error).__mro__:
            kind = _KINDS.get(klass)
            if kind is not None:
                return kind
        raise TypeError(f"{type(error).__name__} is no refusal of a call: {error}")


_KINDS: dict[type, ErrorKind] = {getattr(errors, f"{kind.value}Error"): kind for kind in ErrorKind}
"""Each kind's error class, by the name the kind is spelled from."""


class ProtocolError(Exception):
    """A line that is not the protocol; the message says what was expected."""


@attrs.frozen
class Hello:
    """The handshake, both ways: the protocol version spoken, and who speaks it; from version
    2, an implementation's also says which of `REPORTED` its replies report (None: all)."""

    version: int = VERSION
    implementation: str = ""
    reports: tuple[str, ...] | None = None

    @property
    def reported(self) -> tuple[str, ...]:
        """What the implementation's replies report of `REPORTED`."""
        return REPORTED if self.reports is None or self.version < 2 else self.reports


@attrs.frozen
class Open:
    """Open a handoff: a fresh coordinator of `order` for `handoff_id`."""

    handoff_id: HandoffId
    order: HandoffOrder
    fallback_transfer_delay_ms: float = 0.0


@attrs.frozen
class Opened:
    """The answer to `Open`."""

    handoff_id: HandoffId


@attrs.frozen
class CallRequest:
    """Make `call` on the open handoff `handoff_id`."""

    handoff_id: HandoffId
    call: Call


@attrs.frozen
class Answer:
    """What a call answered: the actions issued or the kind of refusal, then the handoff's
    completion and lifecycle.  Equality is conformance: an error's `message` takes no part."""

    issued: tuple[IssuedHandoffAction, ...] = ()
    error: ErrorKind | None = None
    message: str = attrs.field(default="", eq=False)
    complete: bool = False
    completion: HandoffCompletion | None = None
    lifecycle: tuple[NormalizedHandoffEvent, ...] = ()

    @classmethod
    def of(cls, call: Call, coordinator: HandoffCoordinatorCore) -> Answer:
        """Make `call` on `coordinator` and say what it answered."""
        issued: tuple[IssuedHandoffAction, ...] = ()
        error = None
        message = ""
        try:
            issued = tuple(call.send(coordinator))
        except HandoffError as refused:
            error, message = ErrorKind.of(refused), str(refused)
        return cls(
            issued,
            error,
            message,
            coordinator.is_complete,
            coordinator.completion,
            coordinator.lifecycle,
        )

    def describe(
        self, handoff_id: HandoffId | None = None, left_out: frozenset[str] = frozenset()
    ) -> str:
        """The answer in words, for reports, but for what of `REPORTED` is `left_out`; an
        action for another handoff than `handoff_id` says so."""
        if self.error is not None:
            said = f"refused: {self.error.value}"
            said += f" ({_clipped(self.message)})" if self.message else ""
        else:
            said = "[" + ", ".join(_issued_words(item, handoff_id) for item in self.issued) + "]"
        said += "; then complete" if self.complete else "; then not complete"
        if self.completion is not None and "completion" not in left_out:
            said += f", completion {self.completion}"
        if "lifecycle" not in left_out:
            said += ", lifecycle " + (", ".join(event.value for event in self.lifecycle) or "empty")
        return said


def _clipped(message: str) -> str:
    shown = clip(message)
    return shown if shown.isprintable() else repr(shown)


def _issued_words(issued: IssuedHandoffAction, handoff_id: HandoffId | None) -> str:
    action = issued.action
    words = f"#{issued.id} {type(action).__name__}"
    if isinstance(action, HandoffAction.StartTransfer):
        words += f"(delay_ms={action.delay_ms!r})"
    if handoff_id is not None and action.handoff_id != handoff_id:
        words += f" for handoff {action.handoff_id}"
    return words


@attrs.frozen
class Reply:
    """The answer to a `CallRequest`, naming the handoff it is for."""

    handoff_id: HandoffId
    answer: Answer
    left_out: frozenset[str] = attrs.field(default=frozenset(), eq=False)
    """What of `REPORTED` the line left out (its `answer` holds the default there)."""

    def describe(self) -> str:
        """What the reply says, in words (see `Answer.describe`)."""
        return self.answer.describe(self.handoff_id, self.left_out)

    def without(self, unreported: Iterable[str]) -> Reply:
        """The reply as one that reports none of `unreported` spells it."""
        left_out = frozenset(unreported)
        cleared = {key: _CLEARED[key] for key in left_out}
        return Reply(self.handoff_id, attrs.evolve(self.answer, **cleared), left_out)  # type: ignore[arg-type]


_CLEARED: dict[str, object] = {"completion": None, "lifecycle": ()}


@attrs.frozen
class Close:
    """Close an open handoff: the implementation may forget it (version 2)."""

    handoff_id: HandoffId


@attrs.frozen
class Closed:
    """The answer to `Close`."""

    handoff_id: HandoffId


ProtocolLine = Hello | Open | Opened | CallRequest | Reply | Close | Closed

# -- writing -------------------------------------------------------------------------------


def write(message: ProtocolLine) -> str:
    """`message` as one protocol line, without its line break."""
    match message:
        case Hello(version, implementation, reports):
            name = write_string(implementation)
            said = (
                ""
                if reports is None
                else ',"reports":[' + ",".join(map(write_string, reports)) + "]"
            )
            return f'{{"hello":{{"version":{version},"implementation":{name}{said}}}}}'
        case Close(handoff_id):
            return f'{{"close":{wire.dumps(handoff_id)}}}'
        case Closed(handoff_id):
            return f'{{"closed":{wire.dumps(handoff_id)}}}'
        case Open(handoff_id, order, fallback):
            return (
                f'{{"open":{wire.dumps(handoff_id)},"order":{wire.dumps(order)},'
                f'"fallback_transfer_delay_ms":{format_f64(fallback)}}}'
            )
        case Opened(handoff_id):
            return f'{{"opened":{wire.dumps(handoff_id)}}}'
        case CallRequest(handoff_id, call):
            return f'{{"handoff":{wire.dumps(handoff_id)},{call_fields(call)}}}'
        case Reply(handoff_id, answer, left_out):
            return f'{{"handoff":{wire.dumps(handoff_id)},{_answer_fields(answer, left_out)}}}'
    raise TypeError(f"{message!r} is no protocol message")


def _answer_fields(answer: Answer, left_out: frozenset[str] = frozenset()) -> str:
    if answer.error is None:
        said = '"issued":[' + ",".join(map(wire.dumps, answer.issued)) + "]"
    else:
        said = f'"error":{{"kind":"{answer.error.value}","message":{write_string(answer.message)}}}'
    said += ',"complete":true' if answer.complete else ',"complete":false'
    if "completion" not in left_out:
        completion = "null" if answer.completion is None else wire.dumps(answer.completion)
        said += f',"completion":{completion}'
    if "lifecycle" not in left_out:
        said += ',"lifecycle":[' + ",".join(wire.dumps(event) for event in answer.lifecycle) + "]"
    return said


# -- reading -------------------------------------------------------------------------------


def read(line: str | bytes) -> ProtocolLine:
    """The message one line holds; `ProtocolError` saying what is wrong with it."""
    try:
        data = parse(line)
    except WireRefusal as refusal:
        raise ProtocolError(f"not JSON: {refusal.reason}") from None
    if not isinstance(data, dict):
        raise ProtocolError("expected a JSON object")
    try:
        return read_message(data)
    except WireRefusal as refusal:
        raise ProtocolError(f"{refusal.path}: {refusal.reason}") from None


def read_message(data: dict[str, object]) -> ProtocolLine:
    """The message a parsed line holds (see `read`); `WireRefusal` for a value the wire
    codecs refuse, `ProtocolError` for anything else."""
    if "hello" in data:
        _only(data, ("hello",))
        hello = _object(data["hello"], "hello", ("version", "implementation", "reports"))
        version = hello.get("version")
        if type(version) is not int:
            raise ProtocolError(f"$.hello.version: expected a whole number, got {_short(version)}")
        name = read_string(hello["implementation"]) if "implementation" in hello else ""
        return Hello(version, name, _reports(hello))
    if "close" in data or "closed" in data:
        key = "close" if "close" in data else "closed"
        _only(data, (key,))
        handoff_id = _value(data, key, HandoffId)
        return Close(handoff_id) if key == "close" else Closed(handoff_id)
    if "open" in data:
        _only(data, ("open", "order", "fallback_transfer_delay_ms"))
        fallback = data.get("fallback_transfer_delay_ms", 0.0)
        if not isinstance(fallback, int | float) or isinstance(fallback, bool) or fallback < 0:
            raise ProtocolError(
                f"$.fallback_transfer_delay_ms: expected a number of 0 or more, "
                f"got {_short(fallback)}"
            )
        handoff_id, order = _value(data, "open", HandoffId), _value(data, "order", HandoffOrder)
        return Open(handoff_id, order, float(fallback))
    if "opened" in data:
        _only(data, ("opened",))
        return Opened(_value(data, "opened", HandoffId))
    if "handoff" not in data:
        raise ProtocolError(
            'expected one of the keys "hello", "open", "opened", "close", "closed" or "handoff", '
            f"got {_short(', '.join(data)) if data else 'none'}"
        )
    handoff_id = _value(data, "handoff", HandoffId)
    if "call" in data:
        try:
            call = read_call("$", {key: value for key, value in data.items() if key != "handoff"})
        except TraceError as error:
            raise ProtocolError(str(error)) from None
        return CallRequest(handoff_id, call)
    return _reply(data)


def _reports(hello: dict[str, object]) -> tuple[str, ...] | None:
    if "reports" not in hello:
        return None
    reports = hello["reports"]
    if not isinstance(reports, list) or not all(item in REPORTED for item in reports):
        raise ProtocolError(
            f"$.hello.reports: expected a list of {' and '.join(map(repr, REPORTED))}, "
            f"got {_short(reports)}"
        )
    return tuple(key for key in REPORTED if key in reports)


def _short(value: object) -> str:
    """`value` as an error message quotes it: its repr, clipped."""
    return clip(repr(value))


def _reply(data: dict[str, object]) -> Reply:
    left_out = frozenset(key for key in REPORTED if key not in data)
    return Reply(_value(data, "handoff", HandoffId), _answer(data), left_out)


def _answer(data: dict[str, object]) -> Answer:
    said = "error" if "error" in data else "issued"
    _only(data, ("handoff", said, "complete"), required=True, optional=REPORTED)
    complete = data["complete"]
    if type(complete) is not bool:
        raise ProtocolError(f"$.complete: expected true or false, got {_short(complete)}")
    completion = None
    if data.get("completion") is not None:
        completion = _value(data, "completion", HandoffCompletion)
    lifecycle = ()
    if "lifecycle" in data:
        lifecycle = tuple(_value(data, "lifecycle", list[NormalizedHandoffEvent]))
    after = Answer(complete=complete, completion=completion, lifecycle=lifecycle)
    if said == "issued":
        return attrs.evolve(after, issued=tuple(_value(data, "issued", list[IssuedHandoffAction])))
    error = _object(data["error"], "error", ("kind", "message"))
    named = error.get("kind")
    kind = _ERROR_KINDS.get(named) if isinstance(named, str) else None
    if kind is None:
        raise ProtocolError(
            f"$.error.kind: expected one of {', '.join(_ERROR_KINDS)}, got {_short(named)}"
        )
    message = read_string(error["message"]) if "message" in error else ""
    return attrs.evolve(after, error=kind, message=message)


_ERROR_KINDS = {kind.value: kind for kind in ErrorKind}


def _only(
    data: dict[str, object],
    keys: tuple[str, ...],
    *,
    required: bool = False,
    optional: tuple[str, ...] = (),
) -> None:
    unknown = [key for key in data if key not in keys and key not in optional]
    if unknown:
        expected = ", ".join((*keys, *optional))
        raise ProtocolError(f"unexpected key {_short(unknown[0])} (expected {expected})")
    missing = [key for key in keys if key not in data] if required else []
    if missing:
        raise ProtocolError(f"missing key {missing[0]!r}")


def _object(data: object, where: str, keys: tuple[str, ...]) -> dict[str, object]:
    if not isinstance(data, dict):
        raise ProtocolError(f"$.{where}: expected a JSON object, got {_short(data)}")
    unknown = [key for key in data if key not in keys]
    if unknown:
        raise ProtocolError(f"$.{where}: unexpected key {_short(unknown[0])}")
    return data


def _value(data: dict[str, object], key: str, cls: object) -> Any:
    if key not in data:
        raise ProtocolError(f"missing key {key!r}")
    try:
        return codec_of(cls).read(data[key])
    except WireRefusal as refusal:
        refusal.segments.append(key_segment(key))
        raise

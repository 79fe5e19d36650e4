"""The conformance protocol: one JSON object a line, one answer a line (docs/conformance.md).

Requests are `Hello`, `Open` (a handoff of an order, by id) and `CallRequest` (a call for an
open handoff, spelled as a trace spells it); responses are `Hello`, `Opened` and `Reply` (what
the call answered, with the handoff's completion and lifecycle after it).  `write` spells any of
them as a line, `read` reads any line back; `ProtocolError` says why a line is not one.  Values
are spelled as `handoff.wire` spells them; an error is named by its `ErrorKind`, never by a
message, so an implementation in any language can match it.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from handoff import wire
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._runs.call import Call
from handoff._runs.trace import call_fields, read_call
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
from handoff.wire import codec_of

__all__ = [
    "VERSION",
    "Answer",
    "CallRequest",
    "ErrorKind",
    "Hello",
    "Message",
    "Open",
    "Opened",
    "ProtocolError",
    "Reply",
    "read",
    "read_message",
    "write",
]

VERSION = 1
"""The protocol version this side speaks; a `Hello` names the other side's."""


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
    """The handshake, both ways: the protocol version spoken, and who speaks it."""

    version: int = VERSION
    implementation: str = ""


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

    def describe(self, handoff_id: HandoffId | None = None) -> str:
        """The answer in words, for reports; an action for another handoff than `handoff_id`
        says so."""
        if self.error is not None:
            said = f"refused: {self.error.value}"
            said += f" ({_clipped(self.message)})" if self.message else ""
        else:
            said = "[" + ", ".join(_issued_words(item, handoff_id) for item in self.issued) + "]"
        state = "complete" if self.complete else "not complete"
        completion = "" if self.completion is None else f", completion {self.completion}"
        lifecycle = ", ".join(event.value for event in self.lifecycle) or "empty"
        return f"{said}; then {state}{completion}, lifecycle {lifecycle}"


_QUOTED = 200
"""How much of an implementation's own message a report quotes."""


def _clipped(message: str) -> str:
    shown = message if len(message) <= _QUOTED else message[:_QUOTED] + "…"
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


Message = Hello | Open | Opened | CallRequest | Reply

# -- writing -------------------------------------------------------------------------------


def write(message: Message) -> str:
    """`message` as one protocol line, without its line break."""
    match message:
        case Hello(version, implementation):
            name = write_string(implementation)
            return f'{{"hello":{{"version":{version},"implementation":{name}}}}}'
        case Open(handoff_id, order, fallback):
            return (
                f'{{"open":{wire.dumps(handoff_id)},"order":{wire.dumps(order)},'
                f'"fallback_transfer_delay_ms":{format_f64(fallback)}}}'
            )
        case Opened(handoff_id):
            return f'{{"opened":{wire.dumps(handoff_id)}}}'
        case CallRequest(handoff_id, call):
            return f'{{"handoff":{wire.dumps(handoff_id)},{call_fields(call)}}}'
        case Reply(handoff_id, answer):
            return f'{{"handoff":{wire.dumps(handoff_id)},{_answer_fields(answer)}}}'
    raise TypeError(f"{message!r} is no protocol message")


def _answer_fields(answer: Answer) -> str:
    if answer.error is None:
        said = '"issued":[' + ",".join(map(wire.dumps, answer.issued)) + "]"
    else:
        said = f'"error":{{"kind":"{answer.error.value}","message":{write_string(answer.message)}}}'
    completion = "null" if answer.completion is None else wire.dumps(answer.completion)
    lifecycle = ",".join(wire.dumps(event) for event in answer.lifecycle)
    complete = "true" if answer.complete else "false"
    return f'{said},"complete":{complete},"completion":{completion},"lifecycle":[{lifecycle}]'


# -- reading -------------------------------------------------------------------------------


def read(line: str | bytes) -> Message:
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


def read_message(data: dict[str, object]) -> Message:
    """The message a parsed line holds (see `read`); `WireRefusal` for a value the wire
    codecs refuse, `ProtocolError` for anything else."""
    if "hello" in data:
        _only(data, ("hello",))
        hello = _object(data["hello"], "hello", ("version", "implementation"))
        version = hello.get("version")
        if type(version) is not int:
            raise ProtocolError(f"$.hello.version: expected a whole number, got {version!r}")
        name = read_string(hello["implementation"]) if "implementation" in hello else ""
        return Hello(version, name)
    if "open" in data:
        _only(data, ("open", "order", "fallback_transfer_delay_ms"))
        fallback = data.get("fallback_transfer_delay_ms", 0.0)
        if not isinstance(fallback, int | float) or isinstance(fallback, bool) or fallback < 0:
            raise ProtocolError(
                f"$.fallback_transfer_delay_ms: expected a number of 0 or more, got {fallback!r}"
            )
        handoff_id, order = _value(data, "open", HandoffId), _value(data, "order", HandoffOrder)
        return Open(handoff_id, order, float(fallback))
    if "opened" in data:
        _only(data, ("opened",))
        return Opened(_value(data, "opened", HandoffId))
    if "handoff" not in data:
        raise ProtocolError(
            'expected one of the keys "hello", "open", "opened" or "handoff", '
            f"got {', '.join(map(repr, data)) or 'none'}"
        )
    handoff_id = _value(data, "handoff", HandoffId)
    if "call" in data:
        try:
            call = read_call("$", {key: value for key, value in data.items() if key != "handoff"})
        except TraceError as error:
            raise ProtocolError(str(error)) from None
        return CallRequest(handoff_id, call)
    return Reply(handoff_id, _answer(data))


def _answer(data: dict[str, object]) -> Answer:
    said = "error" if "error" in data else "issued"
    _only(data, ("handoff", said, "complete", "completion", "lifecycle"), required=True)
    complete = data["complete"]
    if type(complete) is not bool:
        raise ProtocolError(f"$.complete: expected true or false, got {complete!r}")
    completion = None
    if data["completion"] is not None:
        completion = _value(data, "completion", HandoffCompletion)
    after = Answer(
        complete=complete,
        completion=completion,
        lifecycle=tuple(_value(data, "lifecycle", list[NormalizedHandoffEvent])),
    )
    if said == "issued":
        return attrs.evolve(after, issued=tuple(_value(data, "issued", list[IssuedHandoffAction])))
    error = _object(data["error"], "error", ("kind", "message"))
    named = error.get("kind")
    kind = _ERROR_KINDS.get(named) if isinstance(named, str) else None
    if kind is None:
        raise ProtocolError(
            f"$.error.kind: expected one of {', '.join(_ERROR_KINDS)}, got {named!r}"
        )
    message = read_string(error["message"]) if "message" in error else ""
    return attrs.evolve(after, error=kind, message=message)


_ERROR_KINDS = {kind.value: kind for kind in ErrorKind}


def _only(data: dict[str, object], keys: tuple[str, ...], *, required: bool = False) -> None:
    unknown = [key for key in data if key not in keys]
    if unknown:
        raise ProtocolError(f"unexpected key {unknown[0]!r} (expected {', '.join(keys)})")
    missing = [key for key in keys if key not in data] if required else []
    if missing:
        raise ProtocolError(f"missing key {missing[0]!r}")


def _object(data: object, where: str, keys: tuple[str, ...]) -> dict[str, object]:
    if not isinstance(data, dict):
        raise ProtocolError(f"$.{where}: expected a JSON object, got {data!r}")
    unknown = [key for key in data if key not in keys]
    if unknown:
        raise ProtocolError(f"$.{where}: unexpected key {unknown[0]!r}")
    return data


def _value(data: dict[str, object], key: str, cls: object) -> Any:
    if key not in data:
        raise ProtocolError(f"missing key {key!r}")
    try:
        return codec_of(cls).read(data[key])
    except WireRefusal as refusal:
        refusal.segments.append(key_segment(key))
        raise

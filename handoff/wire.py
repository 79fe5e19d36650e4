"""The JSON wire format of the handoff value types, byte-compatible with the Rust serde layout.

`dumps(value)` writes what `serde_json::to_string` writes for the same Rust value; `loads(text,
cls)` reads one value of `cls`: any type of SPEC §2, or a single fact or action variant such as
`HandoffFact.SourceHeld` (which refuses every other variant). `loads` raises `WireError`, a
`HandoffError` whose message starts with the JSON path of the offending value
(`$.SourceHeld.transfer_timing.full_prompt_tokens: expected …, got -1`), and nothing else for any
`str` or `bytes` input; passing some other kind of object, or a `cls` with no wire form, is a
`TypeError`.

Layout: compact, fields in declaration order, unit enums as their value strings, facts and actions
externally tagged (`{"Canceled":{"handoff_id":"…"}}`), outcomes as `"Applied"` or
`{"Failed":"reason"}`, `HandoffActionId` as a bare integer, `HandoffId` as the lowercase hyphenated
UUID, absent optionals as `null`. `HandoffTransferTiming.kv_bytes_per_request` is written only when
it is not 0 and read as 0 when absent. Strings are escaped as serde_json does: `"`, `\\` and the
control characters below U+0020 only; everything else is written as is.

Floats are written as serde_json 1.0.146 and earlier (ryu) write an f64: the shortest digits that
read back to the same float, positionally when the decimal exponent e of the first digit is in
-5 ≤ e ≤ 15 (`0.00001`, `1000000000000000.0`, always with a fractional part: `2.0`), otherwise
as `d.ddde<e>` with no `+` and no leading zeros in the exponent (`1e-6`, `1e16`,
`1.7976931348623157e308`). Python's `repr` finds the same digits and differs only in spelling the
exponent (`1e-06`, `1e+16`) and in starting exponent notation at e = -5 (`1e-05`). serde_json
1.0.147 and later (zmij) write a `+` in positive exponents (`1e+16`): both are read back alike,
but byte equality for floats of 1e16 and above depends on the reference's serde_json version.

NaN and ±inf are written as `null`, as serde_json does. Reading `null` where a float is required is
an error, so a `StartTransfer` whose `delay_ms` is not finite cannot round-trip (the coordinator
never issues one). An optional float reads `null` as None, so a NaN or infinite
`bandwidth_gb_s` comes back as None: a timing `validate_transfer_timing` refuses turns into one
that models no delay, exactly as on the Rust side.

Reading is strict: malformed JSON (including NaN/Infinity literals, numbers that overflow an f64,
invalid UTF-8 and lone surrogates), unknown or missing fields and variants, a tagged object with
other than one key, repeated keys, a float or bool where a count belongs, counts outside
[0, 2**64) and UUIDs not written 8-4-4-4-12 are all refused. A JSON integer is accepted where a
float belongs, as serde does. Spellings serde would also accept but never writes are refused:
structs as arrays, `{"Noop":null}` for a unit outcome, braced, URN or unhyphenated UUIDs.

Hand-written rather than cattrs: cattrs' preconf JSON converter delegates the text to `json`, so
floats come out as `1e-07` and NaN as `NaN`; its default hooks turn `1.7`, `"3"` and `true` into
counts; its tagged-union strategy is internally tagged (`{"_type": …}`); a list given for a struct
escaped as `AttributeError`. Overriding the int, float, str, bool, UUID, outcome and union hooks
and writing the text ourselves would leave cattrs only the attrs field walk, which
`attrs.fields` gives directly. So each type's codec is derived from its attrs fields and
annotations by one table (`_codec_for`), and no dependency is added.
"""

from __future__ import annotations

import abc
import enum
import json
import math
import re
import types
import typing
import uuid
from typing import Any, TypeVar, cast

import attrs

from handoff._conformance import (
    NormalizedHandoffConformance,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
)
from handoff._errors import HandoffError
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._timing import HandoffTransferTiming
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

__all__ = ["WireError", "dumps", "loads"]

T = TypeVar("T")

_USIZE_LIMIT = 2**64


class WireError(HandoffError):
    """JSON that is not a valid encoding of the requested type; `path` says where, `reason` why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class _Refusal(Exception):
    # Raised inside the codecs; each enclosing field, index or tag adds its segment on the way out.
    def __init__(self, reason: str, segment: str | None = None, *, mismatch: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.segments = [] if segment is None else [segment]
        self.mismatch = mismatch  # "expected X, got Y" about the value itself, not inside it

    def to_error(self) -> WireError:
        return WireError("$" + "".join(reversed(self.segments)), self.reason)


# Floats


def _format_f64(value: float) -> str:
    """The text serde_json (ryu) writes for `value`; `null` for NaN and the infinities."""
    if not math.isfinite(value):
        return "null"
    text = float.__repr__(value)
    mantissa, _, exponent = text.partition("e")
    if not exponent:
        return text
    power = int(exponent)
    if power == -5:
        # ryu still writes 1e-5 <= |x| < 1e-4 positionally, where repr switches to exponents.
        sign = "-" if mantissa.startswith("-") else ""
        return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"
    return f"{mantissa}e{power}"


# Messages


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _key_segment(key: str) -> str:
    return f".{key}" if _PLAIN_KEY.match(key) else f"[{json.dumps(key)}]"


def _quote(text: str) -> str:
    if len(text) > 40:
        return f"{json.dumps(text[:40])}… ({len(text)} characters)"
    return json.dumps(text)


def _describe(data: object) -> str:
    """What arrived, in JSON terms; never the whole of a container, which may be huge or deep."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "true" if data else "false"
    if isinstance(data, int):
        digits = int.__repr__(data)
        return digits if len(digits) <= 30 else f"an integer of {len(digits)} characters"
    if isinstance(data, float):
        return _format_f64(data)
    if isinstance(data, str):
        return f"the string {_quote(data)}"
    if isinstance(data, list):
        return f"an array of {len(data)} items" if data else "an empty array"
    if isinstance(data, dict):
        if len(data) == 1:
            return f"an object with the single key {_quote(next(iter(data)))}"
        return f"an object with {len(data)} keys" if data else "an empty object"
    return f"an object repeating the key {_quote(cast(_Duplicated, data).key)}"


def _mismatch(expected: str, data: object) -> _Refusal:
    return _Refusal(f"expected {expected}, got {_describe(data)}", mismatch=True)


def _object_mismatch(expected: str, data: object) -> _Refusal:
    """`_mismatch` for a place an object belongs, where a repeated key is the thing to name."""
    if isinstance(data, _Duplicated):
        return _Refusal("duplicate key", _key_segment(data.key))
    return _mismatch(expected, data)


def _construct(cls: type[T], *args: Any, **kwargs: Any) -> T:
    # The codecs check everything the constructors do today; this keeps a future validator's
    # refusal a WireError at the right path instead of a TypeError escaping `loads`.
    try:
        return cls(*args, **kwargs)
    except (TypeError, ValueError) as error:
        raise _Refusal(f"invalid {cls.__qualname__}: {error}") from None


# Codecs: one per wire shape, composed by `_codec_for` from the attrs fields of each type.


class _Codec(abc.ABC):
    expected: str

    @abc.abstractmethod
    def write(self, value: Any) -> str:
        """The compact JSON text of `value`."""

    @abc.abstractmethod
    def read(self, data: object) -> Any:
        """The value `data` (as parsed by `json`) encodes; raises `_Refusal` otherwise."""


class _Count(_Codec):
    expected = "an unsigned 64-bit integer"

    def write(self, value: int) -> str:
        return int.__repr__(value)

    def read(self, data: object) -> int:
        if type(data) is int and 0 <= data < _USIZE_LIMIT:
            return data
        raise _mismatch(self.expected, data)


class _Float(_Codec):
    expected = "a number"

    def write(self, value: float) -> str:
        return _format_f64(value)

    def read(self, data: object) -> float:
        if type(data) is float:
            return data
        if type(data) is int:
            return float(data)  # the parser refused integers too large for a float
        raise _mismatch(self.expected, data)


class _Bool(_Codec):
    expected = "true or false"

    def write(self, value: bool) -> str:
        return "true" if value else "false"

    def read(self, data: object) -> bool:
        if type(data) is bool:
            return data
        raise _mismatch(self.expected, data)


class _Optional(_Codec):
    def __init__(self, inner: _Codec) -> None:
        self.inner = inner
        self.expected = f"{inner.expected} or null"

    def write(self, value: object) -> str:
        return "null" if value is None else self.inner.write(value)

    def read(self, data: object) -> object:
        if data is None:
            return None
        try:
            return self.inner.read(data)
        except _Refusal as refusal:
            if refusal.mismatch and not refusal.segments:
                raise _mismatch(self.expected, data) from None
            raise


class _Array(_Codec):
    expected = "an array"

    def __init__(self, item: _Codec) -> None:
        self.item = item

    def write(self, value: tuple[object, ...]) -> str:
        return "[" + ",".join(self.item.write(item) for item in value) + "]"

    def read(self, data: object) -> tuple[object, ...]:
        if type(data) is not list:
            raise _mismatch(self.expected, data)
        items = []
        for index, item in enumerate(data):
            try:
                items.append(self.item.read(item))
            except _Refusal as refusal:
                refusal.segments.append(f"[{index}]")
                raise
        return tuple(items)


def _listed(names: typing.Iterable[str]) -> str:
    return ", ".join(json.dumps(name) for name in names)


def _one_of(names: typing.Iterable[str]) -> str:
    return f"one of {_listed(names)}"


class _UnitEnum(_Codec):
    def __init__(self, cls: type[enum.Enum]) -> None:
        self.members = {member.value: member for member in cls}
        self.texts = {member: json.dumps(member.value) for member in cls}
        self.expected = _one_of(self.members)

    def write(self, value: enum.Enum) -> str:
        return self.texts[value]

    def read(self, data: object) -> enum.Enum:
        if type(data) is str:
            member = self.members.get(data)
            if member is not None:
                return member
        raise _mismatch(self.expected, data)


_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\Z")


class _Uuid(_Codec):
    expected = "a UUID string like 0123abcd-0123-0123-0123-0123456789ab"

    def write(self, value: HandoffId) -> str:
        return f'"{value.uuid}"'

    def read(self, data: object) -> HandoffId:
        if type(data) is str and _UUID_TEXT.match(data):
            return _construct(HandoffId, uuid.UUID(data))
        raise _mismatch(self.expected, data)


class _ActionId(_Codec):
    expected = _Count.expected

    def write(self, value: HandoffActionId) -> str:
        return int.__repr__(value.value)

    def read(self, data: object) -> HandoffActionId:
        return _construct(HandoffActionId, _COUNT.read(data))


_COUNT = _Count()


def _write_string(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refusal("a string with a lone surrogate cannot be written as UTF-8 JSON") from None
    # Escapes exactly what serde_json escapes: '"', '\\' and U+0000..U+001F (short forms first).
    return json.dumps(text, ensure_ascii=False)


def _read_string(data: object) -> str:
    if type(data) is not str:
        raise _mismatch("a string", data)
    try:
        data.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refusal("malformed JSON: a string with a lone surrogate escape") from None
    return data


_FAILED = OutcomeKind.FAILED.value


class _Outcome(_Codec):
    def __init__(self) -> None:
        self.units = {
            kind.value: getattr(HandoffActionOutcome, kind.name)
            for kind in OutcomeKind
            if kind is not OutcomeKind.FAILED
        }
        self.expected = f'{_one_of(self.units)} or {{"{_FAILED}": reason}}'

    def write(self, value: HandoffActionOutcome) -> str:
        if value.reason is None:
            return f'"{value.kind.value}"'
        try:
            return f'{{"{_FAILED}":{_write_string(value.reason)}}}'
        except _Refusal as refusal:
            refusal.segments.append(f".{_FAILED}")
            raise

    def read(self, data: object) -> HandoffActionOutcome:
        if type(data) is str and data in self.units:
            return cast(HandoffActionOutcome, self.units[data])
        if type(data) is dict and len(data) == 1:
            ((tag, reason),) = data.items()
            if tag != _FAILED:
                raise _Refusal(
                    f'unknown variant, expected "{_FAILED}" (other outcomes are plain strings)',
                    _key_segment(tag),
                )
            try:
                return _construct(HandoffActionOutcome, OutcomeKind.FAILED, _read_string(reason))
            except _Refusal as refusal:
                refusal.segments.append(f".{_FAILED}")
                raise
        raise _object_mismatch(self.expected, data)


@attrs.frozen
class _Field:
    name: str
    codec: _Codec
    # Rust's `#[serde(default, skip_serializing_if = …)]`: absent means the default, and the
    # default is not written.
    defaulted: bool
    default: object
    prefix: str = attrs.field(init=False)
    segment: str = attrs.field(init=False)

    @prefix.default
    def _prefix(self) -> str:
        return f'"{self.name}":'

    @segment.default
    def _segment(self) -> str:
        return f".{self.name}"


class _Struct(_Codec):
    def __init__(self, cls: type, fields: list[_Field]) -> None:
        self.cls = cls
        self.fields = fields
        self.names = frozenset(field.name for field in fields)
        self.expected = f"a {cls.__qualname__} object"

    def write(self, value: object) -> str:
        parts = []
        for field in self.fields:
            item = getattr(value, field.name)
            if field.defaulted and item == field.default:
                continue
            parts.append(field.prefix + field.codec.write(item))
        return "{" + ",".join(parts) + "}"

    def read(self, data: object) -> object:
        if type(data) is not dict:
            raise _object_mismatch(self.expected, data)
        for key in data:
            if key not in self.names:
                fields = ", ".join(field.name for field in self.fields)
                raise _Refusal(f"unknown field, expected only {fields}", _key_segment(key))
        values = {}
        for field in self.fields:
            if field.name in data:
                try:
                    values[field.name] = field.codec.read(data[field.name])
                except _Refusal as refusal:
                    refusal.segments.append(field.segment)
                    raise
            elif not field.defaulted:
                raise _Refusal(f"missing field, expected {field.codec.expected}", field.segment)
        return _construct(self.cls, **values)


class _Tagged(_Codec):
    """An externally tagged enum: `{"Variant": {fields}}`, limited to the variants given."""

    def __init__(self, family: type, bodies: list[_Struct]) -> None:
        self.family = frozenset(variant.__name__ for variant in _variants(family))
        self.bodies = {body.cls.__name__: body for body in bodies}
        self.by_class = {body.cls: (f'{{"{body.cls.__name__}":', body) for body in bodies}
        if len(bodies) == 1:
            self.tags = _listed(self.bodies)
            self.expected = f"an object with the single key {self.tags}"
        else:
            self.tags = _one_of(self.bodies)
            self.expected = f"an object with a single key, {self.tags}"

    def write(self, value: object) -> str:
        prefix, body = self.by_class[type(value)]
        return prefix + body.write(value) + "}"

    def read(self, data: object) -> object:
        if type(data) is not dict or len(data) != 1:
            raise _object_mismatch(self.expected, data)
        ((tag, fields),) = data.items()
        body = self.bodies.get(tag)
        if body is None:
            known = "variant not allowed here" if tag in self.family else "unknown variant"
            raise _Refusal(f"{known}, expected {self.tags}", _key_segment(tag))
        try:
            return body.read(fields)
        except _Refusal as refusal:
            refusal.segments.append(_key_segment(tag))
            raise


# The table: which codec each type gets.

_LEAVES: dict[object, type[_Codec]] = {
    int: _Count,
    float: _Float,
    bool: _Bool,
    HandoffId: _Uuid,
    HandoffActionId: _ActionId,
    HandoffActionOutcome: _Outcome,
}

_UNIONS = (HandoffFact, HandoffAction)


def _variants(family: type) -> list[type]:
    # The variants attached to the namespace (`HandoffFact.SourceHeld`, …), in the Rust enum's
    # order. Not `__subclasses__()`: it can still list the classes attrs replaced with slotted ones.
    return [
        variant
        for variant in vars(family).values()
        if isinstance(variant, type) and issubclass(variant, family)
    ]


# The fields the Rust structs mark `#[serde(default, skip_serializing_if = …)]`.
_SERDE_DEFAULTS: dict[type, frozenset[str]] = {
    HandoffTransferTiming: frozenset({"kv_bytes_per_request"}),
}


def _body(cls: type) -> _Struct:
    hints = typing.get_type_hints(cls)
    defaulted = _SERDE_DEFAULTS.get(cls, frozenset())
    fields = [
        _Field(field.name, _codec_for(hints[field.name]), field.name in defaulted, field.default)
        for field in attrs.fields(cls)
    ]
    return _Struct(cls, fields)


def _codec_for(annotation: object) -> _Codec:
    """The codec for a field annotation or a wire type, derived from its attrs fields."""
    if annotation in _LEAVES:
        return _LEAVES[annotation]()
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[1] if args[0] is type(None) else args[0]
        return _Optional(_codec_for(inner))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _Array(_codec_for(args[0]))
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return _UnitEnum(annotation)
        for family in _UNIONS:
            if annotation is family:
                return _Tagged(family, [_body(variant) for variant in _variants(family)])
            if issubclass(annotation, family):
                return _Tagged(family, [_body(annotation)])
        if attrs.has(annotation):
            return _body(annotation)
    raise TypeError(f"{annotation!r} has no handoff wire form")


_WIRE_TYPES: tuple[type, ...] = (
    HandoffId,
    HandoffOrder,
    EngineType,
    KvTransferTimingMode,
    HandoffTransferTiming,
    HandoffFact,
    *_variants(HandoffFact),
    HandoffAction,
    *_variants(HandoffAction),
    HandoffActionId,
    IssuedHandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    NormalizedHandoffConformance,
)

_CODECS: dict[type, _Codec] = {cls: _codec_for(cls) for cls in _WIRE_TYPES}


# Parsing


class _Duplicated:
    """A JSON object that repeats a key: not a dict, so every codec refuses it, naming the key."""

    __slots__ = ("key",)

    def __init__(self, pairs: list[tuple[str, object]]) -> None:
        seen: set[str] = set()
        self.key = ""
        for key, _ in pairs:
            if key in seen:
                self.key = key
                return
            seen.add(key)


def _object(pairs: list[tuple[str, object]]) -> dict[str, object] | _Duplicated:
    value = dict(pairs)
    return value if len(value) == len(pairs) else _Duplicated(pairs)


def _out_of_range(text: str) -> _Refusal:
    shown = text if len(text) <= 30 else f"{text[:30]}…"
    return _Refusal(f"malformed JSON: number out of range: {shown}")


def _integer(text: str) -> int | float:
    if text == "-0":
        return -0.0  # serde_json reads `-0` as the float -0.0: no count, and the sign survives
    if len(text) > 320:  # past any f64 (and short of Python's limit on parsing long integers)
        raise _out_of_range(text)
    number = int(text)
    try:
        float(number)
    except OverflowError:
        raise _out_of_range(text) from None
    return number


def _number(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _out_of_range(text)
    return number


def _constant(text: str) -> object:
    raise _Refusal(f"malformed JSON: {text} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_int=_integer, parse_float=_number, parse_constant=_constant
)


def _parse(text: str | bytes | bytearray) -> object:
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise _Refusal(
                f"malformed JSON: not UTF-8 ({error.reason} at byte {error.start})"
            ) from None
    elif not isinstance(text, str):
        raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise _Refusal(
            f"malformed JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise _Refusal("malformed JSON: nested too deeply") from None


# The public face


def _codec(cls: type) -> _Codec:
    codec = _CODECS.get(cls)
    if codec is None:
        raise TypeError(f"{cls.__qualname__} has no handoff wire form")
    return codec


def dumps(value: object) -> str:
    """The compact JSON text serde_json writes for `value`, a value of any SPEC §2 type.

    Raises `TypeError` for other objects and `WireError` for a failure reason containing a lone
    surrogate, which UTF-8 JSON cannot carry.
    """
    codec = _codec(type(value))
    try:
        return codec.write(value)
    except _Refusal as refusal:
        raise refusal.to_error() from None


def loads(text: str | bytes | bytearray, cls: type[T]) -> T:
    """Read one value of `cls` from JSON `text` (bytes must be UTF-8).

    Raises `WireError` naming the JSON path of the first problem; see the module docstring for
    what is refused.
    """
    codec = _codec(cls)
    try:
        return cast(T, codec.read(_parse(text)))
    except _Refusal as refusal:
        raise refusal.to_error() from None

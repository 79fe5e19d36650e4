"""The JSON wire format of the handoff value types, byte-compatible with the Rust serde layout.

`dumps(value)` writes what `serde_json::to_string` writes for the same Rust value; `loads(text,
cls)` reads one value of `cls`: any value type of the contract (docs/contract.md, "Values"), a
single fact or action variant such as `HandoffFact.SourceHeld` (which refuses every other
variant), one of the unions `AnyHandoffFact` and `AnyHandoffAction`, or a list of any of these,
`list[IssuedHandoffAction]` (written as a JSON array). `loads` raises `WireError`, a
`HandoffError` whose message starts with the JSON path of the offending value
(`$.SourceHeld.transfer_timing.full_prompt_tokens: expected …, got -1`), and nothing else for any
`str` or `bytes` input; passing some other kind of object, or a `cls` with no wire form, is a
`TypeError`.

A `HandoffCoordinatorCore` is written as a snapshot: compact JSON of its chart, journal and
payloads (see docs/integrating.md, "Snapshots"), which `loads(text, HandoffCoordinatorCore)`
restores after checking that some run of the chart reaches it (a `WireError` naming the field
otherwise). The restored coordinator answers every call as the original would.

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
annotations by one table (`_codec_for` below), and no dependency is added.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs

from handoff import _codecs as codecs
from handoff._conformance import NormalizedHandoffConformance, NormalizedStoredTiming
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import WireError
from handoff._json_text import WireRefusal, parse
from handoff._lifecycle import NormalizedHandoffEvent
from handoff._messages import (
    AnyHandoffAction,
    AnyHandoffFact,
    HandoffAction,
    HandoffFact,
    IssuedHandoffAction,
)
from handoff._timing import HandoffTransferTiming
from handoff._values import (
    EngineType,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
)

if TYPE_CHECKING:
    from typing_extensions import TypeForm

__all__ = ["WireError", "dumps", "loads"]

T = TypeVar("T")
Variant = TypeVar("Variant", bound=AnyHandoffFact | AnyHandoffAction)
Text = str | bytes | bytearray


def dumps(value: object) -> str:
    """The compact JSON text serde_json writes for `value`.

    `value` is a value of any wire type (`dumps(HandoffActionOutcome.APPLIED) == '"Applied"'`),
    a list of them (`dumps([issued, issued])` is a JSON array), or a coordinator, written as its
    snapshot. Raises `TypeError` for other objects (and for a coordinator whose chart cannot be
    named by `module:Class`), and `WireError` for a failure reason containing a lone surrogate,
    which UTF-8 JSON cannot carry.
    """
    if type(value) is list:
        return "[" + ",".join(map(dumps, value)) + "]"
    if type(value) is HandoffCoordinatorCore:
        from handoff._snapshot import write

        return write(value)
    codec = codec_of(type(value))
    try:
        return codec.write(value)
    except WireRefusal as refusal:
        raise WireError(refusal.path, refusal.reason) from None


@overload
def loads(text: Text, cls: type[Variant]) -> Variant: ...  # type: ignore[overload-overlap]
@overload
def loads(text: Text, cls: type[HandoffFact]) -> AnyHandoffFact: ...
@overload
def loads(text: Text, cls: type[HandoffAction]) -> AnyHandoffAction: ...
@overload
def loads(text: Text, cls: TypeForm[T]) -> T: ...
def loads(text: Text, cls: Any) -> Any:
    """Read one value of `cls` from JSON `text` (bytes must be UTF-8).

    `loads(text, AnyHandoffFact)` and `loads(text, HandoffFact)` read any fact and are typed
    `AnyHandoffFact`, so a `match` over the result is checked for exhaustiveness;
    `loads(text, HandoffFact.Canceled)` reads that variant only; `loads(text,
    list[IssuedHandoffAction])` reads a JSON array of them; `loads(text, HandoffCoordinatorCore)`
    restores a snapshot. Raises `WireError` naming the JSON path of the first problem; see the
    module docstring for what is refused.
    """
    try:
        if cls is HandoffCoordinatorCore:
            from handoff._snapshot import read

            return read(text)
        codec = codec_of(cls)
        return codec.read(parse(text))
    except WireRefusal as refusal:
        raise WireError(refusal.path, refusal.reason) from None


# The table: which codec each type gets.

_LEAVES: dict[object, type[codecs.Codec]] = {
    int: codecs.Count,
    float: codecs.Float,
    bool: codecs.Bool,
    HandoffId: codecs.Uuid,
    HandoffActionId: codecs.ActionId,
    HandoffActionOutcome: codecs.Outcome,
}

# Each message family with its variants in the Rust enum's order, which the union keeps.
_FAMILIES: dict[type, tuple[type, ...]] = {
    HandoffFact: typing.get_args(AnyHandoffFact),
    HandoffAction: typing.get_args(AnyHandoffAction),
}

# The fields the Rust structs mark `#[serde(default, skip_serializing_if = …)]`.
_SERDE_DEFAULTS: dict[type, frozenset[str]] = {
    HandoffTransferTiming: frozenset({"kv_bytes_per_request"}),
}


def _body(cls: type) -> codecs.Struct:
    # Annotations are resolved in the module `__module__` names, `handoff`, which holds the
    # conformance classes only once they are first asked for; every wire type is imported here.
    hints = typing.get_type_hints(cls, localns=globals())
    defaulted = _SERDE_DEFAULTS.get(cls, frozenset())
    fields = [
        codecs.Field(
            field.name, _codec_for(hints[field.name]), field.name in defaulted, field.default
        )
        for field in attrs.fields(cls)
    ]
    return codecs.Struct(cls, fields)


def _tagged(family: type, variants: tuple[type, ...]) -> codecs.Tagged:
    names = (variant.__name__ for variant in _FAMILIES[family])
    return codecs.Tagged(names, [_body(variant) for variant in variants])


# A union of a family's variants reads and writes as the family does.
_UNIONS: dict[object, type] = {AnyHandoffFact: HandoffFact, AnyHandoffAction: HandoffAction}


def _codec_for(annotation: object) -> codecs.Codec:
    """The codec for a field annotation or a wire type, derived from its attrs fields."""
    annotation = _UNIONS.get(annotation, annotation)
    if annotation in _LEAVES:
        return _LEAVES[annotation]()
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[1] if args[0] is type(None) else args[0]
        return codecs.Nullable(_codec_for(inner))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return codecs.Array(_codec_for(args[0]))
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return codecs.UnitEnum(annotation)
        for family, variants in _FAMILIES.items():
            if annotation is family:
                return _tagged(family, variants)
            if issubclass(annotation, family):
                return _tagged(family, (annotation,))
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
    *_FAMILIES[HandoffFact],
    HandoffAction,
    *_FAMILIES[HandoffAction],
    HandoffActionId,
    IssuedHandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    NormalizedHandoffConformance,
)

_CODECS: dict[type, codecs.Codec] = {cls: _codec_for(cls) for cls in _WIRE_TYPES}


def codec_of(cls: object) -> codecs.Codec:
    """The codec of `cls` (for the trace reader, which parses each line once); not public."""
    try:
        codec: codecs.Codec | None = _CODECS.get(_UNIONS.get(cls, cls))  # type: ignore[call-overload]
    except TypeError:  # an unhashable object given for a type
        codec = None
    if codec is None:
        if typing.get_origin(cls) is list and len(typing.get_args(cls)) == 1:
            return codecs.List(codec_of(typing.get_args(cls)[0]))
        raise TypeError(f"{cls!r} has no handoff wire form")
    return codec

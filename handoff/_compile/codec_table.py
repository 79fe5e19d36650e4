"""Which codec each wire type gets: derived from its attrs fields and annotations.

`handoff.wire` builds its codecs from this table; a coordinator snapshot reuses the codecs of
the values it holds without loading the wire module's conformance types.
"""

from __future__ import annotations

import enum
import types
import typing
import uuid
from typing import Any, TypeVar

import attrs

from handoff._values.messages import AnyHandoffAction, AnyHandoffFact, HandoffAction, HandoffFact
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import HandoffActionId, HandoffActionOutcome, HandoffId
from handoff._wire import codecs as codecs

__all__ = [
    "FAMILIES",
    "LEAVES",
    "SERDE_DEFAULTS",
    "UNIONS",
    "WIRE_ORDER",
    "codec_for",
    "sample",
]

LEAVES: dict[object, type[codecs.Codec]] = {
    int: codecs.Count,
    float: codecs.Float,
    bool: codecs.Bool,
    HandoffId: codecs.Uuid,
    HandoffActionId: codecs.ActionId,
    HandoffActionOutcome: codecs.Outcome,
}

# Each message family with its variants in the Rust enum's order, which the union keeps.
FAMILIES: dict[type, tuple[type, ...]] = {
    HandoffFact: typing.get_args(AnyHandoffFact),
    HandoffAction: typing.get_args(AnyHandoffAction),
}

# The fields the Rust structs mark `#[serde(default, skip_serializing_if = …)]`.
SERDE_DEFAULTS: dict[type, frozenset[str]] = {
    HandoffTransferTiming: frozenset({"kv_bytes_per_request"}),
}

# The Rust structs whose field order differs from the attrs class's. Upstream added
# `kv_bytes_per_request` before `bandwidth_gb_s`; the Python class keeps it last so that the
# four-field positional constructor still reads as it did.
WIRE_ORDER: dict[type, tuple[str, ...]] = {
    HandoffTransferTiming: (
        "mode",
        "full_prompt_tokens",
        "kv_bytes_per_token",
        "kv_bytes_per_request",
        "bandwidth_gb_s",
    ),
}


def _body(cls: type, names: dict[str, Any]) -> codecs.Struct:
    hints = typing.get_type_hints(cls, localns={**globals(), **names})
    defaulted = SERDE_DEFAULTS.get(cls, frozenset())
    by_name = {field.name: field for field in attrs.fields(cls)}
    order = WIRE_ORDER.get(cls, tuple(by_name))
    fields = [
        codecs.Field(name, codec_for(hints[name], names), name in defaulted, by_name[name].default)
        for name in order
    ]
    return codecs.Struct(cls, fields)


def _tagged(family: type, variants: tuple[type, ...], names: dict[str, Any]) -> codecs.Tagged:
    tags = (variant.__name__ for variant in FAMILIES[family])
    return codecs.Tagged(tags, [_body(variant, names) for variant in variants])


# A union of a family's variants reads and writes as the family does.
UNIONS: dict[object, type] = {AnyHandoffFact: HandoffFact, AnyHandoffAction: HandoffAction}


def codec_for(annotation: object, names: dict[str, Any]) -> codecs.Codec:
    """The codec for a field annotation or a wire type, derived from its attrs fields.

    `names` resolves the annotations of classes defined outside this module's imports.
    """
    annotation = UNIONS.get(annotation, annotation)
    if annotation in LEAVES:
        return LEAVES[annotation]()
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[1] if args[0] is type(None) else args[0]
        return codecs.Nullable(codec_for(inner, names))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return codecs.Array(codec_for(args[0], names))
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return codecs.UnitEnum(annotation)
        for family, variants in FAMILIES.items():
            if annotation is family:
                return _tagged(family, variants, names)
            if issubclass(annotation, family):
                return _tagged(family, (annotation,), names)
        if attrs.has(annotation):
            return _body(annotation, names)
    raise TypeError(f"{annotation!r} has no handoff wire form")


_T = TypeVar("_T")

_SAMPLES: dict[object, object] = {
    int: 1,
    float: 1.0,
    bool: False,
    HandoffId: HandoffId(uuid.UUID(int=0)),
    HandoffActionId: HandoffActionId(1),
}


def sample(cls: type[_T], **given: object) -> _T:
    """A value of the wire type `cls` (a fact, an action, a timing), read off its attrs fields
    as its codec is: each field `given`, else the least usable value of its type (1, 1.0, an
    enum's first member, a nested type's sample); a defaulted field keeps its default.  Where
    one of each kind of fact is needed, no list of them is kept by hand."""
    hints = typing.get_type_hints(cls)
    values = {
        field.name: given[field.name] if field.name in given else _sample(hints[field.name])
        for field in attrs.fields(typing.cast(Any, cls))
        if field.name in given or field.default is attrs.NOTHING
    }
    return cls(**values)


def _sample(annotation: object) -> object:
    if annotation in _SAMPLES:
        return _SAMPLES[annotation]
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _sample(args[0])
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return next(iter(annotation))
    if isinstance(annotation, type) and attrs.has(annotation):
        return sample(annotation)
    raise TypeError(f"{annotation!r} has no sample value")

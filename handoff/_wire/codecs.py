"""One codec per wire shape: count, float, UUID, outcome, struct, externally tagged union, ….

`handoff.wire` composes them for each wire type from its attrs fields and annotations, and is
their only caller. Codecs raise `WireRefusal` with the JSON path of the problem.
"""

from __future__ import annotations

import abc
import enum
import json
import re
import typing
import uuid
from typing import Any, TypeVar, cast

import attrs

from handoff._values.validators import USIZE_LIMIT
from handoff._values.values import HandoffActionId, HandoffActionOutcome, HandoffId, OutcomeKind
from handoff._wire.json_text import (
    WireRefusal,
    format_f64,
    key_segment,
    mismatch,
    object_mismatch,
    read_string,
    write_string,
)

__all__ = [
    "UUID_TEXT",
    "ActionId",
    "Array",
    "Bool",
    "Codec",
    "Count",
    "Field",
    "Float",
    "List",
    "Nullable",
    "Outcome",
    "Struct",
    "Tagged",
    "UnitEnum",
    "Uuid",
]

T = TypeVar("T")


def _construct(cls: type[T], *args: Any, **kwargs: Any) -> T:
    # The codecs check everything the constructors do today; this keeps a future validator's
    # refusal a WireError at the right path instead of a TypeError escaping `loads`.
    try:
        return cls(*args, **kwargs)
    except (TypeError, ValueError) as error:
        raise WireRefusal(f"invalid {cls.__qualname__}: {error}") from None


# Codecs: one per wire shape; `handoff.wire` composes them from the attrs fields of each type.


class Codec(abc.ABC):
    expected: str

    @abc.abstractmethod
    def write(self, value: Any) -> str:
        """The compact JSON text of `value`."""

    @abc.abstractmethod
    def read(self, data: object) -> Any:
        """The value `data` (as parsed by `json`) encodes; raises `WireRefusal` otherwise."""


class Count(Codec):
    expected = "an unsigned 64-bit integer"

    def write(self, value: int) -> str:
        return int.__repr__(value)

    def read(self, data: object) -> int:
        if type(data) is int and 0 <= data < USIZE_LIMIT:
            return data
        raise mismatch(self.expected, data)


class Float(Codec):
    expected = "a number"

    def write(self, value: float) -> str:
        return format_f64(value)

    def read(self, data: object) -> float:
        if type(data) is float:
            return data
        if type(data) is int:
            return float(data)  # the parser refused integers too large for a float
        raise mismatch(self.expected, data)


class Bool(Codec):
    expected = "true or false"

    def write(self, value: bool) -> str:
        return "true" if value else "false"

    def read(self, data: object) -> bool:
        if type(data) is bool:
            return data
        raise mismatch(self.expected, data)


class Nullable(Codec):
    def __init__(self, inner: Codec) -> None:
        self.inner = inner
        self.expected = f"{inner.expected} or null"

    def write(self, value: object) -> str:
        return "null" if value is None else self.inner.write(value)

    def read(self, data: object) -> object:
        if data is None:
            return None
        try:
            return self.inner.read(data)
        except WireRefusal as refusal:
            if refusal.mismatch and not refusal.segments:
                raise mismatch(self.expected, data) from None
            raise


class Array(Codec):
    """A JSON array read as a tuple (a field annotated `tuple[X, ...]`)."""

    expected = "an array"

    def __init__(self, item: Codec) -> None:
        self.item = item

    def write(self, value: tuple[object, ...] | list[object]) -> str:
        return "[" + ",".join(self.item.write(item) for item in value) + "]"

    def read(self, data: object) -> tuple[object, ...]:
        if type(data) is not list:
            raise mismatch(self.expected, data)
        items = []
        for index, item in enumerate(data):
            try:
                items.append(self.item.read(item))
            except WireRefusal as refusal:
                refusal.segments.append(f"[{index}]")
                raise
        return tuple(items)


class List(Array):
    """A JSON array read as a list (`handoff.wire.loads(text, list[X])`)."""

    def read(self, data: object) -> list[object]:  # type: ignore[override]
        return list(super().read(data))


def _listed(names: typing.Iterable[str]) -> str:
    return ", ".join(json.dumps(name) for name in names)


def _one_of(names: typing.Iterable[str]) -> str:
    return f"one of {_listed(names)}"


class UnitEnum(Codec):
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
        raise mismatch(self.expected, data)


UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\Z")
"""A hyphenated UUID, whole: what a handoff id is written as."""


class Uuid(Codec):
    expected = "a UUID string like 0123abcd-0123-0123-0123-0123456789ab"

    def write(self, value: HandoffId) -> str:
        return f'"{value.uuid}"'

    def read(self, data: object) -> HandoffId:
        if type(data) is str and UUID_TEXT.match(data):
            return _construct(HandoffId, uuid.UUID(data))
        raise mismatch(self.expected, data)


class ActionId(Codec):
    expected = Count.expected

    def write(self, value: HandoffActionId) -> str:
        return int.__repr__(value.value)

    def read(self, data: object) -> HandoffActionId:
        return _construct(HandoffActionId, _COUNT.read(data))


_COUNT = Count()


_FAILED = OutcomeKind.FAILED.value


class Outcome(Codec):
    def __init__(self) -> None:
        self.units = {
            kind.value: getattr(HandoffActionOutcome, kind.name)
            for kind in OutcomeKind
            if kind is not OutcomeKind.FAILED
        }
        self.expected = f'{_one_of(self.units)} or {{"{_FAILED}": reason}}'

    def write(self, value: HandoffActionOutcome) -> str:
        if value.kind is not OutcomeKind.FAILED:
            return f'"{value.kind.value}"'
        try:
            return f'{{"{_FAILED}":{write_string(value.reason)}}}'
        except WireRefusal as refusal:
            refusal.segments.append(f".{_FAILED}")
            raise

    def read(self, data: object) -> HandoffActionOutcome:
        if type(data) is str and data in self.units:
            return cast(HandoffActionOutcome, self.units[data])
        if type(data) is dict and len(data) == 1:
            ((tag, reason),) = data.items()
            if tag != _FAILED:
                raise WireRefusal(
                    f'unknown variant, expected "{_FAILED}" (other outcomes are plain strings)',
                    key_segment(tag),
                )
            try:
                return _construct(HandoffActionOutcome, OutcomeKind.FAILED, read_string(reason))
            except WireRefusal as refusal:
                refusal.segments.append(f".{_FAILED}")
                raise
        raise object_mismatch(self.expected, data)


@attrs.frozen
class Field:
    name: str
    codec: Codec
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


class Struct(Codec):
    def __init__(self, cls: type, fields: list[Field]) -> None:
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
            raise object_mismatch(self.expected, data)
        for key in data:
            if key not in self.names:
                fields = ", ".join(field.name for field in self.fields)
                raise WireRefusal(f"unknown field, expected only {fields}", key_segment(key))
        values = {}
        for field in self.fields:
            if field.name in data:
                try:
                    values[field.name] = field.codec.read(data[field.name])
                except WireRefusal as refusal:
                    refusal.segments.append(field.segment)
                    raise
            elif not field.defaulted:
                raise WireRefusal(f"missing field, expected {field.codec.expected}", field.segment)
        return _construct(self.cls, **values)


class Tagged(Codec):
    """An externally tagged enum: `{"Variant": {fields}}`, limited to the variants given.

    `family` names every variant of the enum, so that one not given reads "not allowed here".
    """

    def __init__(self, family: typing.Iterable[str], bodies: list[Struct]) -> None:
        self.family = frozenset(family)
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
            raise object_mismatch(self.expected, data)
        ((tag, fields),) = data.items()
        body = self.bodies.get(tag)
        if body is None:
            known = "variant not allowed here" if tag in self.family else "unknown variant"
            raise WireRefusal(f"{known}, expected {self.tags}", key_segment(tag))
        try:
            return body.read(fields)
        except WireRefusal as refusal:
            refusal.segments.append(key_segment(tag))
            raise

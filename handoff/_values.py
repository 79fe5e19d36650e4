"""Identifiers, enums, outcomes and the field checks every handoff value type shares."""

from __future__ import annotations

import enum
import json
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import attrs

__all__ = [
    "EngineType",
    "HandoffActionId",
    "HandoffActionOutcome",
    "HandoffCompletion",
    "HandoffId",
    "HandoffOrder",
    "KvTransferTimingMode",
    "OutcomeKind",
    "check_count",
    "check_float",
    "check_instance",
    "require_count",
    "to_float",
    "to_optional_float",
]

# Counts mirror Rust's `usize` on the 64-bit targets the reference runs on.
_USIZE_LIMIT = 2**64

_Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _show(value: object) -> str:
    # Python refuses to print ints past a few thousand digits; the size is what matters anyway.
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    return repr(value)


def _arrived(value: object) -> str:
    return f"{_show(value)} ({type(value).__name__})"


def require_count(name: str, value: object) -> None:
    """Refuse `value` unless it is an int (not a bool) in [0, 2**64); the error names `name`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int in [0, 2**64), got {_arrived(value)}")
    if not 0 <= value < _USIZE_LIMIT:
        raise ValueError(f"{name} must be an int in [0, 2**64), got {_show(value)}")


def check_count(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator for a Rust `usize` count: an int (not a bool) in [0, 2**64)."""
    require_count(attribute.name, value)


def check_float(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator for a float field: a float or an int (not a bool); NaN and inf are fine."""
    if type(value) is float:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{attribute.name} must be a float, got {_arrived(value)}")
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            raise ValueError(f"{attribute.name} must fit in a float, got {_show(value)}") from None


def to_float(value: float) -> float:
    """attrs converter: store ints as floats so equality, hashing and the wire see a float.

    Anything else passes through untouched for `check_float` to refuse with the field's name.
    """
    if type(value) is float or isinstance(value, bool) or not isinstance(value, int | float):
        return value
    try:
        return float(value)
    except OverflowError:
        return value


def to_optional_float(value: float | None) -> float | None:
    """attrs converter like `to_float` that also lets `None` through."""
    return None if value is None else to_float(value)


def check_instance(cls: type, expected: str) -> _Validator:
    """attrs validator refusing anything that is not a `cls`; `expected` reads like "a UUID"."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, cls):
            raise TypeError(f"{attribute.name} must be {expected}, got {_arrived(value)}")

    return check


@attrs.frozen(order=True)
class HandoffId:
    """Names one handoff; every fact and action carries the id of the handoff it belongs to."""

    uuid: uuid.UUID = attrs.field(validator=check_instance(uuid.UUID, "a uuid.UUID"))

    @classmethod
    def new(cls) -> HandoffId:
        """A fresh random (version 4) id."""
        return cls(uuid.uuid4())

    def __str__(self) -> str:
        return str(self.uuid)

    def __repr__(self) -> str:
        return f"HandoffId('{self.uuid}')"


class EngineType(enum.Enum):
    """The serving engine a handoff runs on; it decides the `HandoffOrder`."""

    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"


class HandoffOrder(enum.Enum):
    """Which side is committed first: the prefill source or the decode destination."""

    SOURCE_FIRST = "SourceFirst"
    DESTINATION_FIRST = "DestinationFirst"

    @classmethod
    def for_engine(cls, engine: EngineType) -> HandoffOrder:
        """The order `engine` uses: SGLang reserves the destination first, the others do not."""
        if not isinstance(engine, EngineType):
            raise TypeError(f"engine must be an EngineType, got {_arrived(engine)}")
        return _ORDER_FOR_ENGINE[engine]


_ORDER_FOR_ENGINE = {
    EngineType.VLLM: HandoffOrder.SOURCE_FIRST,
    EngineType.SGLANG: HandoffOrder.DESTINATION_FIRST,
    EngineType.TRTLLM: HandoffOrder.SOURCE_FIRST,
}


class KvTransferTimingMode(enum.Enum):
    """Which token count the modelled transfer delay is based on."""

    FULL_PROMPT = "full_prompt"
    DESTINATION_MISSING = "destination_missing"


class HandoffCompletion(enum.Enum):
    """How a completed handoff ended."""

    SUCCESS = "Success"
    CANCELED = "Canceled"


class OutcomeKind(enum.Enum):
    """The kinds of acknowledgement the runtime can give for an issued action."""

    SUBMITTED = "Submitted"
    ACCEPTED = "Accepted"
    SCHEDULED = "Scheduled"
    APPLIED = "Applied"
    NOOP = "Noop"
    FAILED = "Failed"


@attrs.frozen(order=True)
class HandoffActionId:
    """Names one issued action; a coordinator numbers actions 0, 1, 2, … and never reuses one."""

    value: int = attrs.field(validator=check_count)

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"HandoffActionId({self.value})"


def _check_reason(
    instance: HandoffActionOutcome, attribute: attrs.Attribute[Any], value: object
) -> None:
    if instance.kind is OutcomeKind.FAILED:
        if not isinstance(value, str):
            raise TypeError(
                f"{attribute.name} must be a str for a FAILED outcome, got {_arrived(value)}"
            )
    elif value is not None:
        error = ValueError if isinstance(value, str) else TypeError
        raise error(
            f"{attribute.name} must be None unless the kind is FAILED, got {_arrived(value)} "
            f"for {instance.kind.name}"
        )


@attrs.frozen
class HandoffActionOutcome:
    """The runtime's acknowledgement of one issued action; equal when kind and reason are equal.

    Use the constants (`HandoffActionOutcome.APPLIED`, …) or `HandoffActionOutcome.failed(reason)`.
    """

    SUBMITTED: ClassVar[HandoffActionOutcome]
    ACCEPTED: ClassVar[HandoffActionOutcome]
    SCHEDULED: ClassVar[HandoffActionOutcome]
    APPLIED: ClassVar[HandoffActionOutcome]
    NOOP: ClassVar[HandoffActionOutcome]

    kind: OutcomeKind = attrs.field(validator=check_instance(OutcomeKind, "an OutcomeKind"))
    reason: str | None = attrs.field(default=None, validator=_check_reason)

    @classmethod
    def failed(cls, reason: str) -> HandoffActionOutcome:
        """The action could not be performed, for the human-readable `reason`."""
        return cls(OutcomeKind.FAILED, reason)

    @property
    def is_failed(self) -> bool:
        """Whether this outcome reports a failure."""
        return self.kind is OutcomeKind.FAILED

    def __str__(self) -> str:
        if self.reason is None:
            return self.kind.value
        return f"{self.kind.value}({json.dumps(self.reason, ensure_ascii=False)})"

    def __repr__(self) -> str:
        if self.reason is None:
            return f"HandoffActionOutcome.{self.kind.name}"
        return f"HandoffActionOutcome.failed({self.reason!r})"


HandoffActionOutcome.SUBMITTED = HandoffActionOutcome(OutcomeKind.SUBMITTED)
HandoffActionOutcome.ACCEPTED = HandoffActionOutcome(OutcomeKind.ACCEPTED)
HandoffActionOutcome.SCHEDULED = HandoffActionOutcome(OutcomeKind.SCHEDULED)
HandoffActionOutcome.APPLIED = HandoffActionOutcome(OutcomeKind.APPLIED)
HandoffActionOutcome.NOOP = HandoffActionOutcome(OutcomeKind.NOOP)

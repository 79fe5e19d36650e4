"""The field checks the handoff values share, and the one way a refusal shows what arrived.

Values are kept as the exact built-in types: an `int`, `float`, `str` or `uuid.UUID` subclass
given for a field is converted to the plain type when the value is built (`to_count`,
`to_float`, `to_text`, `to_uuid`), so no overridden method of the caller's class ever runs inside
a coordinator call, and a subclass of a handoff value class is refused (`check_exact`).

Every refusal reads `"{name} must be {expected}, got {what arrived}"`: a `TypeError` when the
kind of value is wrong (the message adds its type), a `ValueError` when the kind is right and
the value is not.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from typing import Any, TypeGuard

import attrs

__all__ = [
    "USIZE_LIMIT",
    "arrived",
    "check_count",
    "check_exact",
    "check_float",
    "check_instance",
    "is_finite_non_negative",
    "require_count",
    "require_delay_ms",
    "require_instance",
    "shown",
    "to_count",
    "to_float",
    "to_optional_count",
    "to_optional_float",
    "to_text",
    "to_uuid",
    "wrong_type",
    "wrong_value",
]

# Counts mirror Rust's `usize` on the 64-bit targets the reference runs on.
USIZE_LIMIT = 2**64

_Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def shown(value: object) -> str:
    """`repr(value)`, except that an int too long to print is given by its size."""
    # Python refuses to print ints past a few thousand digits; the size is what matters anyway.
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    return repr(value)


def arrived(value: object) -> str:
    """`shown(value)` followed by its type, for a refusal of the wrong kind of value."""
    return f"{shown(value)} ({type(value).__name__})"


def wrong_type(name: str, expected: str, value: object) -> TypeError:
    """The refusal of `value` for `name`, which must be `expected` ("a HandoffId")."""
    return TypeError(f"{name} must be {expected}, got {arrived(value)}")


def wrong_value(name: str, expected: str, value: object) -> ValueError:
    """The refusal of `value` for `name`, of the right kind but outside what `expected` says."""
    return ValueError(f"{name} must be {expected}, got {shown(value)}")


def require_instance(name: str, value: object, cls: type, expected: str) -> None:
    """Refuse `value` for `name` unless it is a `cls`; `expected` reads like "a UUID"."""
    if not isinstance(value, cls):
        raise wrong_type(name, expected, value)


def check_instance(cls: type, expected: str) -> _Validator:
    """attrs validator refusing anything that is not a `cls`; `expected` reads like "a UUID"."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, cls):
            raise wrong_type(attribute.name, expected, value)

    return check


def check_exact(cls: type, expected: str) -> _Validator:
    """attrs validator refusing anything whose type is not exactly `cls` (no subclass)."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not cls:
            raise wrong_type(attribute.name, expected, value)

    return check


def to_count(value: int) -> int:
    """attrs converter: an `int` subclass (not a bool) becomes the plain `int` of its value.

    Anything else passes through untouched for `check_count` to refuse with the field's name.
    """
    if type(value) is int or isinstance(value, bool) or not isinstance(value, int):
        return value
    return int.__int__(value)  # the base method: an override on the subclass never runs


def to_optional_count(value: int | None) -> int | None:
    """attrs converter like `to_count` that also lets `None` through."""
    return None if value is None else to_count(value)


def to_text(value: str) -> str:
    """attrs converter: a `str` subclass becomes the plain `str` of its characters."""
    if type(value) is str or not isinstance(value, str):
        return value
    return str.__str__(value)


def to_uuid(value: uuid.UUID) -> uuid.UUID:
    """attrs converter: a `uuid.UUID` subclass becomes the plain `uuid.UUID` of its value.

    The value is read from the slot `uuid.UUID` keeps it in, never through the subclass.
    """
    if type(value) is uuid.UUID or not isinstance(value, uuid.UUID):
        return value
    try:
        number = _UUID_INT.__get__(value, uuid.UUID)
    except AttributeError:  # a subclass that keeps its value elsewhere
        raise wrong_type("uuid", "a uuid.UUID holding its value", value) from None
    return uuid.UUID(int=number)


_UUID_INT: Any = uuid.UUID.__dict__["int"]

_COUNT = "an int in [0, 2**64)"


def require_count(name: str, value: object) -> None:
    """Refuse `value` unless it is an int (not a bool) in [0, 2**64); the error names `name`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(name, _COUNT, value)
    if not 0 <= value < USIZE_LIMIT:
        raise wrong_value(name, _COUNT, value)


def check_count(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator for a Rust `usize` count: an int (not a bool) in [0, 2**64)."""
    require_count(attribute.name, value)


def _is_number(value: object) -> TypeGuard[float]:
    # `float` admits `int` for type checkers; a bool is an int to Python, but never a number here.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fits_a_float(value: float) -> bool:
    # Only an int can be too large: one that rounds past the largest float cannot convert.
    if isinstance(value, int):
        try:
            float(int.__int__(value))
        except OverflowError:
            return False
    return True


def check_float(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator for a float field: a float or an int (not a bool); NaN and inf are fine."""
    if type(value) is float:
        return
    if not _is_number(value):
        raise wrong_type(attribute.name, "a float", value)
    if not _fits_a_float(value):
        raise wrong_value(attribute.name, "a number that fits in a float", value)


def to_float(value: float) -> float:
    """attrs converter: store ints as floats so equality, hashing and the wire see a float.

    Anything else passes through untouched for `check_float` to refuse with the field's name.
    """
    if type(value) is float or not _is_number(value) or not _fits_a_float(value):
        return value
    return _plain_float(value)


def _plain_float(value: float) -> float:
    # The base methods, so that an override on an int or float subclass never runs.
    if isinstance(value, float):
        return float.__float__(value)
    return float(int.__int__(value))


def to_optional_float(value: float | None) -> float | None:
    """attrs converter like `to_float` that also lets `None` through."""
    return None if value is None else to_float(value)


def is_finite_non_negative(value: float) -> bool:
    """Whether the number `value` is neither NaN, infinite, negative nor too large for a float.

    Unlike `math.isfinite`, it never raises, however large an int.
    """
    if isinstance(value, int):
        return value >= 0 and _fits_a_float(value)
    return math.isfinite(value) and value >= 0


def require_delay_ms(name: str, value: object) -> float:
    """`value` as a float number of milliseconds, refused unless finite and non-negative.

    `TypeError` for what is not a number (a bool is not), `ValueError` for NaN, an infinity, a
    negative number or an int too large for a float.
    """
    if not _is_number(value):
        raise wrong_type(name, "a float", value)
    if not _fits_a_float(value) or not is_finite_non_negative(number := _plain_float(value)):
        raise wrong_value(name, "a finite, non-negative number of milliseconds", value)
    return number

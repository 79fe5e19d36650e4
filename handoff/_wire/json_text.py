"""JSON text as serde_json reads and writes it: strict parsing, floats and strings, and the
words a refusal uses for what arrived.

`parse` refuses what serde_json refuses (NaN/Infinity literals, numbers that overflow an f64,
invalid UTF-8) and marks an object that repeats a key instead of keeping its last value.
`format_f64` and `write_string` spell floats and strings byte for byte as serde_json does.
Every refusal is a `WireRefusal`; the codecs that catch it add their path segments and
`handoff.wire` turns it into a `WireError`.
"""

from __future__ import annotations

import json
import math
import re
from typing import cast

__all__ = [
    "WireRefusal",
    "format_f64",
    "key_segment",
    "mismatch",
    "object_mismatch",
    "parse",
    "read_string",
    "write_string",
]


class WireRefusal(Exception):
    """JSON that does not encode the value wanted (or a value JSON cannot carry).

    Raised where the problem is found; each enclosing field, index or tag appends its segment
    on the way out, innermost first.
    """

    def __init__(self, reason: str, segment: str | None = None, *, mismatch: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.segments = [] if segment is None else [segment]
        self.mismatch = mismatch  # "expected X, got Y" about the value itself, not inside it

    @property
    def path(self) -> str:
        """The JSON path of the offending value, from the root `$`."""
        return "$" + "".join(reversed(self.segments))


# Floats and strings


def format_f64(value: float) -> str:
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


def write_string(text: str) -> str:
    """`text` as a JSON string, escaped as serde_json escapes it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WireRefusal(
            "a string with a lone surrogate cannot be written as UTF-8 JSON"
        ) from None
    # Escapes exactly what serde_json escapes: '"', '\\' and U+0000..U+001F (short forms first).
    return json.dumps(text, ensure_ascii=False)


def read_string(data: object) -> str:
    """`data` if it is a string UTF-8 can carry; refused otherwise."""
    if type(data) is not str:
        raise mismatch("a string", data)
    try:
        data.encode("utf-8")
    except UnicodeEncodeError:
        raise WireRefusal("malformed JSON: a string with a lone surrogate escape") from None
    return data


# What arrived, in the words of a refusal


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def key_segment(key: str) -> str:
    """The JSON path segment of an object key: `.name`, or `["…"]` when not a plain name."""
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
        # Only a number read as `json` reads it can be infinite (`1e400`); serde would write
        # it as `null`, which is not what arrived.
        return format_f64(data) if math.isfinite(data) else "a number beyond a float's range"
    if isinstance(data, str):
        return f"the string {_quote(data)}"
    if isinstance(data, list):
        return f"an array of {len(data)} items" if data else "an empty array"
    if isinstance(data, dict):
        if len(data) == 1:
            return f"an object with the single key {_quote(next(iter(data)))}"
        return f"an object with {len(data)} keys" if data else "an empty object"
    return f"an object repeating the key {_quote(cast(_Duplicated, data).key)}"


def mismatch(expected: str, data: object) -> WireRefusal:
    """A refusal saying what was expected and what arrived instead."""
    return WireRefusal(f"expected {expected}, got {_describe(data)}", mismatch=True)


def object_mismatch(expected: str, data: object) -> WireRefusal:
    """`mismatch` for a place an object belongs, where a repeated key is the thing to name."""
    if isinstance(data, _Duplicated):
        return WireRefusal("duplicate key", key_segment(data.key))
    return mismatch(expected, data)


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


def _out_of_range(text: str) -> WireRefusal:
    shown = text if len(text) <= 30 else f"{text[:30]}…"
    return WireRefusal(f"malformed JSON: number out of range: {shown}")


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
    raise WireRefusal(f"malformed JSON: {text} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_int=_integer, parse_float=_number, parse_constant=_constant
)


# Numbers read by `json` itself: for a reader that checks every number it takes (a snapshot),
# where an integer too long to read is refused and a float past the range is an infinity.
_PLAIN_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant)


def parse(text: str | bytes | bytearray, *, plain_numbers: bool = False) -> object:
    """The JSON value of `text`, strictly read; an object repeating a key is not a dict.

    With `plain_numbers`, numbers are read as `json` reads them (faster; the caller checks
    their range), and an integer too long for Python to read is refused.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise WireRefusal(
                f"malformed JSON: not UTF-8 ({error.reason} at byte {error.start})"
            ) from None
    elif not isinstance(text, str):
        raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
    try:
        return (_PLAIN_DECODER if plain_numbers else _DECODER).decode(text)
    except json.JSONDecodeError as error:
        raise WireRefusal(
            f"malformed JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise WireRefusal("malformed JSON: nested too deeply") from None
    except ValueError as error:  # only plain numbers: an integer too long to read
        raise WireRefusal(f"malformed JSON: {error}") from None

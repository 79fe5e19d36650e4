"""The values a snapshot keeps, read as the coordinator checked them when it took them.

A count is a Rust `usize`; a timing must be one the coordinator accepts.  A deployment's
handoffs share a few timings (one per model and link), so a timing read and validated once is
kept, by its fields' exact types and bits, and handed out again: reading one anew is a third
of a restore.
"""

from __future__ import annotations

from typing import cast

from handoff._compile.codec_table import codec_for
from handoff._values.errors import HandoffError
from handoff._values.timing import HandoffTransferTiming, validate_transfer_timing
from handoff._values.validators import USIZE_LIMIT
from handoff._wire.codecs import Codec
from handoff._wire.json_text import WireRefusal, mismatch

__all__ = ["codec", "count", "optional_count", "optional_timing"]

_CODEC_CACHE: dict[type, Codec] = {}


def codec(cls: type) -> Codec:
    """The wire codec of `cls`, built once."""
    found = _CODEC_CACHE.get(cls)
    if found is None:
        found = _CODEC_CACHE[cls] = codec_for(cls, {})
    return found


def count(data: object) -> int:
    """`data` as a count (an int in `0 ≤ n < 2**64`), or a refusal."""
    if type(data) is int and 0 <= data < USIZE_LIMIT:
        return data
    raise mismatch("an unsigned 64-bit integer", data)


def optional_count(data: object) -> int | None:
    """`null` or a count."""
    return None if data is None else count(data)


_TIMINGS: dict[tuple[object, ...], HandoffTransferTiming] = {}
"""Timings read and validated before, by their fields (see `_timing_key`)."""
_TIMINGS_KEPT = 256


def optional_timing(data: object) -> HandoffTransferTiming | None:
    """`null` or a timing the coordinator accepts, or a refusal."""
    if data is None:
        return None
    key = _timing_key(data)
    timing = _TIMINGS.get(key) if key is not None else None
    if timing is not None:
        return timing
    timing = cast("HandoffTransferTiming", codec(HandoffTransferTiming).read(data))
    try:
        validate_transfer_timing(timing)
    except HandoffError as error:
        raise WireRefusal(f"a timing the coordinator refuses: {error}") from None
    if key is not None:
        if len(_TIMINGS) >= _TIMINGS_KEPT:
            _TIMINGS.clear()
        _TIMINGS[key] = timing
    return timing


def _timing_key(data: object) -> tuple[object, ...] | None:
    """The fields of a timing object, each with its type (`1` is not `1.0`, nor `True`) and a
    float by its exact bits (`-0.0` is not `0.0`); None when a value is not a plain scalar."""
    if type(data) is not dict:
        return None
    key = []
    for name, value in data.items():
        kind = type(value)
        if kind is float:
            value = value.hex()
        elif kind not in _SCALARS:
            return None
        key.append((name, kind, value))
    return tuple(key)


_SCALARS = frozenset({str, int, bool, type(None)})

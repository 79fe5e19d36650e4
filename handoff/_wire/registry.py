"""The codec of every wire type, derived once from the attrs fields (`codec_table`), and the
writing of one value: what `handoff.wire` offers users, and what the coordinator's recorder
and the trace and conformance readers use without going through the public module."""

from __future__ import annotations

import typing

from handoff._compile.codec_table import FAMILIES, UNIONS, codec_for
from handoff._values.conformance import NormalizedHandoffConformance, NormalizedStoredTiming
from handoff._values.errors import WireError
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import (
    EngineType,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
)
from handoff._wire import codecs as codecs
from handoff._wire.json_text import WireRefusal

__all__ = ["codec_of", "write"]


_WIRE_TYPES: tuple[type, ...] = (
    HandoffId,
    HandoffOrder,
    EngineType,
    KvTransferTimingMode,
    HandoffTransferTiming,
    HandoffFact,
    *FAMILIES[HandoffFact],
    HandoffAction,
    *FAMILIES[HandoffAction],
    HandoffActionId,
    IssuedHandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    NormalizedHandoffConformance,
)

# Annotations are resolved in the module `__module__` names, `handoff`, which holds the
# conformance classes only once they are first asked for; every wire type is imported here.
_CODECS: dict[type, codecs.Codec] = {cls: codec_for(cls, globals()) for cls in _WIRE_TYPES}


def codec_of(cls: object) -> codecs.Codec:
    """The codec of `cls` (for the trace reader, which parses each line once); not public."""
    try:
        codec: codecs.Codec | None = _CODECS.get(UNIONS.get(cls, cls))  # type: ignore[call-overload]
    except TypeError:  # an unhashable object given for a type
        codec = None
    if codec is None:
        if typing.get_origin(cls) is list and len(typing.get_args(cls)) == 1:
            return codecs.List(codec_of(typing.get_args(cls)[0]))
        raise TypeError(f"{cls!r} has no handoff wire form")
    return codec


def write(value: object) -> str:
    """The compact JSON text of `value`, a value of a wire type; `TypeError` for anything
    else, `WireError` for what JSON cannot carry (a lone surrogate in a failure reason)."""
    if type(value) is list:
        return "[" + ",".join(map(write, value)) + "]"
    codec = codec_of(type(value))
    try:
        return codec.write(value)
    except WireRefusal as refusal:
        raise WireError(refusal.path, refusal.reason) from None

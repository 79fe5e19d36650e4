"""The JSON wire format of the handoff value types, byte-compatible with the Rust serde layout.

`dumps(value)` writes what `serde_json::to_string` writes for the same Rust value; `loads(text,
cls)` reads one value of `cls`: any value type of contract §2 (docs/contract.md), a
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
otherwise). The restored coordinator answers every call as the original would. A snapshot is
data: the chart it names is one of the shipped orders or a chart class the caller hands over
(`loads(text, HandoffCoordinatorCore, charts=[MyChart])`); no module a snapshot names is imported.

Layout: compact, fields in declaration order, unit enums as their value strings, facts and actions
externally tagged (`{"Canceled":{"handoff_id":"…"}}`), outcomes as `"Applied"` or
`{"Failed":"reason"}`, `HandoffActionId` as a bare integer, `HandoffId` as the lowercase hyphenated
UUID, absent optionals as `null`. `HandoffTransferTiming.kv_bytes_per_request` is written only when
it is not 0, between `kv_bytes_per_token` and `bandwidth_gb_s` as the Rust struct declares it (the
attrs class keeps it last for its positional constructor), and read as 0 when absent; a reader
takes it in any place, as serde does. Strings are escaped as serde_json does: `"`, `\\` and the
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

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._values.errors import WireError
from handoff._values.messages import (
    AnyHandoffAction,
    AnyHandoffFact,
    HandoffAction,
    HandoffFact,
)
from handoff._wire import codecs as codecs
from handoff._wire.json_text import WireRefusal, parse
from handoff._wire.registry import codec_of, write

if TYPE_CHECKING:
    from typing_extensions import TypeForm

__all__ = ["WireError", "dumps", "loads"]

T = TypeVar("T")
Variant = TypeVar("Variant", bound=AnyHandoffFact | AnyHandoffAction)
Text = str | bytes | bytearray


def dumps(value: object) -> str:
    """The compact JSON text serde_json writes for `value`.

    `value` is a value of any wire type (`dumps(HandoffActionOutcome.APPLIED) == '"Applied"'`),
    a list of them (`dumps([issued, issued])` is a JSON array), or a coordinator (or the
    coordinator a `RecordingCoordinator` records), written as its snapshot. Raises `TypeError`
    for other objects (and for a coordinator whose chart cannot be named by `module:Class`),
    `ConcurrentCallError` for a coordinator another thread is calling, and `WireError` for a
    failure reason containing a lone surrogate, which UTF-8 JSON cannot carry.  A chart defined
    in `__main__` (the script being run) is written, with a `UserWarning`: only a process
    running that same script can restore it.
    """
    if type(value) is list:
        return "[" + ",".join(map(dumps, value)) + "]"
    if type(value) is HandoffCoordinatorCore:
        from handoff._coordinator.snapshot import written_by_dumps

        return written_by_dumps(value)
    try:
        return write(value)
    except TypeError:
        # A recorder exists only once its module is loaded; looked up, not imported, since
        # this module need not load it.
        recorder = sys.modules.get("handoff._coordinator.recorder")
        if recorder is None or type(value) is not recorder.RecordingCoordinator:
            raise
        return dumps(value.coordinator)  # type: ignore[attr-defined]  # the recorder's coordinator


@overload
def loads(text: Text, cls: type[Variant], *, charts: Iterable[type] = ()) -> Variant: ...  # type: ignore[overload-overlap]
@overload
def loads(text: Text, cls: type[HandoffFact], *, charts: Iterable[type] = ()) -> AnyHandoffFact: ...
@overload
def loads(
    text: Text, cls: type[HandoffAction], *, charts: Iterable[type] = ()
) -> AnyHandoffAction: ...
@overload
def loads(text: Text, cls: TypeForm[T], *, charts: Iterable[type] = ()) -> T: ...
def loads(text: Text, cls: Any, *, charts: Iterable[type] = ()) -> Any:
    """Read one value of `cls` from JSON `text` (bytes must be UTF-8).

    `loads(text, AnyHandoffFact)` and `loads(text, HandoffFact)` read any fact and are typed
    `AnyHandoffFact`, so a `match` over the result is checked for exhaustiveness;
    `loads(text, HandoffFact.Canceled)` reads that variant only; `loads(text,
    list[IssuedHandoffAction])` reads a JSON array of them; `loads(text, HandoffCoordinatorCore)`
    restores a snapshot. Raises `WireError` naming the JSON path of the first problem; see the
    module docstring for what is refused.

    `charts` are the chart classes of one's own a snapshot may name (besides the shipped
    orders); a snapshot naming any other is a `WireError`, and nothing it names is imported.
    Anything in `charts` but a chart class is a `TypeError`, as is `charts` given for any
    `cls` but `HandoffCoordinatorCore`.
    """
    if cls is HandoffCoordinatorCore:
        from handoff._coordinator.snapshot import given_charts, read

        given = given_charts(charts)
        try:
            return read(text, charts=given)
        except WireRefusal as refusal:
            raise WireError(refusal.path, refusal.reason) from None
    if tuple(charts):
        raise TypeError("charts is for restoring a snapshot (cls=HandoffCoordinatorCore)")
    codec = codec_of(cls)
    try:
        return codec.read(parse(text))
    except WireRefusal as refusal:
        raise WireError(refusal.path, refusal.reason) from None

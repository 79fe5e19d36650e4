"""Snapshots: a coordinator written as compact JSON, and restored only if a run can reach it.

A snapshot is one JSON object, its keys always in this order:

    {"handoff_snapshot":1,"chart":"SourceFirst","handoff_id":"…","fallback_transfer_delay_ms":0.0,
     "state":"destination_reserving","next_id":2,"issued":[[1,"ReserveDestination"]],
     "outcomes":[],"timing":{…},"tokens":null,"lifecycle":["SourceHeld"],"completion":null}

`chart` is the shipped order's wire value, or `module:Class` for a chart of one's own; `issued`
lists the journal's actions as `[id, variant]` (`[id, "StartTransfer", delay_ms]`), `outcomes`
the recorded acknowledgements as `[id, outcome]`, both by id.  The handoff id every action
carries is the snapshot's own, so it is written once.

Restoring validates the whole: every field must be well formed, and the configuration it
describes (chart state, journal, kept payloads, lifecycle, completion) must be one that some
run of the chart reaches.  The chart's reachable configurations are explored once per chart,
on its first restore, with payloads that pass every check; a snapshot's own payloads are then
checked as the coordinator would have checked them (a valid timing, a transfer delay equal
to the one its timing, tokens and fallback give).  A snapshot laid out byte for byte as one
read before, payloads aside, is restored from what that one gave, its own payloads checked
the same way (see "reading a layout read before" below): of a store's snapshots, the first of
each stage of a handoff is read in full and the rest in about half the time.  `copy`,
`deepcopy` and `pickle` go through the same text (`handoff._coordinator.copies`), so a copy
shares nothing with its original but the rule table and immutable values.

A snapshot is data: the chart it names is looked up among the shipped charts and the chart
classes the reader is handed, never imported, so a snapshot naming any other module runs none
of its code (a refusal of the `chart` field says how to hand the chart over).
"""

from __future__ import annotations

import functools
import json
import re
import sys
import typing
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from handoff._compile.table import runtime_table
from handoff._coordinator import probe
from handoff._coordinator.binding import planned_delay
from handoff._coordinator.core import HandoffCoordinatorCore, Progress, hold, release
from handoff._coordinator.reachable import (
    BLANK_ID,
    Rules,
    Shape,
    TooManyConfigurations,
    prefixes,
    shape,
)
from handoff._coordinator.snapshot_values import codec, count, optional_count, optional_timing
from handoff._values.errors import HandoffError
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import AnyHandoffAction, HandoffAction
from handoff._values.timing import HandoffTransferTiming
from handoff._values.validators import USIZE_LIMIT, is_finite_non_negative
from handoff._values.values import (
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
)
from handoff._wire.codecs import UUID_TEXT as _UUID_TEXT
from handoff._wire.json_text import WireRefusal, format_f64, key_segment, mismatch, parse

__all__ = ["VERSION", "read", "write", "written_by_dumps"]

VERSION = 1
"""The snapshot layout's version; a reader refuses any other."""

_KEYS = (
    "handoff_snapshot", "chart", "handoff_id", "fallback_transfer_delay_ms", "state", "next_id",
    "issued", "outcomes", "timing", "tokens", "lifecycle", "completion",
)  # fmt: skip
_SHAPE_FIELDS = _KEYS[4:]
"""The fields a configuration's shape is made of, in the order a refusal looks at them."""

_ACTIONS: dict[str, type[AnyHandoffAction]] = {
    variant.__name__: variant for variant in typing.get_args(AnyHandoffAction)
}
_LIFECYCLE = {event.value: event for event in NormalizedHandoffEvent}
_COMPLETIONS = {completion.value: completion for completion in HandoffCompletion}


# -- writing -------------------------------------------------------------------------------


def write(coordinator: HandoffCoordinatorCore) -> str:
    """The snapshot text of `coordinator`; `TypeError` if its chart cannot be named,
    `ConcurrentCallError` while another thread is inside a call on it."""
    me: list[None] = []
    try:
        try:
            hold(coordinator, me)
            return _written(coordinator)
        finally:
            release(coordinator, me)
    finally:  # an interrupt landing on the release above, before it ran
        release(coordinator, me)


def written_by_dumps(coordinator: HandoffCoordinatorCore) -> str:
    """`write(coordinator)`, warning when its chart is defined in `__main__` (copies, which
    stay in the process, do not warn)."""
    text = write(coordinator)
    rules = probe.rules(coordinator)
    if not isinstance(rules, HandoffOrder) and rules.__module__ == "__main__":
        warnings.warn(
            f"chart {rules.__qualname__} is defined in __main__, the script being run: its "
            f"snapshot names it __main__:{rules.__qualname__}, which only a process running "
            "that same script can restore; define the chart in a module of its own to restore "
            "its snapshots anywhere else",
            UserWarning,
            stacklevel=3,
        )
    return text


def _written(c: HandoffCoordinatorCore) -> str:
    chart, states = _texts(c)
    now = probe.progress(c)  # read once: the progress is one object, committed whole
    handoff_id, fallback = probe.identity(c)
    issued = ",".join(_issued_entry(key, action) for key, action in now.issued.items())
    outcomes = ",".join(
        f"[{key},{codec(HandoffActionOutcome).write(now.outcomes[key])}]"
        for key in sorted(now.outcomes)
    )
    timing = "null" if now.timing is None else codec(HandoffTransferTiming).write(now.timing)
    tokens = "null" if now.tokens is None else str(now.tokens)
    lifecycle = ",".join(f'"{event.value}"' for event in now.lifecycle)
    completion = "null" if now.completion is None else f'"{now.completion.value}"'
    return (
        f'{{"handoff_snapshot":{VERSION},"chart":{chart},"handoff_id":"{handoff_id}",'
        f'"fallback_transfer_delay_ms":{format_f64(fallback)},'
        f'"state":{states[now.state]},"next_id":{now.next_id},'
        f'"issued":[{issued}],"outcomes":[{outcomes}],"timing":{timing},"tokens":{tokens},'
        f'"lifecycle":[{lifecycle}],"completion":{completion}}}'
    )


def _texts(coordinator: HandoffCoordinatorCore) -> tuple[str, tuple[str, ...]]:
    """The chart's name and its state ids, as JSON strings (worked out once per chart)."""
    table = probe.table(coordinator)
    found = _TEXTS.get(id(table))
    if found is None or found[0] is not table:
        chart = json.dumps(_chart_name(coordinator))
        found = _TEXTS[id(table)] = (table, chart, tuple(map(json.dumps, table.states)))
    return found[1], found[2]


_TEXTS: dict[int, tuple[object, str, tuple[str, ...]]] = {}


def _chart_name(coordinator: HandoffCoordinatorCore) -> str:
    rules = probe.rules(coordinator)
    if runtime_table(rules) is not probe.table(coordinator):
        raise TypeError("a coordinator running a table of its own has no snapshot")
    if isinstance(rules, HandoffOrder):
        return rules.value
    name = f"{rules.__module__}:{rules.__qualname__}"
    if _find(rules.__module__, rules.__qualname__) is not rules:
        raise TypeError(
            f"chart {rules.__qualname__} cannot be named as {name}: a chart class written "
            "to a snapshot must be found by its module and name"
        )
    return name


def _issued_entry(key: int, action: HandoffAction) -> str:
    if isinstance(action, HandoffAction.StartTransfer):
        return f'[{key},"StartTransfer",{format_f64(action.delay_ms)}]'
    return f'[{key},"{type(action).__name__}"]'


# -- reading -------------------------------------------------------------------------------


Charts = Mapping[str, Rules]
"""The charts of one's own a reader may restore, by the name a snapshot writes them with."""

NO_CHARTS: Charts = {}


def given_charts(charts: Iterable[object]) -> Charts:
    """The chart classes a caller hands a reader, by the name a snapshot gives each; a
    `TypeError` for anything that is not a chart class (the caller's mistake, not the data's)."""
    from handoff._chart.base import HandoffChart

    named: dict[str, Rules] = {}
    for chart in charts:
        if not (isinstance(chart, type) and issubclass(chart, HandoffChart) and chart.states):
            raise TypeError(f"charts must hold HandoffChart subclasses, got {chart!r}")
        named[f"{chart.__module__}:{chart.__qualname__}"] = chart
    return named


def read(
    text: str | bytes | bytearray, *, interpreted: bool = False, charts: Charts = NO_CHARTS
) -> HandoffCoordinatorCore:
    """The coordinator `text` describes; `WireRefusal` naming the field unless a run of its
    chart reaches it.  A chart of one's own is found in `charts` (see `given_charts`) or not
    at all."""
    layout = _layout(text)
    try:
        restored = _known(layout, charts)
    except _Elsewhere:
        restored = _read(text, charts)
        if layout is not None:
            _remember(layout, restored, text)
    if interpreted:
        probe.interpret(restored)
    return restored


def _read(text: str | bytes | bytearray, charts: Charts = NO_CHARTS) -> HandoffCoordinatorCore:
    """The general reader: every field parsed, checked and looked up in the reachable set."""
    data = parse(text, plain_numbers=True)
    if type(data) is not dict:
        raise mismatch("a coordinator snapshot object", data)
    if data.keys() != _KEY_SET:
        _refuse_keys(data)
    fields = _Fields(data)
    version = data["handoff_snapshot"]
    if type(version) is not int or version != VERSION:
        raise fields.refuse("handoff_snapshot", f"expected version {VERSION}, got {version!r}")
    rules = fields.read("chart", lambda data: _rules(data, charts))
    restored = _built(fields, rules)
    _reachable(fields, rules, shape(restored))
    _check_delays(fields, restored)
    return restored


_KEY_SET = frozenset(_KEYS)


def _refuse_keys(data: dict[str, object]) -> None:
    for key in data:
        if key not in _KEY_SET:
            raise WireRefusal(f"unknown field, expected only {', '.join(_KEYS)}", key_segment(key))
    for key in _KEYS:
        if key not in data:
            raise WireRefusal("missing field", key_segment(key))


class _Fields:
    """The snapshot's fields, each read with its path named in a refusal."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def refuse(self, key: str, reason: str, *inner: str) -> WireRefusal:
        refusal = WireRefusal(reason)
        refusal.segments.extend(reversed(inner))
        refusal.segments.append(key_segment(key))
        return refusal

    def read(self, key: str, reader: Any) -> Any:
        try:
            return reader(self.data[key])
        except WireRefusal as refusal:
            refusal.segments.append(key_segment(key))
            raise


_ORDERS = {order.value: order for order in HandoffOrder}


def _rules(data: object, charts: Charts) -> Rules:
    if type(data) is not str:
        raise mismatch("an order (SourceFirst, DestinationFirst) or module:Class", data)
    found = _ORDERS.get(data) or charts.get(data)
    if found is not None:
        return found
    module, colon, name = data.partition(":")
    if not (colon and module and name):
        raise WireRefusal(
            f"expected an order (SourceFirst, DestinationFirst) or module:Class, got {_shown(data)}"
        )
    given = f" (given: {', '.join(charts)})" if charts else ""
    named = name if all(part.isidentifier() for part in name.split(".")) else "MyChart"
    raise WireRefusal(
        f"chart {_shown(data)} is not among the charts given{given}: a snapshot is data and "
        f"imports nothing it names; to restore it, hand its class over, as "
        f"loads(text, HandoffCoordinatorCore, charts=[{named}])"
    )


def _shown(name: str) -> str:
    """A name from a snapshot as a refusal quotes it: whole unless it is long."""
    if len(name) <= _SHOWN:
        return json.dumps(name)
    return f"{json.dumps(name[:_SHOWN])}… ({len(name):,} characters)"


_SHOWN = 120


def _find(module: str, name: str) -> object:
    """What `module:name` names in a module already imported (None: nothing), for a writer
    checking that a chart's name finds it again."""
    found: object = sys.modules.get(module)
    for part in name.split("."):
        found = getattr(found, part, None)
    return found


@functools.cache
def _blank(rules: Rules) -> HandoffCoordinatorCore:
    if isinstance(rules, HandoffOrder):
        return HandoffCoordinatorCore(BLANK_ID, rules)
    return HandoffCoordinatorCore(BLANK_ID, chart=rules)


def _built(fields: _Fields, rules: Rules) -> HandoffCoordinatorCore:
    data = fields.data
    handoff_id = _handoff_id(data["handoff_id"])
    if handoff_id is None:
        raise fields.refuse("handoff_id", mismatch(_UUID.expected, data["handoff_id"]).reason)
    fallback = data["fallback_transfer_delay_ms"]
    if type(fallback) not in (int, float) or not is_finite_non_negative(fallback):
        raise fields.refuse("fallback_transfer_delay_ms", "expected a finite, non-negative number")
    blank = _blank(rules)
    state, table = data["state"], probe.table(blank)
    if type(state) is not str or state not in table.states:
        raise fields.refuse("state", f"expected a state of {table.name}, got {state!r}")
    now = Progress()
    now.state = table.states.index(state)
    # Each field read in turn; a refusal from inside one is named by the field's key.
    key = "next_id"
    try:
        now.next_id = next_id = count(data[key])
        key = "issued"
        now.issued = issued = _issued(data[key], handoff_id, next_id)
        key = "outcomes"
        now.outcomes = _outcomes(data[key], issued)
        key = "timing"
        now.timing = optional_timing(data[key])
        key = "tokens"
        now.tokens = optional_count(data[key])
        key = "lifecycle"
        now.lifecycle = _events(data[key])
        key = "completion"
        now.completion = _completion(data[key])
    except WireRefusal as refusal:
        refusal.segments.append(key_segment(key))
        raise
    return probe.restored(blank, handoff_id, float(fallback), now)


_UUID = codec(HandoffId)


def _handoff_id(data: object) -> HandoffId | None:
    """The handoff id `data` writes, or None.  Its text is checked whole by the codec's
    pattern, so the UUID is built from its digits, and the id filled in as its frozen class's
    constructor would (a UUID is all it holds): no converter or validator runs again."""
    if type(data) is not str or _UUID_TEXT.match(data) is None:
        return None
    return _id_of(data)


def _id_of(text: str) -> HandoffId:
    """The handoff id of a UUID's text, already checked."""
    value = object.__new__(uuid.UUID)
    object.__setattr__(value, "int", int(text.replace("-", ""), 16))
    object.__setattr__(value, "is_safe", uuid.SafeUUID.unknown)
    handoff_id = object.__new__(HandoffId)
    object.__setattr__(handoff_id, "uuid", value)
    return handoff_id


def _refused(reason: str, *segments: str) -> WireRefusal:
    """A refusal at `segments`, innermost first."""
    refusal = WireRefusal(reason)
    refusal.segments.extend(segments)
    return refusal


def _entries(items: object) -> Iterator[tuple[int, int, list[Any]]]:
    """Each entry of the array `items`, with its index and id: an `[id, …]` array whose id is
    above the one before it."""
    if type(items) is not list:
        raise mismatch("an array", items)
    previous = -1
    for index, item in enumerate(items):
        if type(item) is not list or len(item) < 2:
            raise WireRefusal("expected an array [id, …]", f"[{index}]")
        if not (type(item[0]) is int and previous < item[0] < USIZE_LIMIT):
            raise _refused("expected an id above the one before it", "[0]", f"[{index}]")
        previous = item[0]
        yield index, previous, item


def _issued(items: object, handoff_id: HandoffId, next_id: int) -> dict[int, Any]:
    issued: dict[int, Any] = {}
    for index, key, item in _entries(items):
        if key >= next_id:
            raise _refused(f"an id not yet issued (next_id is {next_id})", "[0]", f"[{index}]")
        variant = _ACTIONS.get(item[1]) if type(item[1]) is str else None
        if variant is None:
            raise _refused(f"expected an action, one of {', '.join(_ACTIONS)}", "[1]", f"[{index}]")
        delay = 0.0
        if variant is _TRANSFER:
            delay = item[2] if len(item) == 3 else -1.0
            if not (type(delay) in (int, float) and is_finite_non_negative(delay)):
                raise WireRefusal('expected [id, "StartTransfer", delay_ms]', f"[{index}]")
        elif len(item) != 2:
            raise WireRefusal(f'expected [id, "{item[1]}"]', f"[{index}]")
        issued[key] = _action(variant, handoff_id, float(delay))
    return issued


def _action(variant: type[HandoffAction], handoff_id: HandoffId, delay: float) -> Any:
    """An action of `variant` for `handoff_id` (`delay` is a transfer's), its fields checked
    already: it is filled in as its frozen class's constructor would, without the validators
    running again for each action of each restore."""
    action = object.__new__(variant)
    object.__setattr__(action, "handoff_id", handoff_id)
    if variant is _TRANSFER:
        object.__setattr__(action, "delay_ms", delay)
    return action


_TRANSFER = HandoffAction.StartTransfer
_OUTCOME_TEXTS = {
    outcome.kind.value: outcome
    for outcome in (
        HandoffActionOutcome.SUBMITTED,
        HandoffActionOutcome.ACCEPTED,
        HandoffActionOutcome.SCHEDULED,
        HandoffActionOutcome.APPLIED,
        HandoffActionOutcome.NOOP,
    )
}
"""The outcomes written as a bare string, read without the codec (a failure is an object)."""


def _outcomes(items: object, issued: dict[int, Any]) -> dict[int, HandoffActionOutcome]:
    outcomes: dict[int, HandoffActionOutcome] = {}
    for index, key, item in _entries(items):
        if key not in issued:
            raise _refused("an outcome for an action the journal lacks", "[0]", f"[{index}]")
        if len(item) != 2:
            raise WireRefusal("expected [id, outcome]", f"[{index}]")
        found = _OUTCOME_TEXTS.get(item[1]) if type(item[1]) is str else None
        if found is None:
            try:
                found = codec(HandoffActionOutcome).read(item[1])
            except WireRefusal as refusal:
                refusal.segments.extend(["[1]", f"[{index}]"])
                raise
        outcomes[key] = found
    return outcomes


def _events(data: object) -> list[NormalizedHandoffEvent]:
    if type(data) is not list:
        raise mismatch("an array", data)
    events = []
    for index, item in enumerate(data):
        event = _LIFECYCLE.get(item) if type(item) is str else None
        if event is None:
            raise WireRefusal(f"expected one of {', '.join(_LIFECYCLE)}", f"[{index}]")
        events.append(event)
    return events


def _completion(data: object) -> HandoffCompletion | None:
    if data is None:
        return None
    completion = _COMPLETIONS.get(data) if type(data) is str else None
    if completion is None:
        raise mismatch(f"null or one of {', '.join(_COMPLETIONS)}", data)
    return completion


# -- what runs can reach ---------------------------------------------------------------------


def _reachable(fields: _Fields, rules: Rules, found: Shape) -> None:
    try:
        known = prefixes(rules)
    except TooManyConfigurations as error:
        raise fields.refuse("chart", str(error)) from None
    if found in known[-1]:
        return
    for depth, key in enumerate(_SHAPE_FIELDS):
        if found[: depth + 1] not in known[depth]:
            raise fields.refuse(
                key, f"no run of the chart reaches this {key} with the fields before it"
            )
    raise AssertionError("unreachable")  # pragma: no cover (the last prefix is the whole shape)


def _check_delays(fields: _Fields, restored: HandoffCoordinatorCore) -> None:
    now, (_handoff_id, fallback) = probe.progress(restored), probe.identity(restored)
    for index, (key, action) in enumerate(now.issued.items()):
        if not isinstance(action, HandoffAction.StartTransfer):
            continue
        try:
            planned = planned_delay(None, now.timing, now.tokens, fallback)
        except HandoffError:
            planned = None
        if planned != action.delay_ms:
            raise fields.refuse(
                "issued",
                f"transfer {key} was planned with {planned}, not {action.delay_ms}, by the "
                "snapshot's timing, tokens and fallback",
                f"[{index}]",
                "[2]",
            )


# -- reading a layout read before ------------------------------------------------------------
#
# A snapshot as `write` writes it is its layout (every byte but the payloads: the handoff id,
# the fallback, the transfer delays, the timing and the tokens) with the payloads filled in.
# Once the general reader has accepted a snapshot and it is exactly the text `write` gives
# back, its layout is remembered with what was restored; a later snapshot of that layout is
# restored from it, its own payloads checked as the general reader checks them.  Anything
# else, a payload that is not written as `write` writes it included, goes to the general
# reader, which gives the refusal.

_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?"
_HEAD = re.compile(
    r'\{"handoff_snapshot":1,"chart":("[\w.:]+"),'
    r'"handoff_id":"([0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12})",'
    rf'"fallback_transfer_delay_ms":({_NUMBER}),"state":'
)
_TRANSFER_TEXT = ',"StartTransfer",'


class _Layout(typing.NamedTuple):
    key: tuple[str | bool, ...]
    chart: str
    handoff_id: str
    fallback: str
    delays: list[str]
    timing: str
    tokens: str


def _layout(text: str | bytes | bytearray) -> _Layout | None:
    """`text` split into its layout and payloads, or None unless it is laid out as `write`
    lays a snapshot out."""
    if type(text) is not str:
        return None
    head = _HEAD.match(text)
    if head is None:
        return None
    # The fields are found by their keys, the timing's taken as the last in the text: in a
    # text `write` wrote, each key is written once outside strings and nothing after the
    # timing key is a string one could hide in.  A text split otherwise has a layout that no
    # text `write` wrote has, so it is never found among those remembered.
    timing_at = text.rfind(',"timing":')
    tokens_at = text.find(',"tokens":', timing_at)
    lifecycle_at = text.find(',"lifecycle":', tokens_at)
    if not head.end() <= timing_at < tokens_at < lifecycle_at:
        return None
    chart, handoff_id, fallback = head.groups()
    timing, tokens = text[timing_at + 10 : tokens_at], text[tokens_at + 10 : lifecycle_at]
    parts = text[head.end() : timing_at].split(_TRANSFER_TEXT)
    delays = []
    for index in range(1, len(parts)):
        delay, _, after = parts[index].partition("]")
        delays.append(delay)
        parts[index] = after
    key = (chart, timing == "null", tokens == "null", text[lifecycle_at:], *parts)
    return _Layout(key, chart, handoff_id, fallback, delays, timing, tokens)


class _Known(typing.NamedTuple):
    """What the general reader restored from a snapshot of one layout, payloads aside."""

    rules: Rules
    state: int
    next_id: int
    issued: tuple[tuple[int, type[HandoffAction]], ...]
    outcomes: dict[int, HandoffActionOutcome]
    lifecycle: tuple[NormalizedHandoffEvent, ...]
    completion: HandoffCompletion | None


_KNOWN: dict[tuple[str | bool, ...], _Known] = {}
_KNOWN_KEPT = 256
_TIMING_TEXTS: dict[str, HandoffTransferTiming] = {}
_FALLBACKS: dict[str, float] = {}


def _remember(
    layout: _Layout, restored: HandoffCoordinatorCore, text: str | bytes | bytearray
) -> None:
    if write(restored) != text:
        return
    if len(_KNOWN) >= _KNOWN_KEPT:
        _KNOWN.clear()
    now = probe.progress(restored)
    _KNOWN[layout.key] = _Known(
        probe.rules(restored),
        now.state,
        now.next_id,
        tuple([(key, type(action)) for key, action in now.issued.items()]),
        dict(now.outcomes),
        tuple(now.lifecycle),
        now.completion,
    )
    if now.timing is not None:
        _kept(_TIMING_TEXTS, layout.timing, now.timing)


class _Elsewhere(Exception):
    """A text the general reader must read: a layout not remembered, or a payload not
    written as `write` writes it."""


def _known(layout: _Layout | None, charts: Charts) -> HandoffCoordinatorCore:
    """The coordinator a snapshot of a remembered layout describes; `_Elsewhere` for any
    other text, or a payload, the general reader must read (and refuse)."""
    if layout is None:
        raise _Elsewhere
    known = _KNOWN.get(layout.key)
    if known is None:
        raise _Elsewhere
    rules = known.rules
    if not isinstance(rules, HandoffOrder) and _found_rules(layout.chart, charts) is not rules:
        raise _Elsewhere
    handoff_id = _id_of(layout.handoff_id)
    fallback = _fallback(layout.fallback)
    timing = None if layout.timing == "null" else _timing(layout.timing)
    tokens = None if layout.tokens == "null" else _tokens(layout.tokens)
    delay = 0.0
    if layout.delays:
        try:
            delay = planned_delay(None, timing, tokens, fallback)
        except HandoffError:
            raise _Elsewhere from None
        written = format_f64(delay)
        if any(text != written for text in layout.delays):
            raise _Elsewhere
    now = Progress()
    now.state, now.next_id = known.state, known.next_id
    now.issued = {key: _action(variant, handoff_id, delay) for key, variant in known.issued}
    now.outcomes, now.timing, now.tokens = dict(known.outcomes), timing, tokens
    now.lifecycle, now.completion = list(known.lifecycle), known.completion
    return probe.restored(_blank(rules), handoff_id, fallback, now)


def _found_rules(chart: str, charts: Charts) -> object:
    """The chart a `module:Class` names among those given now (a module may have been
    reloaded since, or the chart not be given this time)."""
    try:
        return _rules(json.loads(chart), charts)
    except WireRefusal:
        raise _Elsewhere from None


def _kept(memo: dict[str, Any], text: str, value: object) -> None:
    if len(memo) >= _KNOWN_KEPT:
        memo.clear()
    memo[text] = value


def _fallback(text: str) -> float:
    fallback = _FALLBACKS.get(text)
    if fallback is None:
        fallback = float(text)
        if format_f64(fallback) != text or not is_finite_non_negative(fallback):
            raise _Elsewhere
        _kept(_FALLBACKS, text, fallback)
    return fallback


def _timing(text: str) -> HandoffTransferTiming:
    timing = _TIMING_TEXTS.get(text)
    if timing is None:
        try:
            timing = optional_timing(parse(text, plain_numbers=True))
        except WireRefusal:
            timing = None
        if timing is None:
            raise _Elsewhere
        _kept(_TIMING_TEXTS, text, timing)
    return timing


def _tokens(text: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 20):
        raise _Elsewhere
    tokens = int(text)
    if tokens >= USIZE_LIMIT or str(tokens) != text:
        raise _Elsewhere
    return tokens

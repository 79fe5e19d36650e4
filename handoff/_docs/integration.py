"""The verdict tables of docs/integrating.md: what the system review finds for each worker
contract, delivery order, injected fault, number of handoffs, acknowledgement policy and
runtime profile (the row's contract over the profile's own workers).

Every cell is a review by the system review's own engine (`handoff._review.explore`), so the
page an integrator reads is what `handoff review --workers …` finds, regenerated with the
other generated sections (`handoff._docs.generated`).  What the table costs is bounded:
the staleness test recomputes it, and the review of two handoffs sharing their workers
multiplies the configurations, so the worlds below are the cheapest that still show each
finding (docs/performance.md measures them):

* SourceFirst only: the two shipped charts are mirror images with the same configuration
  counts and verdicts (`benchmarks/bench_system.py` prints both);
* each run suffers at most one terminal fact or failed work (`System.faults`, `--failures 1`),
  besides the injected fault: with one handoff every verdict is the one of the review's
  default of two (measured for every row), while two handoffs with two such faults take over 50,000
  configurations for `tombstone:1` instead of about a thousand;
* forgetful workers, in any order, are not reviewed under `duplicate` (`_LEFT_OUT`); two
  handoffs are reviewed without injected faults (with them, one world alone takes up to
  half a minute), and `tombstone` with FIFO delivery is left to any order's verdict
  (`_SHARED`).  With one handoff `tombstone:1` remembers the one request there is, so it
  is `tombstone`; its rows are those of two handoffs.

A second table (`runtime_table`) reviews the runtime's duties the same way, one handoff a row:
draining transfers before the destination's cancel, with and without it; then, each with it
(the cleanup's race apart, each row shows its own duty), a failed cancel with and without
the retry, a lost message re-sent by each policy, restarts by their choices (every remedy
the docs recommend among them), a deadline per handoff.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import attrs

from handoff._review.explore import Review, review_order
from handoff._system.config import Acknowledge, Resend, Restart, System
from handoff._system.faults import NETWORK, Fault
from handoff._system.profiles import LIVE, OFFLINE, RuntimeProfile
from handoff._system.properties import AnyKey, Key
from handoff._system.workers import find_contract
from handoff._values.values import HandoffOrder

__all__ = [
    "OFFLINE_DRAINED",
    "ORDER",
    "TERMINAL_FAULTS",
    "RuntimeWorld",
    "World",
    "runtime_table",
    "runtime_worlds",
    "verdict_tables",
    "verdict_words",
    "worlds",
]

ORDER = HandoffOrder.SOURCE_FIRST
"""The chart every row is reviewed with (the other is its mirror image)."""
TERMINAL_FAULTS = 1
"""The terminal facts and failed work a run suffers at most, in every row."""

_LEAKS = (
    Key.SLOTS_AT_COMPLETION,
    Key.NO_SLOT_AFTER_FREED,
    Key.ONLY_ISSUED_WORK,
    Key.ONE_SLOT_PER_REQUEST,
)
"""Properties whose failure is a KV slot nobody will free."""
_HANGS = (Key.DELIVERIES_COMPLETE, Key.TERMINAL_CANCELS)
"""Properties whose failure is a handoff that never completes (or never cancels)."""
_MISPLACES = (Key.SLOT_OWNED_ONCE, Key.KV_INTO_OWN_SLOT)
"""Properties whose failure is KV written into a slot its request does not hold."""

World = tuple[str, bool, int, Fault | None]
"""A row: the contract as `--workers` spells it, FIFO delivery, the handoffs, the fault."""


def worlds() -> Iterator[World]:
    """The rows, in table order: one handoff with each fault, then two sharing the workers."""
    for contract in ("forgetful", "tombstone"):
        for fifo in (False, True):
            for fault in (None, *NETWORK):
                if (contract, fifo, fault) != _LEFT_OUT:
                    yield contract, fifo, 1, fault
    for contract, fifo in _SHARED:
        yield contract, fifo, 2, None


_LEFT_OUT = ("forgetful", False, Fault.DUPLICATION)
"""The most costly row of one handoff (5,500 configurations, a third of the table's time)
and the least telling: forgetful workers leak in any order without faults already, and a
duplicate only adds runs."""

_SHARED = (
    ("forgetful", False),
    ("forgetful", True),
    ("tombstone", False),
    ("tombstone:1", False),
    ("tombstone:1", True),
)
"""Two handoffs sharing the workers.  Not `tombstone` with FIFO delivery: without injected
faults a FIFO run is one of the runs of any order, so any order's `safe` answers for it."""


Column = Acknowledge | RuntimeProfile
"""A column: the default runtime acknowledging by this policy, or a runtime profile."""

OFFLINE_DRAINED = attrs.evolve(OFFLINE, drains_transfers=True)
"""The default runtime with the remedy for the cleanup's transfer race (`--drain-transfers`):
the last column, so that the table shows what each contract gives once W9's race is gone."""

_POLICIES = (Acknowledge.ON_REPLY, Acknowledge.ON_SEND)

_COLUMNS: tuple[Column, ...] = (
    *_POLICIES,
    OFFLINE,
    LIVE,
    OFFLINE_DRAINED,
)


def review_world(world: World, column: Column) -> Review:
    """The system review of one row in one column: an acknowledgement policy, or a runtime
    profile whose workers follow the row's contract."""
    contract, fifo, handoffs, fault = world
    mine: dict[str, object] = {"acknowledge": column}
    settings = column.settings() if isinstance(column, RuntimeProfile) else mine
    system = System(
        find_contract(contract),
        fifo=fifo,
        faults=TERMINAL_FAULTS,
        injected=frozenset(() if fault is None else (fault,)),
        concurrency=handoffs,
        **settings,  # type: ignore[arg-type]
    )
    return review_order(ORDER, system=system)


def verdict_words(review: Review) -> str:
    """`safe`, or what fails: `leaks (W1, W2)`, `hangs (W4, W5)`, `misplaces KV (W9)`, or
    other keys; `cut short` when the review's guard left some property not judged."""
    failing = [verdict.prop.key for verdict in review.verdicts if verdict.fails]
    if not failing:
        return "cut short" if review.cut_short else "safe"
    parts = []
    for word, keys in (("leaks", _LEAKS), ("hangs", _HANGS), ("misplaces KV", _MISPLACES)):
        found = [key for key in failing if key in keys]
        if found:
            parts.append(f"{word} ({_keys(found)})")
    rest = [key for key in failing if key not in (*_LEAKS, *_HANGS, *_MISPLACES)]
    if rest:
        parts.append(f"fails ({_keys(rest)})")
    if review.cut_short:
        parts.append("cut short")
    return "; ".join(parts)


def _keys(keys: list[AnyKey]) -> str:
    return ", ".join(key.value for key in keys)


def verdict_tables() -> tuple[str, str]:
    """The two Markdown tables, one row per world in both: a verdict column per
    acknowledgement policy, then one per runtime profile.  Two tables of the same rows, not
    one, so that each fits the width of a docs page; each world is reviewed once per column
    all the same."""
    rows = [(world, _cells(world)) for world in worlds()]
    split = len(_POLICIES)
    by_policy = _table(("`on-reply`", "`on-send`"), [(w, c[:split]) for w, c in rows])
    by_runtime = _table(
        ("`offline`", "`live`", "`offline` drained"), [(w, c[split:]) for w, c in rows]
    )
    return by_policy, by_runtime


def _cells(world: World) -> list[str]:
    return [verdict_words(review_world(world, column)) for column in _COLUMNS]


def _table(heads: tuple[str, ...], rows: list[tuple[World, list[str]]]) -> str:
    lines = [
        f"| `--workers` | delivery | handoffs | `--faults` | {' | '.join(heads)} |",
        "|---|---|---:|---|" + "---|" * len(heads),
    ]
    for (contract, fifo, handoffs, fault), cells in rows:
        lines.append(
            f"| {contract} | {'FIFO per worker' if fifo else 'any order'} | {handoffs} "
            f"| {'none' if fault is None else fault.value} | {' | '.join(cells)} |"
        )
    return "\n".join(lines)


# -- the runtime's duties: a runtime that does less (or more) than the contract asks


@attrs.frozen
class RuntimeWorld:
    """A row of the runtime's table: one handoff, a contract, a delivery, the faults, and
    the runtime's settings that differ from the defaults (as options, and as `System`
    fields)."""

    contract: str
    fifo: bool
    faults: tuple[Fault, ...]
    options: str
    """The runtime's settings as the command line spells them."""
    settings: dict[str, Any] = attrs.field(factory=dict, hash=False)
    """The same settings as `System` fields."""


_DRAIN = "`--drain-transfers`"
_DRAINED = {"drains_transfers": True}


def runtime_worlds() -> Iterator[RuntimeWorld]:
    """The rows, in table order: transfers drained or not; then, every row draining them, a
    cancel that fails, with and without the retry; a lost message, re-sent by each policy; a
    restart, by its choices; a deadline per handoff."""
    for contract in ("forgetful", "tombstone"):
        for fifo in (False, True):
            yield RuntimeWorld(contract, fifo, (), "none")
            yield RuntimeWorld(contract, fifo, (), _DRAIN, dict(_DRAINED))
    for world in _duties():
        yield attrs.evolve(
            world,
            options=f"{world.options} {_DRAIN}".removeprefix("none "),
            settings={**world.settings, **_DRAINED},
        )


def _duties() -> Iterator[RuntimeWorld]:
    for contract in ("forgetful", "tombstone"):
        for fifo in (False, True):
            for retry in (True, False):
                options = "none" if retry else "`--no-retry`"
                failing = (Fault.FAILED_CLEANUP,)
                yield RuntimeWorld(contract, fifo, failing, options, {"retry": retry})
    for contract in ("forgetful", "tombstone"):
        for fifo in (False, True):
            for resend in (Resend.CLEANUPS, Resend.EVERYTHING):
                options = f"`--resend {resend.value}`"
                yield RuntimeWorld(contract, fifo, (Fault.LOSS,), options, {"resend": resend})
    for contract, fifo, words, resend in _RESTARTS:
        options = f"`--restart {','.join(words)}`"
        settings: dict[str, Any] = {"restart": Restart.of(words)}
        if resend is not Resend.NONE:
            options += f" `--resend {resend.value}`"
            settings["resend"] = resend
        yield RuntimeWorld(contract, fifo, (Fault.RESTART,), options, settings)
    for contract in ("forgetful", "tombstone"):
        for fifo in (False, True):
            yield RuntimeWorld(contract, fifo, (), "`--deadline`", {"deadline": math.inf})


_RESTARTS = (
    ("tombstone", False, ("keeps-slots",), Resend.NONE),
    ("tombstone", True, ("keeps-slots",), Resend.NONE),
    ("forgetful", True, ("loses-inbox",), Resend.NONE),
    ("tombstone", True, ("loses-inbox",), Resend.NONE),
    ("tombstone", True, ("loses-inbox",), Resend.CLEANUPS),
    ("tombstone", True, ("loses-inbox", "refuses-unvouched"), Resend.CLEANUPS),
    ("tombstone", False, ("durable-tombstones",), Resend.NONE),
    ("tombstone", False, ("durable-tombstones", "refuses-unvouched"), Resend.NONE),
    ("tombstone", False, ("refuses-unvouched",), Resend.NONE),
    ("forgetful", True, ("refuses-unvouched",), Resend.NONE),
)
"""The restarts shown: keeping the slots leaks in either order; FIFO is safe under `crash`
only while the inbox survives (or the lost cleanups are re-sent); both remedies for a lost
tombstone in any order leak nothing.  A restart that frees the destination's slots frees the
request's while its transfer is on its way (W9, which no hold of a cancel prevents) unless
the destination refuses the write its restart left unvouched: each remedy alone, then with
`refuses-unvouched`, which every recommended one needs."""


def review_runtime_world(world: RuntimeWorld, acknowledge: Acknowledge) -> Review:
    """The system review of one row of the runtime's table under one policy."""
    system = System(
        find_contract(world.contract),
        fifo=world.fifo,
        faults=TERMINAL_FAULTS,
        injected=frozenset(world.faults),
        acknowledge=acknowledge,
        **world.settings,
    )
    return review_order(ORDER, system=system)


def runtime_table() -> str:
    """The Markdown table of the runtime's duties, a verdict column per policy."""
    lines = [
        "| `--workers` | delivery | `--faults` | runtime | `--acknowledge on-reply` "
        "| `--acknowledge on-send` |",
        "|---|---|---|---|---|---|",
    ]
    for world in runtime_worlds():
        cells = [verdict_words(review_runtime_world(world, policy)) for policy in _POLICIES]
        faults = ",".join(fault.value for fault in world.faults) or "none"
        delivery = "FIFO per worker" if world.fifo else "any order"
        lines.append(
            f"| {world.contract} | {delivery} | {faults} | {world.options} | {' | '.join(cells)} |"
        )
    return "\n".join(lines)

"""The verdict table of docs/integrating.md: what the system review finds for each worker
contract, delivery order, injected fault, number of handoffs and acknowledgement policy.

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
"""

from __future__ import annotations

from collections.abc import Iterator

from handoff._review.explore import Review, review_order
from handoff._system.config import Acknowledge, System
from handoff._system.faults import NETWORK, Fault
from handoff._system.properties import AnyKey, Key
from handoff._system.workers import find_contract
from handoff._values.values import HandoffOrder

__all__ = ["ORDER", "TERMINAL_FAULTS", "World", "verdict_table", "verdict_words", "worlds"]

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


def review_world(world: World, acknowledge: Acknowledge) -> Review:
    """The system review of one row under one acknowledgement policy."""
    contract, fifo, handoffs, fault = world
    system = System(
        find_contract(contract),
        fifo=fifo,
        faults=TERMINAL_FAULTS,
        injected=frozenset(() if fault is None else (fault,)),
        acknowledge=acknowledge,
        concurrency=handoffs,
    )
    return review_order(ORDER, system=system)


def verdict_words(review: Review) -> str:
    """`safe`, or what fails: `leaks (W1, W2)`, `hangs (W4, W5)`, both, or other keys;
    `cut short` when the review's guard left some property not judged."""
    failing = [verdict.prop.key for verdict in review.verdicts if verdict.fails]
    if not failing:
        return "cut short" if review.cut_short else "safe"
    parts = []
    for word, keys in (("leaks", _LEAKS), ("hangs", _HANGS)):
        found = [key for key in failing if key in keys]
        if found:
            parts.append(f"{word} ({_keys(found)})")
    rest = [key for key in failing if key not in (*_LEAKS, *_HANGS)]
    if rest:
        parts.append(f"fails ({_keys(rest)})")
    if review.cut_short:
        parts.append("cut short")
    return "; ".join(parts)


def _keys(keys: list[AnyKey]) -> str:
    return ", ".join(key.value for key in keys)


def verdict_table() -> str:
    """The Markdown table, one row per world, a verdict column per acknowledgement policy."""
    lines = [
        "| `--workers` | delivery | handoffs | `--faults` | `--acknowledge on-reply` "
        "| `--acknowledge on-send` |",
        "|---|---|---:|---|---|---|",
    ]
    for world in worlds():
        contract, fifo, handoffs, fault = world
        cells = [verdict_words(review_world(world, policy)) for policy in _POLICIES]
        lines.append(
            f"| {contract} | {'FIFO per worker' if fifo else 'any order'} | {handoffs} "
            f"| {'none' if fault is None else fault.value} | {' | '.join(cells)} |"
        )
    return "\n".join(lines)


_POLICIES = (Acknowledge.ON_REPLY, Acknowledge.ON_SEND)

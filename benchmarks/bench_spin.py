"""The whole Spin cross-check, timed: both shipped charts and every chart mutant, or
(`--systems`) every system world the docs' table names, and several handoffs sharing the
workers.

Run: `./dev python benchmarks/bench_spin.py [--systems | --builds] [--workers N] [--optimize=-O1]`.

Each chart is reviewed by the explorer and by Spin (model generated, `pan` compiled and
searched for safety and for each LTL property, every trail replayed through the real
coordinator), one chart per worker process, so compilations run side by side.  With
`--systems`, each world is a shipped chart with its workers instead: for each order, contract
(`forgetful`, `tombstone`), delivery (any order, `--fifo`) and fault injected (none,
`duplicate`, `lose`, `crash`), acknowledged on send (the default), and for each contract also
on the worker's reply; then several handoffs sharing the workers (`SHARED`: `--concurrency 2`
with `tombstone:1`, `tombstone` and `forgetful`, `forgetful --fifo` and `tombstone:1 --fifo`,
and `tombstone --concurrency 3 --failures 1`); each trail is replayed through the explorer's
system world.  Prints one
line per chart or world, then the wall time (and, for systems, Spin's states over the
explorer's configurations); exits 1 when Spin and the review disagree on a mirrored property
or a trail is not confirmed.  `--optimize` sets the C compiler's optimisation level for `pan`
(compile time against search time).

`--builds` runs Spin alone on every chart in this process, side by side: once compiling a
`pan` per chart (the reuse of `handoff._review.spin.run._BUILT` emptied before each chart) and
once sharing one `pan` per verifier source, as the cross-check does; it prints the CPU of
each (this process and its tools) and their ratio, and exits 1 unless both find the same.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from review_mutants import MUTANTS

from handoff import HandoffOrder
from handoff._compile.table import CompiledChart, compiled
from handoff._review.spin import run as spin
from handoff._review.spin.agreement import Agreement, cross_check
from handoff._review.spin.properties import mirrored
from handoff._system.config import Acknowledge, System
from handoff._system.faults import Fault
from handoff._system.properties import WorldKind
from handoff._system.workers import CONTRACTS, FORGETFUL, TOMBSTONE, Tombstone

FAULTS = (None, Fault.DUPLICATION, Fault.LOSS, Fault.RESTART)
SHARED = (
    System(Tombstone(remembers=1), concurrency=2),
    System(TOMBSTONE, concurrency=2),
    System(FORGETFUL, concurrency=2),
    System(FORGETFUL, fifo=True, concurrency=2),
    System(Tombstone(remembers=1), fifo=True, concurrency=2),
    System(TOMBSTONE, concurrency=3, faults=1),
)
"""Several handoffs sharing the two workers (`--concurrency`), on send."""


def charts() -> dict[str, CompiledChart]:
    """The shipped charts and every mutant that changes a chart (not the adapter)."""
    found = {order.value: compiled(order) for order in HandoffOrder}
    found.update({m.name: m.compiled() for m in MUTANTS if m.adapter is None})
    return found


def worlds() -> dict[str, tuple[CompiledChart, System]]:
    """Every world of the table in docs/model-review.md, both orders, and on reply."""
    found: dict[str, tuple[CompiledChart, System]] = {}
    for order in HandoffOrder:
        chart = compiled(order)
        for contract in CONTRACTS.values():
            for fifo in (False, True):
                for fault in FAULTS:
                    injected = frozenset() if fault is None else frozenset({fault})
                    system = System(contract, fifo=fifo, injected=injected)
                    found[f"{order.value}, {system.describe()}"] = (chart, system)
            system = System(contract, acknowledge=Acknowledge.ON_REPLY)
            found[f"{order.value}, {system.describe()}"] = (chart, system)
        for system in SHARED:
            found[f"{order.value}, {system.describe()}"] = (chart, system)
    return found


def _spin_alone(found: dict[str, CompiledChart], *, share: bool) -> tuple[float, list[object]]:
    """CPU seconds Spin takes on every chart of `found` (compiling per chart unless `share`),
    and what it found for each."""
    spin._BUILT.clear()
    began = os.times()
    verdicts: list[object] = []
    for chart in found.values():
        if not share:
            spin._BUILT.clear()
        run = spin.run_spin(chart)
        verdicts.append((run.states, run.broken, run.liveness_states))
    after = os.times()
    return sum(after[k] - began[k] for k in range(4)), verdicts


def builds() -> int:
    """Spin alone on every chart, compiled per chart and shared, side by side."""
    found = charts()
    apart, theirs = _spin_alone(found, share=False)
    shared, ours = _spin_alone(found, share=True)
    print(
        f"Spin alone on {len(found)} charts: a pan per chart {apart:.1f} s of CPU, one per "
        f"verifier source {shared:.1f} s ({apart / shared:.2f}x; {len(spin._BUILT)} compiled); "
        f"same verdicts: {theirs == ours}"
    )
    return 0 if theirs == ours else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", action="store_true", help="the system worlds, not charts")
    parser.add_argument("--builds", action="store_true", help="a pan per chart against shared")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--optimize", default=spin.OPTIMIZE, help="gcc's -O level for pan")
    args = parser.parse_args()
    spin.OPTIMIZE = args.optimize  # the workers are forked: they inherit it
    if args.builds:
        return builds()
    if args.systems:
        found = worlds()
        names = {name: chart for name, (chart, _) in found.items()}
        systems = {name: system for name, (_, system) in found.items()}
    else:
        names, systems = charts(), None
    began, cpu = time.perf_counter(), os.times()
    results: list[Agreement] = cross_check(names, args.workers, systems)
    wall = time.perf_counter() - began
    after = os.times()
    used = sum(after[k] - cpu[k] for k in range(4))
    for result in results:
        print(result.line())
    agreed = sum(result.agree for result in results)
    world = WorldKind.SYSTEM if args.systems else WorldKind.CHART
    keys = sorted(key.value for key in mirrored(world))
    ratios = [r.states / r.configurations for r in results if r.configurations and args.systems]
    states = (
        f"Spin states / explorer configurations {min(ratios):.2f}-{max(ratios):.2f}; "
        if ratios
        else ""
    )
    kind = "worlds" if args.systems else "charts"
    print(
        f"{agreed}/{len(results)} {kind} agree on {keys}; {states}wall {wall:.1f} s, "
        f"CPU {used:.0f} s with {args.workers} workers, pan built with {args.optimize}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    return 0 if agreed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

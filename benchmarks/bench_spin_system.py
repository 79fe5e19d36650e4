"""Spin and the explorer on every system world of one handoff the docs' table names, timed.

Run: `./dev python benchmarks/bench_spin_system.py [--workers N]`.

For each order, contract (`forgetful`, `tombstone`), delivery (any order, `--fifo`) and fault
injected (none, `duplicate`, `lose`, `crash`), and for each contract acknowledged on send:
the explorer's verdicts beside Spin's (`handoff._review.spin.agreement.cross_check`, one system
per worker process).  Prints one line per world, then, per world, Spin's states over the
explorer's configurations and the wall time; exits 1 when they disagree on a mirrored property.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from handoff import HandoffOrder
from handoff._compile.table import CompiledChart, compiled
from handoff._review.properties import WorldKind
from handoff._review.spin.agreement import cross_check
from handoff._review.spin.properties import mirrored
from handoff._review.system import System
from handoff._runs.faults import Fault
from handoff._runs.workers import CONTRACTS, Acknowledge

FAULTS = (None, Fault.DUPLICATION, Fault.LOSS, Fault.RESTART)


def worlds() -> dict[str, tuple[CompiledChart, System]]:
    """Every world of the table in docs/model-review.md, both orders, and on-send."""
    found: dict[str, tuple[CompiledChart, System]] = {}
    for order in HandoffOrder:
        chart = compiled(order)
        for contract in CONTRACTS.values():
            for fifo in (False, True):
                for fault in FAULTS:
                    injected = frozenset() if fault is None else frozenset({fault})
                    system = System(contract, fifo=fifo, injected=injected)
                    found[f"{order.value}, {system.describe()}"] = (chart, system)
            system = System(contract, acknowledge=Acknowledge.ON_SEND)
            found[f"{order.value}, {system.describe()}"] = (chart, system)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    found = worlds()
    charts = {name: chart for name, (chart, _) in found.items()}
    systems = {name: system for name, (_, system) in found.items()}
    began, cpu = time.perf_counter(), os.times()
    results = cross_check(charts, args.workers, systems)
    wall = time.perf_counter() - began
    after = os.times()
    used = sum(after[k] - cpu[k] for k in range(4))
    for result in results:
        print(result.line())
    ratios = [result.states / result.configurations for result in results if result.configurations]
    agreed = sum(result.agree for result in results)
    keys = sorted(key.value for key in mirrored(WorldKind.SYSTEM))
    print(
        f"{agreed}/{len(results)} worlds agree on {keys}; "
        f"Spin states / explorer configurations {min(ratios):.2f}-{max(ratios):.2f}; "
        f"wall {wall:.1f} s, CPU {used:.0f} s with {args.workers} workers; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    return 0 if agreed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

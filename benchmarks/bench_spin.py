"""The whole Spin cross-check: both shipped charts and every chart mutant, timed.

Run: `./dev python benchmarks/bench_spin.py [--workers N] [--optimize=-O1]`.

Each chart is reviewed by the explorer and by Spin (model generated, `pan` compiled and
searched for safety and for each LTL property, every trail replayed through the real
coordinator), one chart per worker process, so compilations run side by side.  Prints one
line per chart, then the wall time; exits 1 when Spin and the review disagree on a mirrored
property or a trail is not confirmed.  `--optimize` sets the C compiler's optimisation level
for `pan` (compile time against search time).
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
from handoff._review.spin.agreement import cross_check
from handoff._review.spin.properties import MIRRORED


def charts() -> dict[str, CompiledChart]:
    """The shipped charts and every mutant that changes a chart (not the adapter)."""
    found = {order.value: compiled(order) for order in HandoffOrder}
    found.update({m.name: m.compiled() for m in MUTANTS if m.adapter is None})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--optimize", default=spin.OPTIMIZE, help="gcc's -O level for pan")
    args = parser.parse_args()
    spin.OPTIMIZE = args.optimize  # the workers are forked: they inherit it
    names = charts()
    began, cpu = time.perf_counter(), os.times()
    results = cross_check(names, args.workers)
    wall = time.perf_counter() - began
    after = os.times()
    used = sum(after[k] - cpu[k] for k in range(4))
    for result in results:
        print(result.line())
    agreed = sum(result.agree for result in results)
    load = os.getloadavg()[0]
    print(
        f"{agreed}/{len(names)} charts agree on {sorted(MIRRORED)}; wall {wall:.1f} s, "
        f"CPU {used:.0f} s with {args.workers} workers, pan built with {args.optimize}; "
        f"load average {load:.1f}"
    )
    return 0 if agreed == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())

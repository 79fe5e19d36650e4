"""The whole Spin cross-check: both shipped charts and every chart mutant, timed.

Run: `./dev python benchmarks/bench_spin.py [--workers N]`.

Each chart is reviewed by the explorer and by Spin (model generated, `pan` compiled and
searched, every trail replayed through the real coordinator), one chart per worker process,
so compilations run side by side.  Prints one line per chart, then the wall time; exits 1
when Spin and the review disagree on a mirrored property or a trail is not confirmed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from review_mutants import MUTANTS

from handoff import HandoffOrder
from handoff._review.explore import review
from handoff._review.promela_properties import MIRRORED
from handoff._review.spin import SpinUnavailableError
from handoff._review.spin_cli import UNCONFIRMED, spin_review
from handoff._table import CompiledChart, compiled


def charts() -> dict[str, CompiledChart]:
    """The shipped charts and every mutant that changes a chart (not the adapter)."""
    found = {order.value: compiled(order) for order in HandoffOrder}
    found.update({m.name: m.compiled() for m in MUTANTS if m.adapter is None})
    return found


def check(name: str) -> tuple[str, bool, str]:
    """Review `name` both ways; whether they agree, and a line saying so."""
    chart = charts()[name]
    began = time.perf_counter()
    ours = {v.prop.key.value for v in review(chart).failures()}
    try:
        theirs_review, found = spin_review(chart)
    except SpinUnavailableError as error:
        return name, False, f"{'ERROR':8} {name:38} {error}"
    theirs = {v.prop.key.value for v in theirs_review.failures()}
    unconfirmed = [
        v.prop.key.value
        for v in theirs_review.failures()
        if v.counterexample is None or UNCONFIRMED in v.counterexample.finding
    ]
    agree = ours & set(MIRRORED) == theirs and not unconfirmed
    seconds = time.perf_counter() - began
    line = (
        f"{'agree' if agree else 'DISAGREE':8} {name:38} review fails {sorted(ours)}; "
        f"Spin fails {sorted(theirs)} over {found.states:,} states; {seconds:.1f} s"
    )
    return name, agree, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    names = list(charts())
    began = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(check, names))
    wall = time.perf_counter() - began
    for _, _, line in results:
        print(line)
    agreed = sum(agree for _, agree, _ in results)
    print(
        f"{agreed}/{len(names)} charts agree on {sorted(MIRRORED)}; "
        f"wall {wall:.1f} s with {args.workers} workers"
    )
    return 0 if agreed == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())

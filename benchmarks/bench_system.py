"""The system review's cost: configurations, moves and time per contract, order and delivery.

    ./dev python benchmarks/bench_system.py            # every contract, order and delivery
    ./dev python benchmarks/bench_system.py --faults 4  # a larger fault budget

Each system is explored whole, three times; the median time is printed beside the counts,
and the ratio of each exploration to the review of the coordinator alone (the same chart,
measured in the same process) says what modelling the workers costs.
"""

from __future__ import annotations

import argparse
import statistics
import time

from handoff._review.explore import review_order
from handoff._review.system import System
from handoff._runs.workers import CONTRACTS
from handoff._values.values import HandoffOrder

ROUNDS = 3


def _median(run: object) -> tuple[float, object]:
    times, result = [], None
    for _ in range(ROUNDS):
        began = time.perf_counter()
        result = run()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=System(CONTRACTS["tombstone"]).faults)
    args = parser.parse_args()
    print(f"fault budget {args.faults} per run; median of {ROUNDS} explorations")
    print(
        f"{'order':<17}{'workers':<11}{'delivery':<10}{'configs':>9}{'moves':>9}"
        f"{'seconds':>9}{'x review':>10}  verdict"
    )
    for order in HandoffOrder:
        alone, _ = _median(lambda order=order: review_order(order))
        for contract in CONTRACTS.values():
            for fifo in (False, True):
                system = System(contract, fifo=fifo, faults=args.faults)
                seconds, found = _median(
                    lambda order=order, system=system: review_order(order, system=system)
                )
                failing = ", ".join(v.prop.key.value for v in found.failures())  # type: ignore[attr-defined]
                print(
                    f"{order.value:<17}{contract.name:<11}{'fifo' if fifo else 'any':<10}"
                    f"{found.configurations:>9,}{found.transitions:>9,}{seconds:>9.3f}"  # type: ignore[attr-defined]
                    f"{seconds / alone:>10.2f}  {'FAIL ' + failing if failing else 'OK'}"
                )


if __name__ == "__main__":
    main()

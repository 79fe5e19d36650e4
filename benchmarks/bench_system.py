"""The system review's cost: configurations, moves and time per contract, order and delivery.

    ./dev python benchmarks/bench_system.py            # every contract, order and delivery
    ./dev python benchmarks/bench_system.py --faults 4  # a larger fault budget
    ./dev python benchmarks/bench_system.py --shared   # shared workers, with and without symmetry

Each system is explored whole, three times; the median time is printed beside the counts,
and the ratio of each exploration to the review of the coordinator alone (the same chart,
measured in the same process) says what modelling the workers costs.

`--shared` reviews the worlds docs/performance.md tabulates (handoffs sharing their workers,
worker restarts, redelivery under FIFO), SourceFirst, once each with symmetry reduction and
once without (`--no-symmetry`), side by side in this one process: configurations, wall and CPU
seconds, configurations per second of wall and of CPU time, and the ratio of the two wall
times.  Each is explored once (the slowest take minutes); `--rounds N` repeats them and
keeps the median.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from handoff._review.explore import Review, review_order
from handoff._review.system import System
from handoff._runs.faults import Fault
from handoff._runs.workers import CONTRACTS, find_contract
from handoff._values.values import HandoffOrder

ROUNDS = 3

SHARED: tuple[tuple[str, str, dict[str, object]], ...] = (
    ("tombstone:1 --concurrency 2", "tombstone:1", {"concurrency": 2}),
    ("tombstone --concurrency 2", "tombstone", {"concurrency": 2}),
    ("tombstone --concurrency 3", "tombstone", {"concurrency": 3}),
    ("tombstone --faults crash", "tombstone", {"injected": frozenset({Fault.RESTART})}),
    (
        "forgetful --fifo --faults duplicate",
        "forgetful",
        {"fifo": True, "injected": frozenset({Fault.DUPLICATION})},
    ),
)
"""The worlds of `--shared`: how `handoff review --workers` spells each, the contract, the
system's options."""


def _median(run: Callable[[], Review], rounds: int = ROUNDS) -> tuple[float, float, Review]:
    """The median wall and CPU seconds of `rounds` runs of `run`, and the last review."""
    walls, cpus = [], []
    result = None
    for _ in range(rounds):
        began, cpu = time.perf_counter(), time.process_time()
        result = run()
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
    assert result is not None
    return statistics.median(walls), statistics.median(cpus), result


def _verdict(review: Review) -> str:
    failing = ", ".join(verdict.prop.key.value for verdict in review.failures())
    return f"FAIL {failing}" if failing else "OK"


def contracts(faults: int) -> None:
    print(f"fault budget {faults} per run; median of {ROUNDS} explorations")
    print(
        f"{'order':<17}{'workers':<11}{'delivery':<10}{'configs':>9}{'moves':>9}"
        f"{'seconds':>9}{'x review':>10}  verdict"
    )
    for order in HandoffOrder:
        alone, _, _ = _median(lambda order=order: review_order(order))
        for contract in CONTRACTS.values():
            for fifo in (False, True):
                system = System(contract, fifo=fifo, faults=faults)
                seconds, _, found = _median(
                    lambda order=order, system=system: review_order(order, system=system)
                )
                print(
                    f"{order.value:<17}{contract.name:<11}{'fifo' if fifo else 'any':<10}"
                    f"{found.configurations:>9,}{found.transitions:>9,}{seconds:>9.3f}"
                    f"{seconds / alone:>10.2f}  {_verdict(found)}"
                )


def shared(rounds: int) -> None:
    order = HandoffOrder.SOURCE_FIRST
    print(f"{order.value}; median of {rounds} exploration(s); wall and CPU seconds")
    print(
        f"{'world':<37}{'symmetry':<10}{'configs':>10}{'wall':>9}{'cpu':>9}"
        f"{'configs/s':>11}{'per cpu s':>11}{'x reduced':>11}  verdict"
    )
    for words, contract, options in SHARED:
        reduced_wall = None
        for symmetry in (True, False):
            system = System(find_contract(contract), symmetry=symmetry, **options)  # type: ignore[arg-type]
            wall, cpu, found = _median(
                lambda system=system: review_order(order, system=system), rounds
            )
            reduced_wall = wall if reduced_wall is None else reduced_wall
            print(
                f"{words:<37}{'yes' if symmetry else 'no':<10}{found.configurations:>10,}"
                f"{wall:>9.2f}{cpu:>9.2f}{found.configurations / wall:>11,.0f}"
                f"{found.configurations / cpu:>11,.0f}"
                f"{wall / reduced_wall:>11.2f}  {_verdict(found)}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=System(CONTRACTS["tombstone"]).faults)
    parser.add_argument("--shared", action="store_true", help="the worlds of docs/performance.md")
    parser.add_argument("--rounds", type=int, default=1, help="with --shared: runs per world")
    args = parser.parse_args()
    if args.shared:
        shared(args.rounds)
    else:
        contracts(args.faults)


if __name__ == "__main__":
    main()

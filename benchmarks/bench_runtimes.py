"""What the runtime profiles cost the system review: each shipped runtime's worlds, as
`handoff review --runtime NAME` makes them (both orders, as the command reviews them).

    ./dev python benchmarks/bench_runtimes.py                  # one and two handoffs
    ./dev python benchmarks/bench_runtimes.py --concurrency 3  # and three

For each world: the configurations of each order, wall and CPU seconds of the whole command's
review (the median of `--rounds`), and the ratio of the wall time to the 60 seconds a review
of the live runtime with two handoffs must stay under on two cores.  The default runtime's
review of `--workers tombstone --concurrency 2` is printed first, as the scale to read the
others against.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from handoff._review.cli import review_orders
from handoff._system.config import System
from handoff._system.profiles import DEFAULT_RUNTIME, RUNTIMES, RuntimeProfile
from handoff._system.workers import TOMBSTONE
from handoff._values.values import HandoffOrder

TARGET_SECONDS = 60.0
"""`handoff review --runtime live --concurrency 2` finishes within this on two cores."""


def _system(profile: RuntimeProfile, concurrency: int, *, tombstone: bool = False) -> System:
    """The world `--runtime NAME --concurrency N` reviews (`tombstone`: with `--workers
    tombstone`, whatever the runtime's own workers)."""
    contract = TOMBSTONE if tombstone else profile.contract() or TOMBSTONE
    return System(contract, concurrency=concurrency, **profile.settings())  # type: ignore[arg-type]


def _cpu() -> float:
    """CPU seconds of this process and of the processes it waited for (the command reviews
    the second order in a forked process)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _measure(system: System, rounds: int) -> tuple[list[int], float, float]:
    walls, cpus, counts = [], [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), _cpu()
        reviews = review_orders(tuple(HandoffOrder), system=system)
        walls.append(time.perf_counter() - wall)
        cpus.append(_cpu() - cpu)
        counts = [review.configurations for review in reviews]
    return counts, statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=2, help="the most handoffs (2)")
    parser.add_argument("--rounds", type=int, default=1, help="repeats, median kept (1)")
    args = parser.parse_args()
    worlds = [("default", DEFAULT_RUNTIME, 2, True)]
    worlds += [
        (name, profile, handoffs, False)
        for handoffs in range(1, args.concurrency + 1)
        for name, profile in RUNTIMES.items()
    ]
    print(f"{'runtime':9} {'handoffs':>8} {'configurations':>24} {'wall s':>8} {'CPU s':>8} "
          f"{'of 60 s':>8}")  # fmt: skip
    for name, profile, handoffs, tombstone in worlds:
        system = _system(profile, handoffs, tombstone=tombstone)
        counts, wall, cpu = _measure(system, args.rounds)
        shown = " / ".join(f"{count:,}" for count in counts)
        print(
            f"{name:9} {handoffs:>8} {shown:>24} {wall:>8.2f} {cpu:>8.2f} "
            f"{wall / TARGET_SECONDS:>8.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

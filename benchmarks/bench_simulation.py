"""Simulation throughput, and peak memory flat in the number of handoffs (bounded by C).

Run: `./dev python benchmarks/bench_simulation.py [--large 1000000] [--small 100000]
[--workers tombstone]`.  With `--workers`, every live handoff shares the one source and
the one destination worker, whose memory is bounded by the handoffs in flight too.

Each size runs `handoff simulate` in a fresh interpreter that reports its own peak RSS, so
the two peaks are comparable; their ratio should stay near 1 however large N grows.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

CHILD = """
import resource, sys, time
from handoff._runs.simulation import SimulationConfig, simulate
from handoff._system.config import System
from handoff._system.workers import find_contract
system = None if {w!r} is None else System(find_contract({w!r}))
config = SimulationConfig(handoffs={n}, concurrency={c}, fault_rate={p}, seed=7, system=system)
started = time.perf_counter()
report = simulate(config)
wall = time.perf_counter() - started
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(report.handoffs, report.calls, report.leaks, report.incomplete, wall, peak_kib)
"""


def run(
    handoffs: int, concurrency: int, fault_rate: float, workers: str | None = None
) -> tuple[int, int, int, int, float, int]:
    code = CHILD.format(n=handoffs, c=concurrency, p=fault_rate, w=workers)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    done, calls, leaks, incomplete, wall, peak = out.stdout.split()
    return int(done), int(calls), int(leaks), int(incomplete), float(wall), int(peak)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--concurrency", type=int, default=1000)
    parser.add_argument("--fault-rate", type=float, default=0.05)
    parser.add_argument("--workers", metavar="CONTRACT", help="shared workers of CONTRACT")
    args = parser.parse_args(argv)
    peaks = {}
    workers = "" if args.workers is None else f", {args.workers} workers"
    print(f"concurrency {args.concurrency}, fault rate {args.fault_rate}{workers}")
    for n in (args.small, args.large):
        done, calls, leaks, incomplete, wall, peak = run(
            n, args.concurrency, args.fault_rate, args.workers
        )
        peaks[n] = peak
        print(
            f"N={n:>9,}: {done:,} handoffs, leaks {leaks}, incomplete {incomplete}, "
            f"{wall:.1f} s, {done / wall:,.0f} handoffs/s, {calls / wall:,.0f} calls/s, "
            f"peak RSS {peak / 1024:.1f} MiB"
        )
    ratio = peaks[args.large] / peaks[args.small]
    print(f"peak RSS N={args.large:,} / N={args.small:,}: {ratio:.2f} (flat in N when near 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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

`--speed` reviews the same worlds, reduced, in both orders, and then the command's own case,
`handoff review --workers tombstone:1 --concurrency 2`, both orders one after the other and
as the command makes them (`review_orders`: the second order in a forked process).  With
`--against REV` each world is reviewed by the library as it was at git revision REV too (its
package exported to a temporary directory, run by this script in a second interpreter, one
world after the other, interleaved with this one's), and the two are printed side by side:
configurations (the same, or the explorer changed what it explores), CPU seconds and
configurations per CPU second, and the ratio of the CPU times (CPU time leaves out the waits
of a machine shared with other jobs; wall time is printed too).

    ./dev python benchmarks/bench_system.py --speed --against c8c2179
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from handoff._review.explore import Review, review_order

try:
    from handoff._review.cli import review_orders
except ImportError:  # the library before it reviewed orders in a process each (`--serve`)
    review_orders = None  # type: ignore[assignment]
from handoff._system.config import System
from handoff._system.faults import Fault
from handoff._system.workers import CONTRACTS, find_contract
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


SPEED = (
    ("tombstone:1 --concurrency 2", "tombstone:1", {"concurrency": 2}),
    ("tombstone --concurrency 2", "tombstone", {"concurrency": 2}),
    ("tombstone --concurrency 3", "tombstone", {"concurrency": 3}),
    ("forgetful --concurrency 2", "forgetful", {"concurrency": 2}),
    *SHARED[3:],
)
"""The worlds of `--speed`: the shared-worker table's, and `forgetful` shared by two."""


def _measured(words: str, order: HandoffOrder) -> dict[str, object]:
    """One reduced review of the world `words` names (in `SPEED`) in `order`, measured."""
    contract, options = next((c, o) for w, c, o in SPEED if w == words)
    system = System(find_contract(contract), **options)  # type: ignore[arg-type]
    wall, cpu, found = _median(lambda: review_order(order, system=system), 1)
    return {
        "configurations": found.configurations,
        "wall": wall,
        "cpu": cpu,
        "verdict": _verdict(found),
    }


def _before(revision: str) -> subprocess.Popen[str]:
    """This script in a second interpreter, on the package as it was at `revision`: it
    measures the world named on each line it reads and answers with one JSON line."""
    root = Path(__file__).resolve().parent.parent
    tree = tempfile.mkdtemp(prefix="bench-system-")
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", revision, "handoff"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
    environment = {**os.environ, "PYTHONPATH": tree}
    return subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
    )


def serve() -> None:
    """`--serve`: measure each world read from stdin (`WORDS\tORDER`), answer in JSON."""
    for line in sys.stdin:
        words, order = line.rstrip("\n").split("\t")
        print(json.dumps(_measured(words, HandoffOrder(order))), flush=True)


def speed(against: str | None) -> None:
    old = None if against is None else _before(against)
    print("each world reduced, explored once; CPU seconds (wall in brackets)")
    head = f"{'world':<37}{'order':<18}{'configs':>9}{'cpu':>8}{'wall':>9}{'configs/s':>11}"
    if old is not None:
        head += f"  | {against:<10}{'configs':>9}{'cpu':>8}{'wall':>9}{'configs/s':>11}{'x':>7}"
    print(head + "  verdict")
    for words, _contract, _options in SPEED:
        for order in HandoffOrder:
            now = _measured(words, order)
            row = (
                f"{words:<37}{order.value:<18}{now['configurations']:>9,}{now['cpu']:>8.2f}"
                f"{'(' + format(now['wall'], '.2f') + ')':>9}"
                f"{now['configurations'] / now['cpu']:>11,.0f}"  # type: ignore[operator]
            )
            if old is not None:
                assert old.stdin is not None
                assert old.stdout is not None
                old.stdin.write(f"{words}\t{order.value}\n")
                old.stdin.flush()
                was = json.loads(old.stdout.readline())
                same = "" if was["verdict"] == now["verdict"] else f" (was {was['verdict']})"
                row += (
                    f"  | {'':<10}{was['configurations']:>9,}{was['cpu']:>8.2f}"
                    f"{'(' + format(was['wall'], '.2f') + ')':>9}"
                    f"{was['configurations'] / was['cpu']:>11,.0f}"
                    f"{was['cpu'] / now['cpu']:>7.2f}{same}"
                )
            print(f"{row}  {now['verdict']}", flush=True)
    if old is not None:
        assert old.stdin is not None
        old.stdin.close()
        old.wait()
    system = System(find_contract("tombstone:1"), concurrency=2)
    orders = list(HandoffOrder)

    def one_after_the_other() -> Review:
        return [review_order(order, system=system) for order in orders][-1]

    one, one_cpu, _ = _median(one_after_the_other, 1)
    both, both_cpu, _ = _median(lambda: review_orders(orders, system=system)[-1], 1)
    print(
        f"handoff review --workers tombstone:1 --concurrency 2 (both orders): one after the "
        f"other {one:.2f} s wall, as the command makes them {both:.2f} s wall "
        f"({one / both:.2f}x; this process's CPU {one_cpu:.2f} s and {both_cpu:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=System(CONTRACTS["tombstone"]).faults)
    parser.add_argument("--shared", action="store_true", help="the worlds of docs/performance.md")
    parser.add_argument("--rounds", type=int, default=1, help="with --shared: runs per world")
    parser.add_argument("--speed", action="store_true", help="the shared worlds, both orders")
    parser.add_argument("--against", metavar="REV", help="with --speed: the library at REV too")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
    elif args.speed:
        speed(args.against)
    elif args.shared:
        shared(args.rounds)
    else:
        contracts(args.faults)


if __name__ == "__main__":
    main()

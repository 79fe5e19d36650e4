"""`handoff conform` against the reference driver: suite size, run time and calls per second.

Run: `./dev python benchmarks/bench_conform.py [--walks 100]`.

For each order: the suite's size, the seconds to build it, and the calls per second of the
check (protocol lines through two pipes, a second process answering); beside it, in this
process, the same calls made straight on coordinators, so the ratio says what the protocol
costs over the coordinator itself.  Wall seconds, and CPU seconds of this process and its
children, since a loaded machine stretches wall time alone.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from handoff._review.conform.check import Checker
from handoff._review.conform.child import Implementation
from handoff._review.conform.protocol import Answer, CallRequest, read
from handoff._review.conform.suite import Model, Suite, build_suite, handoff_id
from handoff._system.call import Call
from handoff._values.values import HandoffOrder

DRIVER = [sys.executable, "-m", "handoff.conform_driver"]


def cpu(who: int = resource.RUSAGE_SELF) -> float:
    """CPU seconds of this process (or of its children that have ended)."""
    used = resource.getrusage(who)
    return used.ru_utime + used.ru_stime


def in_process(suite: Suite) -> tuple[int, float]:
    """The suite's calls made straight on fresh coordinators: (calls, seconds)."""
    calls = [
        (model, [_call(line) for line in run.requests[1:]]) for model, run in suite.all_runs(0)
    ]
    started = time.perf_counter()
    made = 0
    for serial, (model, run) in enumerate(calls):
        coordinator = model.coordinator(handoff_id(serial))
        for call in run:
            Answer.of(call, coordinator)
            made += 1
    return made, time.perf_counter() - started


def _call(line: str) -> Call:
    request = read(line)
    assert isinstance(request, CallRequest)
    return request.call


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walks", type=int, default=100)
    args = parser.parse_args(argv)
    total_calls, total_wall = 0, 0.0
    with Implementation(DRIVER, timeout=60.0) as implementation:
        checker = Checker(implementation)
        checker.hello()
        for order in HandoffOrder:
            began, began_cpu = time.perf_counter(), cpu()
            suite = build_suite(Model(order))
            built = time.perf_counter() - began
            before, waited = checker.calls, checker.waited
            assert checker.suite(suite) is None
            _, made, found = checker.walks(suite.model, 0, args.walks)
            assert found is None
            answering = checker.waited - waited
            wall, spent = time.perf_counter() - began, cpu() - began_cpu
            calls = checker.calls - before
            checked = calls / (wall - built)
            direct, seconds = in_process(suite)
            total_calls, total_wall = total_calls + calls, total_wall + wall
            straight = direct / seconds
            print(
                f"{order.value}: {suite.configurations} configurations, {len(suite.cases):,} "
                f"cases + {len(suite.probes)} payload classes, {suite.calls:,} suite calls "
                f"({sum(len(tail) for _, _, tail in suite.cases):,} of them past a refused or "
                f"dropped call) + {made:,} walk calls; "
                f"built in {built:.2f} s; {wall:.2f} s wall in all ({spent:.2f} s CPU here); "
                f"{checked:,.0f} calls/s checked, the driver answering {calls / answering:,.0f} "
                f"calls/s over the {answering:.2f} s waited for it; {straight:,.0f} calls/s in "
                f"process ({straight / checked:.1f}x)"
            )
    print(
        f"both orders: {total_calls:,} calls in {total_wall:.2f} s wall, "
        f"{total_calls / total_wall:,.0f} calls/s overall; CPU {cpu():.2f} s here, "
        f"{cpu(resource.RUSAGE_CHILDREN):.2f} s in the driver"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

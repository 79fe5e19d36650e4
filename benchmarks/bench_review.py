"""Review time and chart definition cost, side by side in one process.

Run: `./dev python benchmarks/bench_review.py [--rounds N] [--chain N]`.

Three charts are model-reviewed in interleaved rounds: the shipped SOURCE_FIRST chart, a
user's chart (derived from it, one rule changed, written with the public API only), and a
chart with `--chain` extra states (80 by default) chained between `transferring` and
`activating`, each taken by one more `TransferCompleted`.  For each the median review time is
printed with the share of it the Table check (compiled table against python-statemachine)
took.  Then the cost of defining one derived chart class: the median over rounds of defining
70 variants, per chart.  Times are CPU seconds of this process, so that other jobs on the
machine do not inflate them.  Targets (2 cores): a shipped-size chart < 2 s, the chain < 15 s,
a chart definition < 5 ms.

`--after-another` measures instead what reviews one after another in one process cost (as
`handoff review` of several charts, a test session or a notebook makes them): the three charts
reviewed in turn, with no collection in between, side by side with the same reviews made as
they were before refusals dropped their tracebacks (each refusal the review keeps then kept the
frames of its call alive in a cycle, for the cyclic collector to find).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import time
import types
from collections.abc import Callable
from typing import Any

from handoff import HandoffChart, SourceFirstChart
from handoff._compile.lookup import NamedChart, spelling
from handoff._review import explore, world
from handoff._review.environment import environment
from handoff._review.equivalence import compare

S = SourceFirstChart
_BOTH = ["cancel_source", "cancel_destination"]


class CancelBothEarly(SourceFirstChart):
    """A user's chart: a failed prefill also cancels a destination never asked for."""

    action_failed = S.cancelling_both.from_(
        S.prefill_submitting,
        S.prefill_running,
        S.destination_reserving,
        S.destination_accepted,
        S.transfer_starting,
        S.transferring,
        S.activating,
        S.releasing,
        on=_BOTH,
    )


def chained(links: int) -> type[HandoffChart]:
    """SOURCE_FIRST with `links` more states between `transferring` and `activating`."""
    from statemachine import State

    def body(namespace: dict[str, Any]) -> None:
        chain = [State(f"settling {number}") for number in range(links)]
        for number, state in enumerate(chain):
            namespace[f"settling_{number}"] = state
        steps = S.transferring.to(chain[0])
        for state, after in itertools.pairwise(chain):
            steps |= state.to(after)
        namespace["transfer_completed"] = steps | chain[-1].to(
            S.activating, on="activate_destination"
        )
        namespace["action_failed"] = S.cancelling_source.from_(
            S.prefill_submitting, S.prefill_running, on="cancel_source"
        ) | S.cancelling_both.from_(
            S.destination_reserving,
            S.destination_accepted,
            S.transfer_starting,
            S.transferring,
            *chain,
            S.activating,
            S.releasing,
            on=_BOTH,
        )
        namespace["terminated"] = (
            namespace["action_failed"]
            | S.idle.to(S.canceled)
            | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
        )

    chart: type[HandoffChart] = types.new_class(f"Chain{links}", (SourceFirstChart,), {}, body)
    return chart


def variant(number: int) -> type[HandoffChart]:
    """One more derived chart, as a module of variants defines them: one rule redeclared."""

    def body(namespace: dict[str, Any]) -> None:
        namespace["title"] = f"Variant{number}"
        namespace["destination_activated"] = S.activating.to(S.releasing, on="release_source")

    chart: type[HandoffChart] = types.new_class(f"Variant{number}", (SourceFirstChart,), {}, body)
    return chart


def timed(work: Callable[[], object], walls: list[float] | None = None) -> float:
    """CPU seconds `work` takes (the machine's other jobs do not count, as they do in wall
    time on a shared 2-core machine); its wall time is appended to `walls`."""
    gc.collect()
    began, wall = time.process_time(), time.perf_counter()
    work()
    if walls is not None:
        walls.append(time.perf_counter() - wall)
    return time.process_time() - began


def after_another(subjects: dict[str, type[HandoffChart]], rounds: int) -> None:
    """The subjects reviewed one after another, refusals keeping their frames or not."""
    named = [NamedChart(spelling(chart), chart) for chart in subjects.values()]
    dropping = world._without_frames
    spent: dict[str, list[float]] = {"frames kept": [], "frames dropped": []}
    unreachable: dict[str, int] = {}
    for _ in range(rounds):
        for way in spent:
            world._without_frames = dropping if way == "frames dropped" else (lambda error: error)
            try:
                gc.collect()
                began = time.process_time()
                for _repeat in range(3):
                    for chart in named:
                        explore.review_chart(chart)
                spent[way].append(time.process_time() - began)
                gc.collect()
                gc.disable()
                explore.review_chart(named[0])
                unreachable[way] = gc.collect()
                gc.enable()
            finally:
                world._without_frames = dropping
    print(f"the {len(named)} charts reviewed 3 times one after another, median of {rounds}:")
    for way, times in spent.items():
        print(
            f"  {way:15} {statistics.median(times):7.2f}s CPU; one review of "
            f"{next(iter(subjects))} leaves {unreachable[way]:,} objects to the collector"
        )
    kept, dropped = (statistics.median(times) for times in spent.values())
    print(f"frames kept / frames dropped: {kept / dropped:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chain", type=int, default=80)
    parser.add_argument("--after-another", action="store_true", help="see the module's doc")
    args = parser.parse_args()
    subjects = {
        "shipped SourceFirst": SourceFirstChart,
        "user chart CancelBothEarly": CancelBothEarly,
        f"chain of {args.chain} extra states": chained(args.chain),
    }
    if args.after_another:
        after_another(subjects, args.rounds)
        return
    payloads = explore._payloads(environment())
    reviews: dict[str, list[float]] = {name: [] for name in subjects}
    walls: dict[str, list[float]] = {name: [] for name in subjects}
    tables: dict[str, list[float]] = {name: [] for name in subjects}
    definitions: list[float] = []
    for _ in range(args.rounds):
        definitions.append(timed(lambda: [variant(number) for number in range(70)]) / 70)
        for name, chart in subjects.items():
            named = NamedChart(spelling(chart), chart)
            review = timed(lambda named=named: explore.review_chart(named), walls[name])
            reviews[name].append(review)
            # The review's own Table check, alone: the same table, under the same payloads.
            tables[name].append(timed(lambda chart=chart: compare(chart, None, payloads)))
    print(f"{'review of':36} {'CPU':>9} {'wall':>9} {'Table':>7}  configurations")
    for name, chart in subjects.items():
        review = explore.review_chart(chart)
        total, table = statistics.median(reviews[name]), statistics.median(tables[name])
        wall = statistics.median(walls[name])
        print(
            f"{name:36} {total:8.2f}s {wall:8.2f}s {table / total:7.0%}  "
            f"{review.configurations:,} ({len(review.chart.states)} states)"
        )
    per_chart = statistics.median(definitions)
    print(f"defining a derived chart: {per_chart * 1000:.2f} ms (median of {args.rounds} x 70)")
    shipped = statistics.median(reviews["shipped SourceFirst"])
    chain = statistics.median(reviews[f"chain of {args.chain} extra states"])
    print(
        f"chain / shipped review: {chain / shipped:.1f}x; targets met (shipped < 2 s, chain "
        f"< 15 s, definition < 5 ms): {shipped < 2}, {chain < 15}, {per_chart < 0.005}"
    )


if __name__ == "__main__":
    main()

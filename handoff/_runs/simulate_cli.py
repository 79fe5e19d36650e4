"""`handoff simulate`: many handoffs under injected faults, checked for completion and leaks.

The runs it samples are judged by what the simulation checks of a handoff (it completes,
frees its owners, its workers' properties); the chart's own safety properties (S1-S7: KV
released before the activation applied, …) are judged by reviewing the chart alone first,
every run of it, as `handoff review` with workers does, when the command line hands over
that review (the runs wing cannot see the review)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import attrs

from handoff import _cli, _files
from handoff._compile.table import compiled
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._runs.replay import record
from handoff._runs.simulation import (
    FAULTS,
    HandoffRecord,
    MakeCoordinator,
    SimulationConfig,
    SimulationReport,
    simulate,
)
from handoff._runs.trace import TraceError, write_trace
from handoff._system.cli import Options, add_system_options, system_of
from handoff._system.faults import NETWORK, WITH_WORKERS
from handoff._system.properties import PROPERTIES, PropertyName
from handoff._values.values import HandoffId, HandoffOrder

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = ["MAX_CONCURRENCY", "MAX_HANDOFFS", "ReviewAlone", "configure", "run"]

ReviewAlone: TypeAlias = "Callable[[type[HandoffChart] | None, HandoffOrder], tuple[bool, str]]"
"""Reviews a chart alone (None: the order's shipped chart): whether a safety property of its
own fails, and the verdict in words."""

MAX_HANDOFFS = 1_000_000_000
MAX_CONCURRENCY = 1_000_000
# Measured: a handoff in flight holds about 2 kB (more with --record-failures).
_MEMORY_LIMIT = " (each handoff in flight holds about 2 kB: a million already take 2 GB)"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the simulation's options."""
    parser.add_argument(
        "--handoffs",
        # Nothing simulated is nothing judged: zero handoffs would print OK of nothing.
        type=_cli.whole_number(1, MAX_HANDOFFS, " (a billion already take hours)"),
        default=10_000,
        metavar="N",
        help="how many handoffs to simulate, one after another as slots free up",
    )
    parser.add_argument(
        "--concurrency",
        type=_cli.whole_number(1, MAX_CONCURRENCY, _MEMORY_LIMIT),
        default=100,
        metavar="C",
        help="how many handoffs are in flight at once (with --workers, sharing the source "
        "and the destination worker); memory grows with it",
    )
    parser.add_argument(
        "--fault-rate",
        type=_cli.probability,
        default=0.05,
        metavar="P",
        help="the chance, from 0 to 1, of injecting a fault at each opportunity",
    )
    _cli.add_seed(parser, "the random choices")
    _cli.add_chart_options(
        parser,
        order="each",
        order_help="the order of each handoff (all: chosen at random per handoff)",
    )
    add_system_options(
        parser,
        workers_help="carry each action to simulated workers that follow CONTRACT and count the "
        "KV slots they still hold at the end",
        options=Options.NONE,
    )
    parser.add_argument(
        "--record-failures",
        type=_cli.output_directory,
        metavar="DIR",
        help="write each handoff that violates a check as a replayable trace into DIR",
    )


def run(args: argparse.Namespace, alone: ReviewAlone | None = None) -> int:
    """Simulate, print the totals; exit 1 when a handoff did not complete or leaked, or the
    chart alone is unsafe (`alone` reviews it; None: not judged)."""
    if not args.chart:
        return _simulate(args, None, alone)
    worst = 0
    for chart in args.chart:
        on_chart = argparse.Namespace(**{**vars(args), "order": (chart.order,)})
        worst = max(worst, _simulate(on_chart, chart, alone))
    return worst


def _maker(chart: type[HandoffChart]) -> MakeCoordinator:
    def make(handoff_id: HandoffId, order: HandoffOrder, delay: float) -> HandoffCoordinatorCore:
        return HandoffCoordinatorCore(handoff_id, order, delay, chart=chart)

    return make


def _simulate(
    args: argparse.Namespace, chart: type[HandoffChart] | None, alone: ReviewAlone | None
) -> int:
    config = SimulationConfig(
        handoffs=args.handoffs,
        concurrency=args.concurrency,
        fault_rate=args.fault_rate,
        seed=args.seed,
        orders=args.order,
        record_calls=args.record_failures is not None,
        system=system_of(args, Options.NONE),
    )
    name = None if chart is None else compiled(chart).name
    failed = None
    if args.record_failures is not None:
        _files.make_directory(args.record_failures)  # before the run: refused, it costs nothing
        failed = _recorder(args.record_failures, name)
    reviewed = () if alone is None else tuple(alone(chart, order) for order in config.orders)
    progress = _progress_bar(config.handoffs) if sys.stderr.isatty() else None
    started = time.perf_counter()
    try:
        if chart is None:
            report = simulate(config, progress=progress, failed=failed)
        else:
            report = simulate(config, _maker(chart), progress=progress, failed=failed)
    finally:
        if progress is not None:
            print(file=sys.stderr)
    wall = time.perf_counter() - started
    _print(config, report, wall, name, reviewed)
    if report.runaway is not None:
        rules = "the shipped charts" if name is None else f"chart {name}"
        _cli.error(
            "handoff simulate",
            f"{rules}: {report.endless:,} handoffs never ended (each run cut as one that goes "
            f"on for ever); the first: {report.runaway}",
        )
    return 0 if report.ok and not any(fails for fails, _words in reviewed) else 1


def _recorder(directory: Path, chart: str | None) -> Callable[[HandoffRecord], None]:
    """Writes each handoff that violated a check, as it fails, as a trace named by its id.

    On a chart of one's own, each call expects what the order's shipped chart answers (the
    SPEC's answer), as a review's counterexample does: the trace replays as OK on the fix.
    """

    def write(violation: HandoffRecord) -> None:
        path = directory / f"{violation.handoff_id}.jsonl"
        trace = violation.trace if chart is None else record(violation.trace)
        try:
            write_trace(attrs.evolve(trace, chart=chart), path)
        except TraceError as error:
            raise _cli.CommandError(f"cannot record the failures: {error}") from None
        print(f"recorded {path}: {'; '.join(map(str, violation.findings))}")

    return write


def _freed(report: SimulationReport) -> str:
    """What restarts freed of the slots handoffs left held as they ended."""
    if report.worker_slots == report.still_held:
        return ""
    return (
        f"; {report.worker_slots:,} held as their handoffs ended, "
        f"a restart freed {report.worker_slots - report.still_held:,}"
    )


def _progress_bar(total: int) -> Callable[[int], None]:
    def show(finished: int) -> None:
        width = 40
        filled = width * finished // max(total, 1)
        bar = "#" * filled + "." * (width - filled)
        print(f"\r[{bar}] {finished:,}/{total:,}", end="", file=sys.stderr, flush=True)

    return show


def _print(
    config: SimulationConfig,
    report: SimulationReport,
    wall: float,
    chart: str | None = None,
    alone: tuple[tuple[bool, str], ...] = (),
) -> None:
    rules = f"order {_cli.order_words(config.orders)}" if chart is None else f"chart {chart}"
    print(
        f"simulated {report.handoffs:,} handoffs ({rules}), "
        f"{config.concurrency:,} at a time, fault rate {config.fault_rate}, seed {config.seed}"
    )
    system = config.system
    print(f"  world         {'no workers' if system is None else system.describe()}")
    for _fails, words in alone:
        print(f"  chart alone   {words}")
    completions = ", ".join(
        f"{name} {count:,}" for name, count in sorted(report.completions.items())
    )
    print(f"  completions   {completions or 'none'} (reopened after success: {report.reopened:,})")
    injected = () if system is None else tuple(f for f in NETWORK if f in system.injected)
    for fault in FAULTS if system is None else (*WITH_WORKERS, *injected):
        print(f"  fault         {fault.value:28} {report.faults[fault]:>10,}")
    refusals = ", ".join(f"{name} {count:,}" for name, count in sorted(report.refusals.items()))
    print(f"  refused calls {refusals or 'none'}")
    print(f"  incomplete    {report.incomplete:,}")
    if system is not None and system.abandons:
        print(f"  abandoned     {report.abandoned:,} (sessions ended outside the chart)")
    broken = ", ".join(f"{key.value} {count:,}" for key, count in sorted_by_key(report.broken))
    print(f"  broken        {broken or 'none'}")
    print(f"  leaks         {report.leaks:,}")
    print(f"  never ending  {report.endless:,}")
    if system is not None:
        held = f"{report.still_held:,} still held"
        print(f"  worker slots  {held}{_freed(report)}")
        print(f"  lost KV       {report.lost:,} (SUCCESS with no destination slot)")
    print(
        f"  wall {wall:.2f} s, virtual {report.virtual_ms / 1000:.1f} s; "
        f"{report.handoffs / wall:,.0f} handoffs/s, {report.calls / wall:,.0f} calls/s"
    )
    ended = " or ended outside the chart" if report.abandoned else ""
    ok = report.ok and not any(fails for fails, _words in alone)
    print(f"OK: every handoff completed{ended}, no owner leaked" if ok else "FAILED")


def sorted_by_key(counts: Counter[PropertyName]) -> list[tuple[PropertyName, int]]:
    """`counts` in the order the review reports its properties."""
    order = {entry.key.value: place for place, entry in enumerate(PROPERTIES)}
    return sorted(counts.items(), key=lambda item: order[item[0].value])

"""`handoff review --workers CONTRACT`: review each chart in its system, report as the review.

The options are the review's: `--order` or `--chart`, `--format`, `--trace-out`, `--explain`
(whose writer the command line hands in, as for the review), and `--fifo` to deliver each
worker's messages in order.  Exit status 0 when every system property holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from handoff import _cli
from handoff._review.system import SystemCounterexample, SystemReview, review_system
from handoff._review.system_report import (
    system_json,
    system_markdown,
    system_text,
    system_title,
)
from handoff._review.system_state import SystemKey, SystemOptions
from handoff._runs.replay import record
from handoff._runs.trace import Entry, Trace, write_trace
from handoff._table import compiled

__all__ = ["SystemExplainer", "coordinator_trace", "reviews", "run"]

W4, W5 = SystemKey.DELIVERIES_COMPLETE, SystemKey.TERMINAL_CANCELS

SystemExplainer = Callable[[Sequence[SystemReview], Path], list[str]]
"""Writes the explain set of every system failure into a directory; one line per file."""


def reviews(args: argparse.Namespace) -> list[SystemReview]:
    """The system review of each chart the options choose."""
    options = SystemOptions(args.workers, fifo=args.fifo)
    if args.chart:
        return [review_system(named.table, options, origin=named.spec) for named in args.chart]
    return [review_system(compiled(order), options) for order in args.order]


def run(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    explain: SystemExplainer | None = None,
) -> int:
    """Review the chosen charts in their system; 0 when every system property holds."""
    if args.engine == "spin":
        return _spin(args, out)
    found = reviews(args)
    if args.format == "json":
        out.write(json.dumps(system_json(found), indent=2) + "\n")
    elif args.format == "markdown":
        out.write(system_markdown(found))
    else:
        out.write(system_text(found))
    if args.trace_out is not None:
        _write_trace(args.trace_out, found, err)
    if args.explain is not None:
        if explain is None:
            raise _cli.CommandError("--explain needs the diagram writer (run `handoff review`)")
        for line in explain(found, args.explain):
            err.write(line + "\n")
    return 0 if all(review.holds for review in found) else 1


def _spin(args: argparse.Namespace, out: TextIO) -> int:
    """Judge each system with Spin and with the explorer; 0 when both find every property holds."""
    from handoff._review.spin.run import SpinUnavailableError  # imported on demand: external tools
    from handoff._review.spin.system_run import cross_check

    if args.fifo:
        raise _cli.UsageError("--engine spin mirrors messages delivered in any order: drop --fifo")
    if args.trace_out is not None or args.explain is not None:
        raise _cli.UsageError("--engine spin writes no counterexample: drop --trace-out, --explain")
    options = SystemOptions(args.workers)
    charts = (
        [named.table for named in args.chart] if args.chart else [compiled(o) for o in args.order]
    )
    worst = 0
    for chart in charts:
        try:
            agreement = cross_check(chart, options)
        except SpinUnavailableError as error:
            raise _cli.CommandError(str(error)) from None
        spin, review = agreement.spin, agreement.review
        broken = ", ".join(sorted(key.value for key in spin.broken)) or "none"
        verdict = "agrees with the explorer" if agreement.agrees else "DISAGREES with the explorer"
        live = spin.liveness_states
        out.write(
            f"{system_title(review)}: Spin {spin.states:,} states (W4 {live[W4]:,}, "
            f"W5 {live[W5]:,}), explorer {review.configurations:,} "
            f"configurations; broken: {broken}; {verdict} ({spin.seconds:.1f} s)\n"
        )
        worst = max(worst, 0 if agreement.agrees and not spin.broken else 1)
    return worst


def coordinator_trace(review: SystemReview, example: SystemCounterexample) -> Trace:
    """The coordinator's side of a system counterexample: the calls the runtime made, each
    expecting the SPEC's answer, so `handoff replay` replays it call for call."""
    entries = tuple(Entry(step.call) for step in example.steps if step.call is not None)
    chart = None if review.name == review.order.value else review.name
    trace = Trace(
        review.handoff_id, review.order, review.fallback_transfer_delay_ms, entries, chart=chart
    )
    return record(trace)


def _write_trace(path: Path, found: Sequence[SystemReview], err: TextIO) -> None:
    for review in found:
        for verdict in review.failures():
            if verdict.counterexample is not None:
                write_trace(coordinator_trace(review, verdict.counterexample), path)
                err.write(f"wrote the {verdict.prop.key.value} counterexample's calls to {path}\n")
                return
    err.write(f"no counterexample to write to {path}\n")

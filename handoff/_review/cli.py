"""`handoff review`: explore each order's chart, print the verdicts, exit 1 on any failure.

`--workers CONTRACT` picks the world: the chart with its two workers and the messages in
flight (`handoff._review.system`) instead of the chart alone; everything else is the same path.

Formats: `text`, a verdict table per order (then each failure's shortest counterexample);
`json`, everything, for tools; `markdown`, the report committed as `docs/model-review.md`,
deterministic (no timings).  `--trace-out FILE` writes the first counterexample as JSON Lines
that replay it: a header naming the order, the handoff id and the fallback delay, then one
call per line.  `--explain DIR` writes, for each failing property, the counterexample as a
trace, its diagrams and a pytest file (the writer is handed in by the command line: it draws,
and drawing lives above the review).  The report alone goes to stdout; every line about a
file written or removed goes to stderr, so `--format json` output is always pure JSON.  The
committed report is one of the generated files `handoff diagrams` writes and checks; the
formats themselves are `handoff._review.report`'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from handoff import _cli
from handoff._review.explore import Review, review_chart, review_order, review_orders
from handoff._review.report import (
    counterexample_trace,
    exit_status,
    json_report,
    markdown,
    text,
)
from handoff._runs.trace import TraceError, read_trace, write_trace
from handoff._system.faults import add_fault_options
from handoff._system.properties import Property, find_property
from handoff._system.workers import (
    DEFAULT_ACKNOWLEDGE,
    WORKERS_HELP,
    Acknowledge,
    contract_argument,
)
from handoff._values.errors import HandoffError

if TYPE_CHECKING:
    from handoff._system.config import System

Explainer = Callable[[Sequence[Review], Path], list[str]]
"""Writes the explain set of every failure into a directory; one line per file touched."""

__all__ = ["add_system_options", "configure", "run", "system_of"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `handoff review`."""
    _cli.add_chart_options(parser, order="each", order_help="the chart(s) to explore", tables=True)
    parser.add_argument(
        "--format",
        choices=["text", "json", "markdown"],
        default="text",
        help="text: a verdict table per order; json: everything, for tools; "
        "markdown: the report kept in docs/model-review.md",
    )
    parser.add_argument(
        "--safety-only",
        action="store_true",
        help="exit 0 when every safety property holds, even if the chart differs from the "
        "reference (exit 3 otherwise); a safety failure always exits 1",
    )
    parser.add_argument(
        "--engine",
        choices=["explore", "spin"],
        default="explore",
        help="who judges: the review's own explorer, or Spin on the generated Promela model",
    )
    add_system_options(
        parser,
        workers_help="review the system instead: the coordinator with a source and a destination "
        "worker following CONTRACT and the messages in flight between them",
    )
    parser.add_argument(
        "--trace-out",
        metavar="FILE",
        type=_cli.new_file,
        help="write the first failure's shortest counterexample as replayable JSON Lines",
    )
    parser.add_argument(
        "--explain",
        metavar="DIR",
        type=_cli.output_directory,
        help="for each failing property write into DIR its counterexample as a trace, a "
        "sequence diagram, the state diagram with its path drawn over it, and a pytest file",
    )


def add_system_options(
    parser: argparse.ArgumentParser, *, workers_help: str, judged: bool = True
) -> None:
    """Declare the options naming a system (`--workers` and what its world is made of), read
    back by `system_of`: the one place for `handoff review` and `handoff export`. Only a
    world the review judges (`judged`) takes `--property` and `--no-symmetry`."""
    parser.add_argument(
        "--workers",
        type=contract_argument,
        metavar="CONTRACT",
        help=f"{workers_help}; {WORKERS_HELP}",
    )
    add_fault_options(parser)
    parser.add_argument(
        "--failures",
        type=failures_argument,
        metavar="K",
        help="with --workers: how many terminal facts (Failed, TimedOut, Canceled) and failed "
        "works a run suffers at most, besides --faults (default 2; from 0 to 4)",
    )
    parser.add_argument(
        "--concurrency",
        type=concurrency_argument,
        metavar="N",
        help="with --workers: N handoffs live at once, sharing the source and the destination "
        "worker (default 1; from 1 to 4)",
    )
    if not judged:
        return
    parser.add_argument(
        "--property",
        type=property_argument,
        action="append",
        metavar="MODULE:NAME",
        help="with --workers: judge a property of your own too, a function of a "
        "handoff.SystemView returning True where it holds (repeat for several)",
    )
    parser.add_argument(
        "--no-symmetry",
        action="store_true",
        help="with --concurrency: count configurations that differ only by which handoff is "
        "which apart (slower; the verdicts are the same)",
    )


def system_of(args: argparse.Namespace) -> System | None:
    """The system `--workers`, `--fifo`, `--faults`, `--fault-budget` and `--acknowledge`
    name, or None for the chart alone."""
    contract = getattr(args, "workers", None)
    fifo = getattr(args, "fifo", False)
    injected = getattr(args, "faults", None)
    budget = getattr(args, "fault_budget", None)
    acknowledge = getattr(args, "acknowledge", None)
    slots = getattr(args, "slots", None)
    concurrency = getattr(args, "concurrency", None)
    failures = getattr(args, "failures", None)
    properties = getattr(args, "property", None)
    symmetry = not getattr(args, "no_symmetry", False)
    if budget is not None and injected is None:
        raise _cli.UsageError("--fault-budget bounds the faults injected: give --faults too")
    if contract is None:
        if fifo:
            raise _cli.UsageError("--fifo orders the workers' messages: give --workers too")
        about_workers = (
            ("--faults", injected),
            ("--acknowledge", acknowledge),
            ("--slots", slots),
            ("--concurrency", concurrency),
            ("--failures", failures),
            ("--property", properties),
        )
        for option, given in about_workers:
            if given is not None:
                raise _cli.UsageError(f"{option} is about the workers: give --workers too")
        if not symmetry:
            raise _cli.UsageError("--no-symmetry is about shared workers: give --workers too")
        return None
    from handoff._system.config import DEFAULT_FAILURES, System

    return System(
        contract,
        fifo=fifo,
        faults=DEFAULT_FAILURES if failures is None else failures,
        injected=injected or frozenset(),
        budget=1 if budget is None else budget,
        acknowledge=Acknowledge(acknowledge or DEFAULT_ACKNOWLEDGE.value),
        concurrency=1 if concurrency is None else concurrency,
        slots=slots,
        properties=tuple(properties or ()),
        symmetry=symmetry,
    )


def failures_argument(text: str) -> int:
    """An argparse type: how many terminal facts and failed works a run suffers (0 to 4)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 4:
        # Each one more multiplies the configurations: past a few a review never ends.
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 4, got {text!r}")
    return value


def concurrency_argument(text: str) -> int:
    """An argparse type: how many handoffs share the workers in a review (1 to 4)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 4:
        # Each handoff multiplies the configurations: past a few a review never ends.
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 4, got {text!r}")
    return value


def property_argument(text: str) -> Property:
    """An argparse type: `MODULE:NAME`, a function of a `handoff.SystemView`."""
    try:
        return find_property(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def run(
    args: argparse.Namespace,
    out: TextIO | None = None,
    explain: Explainer | None = None,
    err: TextIO | None = None,
) -> int:
    """Review the chosen charts; 0 when every property holds, 1 when a safety property
    fails, 3 when only conformance properties do (0 with `--safety-only`)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    system = system_of(args)
    if args.engine == "spin":
        from handoff._review.spin import (
            cli as spin_cli,  # imported on demand: it runs external tools
        )

        return spin_cli.run(args, out, text, system)
    if args.chart:
        reviews = [review_chart(chart, system=system) for chart in args.chart]
    elif system is None:
        reviews = [review_order(order, system=system) for order in args.order]
    else:  # seconds an order: each order after the first in a process of its own
        reviews = review_orders(args.order, system=system)
    # The report first: a trace that cannot be written must not cost the report.
    if args.format == "json":
        out.write(json.dumps(json_report(reviews), indent=2) + "\n")
    elif args.format == "markdown":
        out.write(markdown(reviews))
    else:
        out.write(text(reviews))
    if args.trace_out is not None:
        _write_trace(args.trace_out, reviews, err)
    if getattr(args, "explain", None) is not None:
        if explain is None:
            raise _cli.CommandError("--explain needs the diagram writer (run `handoff review`)")
        for line in explain(reviews, args.explain):
            err.write(line + "\n")
    return exit_status(reviews, safety_only=args.safety_only)


def _write_trace(path: Path, reviews: Sequence[Review], out: TextIO) -> None:
    for review in reviews:
        for verdict in review.failures():
            if verdict.counterexample is not None:
                try:
                    write_trace(counterexample_trace(review, verdict.counterexample), path)
                except TraceError as error:
                    raise _cli.CommandError(str(error)) from None
                out.write(f"wrote the {verdict.prop.key.value} counterexample to {path}\n")
                return
    if not path.exists():
        out.write(f"no counterexample to write to {path}\n")
    elif _is_trace(path):
        # A trace left from an earlier run would look like this run's counterexample.
        path.unlink()
        out.write(f"no counterexample: removed the stale {path}\n")
    else:
        out.write(f"no counterexample; {path} is not a trace, so it was left as it is\n")


def _is_trace(path: Path) -> bool:
    try:
        read_trace(path, require_end=False)
    except (HandoffError, OSError):
        return False
    return True

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
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import attrs

from handoff import _cli
from handoff._review.explore import Progress, Review, review_chart, review_order
from handoff._review.meter import Meter, meter
from handoff._review.report import (
    CUT_SHORT,
    counterexample_trace,
    exit_status,
    json_report,
    markdown,
    text,
)
from handoff._system.cli import add_system_options, system_of
from handoff._system.properties import GUARDS, Property, WorldKind, find_property
from handoff._values.errors import HandoffError
from handoff._values.values import HandoffOrder

if TYPE_CHECKING:
    from handoff._system.config import System

Explainer = Callable[[Sequence[Review], Path], list[str]]
"""Writes the explain set of every failure into a directory; one line per file touched."""

__all__ = ["configure", "review_orders", "reviewed_system", "run"]


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
        "--property",
        type=property_argument,
        action="append",
        metavar="MODULE:NAME",
        help="with --workers: judge a property of your own too, a function of a "
        "handoff.SystemView returning True where it holds (repeat for several)",
    )
    parser.add_argument(
        "--max-configurations",
        type=_cli.whole_number(1),
        metavar="N",
        help="explore at most N configurations a review (default: "
        f"{GUARDS[WorldKind.CHART]:,} alone, {GUARDS[WorldKind.SYSTEM]:,} with --workers); a "
        f"review that reaches it says CUT SHORT, judges no property over every run, and exits "
        f"{CUT_SHORT} (1 if a safety property fails in what it explored)",
    )
    parser.add_argument(
        "--no-symmetry",
        action="store_true",
        help="with --concurrency: count configurations that differ only by which handoff is "
        "which apart (slower; the verdicts are the same)",
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


def reviewed_system(args: argparse.Namespace) -> System | None:
    """The system the world's options name, with the review's own: `--property` and
    `--no-symmetry`."""
    properties = tuple(getattr(args, "property", None) or ())
    apart = getattr(args, "no_symmetry", False)
    system = system_of(args, properties=properties, symmetry=not apart)
    if system is None and apart:
        raise _cli.UsageError("--no-symmetry is about shared workers: give --workers too")
    return system


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
    system = reviewed_system(args)
    if args.engine == "spin":
        if getattr(args, "max_configurations", None) is not None:
            raise _cli.UsageError(
                "--max-configurations bounds the review's own explorer: drop it with --engine spin"
            )
        from handoff._review.spin import (
            cli as spin_cli,  # imported on demand: it runs external tools
        )

        return spin_cli.run(args, out, text, system)
    guard = getattr(args, "max_configurations", None)
    with meter(err) as shown:
        reviews = _reviews(args, system, guard, shown)
    # The report first: a trace that cannot be written must not cost the report.
    if args.format == "json":
        out.write(json.dumps(json_report(reviews), indent=2) + "\n")
    elif args.format == "markdown":
        out.write(markdown(reviews))
    else:
        out.write(text(reviews))
    if args.trace_out is not None:
        _write_trace(args.trace_out, _with_alone(reviews), err)
    if getattr(args, "explain", None) is not None:
        if explain is None:
            raise _cli.CommandError("--explain needs the diagram writer (run `handoff review`)")
        for line in explain(_with_alone(reviews), args.explain):
            err.write(line + "\n")
    return exit_status(reviews, safety_only=args.safety_only)


def _reviews(
    args: argparse.Namespace, system: System | None, guard: int | None, shown: Meter | None
) -> list[Review]:
    """The reviews the command asks for; `shown` shows how each exploration is going."""

    def progress(name: str) -> Progress | None:
        return None if shown is None else shown.showing(name)

    if args.chart:
        return [
            review_chart(chart, system=system, guard=guard, progress=progress(chart.spec))
            for chart in args.chart
        ]
    if system is None:
        return [
            review_order(order, system=system, guard=guard, progress=progress(order.value))
            for order in args.order
        ]
    # Seconds an order: each order after the first in a process of its own.
    return review_orders(args.order, system=system, guard=guard, progress=progress)


def _with_alone(reviews: Sequence[Review]) -> list[Review]:
    """Every review made: with workers, the chart's alone first (its counterexamples are
    the chart's own, traced and explained as any other)."""
    return [part for review in reviews for part in (review.alone, review) if part is not None]


def _write_trace(path: Path, reviews: Sequence[Review], out: TextIO) -> None:
    from handoff._runs.trace import TraceError, write_trace  # the trace format, when asked for

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
    from handoff._runs.trace import read_trace

    try:
        read_trace(path, require_end=False)
    except (HandoffError, OSError):
        return False
    return True


# -- the orders side by side: a process each, forked by the command ----------------------


def review_orders(
    orders: Sequence[HandoffOrder],
    fallback_transfer_delay_ms: float = 0.0,
    *,
    system: System | None = None,
    guard: int | None = None,
    progress: Callable[[str], Progress | None] | None = None,
) -> list[Review]:
    """Review the real chart of each of `orders`, alone or in `system`: `review_order` for
    each, in that order.

    In a system, where a review takes seconds, each order after the first is reviewed in a
    process of its own, forked, while this one reviews the first, when the machine has a
    core for each: the two orders' explorations share nothing.  A review comes back pickled,
    its `system` this one's again (a contract is known by identity); a review that does not
    come back (a fork refused, a process lost) is made here.  With properties of one's own,
    whose functions may not pickle, where `fork` is not offered, and in a process running
    threads besides its main one (a fork copies one thread only: a lock another holds would
    never be released), each is reviewed here.  A forked review ignores Ctrl-C: this process
    takes it, and a daemon process ends with it; one that runs out of memory says so, and
    this process then stops as though it had (a review made again here would too).
    `progress(order)` shows how the review of an order made here is going (a forked one
    shows nothing: one line on a terminal is shown by one process)."""

    def run_of(order: HandoffOrder, here: bool) -> Callable[[], Review]:
        def run() -> Review:  # its progress begins when it does
            shown = progress(order.value) if here and progress is not None else None
            return review_order(
                order, fallback_transfer_delay_ms, system=system, guard=guard, progress=shown
            )

        return run

    runs = [run_of(order, here=True) for order in orders]
    forkable = "fork" in multiprocessing.get_all_start_methods() and _single_threaded()
    if system is None or system.properties or len(runs) < 2 or not forkable or _cores() < 2:
        return [run() for run in runs]
    context = multiprocessing.get_context("fork")
    children: list[tuple[BaseProcess, Connection] | None] = []
    for order in orders[1:]:
        run = run_of(order, here=False)
        receiving, sending = context.Pipe(duplex=False)
        child = context.Process(target=_send_back, args=(run, sending), daemon=True)
        try:
            child.start()
        except OSError:
            receiving.close()
            children.append(None)
        else:
            children.append((child, receiving))
        finally:
            sending.close()
    found = [runs[0]()]
    for run, forked in zip(runs[1:], children, strict=True):
        review = None
        if forked is not None:
            process, receiving = forked
            try:
                review = pickle.loads(receiving.recv_bytes())
            except Exception:  # lost on the way: made here instead
                review = None
            receiving.close()
            process.join()
            if review == _EXHAUSTED:
                raise MemoryError
        found.append(run() if review is None else attrs.evolve(review, system=system))
    return found


_EXHAUSTED = "out of memory"
"""What a forked review sends back when it ran out of memory."""


def _send_back(run: Callable[[], Review], connection: Connection) -> None:
    """In a forked process: make the review and send it back (None when it raised, or does
    not pickle: then the parent makes it, and raises what it raises)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        review: Review | None = run()
        payload = pickle.dumps(review)
    except MemoryError:
        payload = pickle.dumps(_EXHAUSTED)
    except Exception:
        payload = pickle.dumps(None)
    connection.send_bytes(payload)
    connection.close()


def _single_threaded() -> bool:
    """Whether this process runs its main thread only."""
    return threading.active_count() == 1


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1

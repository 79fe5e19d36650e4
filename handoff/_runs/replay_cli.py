"""`handoff replay`: replay traces against fresh coordinators, or record their expectations.

A trace whose header carries a snapshot replays from the coordinator that snapshot restores,
and is judged by its expectations alone (the properties judge a run from its start).

Every file gets its own verdict, whatever happened to the others.  On stdout: `OK`,
`DIVERGED` (an answer differs from the trace's expectation), `VIOLATED` (a monitor judged a
call as breaking its property), `NOT JUDGED` (a monitor could not judge a property: the
look-ahead of L1 and L2 was stopped by its guard) and `CUT SHORT` when that is all, or
`RECORDED` with `--record`.  A file that cannot be read or written is one `handoff replay:
error: …` line on stderr.  The exit status is the worst verdict: 0 all OK, 5 a property not
judged (the review's status for a review cut short), 1 a divergence or a violation, 2 a file
that could not be read or written (and 4, as for every command, when the replay ran out of
memory).  A trace's calls are read as they are replayed, so memory does not grow with the
trace.

The monitors are given by the caller: the command line passes the review's safety monitors,
so a trace is judged by the properties as well as by its own expectations, and the review's
system world, which replays a run of the chart with its workers (a trace naming `workers`)
move by move and judges the system properties along it.  `--chart` names
the chart to replay on instead of the shipped chart of the trace's order: how a
counterexample is shown to fail on the broken chart, and to pass on its fix.

A trace is data.  The chart, worker contract and properties its header names are found among
the shipped ones and those given on the command line (`--chart`, `--workers`, `--property`);
nothing else it names is imported, and naming it is an error saying which option allows it.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import cast

import attrs

from handoff import _cli
from handoff._compile.lookup import NamedChart, NotGiven, shipped_chart
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._runs.replay import MonitorFactory, Replay, Unjudged, Violation, recorded, replay
from handoff._runs.trace import Entry, MoveLine, Trace, TraceError, stream_trace, write_trace
from handoff._system.workers import find_contract

__all__ = ["configure", "run"]

_OK, _FAILED, _UNREADABLE, _CUT_SHORT = 0, 1, 2, 5
_WORSE = (_OK, _CUT_SHORT, _FAILED, _UNREADABLE)
"""The exit statuses from best to worst: a property not judged is not a property broken."""

SystemReplay = Callable[[Trace, Collection[str]], Sequence[Violation]]
"""Replays a system run, importing only the contracts and properties of one's own named in
its second argument; what it broke, as (line, property, words), first broken first."""

_OPTIONS = {
    "chart": "--chart",
    "worker contract": "--workers",
    "property": "--property",
    "runtime": "--runtime",
}
"""The option that hands over each kind of name a trace may hold."""


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the replay's options."""
    parser.add_argument(
        "traces", nargs="+", type=_cli.existing_file, metavar="FILE", help="JSON Lines traces"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="rewrite each trace with the answers a fresh coordinator gives (expect, "
        "expect_error) and its end line; a trace without an end line is taken as complete",
    )
    _cli.add_chart_options(
        parser,
        order=None,
        tables=True,
        chart_help="the chart(s) of your own that traces naming one were made on, MODULE:CLASS "
        "(MODULE imported from the current directory or the Python path); repeat for several. "
        "A chart a trace names is never imported from the trace",
    )
    parser.add_argument(
        "--workers",
        type=_own_contract,
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="a worker contract of your own that traces with workers may name; repeat for "
        "several (the shipped contracts need none: a trace's names are never imported)",
    )
    parser.add_argument(
        "--property",
        type=_own_name,
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="a property of your own that traces with workers may name; repeat for several",
    )
    parser.add_argument(
        "--runtime",
        type=_own_name,
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="a runtime profile of your own that traces with workers may name; repeat for "
        "several (the shipped runtimes need none)",
    )


def _own_name(text: str) -> str:
    """An argparse type: a name of one's own, `MODULE:NAME`."""
    module_name, colon, name = (part.strip() for part in text.partition(":"))
    if not (colon and module_name and name):
        raise argparse.ArgumentTypeError(f"expected MODULE:NAME, got {text!r}")
    return f"{module_name}:{name}"


def _own_contract(text: str) -> str:
    """An argparse type: a worker contract of one's own, `MODULE:NAME`, found now so that a
    wrong name is a usage error before any trace is read."""
    name = _own_name(text)
    try:
        find_contract(name)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return name


def run(
    args: argparse.Namespace,
    monitors: Sequence[MonitorFactory] = (),
    systems: SystemReplay | None = None,
) -> int:
    """Replay (or record) every trace; the exit status is the worst verdict."""
    worst = _OK
    for path in args.traces:
        try:
            status = _one(args, path, monitors, systems)
        except TraceError as error:
            _cli.error("handoff replay", str(error))
            status = _UNREADABLE
        worst = max(worst, status, key=_WORSE.index)
    return worst


def _one(
    args: argparse.Namespace,
    path: Path,
    monitors: Sequence[MonitorFactory],
    systems: SystemReplay | None,
) -> int:
    """Replay (or record) the trace at `path`; its calls are read as they are replayed, so a
    long trace takes no more memory than a short one, recorded or not (a run with workers is
    held whole)."""
    header, body = stream_trace(path, require_end=not args.record)
    with contextlib.closing(body):
        trace = _on_chart(header, getattr(args, "chart", None) or (), path)
        if trace.workers is not None:
            trace = attrs.evolve(trace, moves=tuple(cast("Iterator[MoveLine]", body)))
            allowed = (*args.workers, *args.property, *args.runtime)
            return _replay_system(trace, path, systems, allowed, record=args.record)
        calls = cast("Iterator[Entry]", body)
        if args.record:
            return _record(trace, calls, path)
        return _replay(trace, calls, path, monitors)


def _on_chart(trace: Trace, charts: Sequence[NamedChart], path: Path) -> Trace:
    """`trace` set to run on the chart its header names (shipped charts name none).

    Failing that, the one given chart of the trace's order replays it, whatever chart made the
    trace: that is how a counterexample recorded on a broken chart is replayed on its fix.
    """
    by_name = {chart.table.name: chart for chart in charts}
    by_name.update({chart.spec: chart for chart in charts})
    same_order = [chart for chart in charts if chart.order is trace.order]
    chart = by_name.get(trace.chart) if trace.chart is not None else None
    if chart is None and len(same_order) == 1:
        chart = same_order[0]
    if chart is None and trace.chart is not None:
        chart = shipped_chart(trace.chart)
    if chart is None:
        if trace.chart is None:
            return trace
        raise TraceError(f"{path}: {_how(trace.chart, by_name)}")
    if chart.order is not trace.order:
        raise TraceError(
            f"{path}: chart {chart.table.name} runs {chart.order.value}, "
            f"the trace says {trace.order.value}"
        )
    return attrs.evolve(trace, rules=chart.rules)


def _how(name: str, given: Collection[str]) -> str:
    """How to hand over the chart a trace names as `name`."""
    also = f" (given: {', '.join(given)})" if given else ""
    if ":" in name:
        refusal = NotGiven("chart", name)
        return refusal.allow(f"give it with --chart {refusal.name}{also}")
    return f"the trace was made on chart {name}: give it with --chart MODULE:CLASS{also}"


def _coordinator(trace: Trace, path: Path) -> HandoffCoordinatorCore:
    """The coordinator `trace` starts from; `TraceError` naming the file if it has none."""
    try:
        return trace.coordinator()
    except TraceError as error:
        raise TraceError(f"{path}: {error}") from None


def _record(trace: Trace, calls: Iterator[Entry], path: Path) -> int:
    # Read, made and written one call at a time: the file is replaced once all are written.
    coordinator = _coordinator(trace, path)
    count = write_trace(trace, path, recorded(trace, calls, coordinator))
    print(f"RECORDED {path} ({_calls(count)})")
    return _OK


def _replay(
    trace: Trace, calls: Iterator[Entry], path: Path, monitors: Sequence[MonitorFactory]
) -> int:
    # The properties judge a run from its start: one that starts mid-run, from a snapshot,
    # is checked against its expectations alone.
    if trace.snapshot is not None:
        monitors = ()
    verdict = replay(trace, monitors, _coordinator(trace, path), entries=calls)
    if verdict.ok:
        held = "; every property a run can show holds" if monitors else ""
        if trace.snapshot is not None:
            held = "; it starts from a snapshot, so its properties are not judged"
        print(f"OK {path} ({_calls(verdict.calls)}){held}")
        return _OK
    if verdict.divergence is None and not verdict.violations:
        keys = ", ".join(unjudged.key.value for unjudged in verdict.unjudged)
        print(
            f"CUT SHORT {path} ({_calls(verdict.calls)}); every property judged holds, "
            f"{keys} not judged"
        )
        _not_judged(verdict.unjudged, path)
        return _CUT_SHORT
    _report(verdict, path)
    return _FAILED


def _replay_system(
    trace: Trace,
    path: Path,
    systems: SystemReplay | None,
    allowed: Collection[str],
    *,
    record: bool,
) -> int:
    if record:
        raise TraceError(
            f"{path}: a run with workers expects no answers: there is nothing to record"
        )
    if systems is None:
        raise TraceError(f"{path}: a run with workers is replayed by `handoff replay`")
    moves = len(trace.moves)
    try:
        broken = systems(trace, allowed)
    except NotGiven as refusal:
        raise TraceError(
            f"{path}: {refusal.allow(f'give it with {_OPTIONS[refusal.what]} {refusal.name}')}"
        ) from None
    except TraceError as error:
        raise TraceError(f"{path}: {error}") from None
    workers = trace.workers
    assert workers is not None
    if not broken:
        print(f"OK {path} ({moves} moves, {workers.contract} workers); every property holds")
        return _OK
    for violation in broken:
        print(f"VIOLATED {path}:{violation.line}: {violation.finding.key.value}")
        print(f"  {violation.finding.message}")
    return _FAILED


def _report(verdict: Replay, path: Path) -> None:
    divergence = verdict.divergence
    if divergence is not None:
        print(f"DIVERGED {path}:{divergence.line}: {divergence.call.describe()}")
        print(f"  chart state before the call: {divergence.chart_state}")
        print(f"  expected: {divergence.expected}")
        print(f"  actual:   {divergence.actual}")
    for violation in verdict.violations:
        call = violation.call
        print(f"VIOLATED {path}:{violation.line}: {'a move' if call is None else call.describe()}")
        when = "after the last call" if violation.at_end else "before the call"
        print(f"  chart state {when}: {violation.chart_state}")
        print(f"  {violation.message}")
    _not_judged(verdict.unjudged, path)


def _not_judged(unjudged: Sequence[Unjudged], path: Path) -> None:
    for one in unjudged:
        print(f"NOT JUDGED {path}: {one.key.value} ({one.title})")
        print(f"  {one.why}")


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"

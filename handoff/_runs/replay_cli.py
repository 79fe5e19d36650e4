"""`handoff replay`: replay traces against fresh coordinators, or record their expectations.

A trace whose header carries a snapshot replays from the coordinator that snapshot restores,
and is judged by its expectations alone (the properties judge a run from its start).

Every file gets its own verdict, whatever happened to the others.  On stdout: `OK`,
`DIVERGED` (an answer differs from the trace's expectation) or `VIOLATED` (a monitor judged
a call as breaking its property), or `RECORDED` with `--record`.  A file that cannot be read
or written is one `handoff replay: error: …` line on stderr.  The exit status is the worst
verdict: 0 all OK, 1 a divergence or a violation, 2 a file that could not be read or written.

The monitors are given by the caller: the command line passes the review's safety monitors,
so a trace is judged by the properties as well as by its own expectations, and the review's
system world, which replays a run of the chart with its workers (a trace naming `workers`)
move by move and judges the system properties along it.  `--chart` names
the chart to replay on instead of the shipped chart of the trace's order: how a
counterexample is shown to fail on the broken chart, and to pass on its fix.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from handoff import _cli
from handoff._compile.lookup import NamedChart, find_chart
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._runs.replay import MonitorFactory, Replay, record, replay
from handoff._runs.trace import Trace, TraceError, read_trace, write_trace

__all__ = ["configure", "run"]

_OK, _FAILED, _UNREADABLE = 0, 1, 2

SystemReplay = Callable[[Trace], Sequence[tuple[int, str, str]]]
"""Replays a system run; what it broke, as (line, property, words), first broken first."""


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
        "(MODULE imported from the current directory or the Python path); repeat for several",
    )


def run(
    args: argparse.Namespace,
    monitors: Sequence[MonitorFactory] = (),
    systems: SystemReplay | None = None,
) -> int:
    """Replay (or record) every trace; the exit status is the worst verdict."""
    worst = _OK
    for path in args.traces:
        try:
            trace = _on_chart(
                read_trace(path, require_end=not args.record),
                getattr(args, "chart", None) or (),
                path,
            )
            if trace.workers is not None:
                status = _replay_system(trace, path, systems, record=args.record)
            elif args.record:
                status = _record(trace, path)
            else:
                status = _replay(trace, path, monitors)
        except TraceError as error:
            _cli.error("handoff replay", str(error))
            status = _UNREADABLE
        worst = max(worst, status)
    return worst


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
    if chart is None and trace.chart is not None and not charts and ":" in trace.chart:
        chart = _named(trace.chart, path)
    if chart is None:
        if trace.chart is None:
            return trace
        given = f" (given: {', '.join(by_name)})" if by_name else ""
        raise TraceError(
            f"{path}: the trace was made on chart {trace.chart}: "
            f"give it with --chart MODULE:CLASS{given}"
        )
    if chart.order is not trace.order:
        raise TraceError(
            f"{path}: chart {chart.table.name} runs {chart.order.value}, "
            f"the trace says {trace.order.value}"
        )
    return attrs.evolve(trace, rules=chart.rules)


def _named(spec: str, path: Path) -> NamedChart:
    """The chart a trace's header names as `MODULE:CLASS` (a review's counterexample does)."""
    try:
        return find_chart(spec, tables=True)
    except ValueError as error:
        raise TraceError(
            f"{path}: the trace was made on chart {spec}, which cannot be loaded ({error}): "
            "give it with --chart MODULE:CLASS"
        ) from None


def _coordinator(trace: Trace, path: Path) -> HandoffCoordinatorCore:
    """The coordinator `trace` starts from; `TraceError` naming the file if it has none."""
    try:
        return trace.coordinator()
    except TraceError as error:
        raise TraceError(f"{path}: {error}") from None


def _record(trace: Trace, path: Path) -> int:
    write_trace(record(trace, _coordinator(trace, path)), path)
    print(f"RECORDED {path} ({_calls(trace)})")
    return _OK


def _replay(trace: Trace, path: Path, monitors: Sequence[MonitorFactory]) -> int:
    # The properties judge a run from its start: one that starts mid-run, from a snapshot,
    # is checked against its expectations alone.
    if trace.snapshot is not None:
        monitors = ()
    verdict = replay(trace, monitors, _coordinator(trace, path))
    if verdict.ok:
        held = "; every property a run can show holds" if monitors else ""
        if trace.snapshot is not None:
            held = "; it starts from a snapshot, so its properties are not judged"
        print(f"OK {path} ({_calls(trace)}){held}")
        return _OK
    _report(verdict, path)
    return _FAILED


def _replay_system(trace: Trace, path: Path, systems: SystemReplay | None, *, record: bool) -> int:
    if record:
        raise TraceError(
            f"{path}: a run with workers expects no answers: there is nothing to record"
        )
    if systems is None:
        raise TraceError(f"{path}: a run with workers is replayed by `handoff replay`")
    moves = len(trace.moves)
    try:
        broken = systems(trace)
    except TraceError as error:
        raise TraceError(f"{path}: {error}") from None
    workers = trace.workers
    assert workers is not None
    if not broken:
        print(f"OK {path} ({moves} moves, {workers.contract} workers); every property holds")
        return _OK
    for line, key, words in broken:
        print(f"VIOLATED {path}:{line}: {key}")
        print(f"  {words}")
    return _FAILED


def _report(verdict: Replay, path: Path) -> None:
    divergence = verdict.divergence
    if divergence is not None:
        print(f"DIVERGED {path}:{divergence.line}: {divergence.call.describe()}")
        print(f"  chart state before the call: {divergence.chart_state}")
        print(f"  expected: {divergence.expected}")
        print(f"  actual:   {divergence.actual}")
    for violation in verdict.violations:
        print(f"VIOLATED {path}:{violation.line}: {violation.call.describe()}")
        when = "after the last call" if violation.at_end else "before the call"
        print(f"  chart state {when}: {violation.chart_state}")
        print(f"  {violation.message}")


def _calls(trace: Trace) -> str:
    count = len(trace.entries)
    return f"{count} call" if count == 1 else f"{count} calls"

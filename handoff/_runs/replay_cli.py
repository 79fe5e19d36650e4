"""`handoff replay`: replay traces against fresh coordinators, or record their expectations.

Every file gets its own verdict, whatever happened to the others.  On stdout: `OK`,
`DIVERGED` (an answer differs from the trace's expectation) or `VIOLATED` (a monitor judged
a call as breaking its property), or `RECORDED` with `--record`.  A file that cannot be read
or written is one `handoff replay: error: …` line on stderr.  The exit status is the worst
verdict: 0 all OK, 1 a divergence or a violation, 2 a file that could not be read or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from handoff import _cli
from handoff._runs.replay import MonitorFactory, Replay, record, replay
from handoff._runs.trace import Trace, TraceError, read_trace, write_trace

__all__ = ["configure", "run"]

_OK, _FAILED, _UNREADABLE = 0, 1, 2


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


def run(args: argparse.Namespace, monitors: Sequence[MonitorFactory] = ()) -> int:
    """Replay (or record) every trace; the exit status is the worst verdict."""
    worst = _OK
    for path in args.traces:
        try:
            trace = read_trace(path, require_end=not args.record)
            status = _record(trace, path) if args.record else _replay(trace, path, monitors)
        except TraceError as error:
            print(f"handoff replay: error: {error}", file=sys.stderr)
            status = _UNREADABLE
        worst = max(worst, status)
    return worst


def _record(trace: Trace, path: Path) -> int:
    write_trace(record(trace), path)
    print(f"RECORDED {path} ({_calls(trace)})")
    return _OK


def _replay(trace: Trace, path: Path, monitors: Sequence[MonitorFactory]) -> int:
    verdict = replay(trace, monitors)
    if verdict.ok:
        print(f"OK {path} ({_calls(trace)})")
        return _OK
    _report(verdict, path)
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
        print(f"  chart state before the call: {violation.chart_state}")
        print(f"  {violation.message}")


def _calls(trace: Trace) -> str:
    count = len(trace.entries)
    return f"{count} call" if count == 1 else f"{count} calls"

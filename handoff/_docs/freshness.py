"""A note that this checkout's generated files were fresh, kept so a check need not redo it.

Building every generated file takes seconds (Graphviz layouts, two model reviews, the system
verdicts); checking them needs that build.  Yet they are a pure function of their inputs: the
package's sources, the docs' prose, `pyproject.toml`, the Python and the installed
distributions.  So once a check found every file fresh (or `./dev generate` wrote them all),
a fingerprint of the inputs *and the generated files themselves* is kept under `build/`; a
check that finds the same fingerprint knows the same answer without building.  Any change to
an input or an output, a file added or removed, another Python or another version of a
dependency, changes the fingerprint, and the check builds again: a stale file is never
reported fresh.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

__all__ = ["FINGERPRINTED", "fingerprint", "forget", "note_fresh", "noted_fresh"]

FINGERPRINTED = ("handoff", "docs", "diagrams", "pyproject.toml")
"""What the fingerprint covers, under the checkout's root: every file, whatever its kind."""
_NOTE = Path("build", "generated-fresh.sha256")
_SKIPPED = frozenset({"__pycache__", "_build"})


def fingerprint(root: Path) -> str:
    """A hash of every file the generated files are made from or written to, and of the
    Python and distributions that make them."""
    digest = hashlib.sha256()
    digest.update(f"{sys.version}\0{sys.implementation.cache_tag}\0".encode())
    for name in sorted(_distributions()):
        digest.update(f"{name}\0".encode())
    for path in _files(root):
        digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _distributions() -> set[str]:
    """Every installed distribution with its version, as its metadata folder is named
    (`attrs-25.3.0.dist-info`): listing the folders is much quicker than reading them."""
    found: set[str] = set()
    for entry in sys.path:
        folder = Path(entry or ".")
        if folder.is_dir():
            found.update(path.name for pattern in _METADATA for path in folder.glob(pattern))
    return found


_METADATA = ("*.dist-info", "*.egg-info")


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for name in FINGERPRINTED:
        top = root / name
        if top.is_file():
            found.append(top)
        elif top.is_dir():
            found += [
                path
                for path in top.rglob("*")
                if path.is_file() and not _SKIPPED.intersection(path.relative_to(root).parts)
            ]
    return sorted(found)


def noted_fresh(root: Path) -> bool:
    """Whether the generated files were found fresh with exactly these inputs and outputs."""
    try:
        noted = (root / _NOTE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return noted == fingerprint(root)


def note_fresh(root: Path) -> None:
    """Keep the fingerprint of a checkout whose generated files are all fresh.  A note that
    cannot be written is no loss: the next check builds again."""
    try:
        (root / _NOTE).parent.mkdir(parents=True, exist_ok=True)
        (root / _NOTE).write_text(fingerprint(root) + "\n", encoding="ascii")
    except OSError:
        pass


def forget(root: Path) -> None:
    """Drop the note: the files are not known to be fresh."""
    (root / _NOTE).unlink(missing_ok=True)

"""`handoff review --explain DIR`: each failing property's counterexample, to see and to keep.

For every failing property with a counterexample, `<chart>_<property>` names six files: the
run as a replayable trace (`.jsonl`), its sequence diagram (`.sequence.svg`, and as Mermaid
text `.sequence.mmd`), the chart's
state diagram with the run drawn over it (`.dot`, `.svg`, `.state.mmd`), and
`test_<chart>_<property>.py`, a pytest file that judges the trace through the public API
(`handoff.check_trace`) on the chart the review was given.  The files a run writes are listed
in `DIR/.explain`, each with the SHA-256 of what was written: the next run removes them, so a
property that now holds leaves nothing behind that looks current.  Coverage fails without a
run: for it the state diagram alone is written, with the dead states and transitions in red.

The manifest is written before the files it lists, listing the last run's files too, so a run
cut short at any point leaves every file it wrote listed.  A file is removed only if it is
still what a run wrote (its digest matches) and named as an explain file is: a file edited
since, or one a planted or garbled manifest names (`conf.py`, `index.md`), is left alone.

A failure of the chart with its workers gets the same six: its trace is the system run, move
by move (which `handoff replay` replays through the same system), its sequence diagram runs
between the coordinator, the runtime and both workers, and its state diagram draws the
coordinator's path, the calls the runtime made.  Files are named `<chart>_<workers>_<property>`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from handoff import _files
from handoff._cli import CommandError
from handoff._docs import DiagramError
from handoff._docs.coverage_diagram import dot_dead, mermaid_dead
from handoff._docs.diagram import header
from handoff._docs.dot import svg
from handoff._docs.generated import version
from handoff._docs.path_diagram import (
    dot_path,
    mermaid_path,
    mermaid_sequence_of,
    mermaid_system_sequence,
    svg_sequence_of,
    svg_system_sequence,
)
from handoff._docs.pytest_file import chart_folder, pytest_source
from handoff._review.explore import Review
from handoff._review.report import counterexample_trace
from handoff._review.verdict import Counterexample, Verdict
from handoff._runs.trace import trace_text

__all__ = ["MANIFEST", "stem", "write_explain"]

MANIFEST = ".explain"
"""The list of the files the last run wrote, one name a line."""


def stem(chart_name: str, key: str) -> str:
    """`ActivateBeforeTransferCompleted`, `S1` → `activate_before_transfer_completed_s1`."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", chart_name)
    return re.sub(r"[^a-z0-9]+", "_", f"{words}_{key}".lower()).strip("_")


def write_explain(reviews: Sequence[Review], directory: Path) -> list[str]:
    """Write the explain set of every failure into `directory`; one line per file touched."""
    _files.make_directory(directory)
    files: dict[str, str] = {}
    try:
        for review in reviews:
            for verdict in review.failures():
                if verdict.counterexample is not None:
                    files.update(_explain_set(review, verdict, verdict.counterexample, directory))
                elif verdict.dead:
                    files.update(_dead_code(review, verdict))
    except DiagramError as error:  # drawn before any file is written: nothing half done
        raise CommandError(f"--explain: {error}") from None
    data = {name: text.encode("utf-8", "surrogateescape") for name, text in files.items()}
    written = [(_digest(content), name) for name, content in data.items()]
    previous = _listed(directory)
    # Listed first, with what the last run listed: whatever interrupts what follows, every
    # file of ours in the directory is in the manifest for the next run to remove.
    _write_manifest(directory, [*previous, *written])
    stale = [(digest, name) for digest, name in previous if name not in data]
    removed, kept = _remove(directory, stale)
    for name, content in data.items():
        _files.write_bytes(directory / name, content)
    _write_manifest(directory, written)
    return [
        *(f"removed stale {path}" for path in removed),
        *(f"kept {path}: not as a review wrote it" for path in kept),
        *(f"wrote {directory / name}" for name in files),
    ]


_EXPLAIN_SUFFIXES = (".jsonl", ".sequence.mmd", ".state.mmd", ".dot", ".svg")


def _explain_name(name: str) -> bool:
    """Whether a review could have written a file of this name (a bare name, never a path)."""
    if name != Path(name).name or name.startswith("."):
        return False
    return name.endswith(_EXPLAIN_SUFFIXES) or (name.startswith("test_") and name.endswith(".py"))


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _write_manifest(directory: Path, entries: Sequence[tuple[str, str]]) -> None:
    text = "".join(f"{digest} {name}\n" for digest, name in dict.fromkeys(entries))
    _files.write_text(directory / MANIFEST, text)


def _listed(directory: Path) -> list[tuple[str, str]]:
    """The (digest, name) entries of the manifest in `directory`; a line that is not one (an
    older manifest's bare name, anything garbled or planted) lists nothing."""
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return []
    # Names are kept as the bytes they were: a manifest need not be UTF-8.
    text = manifest.read_bytes().decode("utf-8", "surrogateescape")
    entries = []
    for line in text.splitlines():
        digest, _, name = line.partition(" ")
        if _DIGEST.fullmatch(digest) and _explain_name(name):
            entries.append((digest, name))
    return entries


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _remove(directory: Path, entries: Sequence[tuple[str, str]]) -> tuple[list[Path], list[Path]]:
    """Remove each listed file that still holds what was written; the removed, and the kept
    (changed since)."""
    digests: dict[str, set[str]] = {}
    for digest, name in entries:
        digests.setdefault(name, set()).add(digest)
    removed, kept = [], []
    for name, wanted in digests.items():
        path = directory / name
        found = _file_digest(path)
        if found is None:
            continue
        if found in wanted and _unlinked(path):
            removed.append(path)
        else:
            kept.append(path)
    return removed, kept


def _unlinked(path: Path) -> bool:
    try:
        path.unlink()
    except OSError:  # gone since, or a directory that will not let go of it: not removed
        return False
    return True


def _file_digest(path: Path) -> str | None:
    """The SHA-256 of the regular file at `path`, or None where there is none to read."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with path.open("rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None


def _dead_code(review: Review, verdict: Verdict) -> dict[str, str]:
    """Coverage has no run to replay: the state diagram with its dead code is what it has."""
    name = stem(review.chart.name, verdict.prop.key.value)
    dot = dot_dead(review.chart, verdict)
    return {
        f"{name}.dot": dot,
        f"{name}.svg": svg(dot, _header(review)),
        f"{name}.state.mmd": mermaid_dead(review.chart, verdict),
    }


def _explain_set(
    review: Review, verdict: Verdict, example: Counterexample, directory: Path
) -> dict[str, str]:
    chart, prop, system = review.chart, verdict.prop, review.system
    named = chart.name if system is None else f"{chart.name}_{system.contract.name}"
    name = stem(named, prop.key.value)
    trace = counterexample_trace(review, example)
    dot = dot_path(chart, prop, example)
    workers: tuple[str, tuple[str, ...]] | None = None
    runtimes: tuple[str, ...] = ()
    if trace.workers is not None:
        workers = (trace.workers.contract, trace.workers.properties)
        runtime = trace.workers.runtime
        runtimes = (runtime,) if runtime is not None and ":" in runtime else ()  # one's own
    folder = chart_folder(review.origin, directory)
    test = pytest_source(
        name, prop, example.finding, review.origin, review.order.value, workers, folder, runtimes
    )
    line = _header(review)
    if system is None:
        sequence = mermaid_sequence_of(prop, example)
        drawn = svg_sequence_of(prop, example, line)
    else:
        sequence = mermaid_system_sequence(review, verdict, example)
        drawn = svg_system_sequence(review, verdict, example, line)
    return {
        f"{name}.jsonl": trace_text(trace),
        f"{name}.sequence.mmd": sequence,
        f"{name}.sequence.svg": drawn,
        f"{name}.dot": dot,
        f"{name}.svg": svg(dot, line),
        f"{name}.state.mmd": mermaid_path(chart, prop, example),
        f"test_{name}.py": test,
    }


def _header(review: Review) -> str:
    """The first line of an explain drawing: what drew it, from which chart."""
    return header(review.chart.name, COMMAND, version())


COMMAND = "handoff review"
"""What the explain drawings name as their maker: their XML comments may not hold `--`."""

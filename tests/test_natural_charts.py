"""Charts written as a statechart author writes them are accepted and judged by the review.

A renamed state, a renamed cleanup state and a `final=True` end state are SPEC-equal to the
shipped chart and pass every property; a variant that no longer enters an inherited state
fails S5 with a counterexample instead of an import error, and its trace replays as the
violation.  The same holds for a chart module outside the repository, and for an edit of a
shipped chart in a scratch copy of the package: the very next review judges the edit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest
from charts.natural import CORRECT, CancelsSourceOnly, FinalCanceled, TurningOn

from handoff import SourceFirstChart
from handoff._compile.table import compile_chart
from handoff._review.explore import Review, review_chart

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


@attrs.frozen
class Ran:
    status: int
    out: str
    err: str


GENERATE = "handoff._docs.project"
"""What `./dev generate` runs: this checkout's own regeneration."""


def _run(args: list[str], where: Path, path: Path | None = None, module: str = "handoff") -> Ran:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    if path is not None:
        env["PYTHONPATH"] = str(path)
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=where, env=env, text=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return Ran(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def reviews() -> dict[str, Review]:
    return {chart.__name__: review_chart(chart) for chart in (*CORRECT, CancelsSourceOnly)}


@pytest.mark.parametrize("chart", CORRECT, ids=lambda chart: chart.__name__)
def test_a_spec_equal_natural_chart_passes_every_property(
    reviews: dict[str, Review], chart: type[SourceFirstChart]
) -> None:
    assert reviews[chart.__name__].failures() == ()


def test_a_renamed_state_replaces_the_inherited_one() -> None:
    states = compile_chart(TurningOn).states
    assert "turning_on" in states
    assert "activating" not in states  # no rule uses it any more: it is not kept
    assert "activating" in compile_chart(SourceFirstChart).states


def test_a_final_end_state_is_accepted_and_completes() -> None:
    assert FinalCanceled.canceled.final
    table = compile_chart(FinalCanceled)
    assert table.rows == compile_chart(SourceFirstChart).rows


def test_a_chart_that_stops_entering_a_state_fails_s5_with_a_counterexample(
    reviews: dict[str, Review],
) -> None:
    review = reviews["CancelsSourceOnly"]
    verdict = review.verdict("S5")
    assert verdict.counterexample is not None
    assert "ReserveDestination was never canceled" in verdict.counterexample.finding
    assert review.verdict("Table").holds
    # Rules still leave `cancelling_both`, nothing enters it: dead code, named by Coverage.
    (note, *_) = review.verdict("Coverage").notes
    assert note.startswith("dead: state cancelling_both,")


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A chart module outside the repository: the broken natural chart, written anew."""
    where = tmp_path_factory.mktemp("outside")
    assert REPO not in where.resolve().parents
    source = (TESTS / "charts" / "natural.py").read_text(encoding="utf-8")
    (where / "leaky.py").write_text(source, encoding="utf-8")
    return where


@pytest.mark.parametrize("where", ["tests", "outside"])
def test_the_broken_chart_is_explained_and_its_trace_replays_as_the_violation(
    where: str, outside: Path, tmp_path: Path
) -> None:
    cwd, chart = (TESTS, "charts.natural:CancelsSourceOnly")
    if where == "outside":
        cwd, chart = (outside, "leaky:CancelsSourceOnly")
    explained = tmp_path / "explained"
    review = _run(["review", "--chart", chart, "--explain", str(explained)], cwd)
    assert review.status == 1, review.err
    assert "S5 fails: CANCELED completion, yet the ReserveDestination was never canceled" in (
        review.out
    )
    trace = explained / "cancels_source_only_s5.jsonl"
    assert trace.is_file()
    assert (explained / "test_cancels_source_only_s5.py").is_file()
    replay = _run(["replay", "--chart", chart, str(trace)], cwd)
    assert replay.status == 1, replay.err
    assert "S5 (every owner freed or handed over at completion): CANCELED completion" in (
        replay.out
    )


_EDIT_FROM = """\
        cancelling_source.from_(prefill, on="cancel_source")
"""
_EDIT_TO = """\
        cancelling_source.from_(prefill, on="cancel_source")
        | both_engaged.destination_reserving.to(cancelling_source, on="cancel_source")
"""


def test_an_edited_shipped_chart_is_what_the_very_next_review_judges(tmp_path: Path) -> None:
    # The edit of SourceFirstChart that leaks the reservation, in a scratch copy of the
    # package whose generated start-up table still holds the previous rules.
    for folder in ("handoff", "docs", "diagrams"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    chart = tmp_path / "handoff" / "_chart" / "shipped.py"
    text = chart.read_text(encoding="utf-8")
    assert text.count(_EDIT_FROM) == 1
    chart.write_text(text.replace(_EDIT_FROM, _EDIT_TO), encoding="utf-8")

    review = _run(["review", "--order", "SourceFirst"], tmp_path, tmp_path)
    assert review.status == 1, review.err
    assert "S5 fails: CANCELED completion, yet the ReserveDestination was never canceled" in (
        review.out
    )
    assert "shortest counterexample (5 calls):" in review.out
    (table,) = [line.split() for line in review.out.splitlines() if line.startswith("  Table ")]
    assert "PASS" in table  # the class is judged, not the stale start-up table

    # This checkout's own regeneration (`./dev generate`) names the stale start-up table, and
    # one run of it redraws the edit.
    check = _run(["--check", "--root", str(tmp_path)], tmp_path, tmp_path, GENERATE)
    assert check.status == 1
    stale = [line for line in check.out.splitlines() if "generated_tables.py" in line]
    assert stale == [
        f"stale: {tmp_path / 'handoff' / '_compile' / 'generated_tables.py'}: "
        "the coordinator's start-up table "
        "differs from the shipped charts; regenerate it with `./dev generate` (or "
        "`handoff._compile.table.write_tables()`; no extra needed)"
    ]

    drawn = _run(["--root", str(tmp_path)], tmp_path, tmp_path, GENERATE)
    assert drawn.status == 0, drawn.err
    assert "S5" in (tmp_path / "docs" / "model-review.md").read_text(encoding="utf-8")
    assert _run(["--check", "--root", str(tmp_path)], tmp_path, tmp_path, GENERATE).status == 0


def test_the_start_up_table_regenerates_without_the_diagrams_extra(tmp_path: Path) -> None:
    shutil.copytree(REPO / "handoff", tmp_path / "handoff", ignore=shutil.ignore_patterns("*.pyc"))
    tables = tmp_path / "handoff" / "_compile" / "generated_tables.py"
    fresh = tables.read_text(encoding="utf-8")
    tables.write_text(fresh.replace("'canceled'", "'cancelled'", 1), encoding="utf-8")
    script = textwrap.dedent(
        """
        import sys
        sys.modules["graphviz"] = None  # the diagrams extra is missing
        from handoff._compile.table import stale_tables, write_tables
        print(stale_tables())
        print(write_tables(), stale_tables())
        print(sorted(m for m in sys.modules if m.startswith(("graphviz", "wasi"))))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    first, second, loaded = done.stdout.splitlines()
    assert first.startswith(f"stale: {tables}: ")
    assert second == "True None"
    assert loaded == "['graphviz']"  # only the blocked entry: nothing imported it
    assert tables.read_text(encoding="utf-8") == fresh

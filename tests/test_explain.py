"""`review --explain`: for every property a run can show, a broken chart's explain set is written,
its pytest file fails on the broken chart and passes once the chart is fixed in place, and its
trace replays as a violation on the broken chart and as OK on the shipped one.

Coverage and Table are not in `CHOSEN`: they are properties of a whole chart (every state and
transition reached; every table cell equal to python-statemachine's), so no single run shows
them and the review writes no trace for them.  Coverage's explain set is the state diagram with
its dead code, checked on its own below; Table's is nothing.

The explain sets are built once per session, in process; the emitted pytest files run in three
subprocesses (every broken chart, the fixed charts, the S7 adapter), read through JUnit XML.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from charts import broken, discipline
from review_mutants import MUTANTS, Mutant, shared_reviews
from support import SessionCache, run_handoff, uncovered

import handoff
from handoff.__main__ import main, parsers
from handoff._cli import CommandError
from handoff._compile.table import CompiledChart
from handoff._docs.explain import write_explain
from handoff._review import world
from handoff._review.equivalence import Comparison
from handoff._review.report import exit_status
from handoff._system.properties import Family, Key, WorldKind, prop, properties_of

TESTS = Path(__file__).parent

CHOSEN = {
    "S1": "ActivateBeforeTransferCompleted",
    "S2": "ReleaseBeforeActivation",
    "S3": "SourceHeldBeforeSubmission",
    "S4": "CompleteTwice",
    "S5": "NoDestinationCancel",
    "S6": "ReservationRecordedAgain",
    "S7": "IdsSkip",
    "C1": "CancelDestinationNeverReserved",
    "R1": "DropsEarlySourceHeld",
    "R2": "AcceptsFailedCancel",
    "P1": "TransferWithoutTimingCheck",
    "Q1": "CancelsOutOfOrder",
    "L1": "LostSourceCancel",
    "L2": "NoReopenAfterSuccess",
    "C2": "HeldRecordedInCleanup",
    "Bound": "HeldRecordedAgain",
    "Errors": "TimingCheckOnReservation",
}
"""One mutant of the suite per property a single run can show."""

_BY_NAME = {mutant.name: mutant for mutant in MUTANTS}
_TABLES = "explained_tables"
"""A module written beside the explain sets that names the table-patched mutants."""
_ADAPTER = "explained_adapter"
"""A pytest plugin written beside them that patches the coordinator as the S7 mutant does."""


def test_every_property_a_run_can_show_is_chosen_once() -> None:
    keys = {prop.key.value for prop in properties_of(WorldKind.CHART)}
    assert sorted(CHOSEN) == sorted(keys - {"Coverage", "Table"})
    for key, name in CHOSEN.items():
        assert _BY_NAME[name].caught_by == key


@attrs.frozen
class Explained:
    """One chosen mutant's explain set, as `handoff review --explain` wrote it."""

    key: str
    mutant: Mutant
    spec: str
    """How `--chart` named the broken chart."""
    directory: Path
    stem: str
    status: int
    err: str

    @property
    def trace(self) -> Path:
        return self.directory / f"{self.stem}.jsonl"

    @property
    def test_file(self) -> Path:
        return self.directory / f"test_{self.stem}.py"

    @property
    def shipped(self) -> str:
        return f"handoff:{self.mutant.compiled().order.value}Chart"


def _skip_table(patch: pytest.MonkeyPatch) -> None:
    # Table is no run's property, and comparing every cell with python-statemachine is most
    # of a review's time: the reviews here skip it (test_review_mutants judges Table).
    patch.setattr(world, "compare", lambda *_: Comparison("skipped", 0, ()))


@pytest.fixture(autouse=True)
def _quick_reviews(monkeypatch: pytest.MonkeyPatch) -> None:
    _skip_table(monkeypatch)


def _spec(mutant: Mutant) -> str:
    if isinstance(mutant.chart, CompiledChart):
        return f"{_TABLES}:{mutant.name}"
    if mutant.adapter is not None:  # the shipped chart, broken by its adapter
        return f"handoff:{mutant.chart.__name__}"
    module = broken if hasattr(broken, mutant.name) else discipline
    assert getattr(module, mutant.name) is mutant.chart
    return f"{module.__name__}:{mutant.name}"


def _stem(chart: str, key: str) -> str:
    # CamelCase to snake_case by hand: the test must not share the code it checks.
    words = "".join(f"_{c.lower()}" if c.isupper() else c for c in chart).lstrip("_")
    return f"{words}_{key.lower()}"


@contextlib.contextmanager
def _broken(mutant: Mutant) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        if mutant.adapter is not None:
            mutant.adapter(patch)
        yield


def _command(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


_BY_THE_COMMAND = ("S1", "S2", "S4", "S5", "C1", "R1", "Q1", "Errors")
"""The properties whose mutants `handoff review --explain` explains here, in this process:
those of a quick review.  The others' explain sets are written from the mutant's review as
the suite makes it once (tests/test_review_mutants.py judges the same reviews), by the
function the command calls (`write_explain`), with the command's exit status."""


_MEASURED = ("S1", "C1", "P1", "Bound", "Errors")
"""The explain sets and replays below that coverage measures: a safety failure, a chart that
only differs from the reference, an unusable payload taken, a run cut off and a table's crash
take every path of the command and of the replay; the others run the same code again."""


def _measured(key: str) -> contextlib.AbstractContextManager[None]:
    """Coverage as `_MEASURED` says for `key`'s explain set and replays."""
    return contextlib.nullcontext() if key in _MEASURED else uncovered()


@pytest.fixture(scope="module")
def explained(
    tmp_path_factory: pytest.TempPathFactory, session_cache: SessionCache
) -> dict[str, Explained]:
    root = tmp_path_factory.mktemp("explained")
    support = root / "broken"
    support.mkdir()
    names = [name for name in CHOSEN.values() if isinstance(_BY_NAME[name].chart, CompiledChart)]
    (support / f"{_TABLES}.py").write_text(
        "from review_mutants import MUTANTS\n\n"
        + "".join(f"{n} = next(m.chart for m in MUTANTS if m.name == {n!r})\n" for n in names)
    )
    (support / f"{_ADAPTER}.py").write_text(
        "import pytest\nfrom review_mutants import MUTANTS\n\n"
        f"next(m for m in MUTANTS if m.name == {CHOSEN['S7']!r}).adapter(pytest.MonkeyPatch())\n"
    )
    # Made before the reviews below skip Table: the cache keeps whole reviews.
    by_name = shared_reviews(
        session_cache, (_BY_NAME[n] for k, n in CHOSEN.items() if k not in _BY_THE_COMMAND)
    )
    shared = {key: by_name[name] for key, name in CHOSEN.items() if key not in _BY_THE_COMMAND}
    built = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(TESTS))
        patch.syspath_prepend(str(support))
        _skip_table(patch)
        for key, name in CHOSEN.items():
            mutant = _BY_NAME[name]
            spec = _spec(mutant)
            directory = root / name
            if key in _BY_THE_COMMAND:
                with _measured(key):
                    argv = ["review", "--chart", spec, "--explain", str(directory)]
                    status, _, err = _command(argv)
            else:
                # An adapter mutant (S7) is always explained so: only its review runs the
                # broken adapter, and the trace's expectations are the real coordinator's.
                review = shared[key]
                if mutant.adapter is None:  # named as `--chart` names it
                    review = attrs.evolve(review, origin=spec)
                status = exit_status([review])
                err = "".join(f"{line}\n" for line in write_explain([review], directory))
            # A table or an adapter keeps the shipped chart's name: "source_first_errors".
            stem = _stem(mutant.compiled().name, key)
            built[key] = Explained(key, mutant, spec, directory, stem, status, err)
    return built


def test_each_broken_chart_writes_its_full_explain_set(explained: dict[str, Explained]) -> None:
    for key, made in explained.items():
        # A safety failure exits 1; a chart that only differs from the reference, 3.
        if prop(Key(key)).family is Family.SAFETY:
            assert made.status == 1, key
        else:
            assert made.status in (1, 3), key
        for suffix in ("jsonl", "sequence.mmd", "sequence.svg", "dot", "svg", "state.mmd"):
            path = made.directory / f"{made.stem}.{suffix}"
            assert path.is_file(), path
            assert f"wrote {path}\n" in made.err
        assert made.test_file.is_file(), made.test_file
        assert f"wrote {made.test_file}\n" in made.err
        text = made.test_file.read_text()
        # The file names the chart it was explained for, and the property, at its top.
        chart = "None" if made.mutant.adapter is not None else repr(made.spec)
        assert f"\nCHART = {chart}\n" in text, key
        assert f"\nPROPERTY = {key!r}\n" in text
        assert "handoff._" not in text  # public API only
        sequence = (made.directory / f"{made.stem}.sequence.mmd").read_text()
        assert f"title {key} fails" in sequence
        assert "#c0392b" in (made.directory / f"{made.stem}.dot").read_text()
        assert (made.directory / f"{made.stem}.svg").read_text().lstrip().startswith("<")
        # Each drawing says what drew it: this review, not the command that draws charts.
        for suffix in ("svg", "sequence.svg"):
            first = (made.directory / f"{made.stem}.{suffix}").read_text().splitlines()[0]
            assert "by `handoff review` (kv-handoff " in first, first
            assert "handoff diagrams" not in first
        drawn = (made.directory / f"{made.stem}.sequence.svg").read_text()
        assert f"{key} fails" in drawn


def _pytest(
    files: list[Path], cwd: Path, pythonpath: list[Path], plugin: str | None = None
) -> dict[str, str | None]:
    """Run pytest on `files` in a subprocess; each test's failure message, None if it passed."""
    report = cwd / f"report-{len(list(cwd.glob('report-*')))}.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o"]
    command += ["addopts=", f"--junitxml={report}", *(["-p", plugin] if plugin else [])]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(map(str, pythonpath))}
    done = subprocess.run(
        [*command, *map(str, files)], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert report.is_file(), done.stdout + done.stderr
    outcomes: dict[str, str | None] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        failure = case.find("failure")
        outcomes[case.attrib["name"]] = None if failure is None else failure.attrib["message"]
    assert len(outcomes) == len(files), done.stdout + done.stderr
    return outcomes


def _fixed_in_place(root: Path, explained: dict[str, Explained]) -> Path:
    """Modules of the same names as the broken ones, each chart now the shipped one."""
    fixed = root / "fixed"
    fixed.mkdir(exist_ok=True)
    modules: dict[str, list[str]] = {}
    for made in explained.values():
        module, _, name = made.spec.partition(":")
        if module != "handoff":
            modules.setdefault(module, []).append(f"{name} = {made.shipped.partition(':')[2]}\n")
    for module, lines in modules.items():
        header = "from handoff import DestinationFirstChart, SourceFirstChart  # noqa: F401\n\n"
        *packages, leaf = module.split(".")
        folder = fixed.joinpath(*packages)
        folder.mkdir(parents=True, exist_ok=True)
        for depth in range(len(packages)):
            fixed.joinpath(*packages[: depth + 1], "__init__.py").touch()
        (folder / f"{leaf}.py").write_text(header + "".join(lines))
    return fixed


def test_the_emitted_tests_fail_on_the_broken_charts_and_pass_once_fixed(
    explained: dict[str, Explained],
) -> None:
    root = next(iter(explained.values())).directory.parent
    by_test = {f"test_{made.stem}": made for made in explained.values()}
    charts = [made.test_file for key, made in explained.items() if key != "S7"]
    support = root / "broken"
    broken = _pytest(charts, root, [TESTS, support])
    broken |= _pytest([explained["S7"].test_file], root, [TESTS, support], plugin=_ADAPTER)
    for test, message in broken.items():
        key = by_test[test].key
        assert message is not None, f"{test} passed on the broken chart"
        assert f"AssertionError: {key} (" in message, message
        assert " violated at line " in message
    fixed = _fixed_in_place(root, explained)
    passed = _pytest([made.test_file for made in explained.values()], root, [fixed])
    assert passed == dict.fromkeys(by_test)


_LEAKING = """
from handoff import SourceFirstChart

S = SourceFirstChart


class Leaking(SourceFirstChart):
    # A failure while the destination is reserved cancels only the source.
    terminated = (
        S.cancelling_source.from_(S.prefill_submitting, S.prefill_running,
                                  S.destination_reserving, on="cancel_source")
        | S.cancelling_both.from_(S.destination_accepted, S.transfer_starting, S.transferring,
                                  S.activating, S.releasing,
                                  on=["cancel_source", "cancel_destination"])
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )
"""


def test_a_test_file_runs_from_its_own_folder_for_a_chart_found_in_the_current_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "leaking_chart.py").write_text(_LEAKING)
    done = run_handoff(
        "review", "--chart", "leaking_chart:Leaking", "--explain", "out", cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    out = tmp_path / "out"
    tests = sorted(out.glob("test_*.py"))
    assert tests
    # From the folder it was written to, with nothing on the path: each finds the chart
    # beside that folder and fails on its property, not on the import.
    for test, message in _pytest(tests, out, []).items():
        assert message is not None, test
        assert "AssertionError: " in message, message
        assert "no module" not in message


def test_the_traces_replay_as_violations_on_the_broken_charts_only(
    explained: dict[str, Explained], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = next(iter(explained.values())).directory.parent
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.syspath_prepend(str(root / "broken"))
    for key, made in explained.items():
        with _measured(key):
            with _broken(made.mutant):
                status, out, _ = _command(["replay", "--chart", made.spec, str(made.trace)])
            assert status == 1, (key, out)
            violated = out.split("VIOLATED ")[1:]
            assert any(f"\n  {key} (" in verdict for verdict in violated), (key, out)
            status, out, _ = _command(["replay", "--chart", made.shipped, str(made.trace)])
            assert (status, out.count("OK ")) == (0, 1), (key, out)
            assert "every property a run can show holds" in out


def test_check_trace_gives_a_verdict_per_property(explained: dict[str, Explained]) -> None:
    made = explained["L1"]
    check = handoff.check_trace(made.trace, chart=made.shipped)
    assert check.ok
    order = made.mutant.compiled().order.value
    assert repr(check).startswith(f"<TraceCheck {made.trace.name} on {order}: ")
    assert str(check.verdict("L1")) == "L1 (a cooperative environment completes) holds"
    with pytest.raises(KeyError, match="judged over a whole chart"):
        check.verdict("Coverage")
    with pytest.raises(KeyError, match="no property 'S9'"):
        check.verdict("S9")
    # The trace names the chart it was found on, MODULE:CLASS; that name is data, so it
    # replays there once the caller names the chart, never by itself.
    with pytest.raises(handoff.HandoffError, match=f"made on chart {made.spec}: pass chart="):
        handoff.check_trace(made.trace)
    named = handoff.check_trace(made.trace, chart=made.spec)
    assert named.chart == "LostSourceCancel"
    assert not named.verdict("L1").holds
    titled = made.trace.with_name("titled.jsonl")
    titled.write_text(made.trace.read_text().replace(made.spec, "LostSourceCancel"))
    with pytest.raises(handoff.HandoffError, match="made on chart LostSourceCancel: pass chart="):
        handoff.check_trace(titled)
    broken = handoff.check_trace(made.trace, chart=discipline.LostSourceCancel)
    verdict = broken.verdict("L1")
    assert not broken.ok
    assert verdict.line == made.trace.read_text().count("\n") - 1  # the last call line
    assert "from the run's last configuration" in str(verdict)
    assert repr(verdict).startswith("<PropertyVerdict L1 violated at line ")
    assert broken.divergence is None  # its calls answer as the SPEC says; L1 breaks after them
    other = next(
        chart
        for chart in (handoff.SourceFirstChart, handoff.DestinationFirstChart)
        if chart.order.value != order
    )
    with pytest.raises(handoff.HandoffError, match=f"runs {other.order.value}"):
        handoff.check_trace(made.trace, chart=other)


def test_repeated_calls_on_one_move_share_one_arrow(explained: dict[str, Explained]) -> None:
    made = explained["Bound"]
    # Calls 4 to 6 repeat SourceHeld in destination_reserving: one loop, a line per call.
    dot = (made.directory / f"{made.stem}.dot").read_text()
    loops = [
        line for line in dot.splitlines() if '"destination_reserving" -> "destination_res' in line
    ]
    assert len(loops) == 1
    assert "\\n  5. on_fact(SourceHeld(valid timing))\\n" in loops[0]
    assert loops[0].startswith('  "destination_reserving" -> "destination_reserving" [label="  4. ')
    assert "\\n  ✗ 6. on_fact(SourceHeld(valid timing))\\n  issued nothing" in loops[0]
    mermaid = (made.directory / f"{made.stem}.state.mmd").read_text()
    call = "on_fact(SourceHeld(valid timing))"
    loop = f"4.\u00a0{call}, 5.\u00a0{call}, 6.\u00a0{call} ✗"
    assert f"    destination_reserving --> destination_reserving : {loop}\n" in mermaid


def test_coverage_explains_its_dead_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    assert (
        main(["review", "--chart", "charts.discipline:DeadTransition", "--explain", str(tmp_path)])
        == 3  # dead code is no risk: safe, but not the reference's chart
    )
    names = sorted(path.name for path in tmp_path.iterdir())
    stem = "dead_transition_coverage"
    assert names == [".explain", f"{stem}.dot", f"{stem}.state.mmd", f"{stem}.svg"]
    dot = (tmp_path / f"{stem}.dot").read_text()
    dead = '"idle" -> "prefill_running" [label="dead: prefill_submitted" color="#c0392b"'
    assert dead in dot
    mermaid = (tmp_path / f"{stem}.state.mmd").read_text()
    assert "idle --> prefill_running : ✗ dead: prefill_submitted" in mermaid
    assert f"wrote {tmp_path / f'{stem}.svg'}" in capsys.readouterr().err


def test_the_sequence_diagram_marks_the_violating_call(explained: dict[str, Explained]) -> None:
    made = explained["S1"]
    text = (made.directory / f"{made.stem}.sequence.mmd").read_text()
    for lane in ("Runtime", "Coordinator", "Source", "Destination"):
        assert f"participant {lane}" in text
    box = text.split("rect ")[1].split("\n    end")[0]
    # The sixth call, the transfer's Scheduled outcome, issued the early ActivateDestination
    # (a label longer than an arrow's width is broken where it has a space).
    assert "6. on_action_outcome(2,<br/>Scheduled)" in box
    assert "Coordinator->>Destination: ActivateDestination [3]" in box
    assert "before a scheduled transfer was reported done" in box
    dot = (made.directory / f"{made.stem}.dot").read_text()
    violating = (
        '"transfer_starting" -> "transferring" [label="  ✗ 6. on_action_outcome(2, Scheduled)'
    )
    assert violating + '\\n  issued ActivateDestination [3]" color="#c0392b"' in dot
    assert '"transfer_starting" -> "transferring" [color=' not in dot  # no grey twin


def test_sequence_notes_are_broken_into_lines_a_column_holds(
    explained: dict[str, Explained],
) -> None:
    # Mermaid does not wrap a note: one long line would widen the diagram past the column.
    for made in explained.values():
        text = (made.directory / f"{made.stem}.sequence.mmd").read_text()
        notes = [line.split(": ", 1)[1] for line in text.splitlines() if "Note over" in line]
        assert notes, made.stem
        for note in notes:
            assert max(len(part) for part in note.split("<br/>")) <= 90, note


_FAILING = ["--chart", "charts.discipline:CancelDestinationNeverReserved"]
_MODES = [
    (_FAILING, []),
    (_FAILING, ["--trace-out", "t.jsonl"]),
    (_FAILING, ["--explain", "x"]),
    (["--chart", "handoff:SourceFirstChart"], ["--trace-out", "t.jsonl", "--explain", "x"]),
    (["--order", "all"], []),
]


def test_json_stays_json_in_every_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.chdir(tmp_path)
    for chart, extra in _MODES:
        status, out, err = _command(["review", *chart, "--format", "json", *extra])
        holds = chart is not _FAILING
        assert json.loads(out)["ok"] is holds
        assert status == (0 if holds else 3)  # C1 and Q1 alone: safe, differs from the reference
        assert ("wrote " in err) is (bool(extra) and not holds)
        assert "wrote " not in out


def test_json_is_json_through_a_pipe(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "handoff", "review", "--order", "source-first"]
    command += ["--format", "json", "--explain", str(tmp_path), "--trace-out", str(tmp_path / "t")]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    tool = subprocess.run(
        [sys.executable, "-m", "json.tool"], input=done.stdout, capture_output=True, text=True
    )
    assert (done.returncode, tool.returncode) == (0, 0), tool.stderr


def test_a_later_run_without_failures_removes_the_earlier_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    broken = ["review", "--chart", "charts.broken:CompleteTwice", "--explain", str(tmp_path)]
    assert main(broken) == 1
    written = sorted(path.name for path in tmp_path.iterdir())
    assert "test_complete_twice_s4.py" in written
    capsys.readouterr()
    assert main(["review", "--order", "source-first", "--explain", str(tmp_path)]) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == [".explain"]
    err = capsys.readouterr().err
    assert f"removed stale {tmp_path / 'test_complete_twice_s4.py'}" in err


def test_a_chart_option_that_names_a_table_is_refused_where_a_class_is_needed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "one_table.py").write_text(
        "from handoff._compile.table import compiled\nfrom handoff import HandoffOrder\n\n"
        "TABLE = compiled(HandoffOrder.SOURCE_FIRST)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["demo", "--chart", "one_table:TABLE"]) == 2
    assert "one_table:TABLE is a compiled table: name a chart class" in capsys.readouterr().err
    assert main(["review", "--chart", "one_table:TABLE", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["orders"][0]["chart"] == "SourceFirst"


def test_explain_needs_its_writer(tmp_path: Path) -> None:
    from handoff._review import cli as review_cli

    top, _ = parsers()
    args = top.parse_args(["review", "--order", "source-first", "--explain", str(tmp_path)])
    with pytest.raises(CommandError, match="--explain needs"):
        review_cli.run(args)


def test_no_chart_variable_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # A variable the commands once read: it must change nothing now.
    monkeypatch.setenv("HANDOFF_CHART", "json:dumps")
    status, out, _ = _command(["replay", str(TESTS / "traces" / "source_first_success.jsonl")])
    assert status == 0
    assert out.startswith("OK ")

"""`review --explain`: the explain set of broken charts, replayed and run against both charts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import broken_charts
import pytest
from review_mutants import MUTANTS, Mutant

from handoff.__main__ import main, parsers
from handoff._cli import CommandError

TESTS = Path(__file__).parent

# One mutant per family of the properties a replay judges (S1-S5, S8, R1, R2, P1, Q1).
_CHOSEN = (
    "ActivateBeforeTransferCompleted",
    "CompleteTwice",
    "NoDestinationCancel",
    "SubmitTwice",
    "AcceptsFailedCancel",
    "HeldWithoutTimingCheck",
    "LateRelease",
)
_BY_NAME = {mutant.name: mutant for mutant in MUTANTS}


def _module(mutant: Mutant) -> str:
    assert isinstance(mutant.chart, type)
    name = mutant.chart.__name__
    return "broken_charts" if hasattr(broken_charts, name) else "broken_discipline"


def _env(chart: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HANDOFF_CHART"}
    env["PYTHONPATH"] = str(TESTS)
    if chart is not None:
        env["HANDOFF_CHART"] = chart
    return env


def _run(args: list[str], chart: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=_env(chart), capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("name", _CHOSEN)
def test_the_explain_set_fails_on_the_broken_chart_and_passes_on_the_real_one(
    name: str, tmp_path: Path
) -> None:
    mutant = _BY_NAME[name]
    chart = f"{_module(mutant)}:{name}"
    made = _run(["-m", "handoff", "review", "--chart", chart, "--explain", str(tmp_path)], None)
    assert made.returncode == 1
    stem = _stem(name, mutant.caught_by)
    files = [f"{stem}.{ext}" for ext in ("jsonl", "sequence.mmd", "dot", "svg", "state.mmd")]
    files.append(f"test_{stem}.py")
    for file in files:
        assert (tmp_path / file).is_file()
        assert f"wrote {tmp_path / file}\n" in made.stderr
    test = str(tmp_path / f"test_{stem}.py")
    broken = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", test], chart)
    assert broken.returncode == 1
    assert mutant.says in broken.stdout
    assert _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", test], None).returncode == 0
    trace = str(tmp_path / f"{stem}.jsonl")
    replayed = _run(["-m", "handoff", "replay", "--chart", chart, trace], None)
    assert replayed.returncode == 1
    assert f"{mutant.caught_by} (" in replayed.stdout
    assert mutant.says in replayed.stdout
    shipped = f"handoff:{mutant.chart.order.name.title().replace('_', '')}Chart"
    fixed = _run(["-m", "handoff", "replay", "--chart", shipped, trace], None)
    assert fixed.returncode == 0
    assert "every safety property holds" in fixed.stdout


def _stem(chart: str, key: str) -> str:
    # CamelCase to snake_case by hand: the test must not share the code it checks.
    words = "".join(f"_{c.lower()}" if c.isupper() else c for c in chart).lstrip("_")
    return f"{words}_{key.lower()}"


def test_the_sequence_diagram_marks_the_violating_call(tmp_path: Path) -> None:
    chart = "broken_charts:ActivateBeforeTransferCompleted"
    made = _run(["-m", "handoff", "review", "--chart", chart, "--explain", str(tmp_path)], None)
    assert made.returncode == 1
    text = (tmp_path / "activate_before_transfer_completed_s1.sequence.mmd").read_text()
    for lane in ("Runtime", "Coordinator", "Source", "Destination"):
        assert f"participant {lane}" in text
    box = text.split("rect ")[1].split("\n    end")[0]
    # The sixth call, the transfer's Scheduled outcome, issued the early ActivateDestination.
    assert "6. on_action_outcome(2, Scheduled)" in box
    assert "Coordinator->>Destination: ActivateDestination [3]" in box
    assert "before a scheduled transfer was reported done" in box
    dot = (tmp_path / "activate_before_transfer_completed_s1.dot").read_text()
    violating = '"transfer_starting" -> "transferring" [label="✗ 6. on_action_outcome(2, Scheduled)'
    assert violating + '\\nissued ActivateDestination [3]" color="#c0392b"' in dot
    assert '"transfer_starting" -> "transferring" [color=' not in dot  # no grey twin


def test_json_stays_json_with_every_option(tmp_path: Path) -> None:
    chart = "broken_charts:ActivateBeforeTransferCompleted"
    for extra in ([], ["--trace-out", str(tmp_path / "t.jsonl")], ["--explain", str(tmp_path)]):
        done = _run(["-m", "handoff", "review", "--chart", chart, "--format", "json", *extra], None)
        assert json.loads(done.stdout)["ok"] is False
    real = _run(["-m", "handoff", "review", "--format", "json", "--explain", str(tmp_path)], None)
    assert json.loads(real.stdout)["ok"] is True


def test_a_later_run_without_failures_removes_the_earlier_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    broken = ["review", "--chart", "broken_charts:CompleteTwice", "--explain", str(tmp_path)]
    assert main(broken) == 1
    written = sorted(path.name for path in tmp_path.iterdir())
    assert "test_complete_twice_s4.py" in written
    capsys.readouterr()
    assert main(["review", "--order", "source-first", "--explain", str(tmp_path)]) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == [".explain"]
    err = capsys.readouterr().err
    assert f"removed stale {tmp_path / 'test_complete_twice_s4.py'}" in err


def test_a_chart_variable_that_names_nothing_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HANDOFF_CHART", "json:dumps")
    assert main(["replay", str(TESTS / "traces" / "source_first_success.jsonl")]) == 2


def test_a_refused_call_is_drawn_and_replayed_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    chart = "broken_discipline:RefusesRepeatedTransferReport"
    assert main(["review", "--chart", chart, "--explain", str(tmp_path)]) == 1
    stem = "refuses_repeated_transfer_report_r1"
    sequence = (tmp_path / f"{stem}.sequence.mmd").read_text()
    # The SPEC drops a repeated TransferCompleted; this chart refuses it.
    assert "Coordinator--x" in sequence
    assert "refused: " in (tmp_path / f"{stem}.dot").read_text()
    capsys.readouterr()
    assert main(["replay", "--chart", chart, str(tmp_path / f"{stem}.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED" in out
    assert "R1 (" in out
    both = ["--chart", "handoff:SourceFirstChart", "--chart", "handoff:DestinationFirstChart"]
    assert main(["replay", *both, str(tmp_path / f"{stem}.jsonl")]) == 0
    assert "every safety property holds" in capsys.readouterr().out


def test_explain_needs_its_writer(tmp_path: Path) -> None:
    from handoff._review import cli as review_cli

    top, _ = parsers()
    args = top.parse_args(["review", "--order", "source-first", "--explain", str(tmp_path)])
    with pytest.raises(CommandError, match="--explain needs"):
        review_cli.run(args)

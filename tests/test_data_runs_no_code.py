"""A snapshot or a trace is data: a chart, worker contract or property it names is found among
the shipped ones and those the caller hands over, and no module it names is imported.

Each reproducer puts a module on the path whose import would leave a marker file: the marker
must never appear, and the refusal must say how to hand the name over."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import user_charts
from support import run_handoff
from walks import HID

from handoff import (
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    SourceFirstChart,
    TraceError,
    WireError,
    check_trace,
    wire,
)

EVIL = "evil_on_import"
"""A module whose import writes a marker beside itself (and would be the harm)."""

_EVIL_SOURCE = (
    "import pathlib\n"
    "pathlib.Path(__file__).with_name('imported.marker').write_text('ran')\n"
    "class X: pass\n"
    "def prop(view): return True\n"
)


@pytest.fixture
def evil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on `sys.path`, and the working directory, holding the module `EVIL`; yields
    the marker its import would write."""
    (tmp_path / f"{EVIL}.py").write_text(_EVIL_SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "imported.marker"
    sys.modules.pop(EVIL, None)


def _snapshot(chart: str) -> str:
    text = wire.dumps(HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth))
    return text.replace('"chart":"user_charts:FreesBoth"', f'"chart":{json.dumps(chart)}')


# -- snapshots --------------------------------------------------------------------------------


def test_a_snapshot_naming_a_module_imports_nothing(evil: Path) -> None:
    with pytest.raises(WireError) as refused:
        wire.loads(_snapshot(f"{EVIL}:X"), HandoffCoordinatorCore)
    assert refused.value.path == "$.chart"
    assert f'chart "{EVIL}:X" is not among the charts given' in str(refused.value)
    assert "charts=[X]" in str(refused.value)
    assert not evil.exists()
    assert EVIL not in sys.modules


def test_a_snapshot_naming_the_standard_library_is_a_wire_error_not_an_exit() -> None:
    # Importing venv.__main__ raises SystemExit, after making a virtual environment.
    already = "venv.__main__" in sys.modules
    for chart in ("venv.__main__:X", "antigravity:X", "this:X"):
        with pytest.raises(WireError, match=r"^\$\.chart: chart "):
            wire.loads(_snapshot(chart), HandoffCoordinatorCore)
    assert ("venv.__main__" in sys.modules) == already


def test_a_chart_handed_over_is_restored_and_only_it() -> None:
    text = wire.dumps(HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth))
    restored = wire.loads(text, HandoffCoordinatorCore, charts=[user_charts.FreesBoth])
    assert wire.dumps(restored) == text
    with pytest.raises(WireError, match=r"\(given: handoff:SourceFirstChart\)"):
        wire.loads(text, HandoffCoordinatorCore, charts=[SourceFirstChart])


def test_charts_must_be_chart_classes_and_only_for_a_snapshot() -> None:
    text = wire.dumps(HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth))
    named: Any = ["user_charts:FreesBoth"]  # a name, where the class belongs
    with pytest.raises(TypeError, match="HandoffChart subclasses"):
        wire.loads(text, HandoffCoordinatorCore, charts=named)
    with pytest.raises(TypeError, match="for restoring a snapshot"):
        wire.loads('"Applied"', HandoffActionOutcome, charts=[user_charts.FreesBoth])


@pytest.mark.parametrize(
    "duplicate",
    [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_a_coordinator_on_a_chart_of_ones_own_still_copies(
    duplicate: object,
) -> None:
    original = HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth)
    original.start()
    twin = duplicate(original)  # type: ignore[operator]
    assert twin._rules is user_charts.FreesBoth
    assert wire.dumps(twin) == wire.dumps(original)


# -- traces -----------------------------------------------------------------------------------

_HEADER = {
    "handoff_id": "00000000-0000-0000-0000-000000000001",
    "order": "SourceFirst",
    "fallback_transfer_delay_ms": 0.0,
}
_CALLS = '{"call":"start"}\n{"end":{"calls":1}}\n'
_MOVES = '{"move":"start"}\n{"end":{"moves":1}}\n'


def _trace(folder: Path, name: str, chart: str | None = None, **workers: object) -> Path:
    header: dict[str, object] = dict(_HEADER)
    if chart is not None:
        header = {**header, "chart": chart}
    if workers:
        header["workers"] = {"contract": "forgetful", "fifo": False, "faults": 0, **workers}
    path = folder / name
    path.write_text(json.dumps(header) + "\n" + (_MOVES if workers else _CALLS))
    return path


def test_replay_imports_no_chart_a_trace_names(evil: Path) -> None:
    _trace(evil.parent, "t.jsonl", chart=f"{EVIL}:X")
    ran = run_handoff("replay", "t.jsonl", cwd=evil.parent)
    assert ran.returncode == 2, ran.stderr
    [line] = ran.stderr.splitlines()
    assert line.startswith(f"handoff replay: error: t.jsonl: chart {EVIL}:X is neither shipped")
    assert line.endswith(f"give it with --chart {EVIL}:X to allow it")
    assert not evil.exists()


def test_replay_imports_no_worker_contract_or_property_a_trace_names(evil: Path) -> None:
    _trace(evil.parent, "c.jsonl", contract=f"{EVIL}:X")
    _trace(evil.parent, "p.jsonl", properties=[f"{EVIL}:prop"])
    ran = run_handoff("replay", "c.jsonl", "p.jsonl", cwd=evil.parent)
    assert ran.returncode == 2, ran.stderr
    contract, prop = ran.stderr.splitlines()
    assert f"worker contract {EVIL}:X is neither shipped nor given" in contract
    assert contract.endswith(f"give it with --workers {EVIL}:X to allow it")
    assert f"property {EVIL}:prop is neither shipped nor given" in prop
    assert prop.endswith(f"give it with --property {EVIL}:prop to allow it")
    assert not evil.exists()


def test_replay_replays_a_trace_naming_what_the_command_line_hands_over(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        "from handoff._system.workers import FORGETFUL as CONTRACT\n"
        "def holds(view):\n    return True\n"
    )
    _trace(tmp_path, "t.jsonl", contract="mine:CONTRACT", properties=["mine:holds"])
    refused = run_handoff("replay", "--workers", "mine:CONTRACT", "t.jsonl", cwd=tmp_path)
    assert "give it with --property mine:holds" in refused.stderr
    allowed = ("--workers", "mine:CONTRACT", "--property", "mine:holds")
    ran = run_handoff("replay", *allowed, "t.jsonl", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("OK t.jsonl (1 moves, mine:CONTRACT workers)")


def test_check_trace_imports_nothing_a_trace_names(evil: Path) -> None:
    chart = _trace(evil.parent, "t.jsonl", chart=f"{EVIL}:X")
    with pytest.raises(TraceError, match="a trace's names are data, never imported"):
        check_trace(chart)
    contract = _trace(evil.parent, "c.jsonl", contract=f"{EVIL}:X")
    with pytest.raises(TraceError, match=rf"pass workers=\['{EVIL}:X'\] to allow it"):
        check_trace(contract)
    prop = _trace(evil.parent, "p.jsonl", properties=[f"{EVIL}:prop"])
    with pytest.raises(TraceError, match=rf"pass properties=\['{EVIL}:prop'\] to allow it"):
        check_trace(prop)
    assert not evil.exists()
    # The caller may hand any of them over, by name: then, and only then, it is imported.
    assert check_trace(prop, properties=f"{EVIL}:prop").ok
    assert evil.exists()


def test_a_trace_naming_a_shipped_chart_class_needs_nothing_handed_over(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "t.jsonl", chart="handoff:SourceFirstChart")
    assert check_trace(trace).chart == "SourceFirst"
    ran = run_handoff("replay", "--record", "t.jsonl", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr


def test_an_explained_run_with_a_property_of_ones_own_hands_it_to_check_trace(
    tmp_path: Path,
) -> None:
    (tmp_path / "myprops.py").write_text(
        "def one_slot(view):\n"
        '    """A request has KV slots on one worker at a time."""\n'
        "    return not (view.source.held and view.destination.held)\n"
    )
    review = ("review", "--order", "SourceFirst", "--workers", "forgetful")
    reviewed = run_handoff(
        *review, "--property", "myprops:one_slot", "--explain", "x", cwd=tmp_path
    )
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr
    # W1 breaks with forgetful workers; its run's trace names the property judged beside it.
    [test] = (tmp_path / "x").glob("test_*_w1.py")
    assert "properties=['myprops:one_slot']" in test.read_text()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         str(test)],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    # It fails on W1, as the review found, not on a name it was not handed.
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "AssertionError: W1 (" in ran.stdout
    assert "neither shipped nor given" not in ran.stdout


def test_a_long_chart_name_is_quoted_clipped() -> None:
    name = "m" * 100_000 + ":X"
    with pytest.raises(WireError) as refused:
        wire.loads(_snapshot(name), HandoffCoordinatorCore)
    assert len(str(refused.value)) < 600
    assert "… (100,002 characters) is not among the charts given" in str(refused.value)


def test_a_long_name_in_a_trace_is_quoted_clipped(tmp_path: Path) -> None:
    _trace(tmp_path, "t.jsonl", chart="m" * 100_000 + ":X")
    ran = run_handoff("replay", "t.jsonl", cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert len(ran.stderr) < 600
    assert "… (100,002 characters) is neither shipped nor given" in ran.stderr
    assert ran.stderr.endswith("give it with --chart MODULE:NAME to allow it\n")


def test_replay_runs_no_standard_library_module_a_trace_names(tmp_path: Path) -> None:
    # Importing venv.__main__ makes a virtual environment named after the command's arguments.
    _trace(tmp_path, "t.jsonl", chart="venv.__main__:X")
    ran = run_handoff("replay", "t.jsonl", cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert "chart venv.__main__:X is neither shipped nor given" in ran.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["t.jsonl"]

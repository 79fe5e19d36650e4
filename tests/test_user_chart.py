"""A chart the package has never seen, written in a scratch directory outside the repository,
reviewed, drawn, simulated, replayed and demoed with the installed `handoff` command.

Every command runs once, in a subprocess, from a module-scoped fixture (all at once, so the
suite waits for the slowest rather than for their sum); the tests read the results.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

HANDOFF = str(Path(sys.executable).with_name("handoff"))
REPO = Path(__file__).resolve().parent.parent

# An engine that cancels only the destination when a transfer fails: the prefill's KV leaks.
_LEAKING = """
    action_failed = (
        S.cancelling_source.from_(S.prefill_submitting, S.prefill_running, on="cancel_source")
        | S.cancelling_both.from_(
            S.destination_reserving, S.destination_accepted, S.transferring, S.activating,
            S.releasing, on=["cancel_source", "cancel_destination"],
        )
        | S.transfer_starting.to(S.cancelling_destination, on="cancel_destination")
    )
"""
# The same engine, fixed: a failed transfer frees both owners.
_FIXED = """
    title = "FreesBoth"
    action_failed = (
        S.cancelling_source.from_(S.prefill_submitting, S.prefill_running, on="cancel_source")
        | S.cancelling_both.from_(
            S.destination_reserving, S.destination_accepted, S.transfer_starting,
            S.transferring, S.activating, S.releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
"""


def _module(body: str, name: str) -> str:
    return (
        "from handoff import SourceFirstChart\n\nS = SourceFirstChart\n\n\n"
        f"class {name}(SourceFirstChart):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    )


@attrs.frozen
class Ran:
    status: int
    out: str
    err: str


COMMANDS: dict[str, list[str]] = {
    "review leaking": ["review", "--chart", "engine:Leaking"],
    "review fixed": ["review", "--chart", "engine:Fixed", "--format", "json"],
    "review both": ["review", "--chart", "engine:Leaking", "--chart", "engine:Fixed",
                    "--trace-out", "leak.jsonl"],
    "draw": ["diagrams", "--chart", "engine:Fixed", "--out", "drawn"],
    "simulate leaking": ["simulate", "--chart", "engine:Leaking", "--handoffs", "300",
                         "--fault-rate", "0.3", "--record-failures", "failures"],
    "simulate fixed": ["simulate", "--chart", "engine:Fixed", "--handoffs", "300",
                       "--fault-rate", "0.3"],
    "demo": ["demo", "--chart", "engine:Fixed", "--reopen"],
    "no module": ["review", "--chart", "nowhere:Chart"],
    "no class": ["simulate", "--chart", "engine:Missing"],
    "not a chart": ["demo", "--chart", "engine:NotAChart"],
    "raises": ["diagrams", "--chart", "exploding:Chart", "--out", "drawn"],
    "no colon": ["replay", "--chart", "engine", "x.jsonl"],
}  # fmt: skip


def _start(args: list[str], where: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    return subprocess.Popen(
        [HANDOFF, *args], cwd=where, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _finish(process: subprocess.Popen[str]) -> Ran:
    out, err = process.communicate(timeout=300)
    return Ran(process.returncode, out, err)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("scratch")
    assert REPO not in where.resolve().parents
    (where / "engine.py").write_text(
        _module(_LEAKING, "Leaking")
        + "\n\n"
        + _module(_FIXED, "Fixed")
        + "\n\nclass NotAChart:\n    pass\n"
    )
    (where / "exploding.py").write_text("raise RuntimeError('the engine is not configured')\n")
    return where


@pytest.fixture(scope="module")
def ran(scratch: Path) -> dict[str, Ran]:
    started = {name: _start(args, scratch) for name, args in COMMANDS.items()}
    results = {name: _finish(process) for name, process in started.items()}
    # Replays need the traces the simulation recorded.
    traces = sorted(str(path) for path in (scratch / "failures").glob("*.jsonl"))
    replays = {
        "replay": _start(["replay", "--chart", "engine:Leaking", *traces], scratch),
        "replay without chart": _start(["replay", *traces[:1]], scratch),
        "replay other chart": _start(["replay", "--chart", "engine:Fixed", *traces[:1]], scratch),
    }
    results |= {name: _finish(process) for name, process in replays.items()}
    return results


def test_the_leaking_chart_fails_the_review_naming_the_property(ran: dict[str, Ran]) -> None:
    result = ran["review leaking"]
    assert result.status == 1, result.err
    assert result.out.startswith("Leaking (SourceFirst): ")
    assert "S5 fails: CANCELED completion, yet the SubmitPrefill was never released" in result.out
    assert '   6. on_action_outcome(2, Failed("x"))' in result.out
    assert (
        "UNSAFE: S5 (Leaking); differs from the reference: Q1 (Leaking); reviewed in" in result.out
    )
    assert re.search(r"\n  Table    the table agrees with python-statemachine +PASS ", result.out)


def test_the_fixed_chart_passes_under_its_own_name(ran: dict[str, Ran]) -> None:
    result = ran["review fixed"]
    assert result.status == 0, result.err
    report = json.loads(result.out)
    (chart,) = report["orders"]
    assert (report["ok"], chart["chart"], chart["order"]) == (True, "FreesBoth", "SourceFirst")
    table = next(prop for prop in chart["properties"] if prop["key"] == "Table")
    assert table["verdict"] == "PASS"
    assert table["checked"] > 0


def test_several_charts_are_reviewed_and_the_trace_names_its_chart(
    ran: dict[str, Ran], scratch: Path
) -> None:
    result = ran["review both"]
    assert result.status == 1
    assert "Leaking (SourceFirst): " in result.out
    assert "FreesBoth (SourceFirst): " in result.out
    # Root cause first: Q1 breaks at the call that begins cleanup, before S5's completion.
    assert "wrote the Q1 counterexample to leak.jsonl" in result.err
    header = json.loads((scratch / "leak.jsonl").read_text().splitlines()[0])
    assert (header["order"], header["chart"]) == ("SourceFirst", "engine:Leaking")


def test_the_diagrams_are_drawn_into_out_only(ran: dict[str, Ran], scratch: Path) -> None:
    assert ran["draw"].status == 0, ran["draw"].err
    drawn = sorted(path.name for path in (scratch / "drawn").iterdir())
    assert drawn == [
        "frees_both.cancel.sequence.mmd",
        "frees_both.cancel.sequence.svg",
        "frees_both.dot",
        "frees_both.mmd",
        "frees_both.sequence.mmd",
        "frees_both.sequence.svg",
        "frees_both.svg",
    ]
    assert not (scratch / "docs").exists()
    assert not (scratch / "diagrams").exists()
    dot = (scratch / "drawn" / "frees_both.dot").read_text()
    assert "digraph frees_both {" in dot
    assert 'label="FreesBoth handoff lifecycle' in dot
    sequence = (scratch / "drawn" / "frees_both.sequence.mmd").read_text()
    assert "title FreesBoth: a successful handoff" in sequence
    drawn_svg = (scratch / "drawn" / "frees_both.sequence.svg").read_text()
    assert ">FreesBoth: a successful handoff</text>" in drawn_svg


def test_the_leaking_chart_leaks_in_simulation_and_its_traces_replay(
    ran: dict[str, Ran], scratch: Path
) -> None:
    leaking = ran["simulate leaking"]
    assert leaking.status == 1
    assert "simulated 300 handoffs (chart Leaking)" in leaking.out
    traces = list((scratch / "failures").glob("*.jsonl"))
    assert traces
    header = json.loads(traces[0].read_text().splitlines()[0])
    assert header["chart"] == "Leaking"
    replayed = ran["replay"]
    # Replay judges the safety properties: every recorded leak is a violation on its chart.
    assert replayed.status == 1, replayed.err
    for trace in traces:
        assert f"VIOLATED {trace}:" in replayed.out


def test_a_trace_on_a_chart_replays_only_on_a_chart_given(ran: dict[str, Ran]) -> None:
    result = ran["replay without chart"]
    assert result.status == 2
    assert "the trace was made on chart Leaking: give it with --chart MODULE:CLASS" in result.err
    # One chart of the trace's order, given explicitly, replays it: how a fix is checked.
    other = ran["replay other chart"]
    assert other.status != 2, other.err
    assert "the trace was made on chart" not in other.err


def test_the_fixed_chart_simulates_without_leaks(ran: dict[str, Ran]) -> None:
    result = ran["simulate fixed"]
    assert result.status == 0, result.err
    assert "  leaks         0" in result.out
    assert result.out.rstrip().endswith("OK: every handoff completed, no owner leaked")


def test_the_demo_runs_the_chart(ran: dict[str, Ran]) -> None:
    result = ran["demo"]
    assert result.status == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "FreesBoth (order SourceFirst)"
    assert "  completion: CANCELED" in lines  # reopened after success, then cleaned up
    assert not any(line.startswith("SOURCE_FIRST") for line in lines)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("no module", "handoff review: error: --chart: no module nowhere in "),
        ("no class", "handoff simulate: error: --chart: module engine has no Missing"),
        ("not a chart", "handoff demo: error: --chart: engine:NotAChart is not a chart"),
        ("raises", "handoff diagrams: error: --chart: importing exploding failed: RuntimeError: "
                   "the engine is not configured"),
        ("no colon", "handoff replay: error: --chart: expected MODULE:CLASS"),
    ],
)  # fmt: skip
def test_a_chart_that_cannot_be_had_is_one_error_line(
    ran: dict[str, Ran], name: str, says: str
) -> None:
    result = ran[name]
    assert result.status == 2
    assert result.out == ""
    assert result.err.count("\n") == 1, result.err
    assert result.err.startswith(says), result.err
    assert "Traceback" not in result.err


def test_the_scratch_directory_is_outside_the_repository(scratch: Path) -> None:
    assert not scratch.resolve().is_relative_to(REPO)
    assert Path(HANDOFF).is_file()

"""`handoff review --workers` and `handoff simulate --workers`: the real commands, run once each
in subprocesses side by side, on the shipped charts and on a chart module of the user's own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import run_handoff, run_side_by_side

_MODULE = """
from handoff import SourceFirstChart

S = SourceFirstChart


class Renamed(SourceFirstChart):
    title = "Renamed Chart"


class Leaking(SourceFirstChart):
    '''A failure while the destination is reserved cancels only the source.'''

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


_CONTRACTS = """
from handoff import RequestMemory, WorkerContract, WorkerReaction, WorkerReply, WorkerTask


class Raising(WorkerContract):
    name = "raising"

    def react(self, task, memory):
        raise RuntimeError("no such slot")


class Wrong(WorkerContract):
    name = "wrong"

    def react(self, task, memory):
        return "held"


class Maybe(WorkerContract):
    # A take may be done or failed: two answers, each explored by the review.
    name = "maybe"

    def react(self, task, memory):
        done = WorkerReaction(memory, WorkerReply.DONE)
        if task is WorkerTask.TAKE:
            return (done, WorkerReaction(memory, WorkerReply.FAILED))
        return done


class Moody(WorkerContract):
    # Keeps hidden state: the second answer to the same question differs.
    name = "moody"

    def __init__(self):
        self.calls = 0

    def react(self, task, memory):
        self.calls += 1
        reply = WorkerReply.DONE if self.calls % 2 else WorkerReply.NOOP
        return WorkerReaction(memory, reply)
"""

RUNS = {
    "forgetful": ("review", "--workers", "forgetful"),
    "forgetful-json": ("review", "--workers", "forgetful", "--format", "json"),
    "explain": ("review", "--workers", "forgetful", "--order", "SourceFirst", "--explain", "out"),
    "tombstone": ("review", "--workers", "tombstone", "--format", "markdown"),
    "tombstone-calm": ("review", "--workers", "tombstone", "--failures", "0"),
    "fifo": ("review", "--workers", "forgetful", "--fifo"),
    "chart-forgetful": ("review", "--workers", "forgetful", "--chart", "my_charts:Renamed"),
    "chart-tombstone": ("review", "--workers", "tombstone", "--chart", "my_charts:Renamed"),
    "leaking": ("review", "--workers", "tombstone", "--chart", "my_charts:Leaking"),
    "simulate-forgetful": ("simulate", "--workers", "forgetful", "--handoffs", "3000"),
    "simulate-tombstone": ("simulate", "--workers", "tombstone", "--handoffs", "3000"),
    "export": ("export", "promela", "--workers", "tombstone", "--out", "system.pml"),
    "export-shared": (
        "export",
        "promela",
        "--workers",
        "tombstone:1",
        "--concurrency",
        "2",
        "--fifo",
        "--faults",
        "duplicate",
        "--acknowledge",
        "on-reply",
        "--out",
        "shared.pml",
    ),
    "export-maybe": ("export", "promela", "--workers", "my_contracts:Maybe", "--out", "no.pml"),
    "export-alone": ("export", "promela", "--concurrency", "2", "--out", "alone.pml"),
    "raising": ("review", "--workers", "my_contracts:Raising"),
    "wrong": ("simulate", "--workers", "my_contracts:Wrong", "--handoffs", "10"),
    "moody": ("review", "--workers", "my_contracts:Moody"),
}


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    here = tmp_path_factory.mktemp("system")
    (here / "my_charts.py").write_text(_MODULE)
    (here / "my_contracts.py").write_text(_CONTRACTS)

    return run_side_by_side(RUNS, here)


def test_forgetful_workers_fail_showing_the_cancel_overtaking_its_submission(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    result = done["forgetful"]
    assert result.returncode == 1
    out = result.stdout
    assert (
        "W1 fails: the handoff completed CANCELED and, with nothing of it in flight, the source"
        in out
    )
    assert "W2 fails: the coordinator was told the destination's slot was freed" in out
    assert "the cancel #1 CancelSource reached the source before #0 SubmitPrefill" in out
    assert "the cancel #1 CancelDestination reached the destination before #0 Reserve" in out
    # Root cause first: W2 breaks in five moves, W1 once the late work has taken its slot.
    assert out.rstrip().splitlines()[-1].startswith("UNSAFE: W2 (SourceFirst, forgetful workers)")
    data = json.loads(done["forgetful-json"].stdout)
    assert done["forgetful-json"].returncode == 1
    # One schema for every world: the chart review's top level.
    assert list(data) == ["ok", "safe", "cut_short", "verdict", "orders"]
    assert data["cut_short"] is False
    assert [order["ok"] for order in data["orders"]] == [False, False]
    assert [order["world"] for order in data["orders"]] == ["system", "system"]
    assert data["orders"][0]["origin"] is None


def test_tombstone_workers_pass(done: dict[str, subprocess.CompletedProcess[str]]) -> None:
    # Tombstones leak nothing; what fails is the shipped cleanup's own race (W9).
    result = done["tombstone"]
    assert result.returncode == 1, result.stdout
    assert result.stdout.startswith("# Model review\n")
    assert "## SourceFirst, tombstone workers, messages delivered in any order" in result.stdout
    assert "| W9 | KV moves only into a slot its own request holds | FAIL |" in result.stdout
    w1 = "| W1 | no slot held for a CANCELED handoff; after SUCCESS only the destination's | PASS"
    assert w1 in result.stdout
    assert done["fifo"].returncode == 1
    assert "messages delivered in FIFO per worker" in done["fifo"].stdout
    assert done["fifo"].stdout.rstrip().splitlines()[-1].startswith("UNSAFE: W9 (SourceFirst")
    calm = done["tombstone-calm"]
    assert calm.returncode == 0, calm.stdout
    assert "OK: all 12 properties hold" in calm.stdout


def test_a_chart_of_ones_own_is_reviewed_in_its_system(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    assert done["chart-forgetful"].returncode == 1
    assert "Renamed Chart (SourceFirst), forgetful workers" in done["chart-forgetful"].stdout
    assert (
        done["chart-tombstone"]
        .stdout.rstrip()
        .splitlines()[-1]
        .startswith("UNSAFE: W9 (Renamed Chart, tombstone workers); reviewed in ")
    )
    # Tombstones cannot save a chart that never cancels a reservation: the slot stays held.
    leaking = done["leaking"]
    assert leaking.returncode == 1
    assert (
        "W1 fails: the handoff completed CANCELED and, with nothing of it in flight, the "
        "destination holds a KV slot" in leaking.stdout
    )


def test_explain_writes_the_sequence_diagram_and_traces_that_replay(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    here = Path(done["here"].stdout)
    out = here / "out"
    names = sorted(path.name for path in out.iterdir())
    assert names == [
        ".explain",
        *(
            f"source_first_forgetful_{key}{end}"
            for key in ("w1", "w2", "w9")
            for end in (".dot", ".jsonl", ".sequence.mmd", ".sequence.svg", ".state.mmd", ".svg")
        ),
        "test_source_first_forgetful_w1.py",
        "test_source_first_forgetful_w2.py",
        "test_source_first_forgetful_w9.py",
    ]
    assert "wrote " in done["explain"].stderr
    sequence = (out / "source_first_forgetful_w2.sequence.mmd").read_text()
    for participant in ("Coordinator", "Runtime", "Source", "Destination"):
        assert f"participant {participant}" in sequence
    assert "Runtime->>Source: 3. no. 1 CancelSource" in sequence
    assert "Runtime->>Source: 4. no. 0 SubmitPrefill" in sequence
    # What the coordinator issued is labelled (a bare `#` would start a Mermaid entity).
    assert "Coordinator-->>Runtime: no. 0 SubmitPrefill (in<br/>flight)" in sequence
    assert "Note over Coordinator: no. 2 Complete → canceled" in sequence
    assert "rect rgba(192, 57, 43, 0.18)" in sequence
    assert "it overtook it" in sequence
    # The same race as a picture, without a browser: the runtime hands the late submission
    # to the source after the cancel, in the order the moves happened.
    drawn = (out / "source_first_forgetful_w2.sequence.svg").read_text()
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", drawn)
    cancel, late = texts.index("3. #1 CancelSource"), texts.index("4. #0 SubmitPrefill")
    assert cancel < late
    assert {"Coordinator", "Runtime", "Source", "Destination"} <= set(texts)
    assert "by `handoff review` (kv-handoff " in drawn.splitlines()[0]
    # The state diagram draws the coordinator's path: start, the fault, the Noop.
    state = (out / "source_first_forgetful_w2.dot").read_text()
    assert "W2 fails in 3 calls" in state
    # The trace is the system run; replayed through the same system it breaks W2 again.
    for key in ("w1", "w2"):
        replayed = run_handoff("replay", f"out/source_first_forgetful_{key}.jsonl", cwd=here)
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr
        assert f"VIOLATED out/source_first_forgetful_{key}.jsonl:" in replayed.stdout
        assert f": {key.upper()}\n" in replayed.stdout
    # The pytest file fails on it, through the public API alone.
    test = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "out"],
        cwd=here,
        capture_output=True,
        text=True,
        check=False,
    )
    assert test.returncode == 1, test.stdout
    assert "3 failed" in test.stdout
    assert "W2 (no slot held after the coordinator was told it is freed) violated" in test.stdout


def _exported(done: dict[str, subprocess.CompletedProcess[str]], run: str, file: str) -> str:
    """The model the export `run` wrote into `file`, once it exited 0."""
    assert done[run].returncode == 0, done[run].stderr
    return (Path(done["here"].stdout) / file).read_text()


def test_export_writes_the_system_model_spin_checks(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    model = _exported(done, "export", "system.pml")
    wanted = ["the 'tombstone' contract", "ltl W4", "ltl W5", "#define HANDOFFS 1 "]
    assert [words for words in wanted if words not in model] == []


def test_the_exported_system_is_the_one_the_review_options_name(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    model = _exported(done, "export-shared", "shared.pml")
    # Two handoffs, a redelivered copy, acknowledged on reply, one tombstone kept.
    wanted = ["#define HANDOFFS 2 ", "#define COPIES 1", "#define ON_SEND 0", "ROLE 0 0 1 1 "]
    assert [words for words in wanted if words not in model] == []
    assert "the 'tombstone:1' contract" in model
    # A world Spin cannot mirror, or options that need --workers: one line, exit 2, no file.
    for name, words in [
        (
            "export-maybe",
            "export promela writes a contract answering one way only: give a deterministic "
            "contract",
        ),
        ("export-alone", "--concurrency is about the workers: give --workers too"),
    ]:
        result = done[name]
        assert result.returncode == 2, (name, result.stderr)
        assert result.stderr.strip().splitlines() == [f"handoff export: error: {words}"]
    here = Path(done["here"].stdout)
    assert not (here / "no.pml").exists()
    assert not (here / "alone.pml").exists()


def test_a_misbehaving_contract_is_one_line_and_exit_2(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    for name, words in [
        ("raising", "react(TAKE, UNKNOWN) raised RuntimeError: no such slot"),
        ("wrong", "react(TAKE, UNKNOWN) returned 'held'; expected a WorkerReaction"),
        ("moody", "react must be a pure function of task and memory"),
    ]:
        result = done[name]
        assert result.returncode == 2, (name, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (name, lines)
        assert f"worker contract {name!r}" in lines[0]
        assert words in lines[0]


def test_simulate_counts_the_worker_slots(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    forgetful, tombstone = done["simulate-forgetful"], done["simulate-tombstone"]
    assert forgetful.returncode == 1
    assert "worker slots  0 " not in forgetful.stdout
    # The default runtime, offline, acknowledges StartTransfer as it sends it, the rest on
    # the worker's reply, and the world says so.
    assert (
        "world         forgetful workers, messages delivered in any order, StartTransfer "
        "acknowledged on send, other work on the worker's reply, runtime offline\n"
        in forgetful.stdout
    )
    assert forgetful.stdout.rstrip().endswith("FAILED")
    # Tombstones leak nothing; what may break is only the shipped cleanup's transfer race
    # (W9), a few handoffs in ten thousand at this fault rate, and FAILED says so exactly then.
    broken = re.search(r"broken +(.*)\n", tombstone.stdout)
    assert broken is not None, tombstone.stdout
    assert re.fullmatch(r"none|W9 \d+", broken.group(1)), broken.group(1)
    assert tombstone.returncode == (0 if broken.group(1) == "none" else 1), tombstone.stdout
    assert "leaks         0\n" in tombstone.stdout
    assert "worker slots  0 still held\n" in tombstone.stdout
    assert "world         tombstone workers, messages" in tombstone.stdout


# -- the same commands in process, for what only they reach --------------------------------------


def test_review_workers_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from handoff.__main__ import main

    trace, explained = tmp_path / "first.jsonl", tmp_path / "explained"
    argv = ["review", "--workers", "forgetful", "--order", "DestinationFirst"]
    assert main([*argv, "--trace-out", str(trace), "--explain", str(explained)]) == 1
    captured = capsys.readouterr()
    assert "W2 fails: the coordinator was told the destination's slot was freed" in captured.out
    assert f"wrote the W2 counterexample to {trace}" in captured.err
    assert trace.read_text().startswith('{"handoff_id":')
    assert '"workers":{"contract":"forgetful"' in trace.read_text()
    written = sorted(path.name for path in explained.iterdir())
    assert "destination_first_forgetful_w1.sequence.mmd" in written
    # Once nothing fails, nothing is left that looks current.
    argv = ["review", "--workers", "tombstone", "--order", "DestinationFirst", "--failures", "0"]
    assert main([*argv, "--trace-out", str(trace), "--explain", str(explained)]) == 0
    captured = capsys.readouterr()
    # A trace left from the failing run would look like this run's counterexample.
    assert f"no counterexample: removed the stale {trace}" in captured.err
    assert not trace.exists()
    assert "removed stale" in captured.err
    assert sorted(path.name for path in explained.iterdir()) == [".explain"]
    assert main(["review", "--workers", "tombstone", "--failures", "0", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    chart = ["--chart", "handoff:SourceFirstChart", "--format", "markdown", "--failures", "0"]
    assert main(["review", "--workers", "tombstone", *chart]) == 0
    assert "## SourceFirst, tombstone workers" in capsys.readouterr().out


def test_review_workers_without_the_diagram_writer_says_so() -> None:
    import argparse

    from handoff import _cli
    from handoff._review import cli
    from handoff._system.workers import TOMBSTONE

    args = argparse.Namespace(
        workers=TOMBSTONE,
        fifo=False,
        chart=None,
        order=(),
        engine="explore",
        format="text",
        trace_out=None,
        explain=Path("anywhere"),
        safety_only=False,
    )
    with pytest.raises(_cli.CommandError, match="--explain needs the diagram writer"):
        cli.run(args, sys.stdout)


def test_simulate_workers_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    from handoff.__main__ import main

    assert main(["simulate", "--workers", "forgetful", "--handoffs", "2000", "--seed", "3"]) == 1
    assert "world         forgetful workers, messages" in capsys.readouterr().out
    assert main(["simulate", "--workers", "tombstone", "--handoffs", "2000", "--seed", "3"]) == 0
    assert "worker slots  0 still held\n" in capsys.readouterr().out

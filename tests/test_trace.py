"""Traces: the shipped examples replay, divergences are pinpointed, bad files are refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from handoff import HandoffAction, HandoffFact
from handoff.__main__ import main
from handoff._runs.simulation import SimulationConfig, simulate
from handoff._runs.trace import (
    Call,
    TraceError,
    read_trace,
    record,
    replay,
    write_trace,
    write_violations,
)

TRACES = sorted((Path(__file__).parent / "traces").glob("*.jsonl"))


def test_the_examples_cover_both_orders_success_cancel_reopen_and_rejections() -> None:
    names = {path.stem for path in TRACES}
    assert {
        "source_first_success",
        "destination_first_success",
        "destination_first_cancel",
        "source_first_reopen",
        "source_first_rejected",
    } <= names
    rejected = read_trace(Path(__file__).parent / "traces" / "source_first_rejected.jsonl")
    assert sum(call.expect_error is not None for call in rejected.calls) == 3


@pytest.mark.parametrize("path", TRACES, ids=lambda path: path.stem)
def test_each_example_replays_and_states_every_answer(path: Path) -> None:
    trace = read_trace(path)
    assert all(call.expect is not None or call.expect_error for call in trace.calls)
    assert replay(trace) is None


def test_a_changed_expectation_is_reported_at_its_line(tmp_path: Path) -> None:
    source = Path(__file__).parent / "traces" / "source_first_success.jsonl"
    lines = source.read_text().splitlines()
    # Line 6 (the DestinationReserved fact) issues StartTransfer #2; claim it issued nothing.
    assert '"DestinationReserved"' in lines[5]
    lines[5] = lines[5].split(',"expect":')[0] + ',"expect":[]}'
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    divergence = replay(read_trace(broken))
    assert divergence is not None
    assert divergence.line == 6
    assert divergence.chart_state == "destination_accepted"
    assert divergence.expected == "[]"
    assert "StartTransfer" in divergence.actual


def test_an_expected_error_that_does_not_happen_diverges(tmp_path: Path) -> None:
    trace = read_trace(Path(__file__).parent / "traces" / "source_first_success.jsonl")
    calls = list(trace.calls)
    calls[1] = Call(
        "outcome",
        action_id=calls[1].action_id,
        outcome=calls[1].outcome,
        expect_error="unknown handoff action",
    )
    path = tmp_path / "t.jsonl"
    write_trace(type(trace)(trace.handoff_id, trace.order, 0.0, tuple(calls)), path)
    divergence = replay(read_trace(path))
    assert divergence is not None
    assert (divergence.line, divergence.actual) == (3, "[]")


def test_record_then_write_then_read_round_trips(tmp_path: Path) -> None:
    trace = read_trace(Path(__file__).parent / "traces" / "source_first_reopen.jsonl")
    bare = type(trace)(
        trace.handoff_id,
        trace.order,
        trace.fallback_transfer_delay_ms,
        tuple(Call(c.kind, c.fact, c.action_id, c.outcome) for c in trace.calls),
    )
    recorded = record(bare)
    assert recorded == trace
    path = tmp_path / "again.jsonl"
    write_trace(recorded, path)
    assert (
        path.read_text()
        == (Path(__file__).parent / "traces" / "source_first_reopen.jsonl").read_text()
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty trace"),
        ("not json\n", ":1: not JSON"),
        (
            '{"handoff_id":"x","order":"SourceFirst","fallback_transfer_delay_ms":0}\n',
            ":1: handoff_id",
        ),
        (
            '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
            '"fallback_transfer_delay_ms":0.0}\n{"call":"jump"}\n',
            ":2: call must be",
        ),
        (
            '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
            '"fallback_transfer_delay_ms":0.0}\n{"call":"fact","fact":{"Exploded":{}}}\n',
            ":2: fact: $",
        ),
        (
            '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
            '"fallback_transfer_delay_ms":0.0}\n{"call":"start","call":"fact"}\n',
            ":2: repeated key 'call'",
        ),
        (
            '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
            '"fallback_transfer_delay_ms":-1}\n',
            ":1: fallback_transfer_delay_ms must be a finite, non-negative number, got -1",
        ),
        (
            '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
            '"fallback_transfer_delay_ms":1e400}\n',
            ":1: fallback_transfer_delay_ms must be a finite, non-negative number, got inf",
        ),
        (
            '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
            '"fallback_transfer_delay_ms":NaN}\n',
            ":1: NaN is not JSON",
        ),
        (
            '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
            '"fallback_transfer_delay_ms":0.0}\n{"call":"start","when":1}\n',
            ":2: unknown keys ['when']",
        ),
    ],
)
def test_a_malformed_trace_is_refused_with_its_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(TraceError, match=message.replace("[", r"\[").replace("$", r"\$")):
        read_trace(path)


def test_the_replay_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", *map(str, TRACES)]) == 0
    assert capsys.readouterr().out.count("OK ") == len(TRACES)
    broken = tmp_path / "broken.jsonl"
    lines = TRACES[0].read_text().splitlines()
    broken.write_text(
        "\n".join([*lines[:2], lines[2].replace('"expect":[', '"expect":[[]],"x":[')]) + "\n"
    )
    assert main(["replay", str(broken)]) == 1
    assert "UNREADABLE" in capsys.readouterr().out
    copy = tmp_path / "copy.jsonl"
    shutil.copy(TRACES[0], copy)
    lines = copy.read_text().splitlines()
    lines[1] = '{"call":"start","expect":[]}'
    copy.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(copy)]) == 1
    out = capsys.readouterr().out
    assert f"DIVERGED {copy}:2: start()" in out
    assert "chart state before the call: idle" in out


def test_recorded_failures_of_a_simulation_are_replayable_traces(tmp_path: Path) -> None:
    from test_simulation import ForgetfulCoordinator

    config = SimulationConfig(
        handoffs=200, concurrency=20, fault_rate=0.3, seed=2, record_calls=True
    )
    report = simulate(config, make=ForgetfulCoordinator)
    assert report.violations
    paths = write_violations(report.violations, tmp_path / "failures")
    assert len(paths) == len(report.violations)
    trace = read_trace(paths[0])
    assert trace.calls[0].kind == "start"
    # Replayed on the real coordinator, the forgetful one's premature Complete is the divergence.
    divergence = replay(trace)
    assert divergence is not None
    assert isinstance(divergence.call.fact, HandoffFact.Canceled | HandoffFact.TimedOut)
    assert "Complete" in divergence.expected
    assert HandoffAction.Complete.__name__ in divergence.expected

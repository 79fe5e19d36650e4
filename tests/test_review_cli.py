"""`handoff review` on the command line: tables, JSON, markdown, exit codes and traces.

`docs/model-review.md` is generated with every other generated file by `./dev generate`
(`tests/test_generated.py` fails when it is stale).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from review_mutants import MUTANTS
from support import assert_contains
from test_review_mutants import replay

from handoff import (
    HandoffActionOutcome,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    OutcomeKind,
    wire,
)
from handoff.__main__ import main
from handoff._compile.table import CompiledChart
from handoff._review import cli, report
from handoff._review.environment import HANDOFF_ID, Call, environment
from handoff._review.explore import Review, review, review_order
from handoff._system.properties import WorldKind, properties_of

REPORT = Path(__file__).resolve().parent.parent / "docs" / "model-review.md"
ORDERS = tuple(HandoffOrder)
_LEAK = next(mutant for mutant in MUTANTS if mutant.name == "NoDestinationCancel")


@pytest.fixture(scope="module")
def real() -> dict[HandoffOrder, Review]:
    return {order: review_order(order) for order in ORDERS}


# -- the command line ------------------------------------------------------------------


def test_review_exits_0_and_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review"]) == 0
    out = capsys.readouterr().out
    for order in ORDERS:
        assert f"{order.value}: " in out
    assert "configurations" in out
    assert "transitions explored in" in out
    assert out.count("PASS") == 2 * len(properties_of(WorldKind.CHART))
    assert "FAIL" not in out


@pytest.mark.parametrize("option", ["source-first", "destination-first"])
def test_review_of_one_order(capsys: pytest.CaptureFixture[str], option: str) -> None:
    assert main(["review", "--order", option, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert len(report["orders"]) == 1
    expected = "SourceFirst" if option == "source-first" else "DestinationFirst"
    assert report["orders"][0]["order"] == expected


def _failing(monkeypatch: pytest.MonkeyPatch, chart: CompiledChart) -> None:
    monkeypatch.setattr(cli, "review_order", lambda order, **_: review(chart))


def test_review_exits_1_with_the_counterexample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing(monkeypatch, _LEAK.compiled())
    assert main(["review", "--order", "source-first"]) == 1
    out = capsys.readouterr().out
    assert_contains(
        out,
        "FAIL",
        "S5 fails: CANCELED completion, yet the ReserveDestination was never canceled",
        "shortest counterexample (5 calls):",
        "   5. on_action_outcome(2, Applied)",
        "-> canceled",
        "issued #3 Complete",
    )


def test_trace_out_writes_a_replayable_counterexample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    chart = _LEAK.compiled()
    _failing(monkeypatch, chart)
    trace = tmp_path / "trace.jsonl"
    assert main(["review", "--order", "source-first", "--trace-out", str(trace)]) == 1
    # Root cause first: Q1 breaks at the failure that begins cleanup, before S5 at completion.
    assert f"wrote the Q1 counterexample to {trace}" in capsys.readouterr().err
    header, *calls = [json.loads(line) for line in trace.read_text().splitlines()]
    assert header == {
        "order": "SourceFirst",
        "chart": "NoDestinationCancel",  # a chart of its own: the trace names it
        "handoff_id": str(HANDOFF_ID),
        "fallback_transfer_delay_ms": 0.0,
    }
    *calls, end = calls
    assert end == {"end": {"calls": len(calls)}}
    # Each call expects the SPEC's answer (the shipped chart's), so a fixed chart replays OK.
    assert all(("expect" in call) != ("expect_error" in call) for call in calls)
    plain = [{k: v for k, v in call.items() if not k.startswith("expect")} for call in calls]
    assert plain[0] == {"call": "start"}
    assert plain[-1]["call"] == "fact"
    assert "Failed" in plain[-1]["fact"]
    assert calls[2]["call"] == "fact"
    # An ordinary timing shows this run as well as the review's vanishing bandwidth does.
    assert calls[2]["fact"]["SourceHeld"]["transfer_timing"] == {
        "mode": "destination_missing",
        "full_prompt_tokens": 1000,
        "kv_bytes_per_token": 100000,
        "bandwidth_gb_s": 50.0,
    }
    assert _id(header) == HANDOFF_ID
    steps = replay(chart, [_read_call(call) for call in plain])
    expected = review(chart).verdict("Q1").counterexample
    assert expected is not None
    assert steps == expected.steps


def test_trace_out_without_a_failure_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    assert main(["review", "--order", "source-first", "--trace-out", str(trace)]) == 0
    assert not trace.exists()
    assert "no counterexample to write" in capsys.readouterr().err


def test_trace_out_without_a_failure_removes_a_stale_trace_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace, notes = tmp_path / "trace.jsonl", tmp_path / "notes.txt"
    _failing(monkeypatch, _LEAK.compiled())
    assert main(["review", "--order", "source-first", "--trace-out", str(trace)]) == 1
    monkeypatch.undo()
    notes.write_text("my own notes\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["review", "--order", "source-first", "--trace-out", str(trace)]) == 0
    assert not trace.exists()
    assert f"removed the stale {trace}" in capsys.readouterr().err
    assert main(["review", "--order", "source-first", "--trace-out", str(notes)]) == 0
    assert notes.read_text(encoding="utf-8") == "my own notes\n"
    assert f"{notes} is not a trace, so it was left as it is" in capsys.readouterr().err


def test_every_outcome_and_fact_has_a_trace_form() -> None:
    env = environment()
    forms = [report.call_json(call) for call in (env.start, *env.facts, *env.outcomes[3])]
    assert [form["call"] for form in forms[:2]] == ["start", "fact"]
    assert forms[-1] == {"call": "outcome", "id": 3, "outcome": {"Failed": "x"}}
    assert forms[-2] == {"call": "outcome", "id": 3, "outcome": "Noop"}
    foreign = forms[len(env.facts)]
    assert foreign == {"call": "fact", "fact": {"Failed": {"handoff_id": str(uuid.UUID(int=2))}}}
    calls = (env.start, *env.facts, *env.outcomes[3])
    for call, form in zip(calls, forms, strict=True):
        # JSON has no NaN or infinity: those bandwidths are written as null, like serde_json.
        if "NaN" not in call.label and "inf" not in call.label:
            assert _read_call(form) == call


def test_markdown_is_deterministic_and_has_no_timings(
    real: dict[HandoffOrder, Review],
) -> None:
    first = report.markdown(list(real.values()))
    again = report.markdown([review_order(order) for order in ORDERS])
    assert first == again
    assert " s)" not in first
    assert "explored in" not in first


def _id(header: dict[str, Any]) -> HandoffId:
    return HandoffId(uuid.UUID(header["handoff_id"]))


def _read_call(form: dict[str, Any]) -> Call:
    env = environment()
    if form["call"] == "start":
        return env.start
    if form["call"] == "outcome":
        outcome = form["outcome"]
        if isinstance(outcome, dict):
            ((kind, reason),) = outcome.items()
            value = HandoffActionOutcome.failed(reason)
            assert kind == "Failed"
        else:
            value = HandoffActionOutcome(OutcomeKind(outcome))
        action_id: int = form["id"]
        return next(call for call in env.outcomes[action_id] if call.outcome == value)
    fact = _read_fact(form["fact"])
    # Not one of the environment's payloads: an ordinary one the review showed in its place.
    return next((call for call in env.facts if call.fact == fact), Call.of_fact(fact))


def _read_fact(form: dict[str, Any]) -> HandoffFact:
    # A fact's trace form is its wire form, whichever kind of fact it is.
    fact: HandoffFact = wire.loads(json.dumps(form), HandoffFact)
    return fact

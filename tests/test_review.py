"""The model review: the real charts pass, every mutant is caught, the CLI says so.

`docs/model-review.md` is generated with the other generated files by `handoff diagrams`
(`tests/test_diagrams.py` fails when it is stale).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import chart_mutation
import pytest
from review_mutants import MUTANTS, Mutant

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    KvTransferTimingMode,
    OutcomeKind,
)
from handoff.__main__ import main
from handoff._chart import CHARTS
from handoff._review import cli
from handoff._review.environment import HANDOFF_ID, Call, Watch, environment, observe
from handoff._review.explore import OrderReview, replay, review, review_order
from handoff._review.properties import PROPERTIES
from handoff._table import CompiledChart, compile_chart, compiled

ORDERS = tuple(HandoffOrder)


@pytest.fixture(scope="module")
def real() -> dict[HandoffOrder, OrderReview]:
    return {order: review_order(order) for order in ORDERS}


@pytest.fixture(scope="module")
def mutants() -> dict[str, OrderReview]:
    return {mutant.chart.__name__: review(compile_chart(mutant.chart)) for mutant in MUTANTS}


# -- the real charts -------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_the_real_charts_pass_every_property(
    real: dict[HandoffOrder, OrderReview], order: HandoffOrder
) -> None:
    result = real[order]
    assert [verdict.prop.key for verdict in result.verdicts] == [prop.key for prop in PROPERTIES]
    assert result.failures() == ()
    assert result.configurations > 50
    assert result.transitions > 40 * result.configurations


@pytest.mark.parametrize("order", ORDERS)
def test_every_monitor_actually_looked(
    real: dict[HandoffOrder, OrderReview], order: HandoffOrder
) -> None:
    # A property that checked nothing would pass vacuously.
    for verdict in real[order].verdicts:
        assert verdict.checked > 0, verdict.prop.key


@pytest.mark.parametrize("order", ORDERS)
def test_the_longest_run_is_a_reopened_success(
    real: dict[HandoffOrder, OrderReview], order: HandoffOrder
) -> None:
    # Five steps, Complete, the reopened CancelDestination and its Complete.
    assert real[order].verdict("Bound").checked == 8


# -- the mutants -----------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_a_mutant_without_broken_rules_is_its_real_chart(order: HandoffOrder) -> None:
    # Mutants copy what they do not break from the real charts: the copy must be exact.
    chart = CHARTS[order]
    same = chart_mutation.mutant(chart, f"Same{chart.__name__}", "")
    assert not {id(state) for state in same.states} & {id(state) for state in chart.states}
    table, real = compile_chart(same), compiled(order)
    assert table.states == real.states
    assert list(table.steps()) == list(real.steps())
    assert (table.order, table.rows, table.complete) == (real.order, real.rows, real.complete)
    assert table.name == f"Same{chart.__name__}"


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.chart.__name__)
def test_each_mutant_really_differs_from_its_real_chart(mutant: Mutant) -> None:
    assert compile_chart(mutant.chart).rows != compiled(mutant.chart.order).rows


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.chart.__name__)
def test_each_mutant_is_rejected_by_the_expected_property(
    mutants: dict[str, OrderReview], mutant: Mutant
) -> None:
    result = mutants[mutant.chart.__name__]
    verdict = result.verdict(mutant.caught_by)
    assert not verdict.holds
    assert verdict.violations > 0
    if mutant.last_call is None:
        assert verdict.counterexample is None
        assert any(mutant.says in note for note in verdict.notes), verdict.notes
        return
    example = verdict.counterexample
    assert example is not None
    assert mutant.says in example.finding
    last = example.steps[-1]
    assert last.call.label == mutant.last_call
    assert last.error is None
    if mutant.last_issued is None:
        assert last.issued == ()
    else:
        assert type(last.issued[-1].action).__name__ == mutant.last_issued


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.chart.__name__)
def test_a_counterexample_replays_to_the_same_steps(
    mutants: dict[str, OrderReview], mutant: Mutant
) -> None:
    example = mutants[mutant.chart.__name__].verdict(mutant.caught_by).counterexample
    if example is not None:
        calls = [step.call for step in example.steps]
        assert replay(compile_chart(mutant.chart), calls) == example.steps


def test_a_counterexample_is_a_shortest_one(mutants: dict[str, OrderReview]) -> None:
    # By hand: the slot leaks as soon as the destination was asked to reserve and a failure
    # arrives; nothing shorter reaches a Complete with ReserveDestination issued.
    example = mutants["NoDestinationCancel"].verdict("S5").counterexample
    assert example is not None
    assert [step.call.label for step in example.steps] == [
        "start()",
        "on_action_outcome(0, Submitted)",
        "on_fact(SourceHeld(valid timing))",
        "on_fact(Failed)",
        "on_action_outcome(2, Applied)",
    ]
    assert [step.state for step in example.steps] == [
        "prefill_submitting",
        "prefill_running",
        "destination_reserving",
        "cancelling_source",
        "canceled",
    ]


def test_complete_twice_also_breaks_the_bound(mutants: dict[str, OrderReview]) -> None:
    # Each terminal fact issues another Complete, so runs never end: they are cut off and
    # the review says it could not explore everything.
    bound = mutants["CompleteTwice"].verdict("Bound")
    assert not bound.holds
    assert bound.counterexample is not None
    assert "cut off" in bound.counterexample.finding


def test_the_shortest_completing_twice_run_is_two_terminal_facts(
    mutants: dict[str, OrderReview],
) -> None:
    example = mutants["CompleteTwice"].verdict("S4").counterexample
    assert example is not None
    assert [step.call.label for step in example.steps] == ["on_fact(Failed)"] * 2


# -- S6, S7 and Errors: what no chart can break, but an adapter can ---------------------


def test_a_refusal_that_changes_the_coordinator_breaks_s6(monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = HandoffCoordinatorCore._refusal

    def leaky(self: HandoffCoordinatorCore, *args: Any) -> Exception:
        self._tokens = 7
        return refusal(self, *args)

    monkeypatch.setattr(HandoffCoordinatorCore, "_refusal", leaky)
    result = review_order(HandoffOrder.SOURCE_FIRST)
    verdict = result.verdict("S6")
    assert not verdict.holds
    assert verdict.counterexample is not None
    (step,) = verdict.counterexample.steps
    assert step.call.label == "on_fact(SourceHeld(valid timing))"
    assert step.error is not None
    assert "source held before prefill submission was acknowledged" in step.error


def test_an_exception_other_than_handoff_error_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: HandoffCoordinatorCore, *args: Any) -> float:
        raise ZeroDivisionError("delay")

    monkeypatch.setattr(HandoffCoordinatorCore, "_checked_delay", broken)
    verdict = review_order(HandoffOrder.SOURCE_FIRST).verdict("Errors")
    assert not verdict.holds
    assert verdict.counterexample is not None
    assert verdict.counterexample.finding == "ZeroDivisionError: delay"
    assert verdict.counterexample.steps[-1].error == "ZeroDivisionError: delay"


def test_s7_catches_an_id_that_skips() -> None:
    issued = [IssuedHandoffAction(HandoffActionId(5), HandoffAction.SubmitPrefill(HANDOFF_ID))]
    _, findings = observe(Watch(), environment().start, issued)
    assert ("S7", "SubmitPrefill got id 5, expected 0") in findings


def test_the_monitors_see_only_what_the_environment_did() -> None:
    # An ActivateDestination out of nowhere breaks S1, whatever a coordinator believes.
    start = environment().start
    issued = [
        IssuedHandoffAction(HandoffActionId(0), HandoffAction.ActivateDestination(HANDOFF_ID))
    ]
    _, findings = observe(Watch(), start, issued)
    assert ("S1", "ActivateDestination issued before a scheduled transfer was reported done") in (
        findings
    )


def test_the_overflowing_reservation_is_accepted_only_where_it_is_not_yet_used() -> None:
    # The environment's unusable reservation must really overflow, and its timing be valid.
    env = environment()
    held, reserved = env.facts[0].fact, env.facts[3].fact
    assert isinstance(held, HandoffFact.SourceHeld)
    assert isinstance(reserved, HandoffFact.DestinationReserved)
    timing = held.transfer_timing
    assert timing.mode is KvTransferTimingMode.DESTINATION_MISSING
    assert timing.delay_ms(reserved.transferable_prompt_tokens) == float("inf")
    assert timing.full_prompt_delay_ms() == 1e298


# -- the command line ------------------------------------------------------------------


def test_review_exits_0_and_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review"]) == 0
    out = capsys.readouterr().out
    for order in ORDERS:
        assert f"{order.value}: " in out
    assert "configurations" in out
    assert "transitions explored in" in out
    assert out.count("PASS") == 2 * len(PROPERTIES)
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
    monkeypatch.setattr(cli, "review_order", lambda order: review(chart))


def test_review_exits_1_with_the_counterexample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing(monkeypatch, compile_chart(MUTANTS[1].chart))
    assert main(["review", "--order", "source-first"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "S5 fails: ReserveDestination #1 was never canceled (slot leaked)" in out
    assert "shortest counterexample (5 calls):" in out
    assert "   5. on_action_outcome(2, Applied)" in out
    assert "-> canceled" in out
    assert "issued #3 Complete" in out


def test_trace_out_writes_a_replayable_counterexample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mutant = MUTANTS[1]
    chart = compile_chart(mutant.chart)
    _failing(monkeypatch, chart)
    trace = tmp_path / "trace.jsonl"
    assert main(["review", "--order", "source-first", "--trace-out", str(trace)]) == 1
    assert f"wrote the S5 counterexample to {trace}" in capsys.readouterr().out
    header, *calls, end = [json.loads(line) for line in trace.read_text().splitlines()]
    assert end == {"end": {"calls": len(calls)}}
    assert header == {
        "order": "SourceFirst",
        "handoff_id": str(HANDOFF_ID),
        "fallback_transfer_delay_ms": 0.0,
    }
    assert calls[0] == {"call": "start"}
    assert calls[-1] == {"call": "outcome", "id": 2, "outcome": "Applied"}
    assert calls[2]["call"] == "fact"
    assert calls[2]["fact"]["SourceHeld"]["transfer_timing"] == {
        "mode": "destination_missing",
        "full_prompt_tokens": 1,
        "kv_bytes_per_token": 1,
        "bandwidth_gb_s": 1e-304,
    }
    steps = replay(chart, [_read_call(call) for call in calls], handoff_id=_id(header))
    expected = review(chart).verdict("S5").counterexample
    assert expected is not None
    assert steps == expected.steps


def test_trace_out_without_a_failure_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    assert main(["review", "--order", "source-first", "--trace-out", str(trace)]) == 0
    assert not trace.exists()
    assert "no counterexample to write" in capsys.readouterr().out


def test_every_outcome_and_fact_has_a_trace_form() -> None:
    env = environment()
    forms = [cli.call_json(call) for call in (env.start, *env.facts, *env.outcomes[3])]
    assert [form["call"] for form in forms[:2]] == ["start", "fact"]
    assert forms[-1] == {"call": "outcome", "id": 3, "outcome": {"Failed": "x"}}
    assert forms[-2] == {"call": "outcome", "id": 3, "outcome": "Noop"}
    foreign = forms[len(env.facts)]
    assert foreign == {"call": "fact", "fact": {"Failed": {"handoff_id": str(uuid.UUID(int=2))}}}
    for form in forms:
        assert _read_call(form) in (env.start, *env.facts, *env.outcomes[3])


def test_markdown_is_deterministic_and_has_no_timings(
    real: dict[HandoffOrder, OrderReview],
) -> None:
    first = cli.markdown(list(real.values()))
    again = cli.markdown([review_order(order) for order in ORDERS])
    assert first == again
    assert " s)" not in first
    assert "explored in" not in first


# -- reading a trace back (a wire module will own this) ---------------------------------


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
    return next(call for call in env.facts if call.fact == fact)


def _read_fact(form: dict[str, Any]) -> HandoffFact:
    ((name, fields),) = form.items()
    handoff_id = HandoffId(uuid.UUID(fields["handoff_id"]))
    if name == "SourceHeld":
        timing = fields["transfer_timing"]
        return HandoffFact.SourceHeld(
            handoff_id,
            HandoffTransferTiming(
                KvTransferTimingMode(timing["mode"]),
                timing["full_prompt_tokens"],
                timing["kv_bytes_per_token"],
                timing["bandwidth_gb_s"],
                timing.get("kv_bytes_per_request", 0),
            ),
        )
    if name == "DestinationReserved":
        return HandoffFact.DestinationReserved(handoff_id, fields["transferable_prompt_tokens"])
    kind: Any = getattr(HandoffFact, name)
    fact: HandoffFact = kind(handoff_id)
    return fact


# The cells each mutant breaks, and no others: restated parts of a broken event cannot drift.
BROKEN_CELLS = {
    "ReleaseBeforeActivation": {
        ("transferring", "transfer_completed"),
        ("activating", "destination_activated"),
    },
    "NoDestinationCancel": {
        ("destination_reserving", "terminated"),
        ("destination_reserving", "action_failed"),
        ("destination_accepted", "terminated"),
        ("destination_accepted", "action_failed"),
    },
    "NoReopenAfterSuccess": {("succeeded", "terminated")},
    "TransferBeforeReservation": {("destination_reserving", "destination_reserved")},
    "CompleteTwice": {("canceled", "terminated")},
    "ActivateBeforeTransferCompleted": {
        ("transfer_starting", "transfer_scheduled"),
        ("transferring", "transfer_completed"),
    },
    "NoSourceCancelMidTransfer": {
        ("transferring", "terminated"),
        ("transferring", "action_failed"),
    },
    "SourceHeldBeforeSubmission": {("prefill_submitting", "source_held")},
    "LostSourceCancel": {("cancelling_both", "source_canceled")},
    "DeadTransition": {("idle", "prefill_submitted")},
}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.chart.__name__)
def test_each_mutant_breaks_only_its_own_cells(mutant: Mutant) -> None:
    broken, real = compile_chart(mutant.chart), compile_chart(CHARTS[mutant.chart.order])
    assert broken.states == real.states
    differing = {
        (broken.states[a.source], a.event.value)
        for a, b in zip(broken.steps(), real.steps(), strict=True)
        if (a.target, a.refusal, a.ignored, a.checks, a.effects)
        != (b.target, b.refusal, b.ignored, b.checks, b.effects)
    }
    assert differing == BROKEN_CELLS[mutant.chart.__name__]

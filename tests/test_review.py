"""The model review of the real charts, its monitors, and the chart-text rules it relies on.

The mutant suite is in `test_review_mutants`, the command line in `test_review_cli`.
"""

from __future__ import annotations

import gc
import types
from typing import Any

import pytest
from statemachine import State
from statemachine.exceptions import InvalidDefinition

from handoff import (
    AnyHandoffAction,
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffOrder,
    IssuedHandoffAction,
    KvTransferTimingMode,
)
from handoff._chart.base import HandoffChart, refused
from handoff._chart.vocabulary import Refusal
from handoff._review.environment import HANDOFF_ID, Call, Rules, environment
from handoff._review.explore import Review, review_order
from handoff._review.judge import RunJudge
from handoff._review.monitors import observe
from handoff._review.watch import Watch
from handoff._runs.replay import CallResult
from handoff._system.properties import Key, WorldKind, properties_of
from handoff._values.values import HandoffOrder as Order

ORDERS = tuple(HandoffOrder)
_SF = Rules(HandoffOrder.SOURCE_FIRST)
_A = HandoffAction


@pytest.fixture(scope="module")
def real() -> dict[HandoffOrder, Review]:
    return {order: review_order(order) for order in ORDERS}


# -- the real charts -------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_the_real_charts_pass_every_property(
    real: dict[HandoffOrder, Review], order: HandoffOrder
) -> None:
    result = real[order]
    assert [verdict.prop.key for verdict in result.verdicts] == [
        prop.key for prop in properties_of(WorldKind.CHART)
    ]
    assert result.failures() == ()
    assert result.configurations > 50
    assert result.transitions > 40 * result.configurations


def test_a_review_leaves_no_call_frames_for_the_cyclic_collector() -> None:
    # A refusal the review keeps to judge must not keep the frames of the call it refused:
    # they would form a cycle through the frame that caught it, and the review would leave
    # its graph (over 100,000 objects for the shipped chart) for the collector to find.
    review_order(Order.SOURCE_FIRST)  # what a first review builds once (the start-up table)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        found = review_order(Order.SOURCE_FIRST)
        gc.collect()
        kept = [
            item for item in gc.garbage if isinstance(item, types.FrameType | types.TracebackType)
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert found.holds
    assert not kept, f"{len(kept):,} frames and tracebacks left for the collector"


@pytest.mark.parametrize("order", ORDERS)
def test_every_monitor_actually_looked(
    real: dict[HandoffOrder, Review], order: HandoffOrder
) -> None:
    # A property that checked nothing would pass vacuously.
    for verdict in real[order].verdicts:
        assert verdict.checked > 0, verdict.prop.key


@pytest.mark.parametrize("order", ORDERS)
def test_the_longest_run_is_a_reopened_success(
    real: dict[HandoffOrder, Review], order: HandoffOrder
) -> None:
    # Five steps, Complete, the reopened CancelDestination and its Complete.
    assert "the longest issued 8 of at most 9 actions" in real[order].verdict("Bound").summary


def test_the_documented_payload_exception_is_reported_for_destination_first_only(
    real: dict[HandoffOrder, Review],
) -> None:
    assert real[HandoffOrder.SOURCE_FIRST].verdict(Key.PAYLOADS).notes == ()
    (note,) = real[HandoffOrder.DESTINATION_FIRST].verdict(Key.PAYLOADS).notes
    assert "the documented exception, taken in 1 configuration: a " in note


def test_coverage_explains_the_cells_no_run_reaches(real: dict[HandoffOrder, Review]) -> None:
    # In these states every action issued was already acknowledged: no failure can arrive.
    (note,) = real[HandoffOrder.SOURCE_FIRST].verdict(Key.COVERAGE).notes
    # Said as a fact about the chart beside its PASS, not as a problem.
    assert note.startswith("every transition runs (not a gap); no run can reach these 3 table")
    assert note.endswith(
        "prefill_running action_failed, destination_accepted action_failed, "
        "transferring action_failed"
    )


# -- S6 and Errors: what an adapter can break --------------------------------------------


def test_a_refusal_that_changes_the_coordinator_breaks_s6(monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = HandoffCoordinatorCore._refusal

    def leaky(self: HandoffCoordinatorCore, *args: Any) -> Exception:
        self._now.tokens = 7  # a refusal that changes the committed progress in place
        return refusal(self, *args)

    monkeypatch.setattr(HandoffCoordinatorCore, "_refusal", leaky)
    verdict = review_order(HandoffOrder.SOURCE_FIRST).verdict("S6")
    assert not verdict.holds
    assert verdict.counterexample is not None
    (step,) = verdict.counterexample.steps
    assert step.label == "on_fact(SourceHeld(valid timing))"
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


# -- the monitors, one call at a time ------------------------------------------------------


def _issued(action_id: int, action: AnyHandoffAction) -> list[IssuedHandoffAction]:
    return [IssuedHandoffAction(HandoffActionId(action_id), action)]


def test_s7_catches_an_id_that_skips() -> None:
    seen = observe(_SF, Watch(), Call.start(), _issued(5, _A.SubmitPrefill(HANDOFF_ID)))
    assert (Key.IDS, "SubmitPrefill got id 5, expected 0") in seen.findings


def test_the_monitors_see_only_what_the_environment_did() -> None:
    # An ActivateDestination out of nowhere breaks S1, whatever a coordinator believes.
    seen = observe(_SF, Watch(), Call.start(), _issued(0, _A.ActivateDestination(HANDOFF_ID)))
    finding = "ActivateDestination issued before a scheduled transfer was reported done"
    assert (Key.ACTIVATE_AFTER_TRANSFER, finding) in seen.findings
    # start() was due to issue SubmitPrefill in that very call.
    assert any(key is Key.PROMPT and text for key, text in seen.findings)


def test_a_refusal_with_another_events_phrase_breaks_r1() -> None:
    call = Call.of_fact(HandoffFact.TransferCompleted(HANDOFF_ID))
    error = Refusal.OWNERSHIP_NOT_ACCEPTED.error(
        "destination reserved before ownership was accepted"
    )
    seen = observe(_SF, Watch(), call, error=error)
    ((key, finding),) = [(k, f) for k, f in seen.findings if f]
    assert key is Key.FACTS
    assert "'transfer completed before it was scheduled'" in finding
    assert seen.watch == Watch()


def test_a_real_run_breaks_nothing_and_a_linear_judge_finds_a_break() -> None:
    coordinator = HandoffCoordinatorCore(HANDOFF_ID, Order.SOURCE_FIRST)
    judge = RunJudge(_SF)
    env = environment()
    run = [env.start, env.outcomes[0][0], env.facts[0], env.outcomes[1][1], env.facts[6]]
    for call in run:
        assert list(judge.see(call, CallResult.of(call, coordinator))) == []
    wrong = observe(_SF, Watch(), env.start, _issued(0, _A.ReserveDestination(HANDOFF_ID)))
    keys = {key for key, text in wrong.findings if text is not None}
    assert keys == {Key.EACH_ACTION, Key.PROMPT}


def test_the_environment_offers_every_kind_of_unusable_payload() -> None:
    env = environment()
    held = [call.fact for call in env.facts if isinstance(call.fact, HandoffFact.SourceHeld)]
    bandwidths = [str(fact.transfer_timing.bandwidth_gb_s) for fact in held]
    assert {"nan", "inf", "-inf", "-1.0"} <= set(bandwidths)
    overflowing = [fact.transfer_timing for fact in held[1:] if fact.transfer_timing.mode is
                   KvTransferTimingMode.FULL_PROMPT]  # fmt: skip
    assert any(timing.full_prompt_delay_ms() == float("inf") for timing in overflowing)
    (usable,) = [call for call in env.facts if call.label == "on_fact(SourceHeld(valid timing))"]
    reserved = [call.fact for call in env.facts if isinstance(call.fact,
                HandoffFact.DestinationReserved)]  # fmt: skip
    assert isinstance(usable.fact, HandoffFact.SourceHeld)
    timing = usable.fact.transfer_timing
    assert timing.full_prompt_delay_ms() == 1e298
    assert timing.delay_ms(reserved[1].transferable_prompt_tokens) == float("inf")


def test_an_outcome_call_is_labelled_as_its_trace_would_say() -> None:
    call = Call.of_outcome(HandoffActionId(3), HandoffActionOutcome.failed("x"))
    assert str(call) == 'on_action_outcome(3, Failed("x"))'


# -- chart-text rules, refused when a chart is defined -------------------------------------


def _chart(**rules: Any) -> type[HandoffChart]:
    idle, busy = State("idle", initial=True), State("busy")
    done = State("done", enter="complete_canceled")
    namespace = {"order": Order.SOURCE_FIRST, "idle": idle, "busy": busy, "done": done}
    namespace["start"] = idle.to(busy, on="submit_prefill")
    namespace["terminated"] = busy.to(done)
    for event, build in rules.items():
        namespace[event] = build(idle, busy)
    return type("TextRules", (HandoffChart,), namespace)


def test_a_chart_obeying_the_text_rules_is_defined() -> None:
    chart = _chart(
        source_held=lambda idle, busy: busy.to(
            busy, validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
            on="start_transfer", internal=True,
        ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle)
    )  # fmt: skip
    assert chart.__name__ == "TextRules"


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ({"destination_reserved": lambda idle, busy: refused(Refusal.TRANSFER_NOT_SCHEDULED, idle)},
         "TRANSFER_NOT_SCHEDULED belongs to 'transfer_completed'"),
        ({"ownership_accepted": lambda idle, busy: refused(Refusal.MISMATCHED_OUTCOME, busy)},
         "MISMATCHED_OUTCOME belongs to 'mismatched_outcome'"),
        ({"source_held": lambda idle, busy: busy.to(busy, internal=True, validators=[
            "refuse_prefill_not_submitted", "transfer_timing_is_valid"])},
         "a refusal refuses and does nothing else"),
        ({"source_held": lambda idle, busy: busy.to(busy, internal=True, on="start_transfer",
            validators=["transfer_delay_is_valid", "transfer_timing_is_valid"])},
         "run out of the contract's order"),
        ({"destination_reserved": lambda idle, busy: busy.to(busy, internal=True,
            validators="transfer_timing_is_valid")},
         "transfer_timing_is_valid judges no payload of ['destination_reserved']"),
        ({"transfer_scheduled": lambda idle, busy: busy.to(busy, internal=True,
            on="start_transfer")},
         "StartTransfer is issued without transfer_delay_is_valid"),
    ],
)  # fmt: skip
def test_a_chart_breaking_a_text_rule_is_refused_when_defined(
    rules: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidDefinition, match="TextRules") as refusal:
        _chart(**rules)
    assert says in str(refusal.value)


def _payloads(review: Review, key: str) -> list[tuple[str, object]]:
    example = review.verdict(key).counterexample
    assert example is not None
    found: list[tuple[str, object]] = []
    for step in example.steps:
        fact = step.call.fact if step.call is not None else None
        if isinstance(fact, HandoffFact.SourceHeld):
            found.append(("bandwidth", fact.transfer_timing.bandwidth_gb_s))
        elif isinstance(fact, HandoffFact.DestinationReserved):
            found.append(("tokens", fact.transferable_prompt_tokens))
    return found


def test_a_counterexample_shows_ordinary_payloads_where_they_show_the_same_run() -> None:
    from charts.discipline import HeldRecordedAgain

    from handoff._review.explore import review_chart

    found = review_chart(HeldRecordedAgain)
    # S6 and R1 break the same way with a usual timing and reservation: those are shown.
    assert _payloads(found, "S6") == [("bandwidth", 50.0), ("bandwidth", 50.0)]
    r1 = _payloads(found, "R1")
    assert r1[0] == ("bandwidth", 50.0)
    assert r1[-1] == ("tokens", 1000)
    assert "DestinationReserved(1000)" in str(found.verdict("R1").counterexample.finding)  # type: ignore[union-attr]
    # P1 needs the vanishing bandwidth: only with it does the largest reservation overflow.
    assert _payloads(found, "P1")[0] == ("bandwidth", 1e-304)

"""The mutant suite: every broken chart is rejected by the property meant to catch it.

Each mutant names its property and the shape of the shortest counterexample, worked out by
hand from the broken rule (see `review_mutants`); controls change only cells no run reaches.
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from review_mutants import CONTROLS, MUTANTS, Mutant
from support import SessionCache

from handoff import HandoffOrder
from handoff._chart.shipped import CHARTS
from handoff._compile.table import CompiledChart, compile_chart, compiled
from handoff._coordinator import probe as probe
from handoff._review.environment import HANDOFF_ID, Call
from handoff._review.explore import Review
from handoff._review.verdict import TraceStep
from handoff._system.properties import Key, WorldKind, properties_of

_CHART_MUTANTS = [m for m in MUTANTS if m.adapter is None]
_BY_NAME = {mutant.name: mutant for mutant in (*MUTANTS, *CONTROLS)}


@attrs.frozen
class _Reviews:
    """Each mutant's review, made on first use by the session's first worker asking, and
    kept for every other test (tests/test_spin.py and tests/test_explain.py judge them too)."""

    cache: SessionCache

    def __getitem__(self, name: str) -> Review:
        return _BY_NAME[name].shared_review(self.cache)


@pytest.fixture
def reviews(session_cache: SessionCache) -> _Reviews:
    return _Reviews(session_cache)


def _each(mutants: Sequence[Mutant]) -> list[Any]:
    """One parameter per mutant: under `--dist loadfile` the suite's scheduler (conftest.py)
    keeps a mutant's tests, and its review, on one worker, and spreads the mutants over the
    workers; the `xdist_group` says the same to `--dist loadgroup`."""
    return [
        pytest.param(mutant, id=mutant.name, marks=pytest.mark.xdist_group(mutant.name))
        for mutant in mutants
    ]


def replay(chart: CompiledChart, calls: Sequence[Call]) -> tuple[TraceStep, ...]:
    """Run `calls` on a fresh coordinator for `chart`, recording each call's effect."""
    coordinator = probe.for_table(HANDOFF_ID, chart)
    steps = []
    for call in calls:
        try:
            issued, error = tuple(call.send(coordinator)), None
        except Exception as raised:  # a crash is part of the story a counterexample tells
            issued, error = (), f"{type(raised).__name__}: {raised}"
        steps.append(TraceStep(call, coordinator.chart_state, issued, error))
    return tuple(steps)


def test_the_suite_has_at_least_two_mutants_per_property() -> None:
    counts = Counter(mutant.caught_by for mutant in MUTANTS)
    assert {prop.key.value: counts[prop.key.value] for prop in properties_of(WorldKind.CHART) if
            counts[prop.key.value] < 2} == {}  # fmt: skip
    assert len(MUTANTS) >= 30
    assert len({mutant.name for mutant in (*MUTANTS, *CONTROLS)}) == len(MUTANTS) + len(CONTROLS)


@pytest.mark.parametrize("mutant", _each(MUTANTS))
def test_each_mutant_is_rejected_by_the_expected_property(
    reviews: _Reviews, mutant: Mutant
) -> None:
    verdict = reviews[mutant.name].verdict(mutant.caught_by)
    assert not verdict.holds
    if mutant.last_call is None:
        assert verdict.counterexample is None
        assert any(mutant.says in note for note in verdict.notes), verdict.notes
        return
    example = verdict.counterexample
    assert example is not None
    assert mutant.says in example.finding
    last = example.steps[-1]
    assert last.label == mutant.last_call
    assert (last.error is not None) == mutant.refused
    issued = [type(item.action).__name__ for item in last.issued]
    assert (mutant.last_issued in issued) if mutant.last_issued else issued == []
    if mutant.calls is not None:
        assert len(example.steps) == mutant.calls


@pytest.mark.parametrize("mutant", _each(_CHART_MUTANTS))
def test_a_counterexample_replays_to_the_same_steps(reviews: _Reviews, mutant: Mutant) -> None:
    example = reviews[mutant.name].verdict(mutant.caught_by).counterexample
    if example is not None:
        calls = list(example.made)
        assert replay(mutant.compiled(), calls) == example.steps


@pytest.mark.xdist_group("NoDestinationCancel")
def test_a_counterexample_is_a_shortest_one(reviews: _Reviews) -> None:
    # By hand: the slot leaks as soon as the destination was asked to reserve and a failure
    # arrives; nothing shorter reaches a Complete with ReserveDestination issued.
    example = reviews["NoDestinationCancel"].verdict("S5").counterexample
    assert example is not None
    assert [step.label for step in example.steps] == [
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


@pytest.mark.xdist_group("HeldRecordedAgain")
def test_a_run_that_grows_without_progress_is_cut_with_its_growth(
    reviews: _Reviews,
) -> None:
    # Each repeated SourceHeld appends to the lifecycle and issues nothing: the third one is
    # cut, long before the exploration's guard.
    result = reviews["HeldRecordedAgain"]
    example = result.verdict(Key.BOUND).counterexample
    assert example is not None
    assert [step.label for step in example.steps[3:]] == ["on_fact(SourceHeld(valid timing))"] * 3
    assert result.configurations < 4_000


@pytest.mark.xdist_group("ActivateOnEveryReport")
def test_a_run_stopped_by_the_cut_is_reported_as_the_cut(reviews: _Reviews) -> None:
    # Activating on every TransferCompleted grows the run without progress until Bound cuts it
    # (and the space grows past the guard): a cut run is no counterexample of L1 or L2.
    found = reviews["ActivateOnEveryReport"]
    assert found.verdict("Bound").fails
    for key in ("L1", "L2"):
        verdict = found.verdict(key)
        assert verdict.word == "NOT JUDGED"
        assert verdict.counterexample is None
        assert "some runs never end (see Bound), so not every run was explored" in (
            verdict.unjudged
        )


@pytest.mark.xdist_group("CompleteTwice")
def test_completing_twice_is_caught_and_cut(reviews: _Reviews) -> None:
    example = reviews["CompleteTwice"].verdict("S4").counterexample
    assert example is not None
    assert [step.label for step in example.steps] == ["on_fact(Failed)"] * 2
    bound = reviews["CompleteTwice"].verdict("Bound")
    assert bound.counterexample is not None
    assert "actions issued in one run (at most 9)" in bound.counterexample.finding


@pytest.mark.xdist_group("UnreachableFailureKept")
def test_a_control_changing_only_unreachable_cells_passes(
    reviews: _Reviews,
) -> None:
    assert reviews["UnreachableFailureKept"].failures() == ()


@pytest.mark.xdist_group("UnreachableLeak")
def test_a_control_with_an_unreachable_declared_transition_is_dead_code_only(
    reviews: _Reviews,
) -> None:
    result = reviews["UnreachableLeak"]
    assert [verdict.prop.key for verdict in result.failures()] == [Key.COVERAGE]
    notes = result.verdict(Key.COVERAGE).notes
    assert "dead: transferring --action_failed--> canceled" in notes[0]


@pytest.mark.parametrize("order", tuple(HandoffOrder))
def test_a_mutant_without_broken_rules_is_its_real_chart(order: HandoffOrder) -> None:
    # Mutants inherit what they do not break from the real charts: the copy must be exact.
    chart = CHARTS[order]
    same: Any = types.new_class(f"Same{chart.__name__}", (chart,))
    assert not {id(state) for state in same.states} & {id(state) for state in chart.states}
    table, real = compile_chart(same), compiled(order)
    assert table.name == f"Same{chart.__name__}"
    assert attrs.evolve(table, name=real.name) == real


@pytest.mark.parametrize("mutant", _CHART_MUTANTS, ids=lambda mutant: mutant.name)
def test_each_mutant_really_differs_from_its_real_chart(mutant: Mutant) -> None:
    assert mutant.compiled().rows != compiled(mutant.compiled().order).rows


def _differing(mutant: Mutant) -> set[tuple[str, str]]:
    broken = mutant.compiled()
    real = compiled(broken.order)
    assert broken.states == real.states
    return {
        (broken.states[a.source], a.event.value)
        for a, b in zip(broken.steps(), real.steps(), strict=True)
        if (a.target, a.refusal, a.ignored, a.checks, a.effects)
        != (b.target, b.refusal, b.ignored, b.checks, b.effects)
    }


_T, _AF = "terminated", "action_failed"
_SF_CLEANUP_BOTH = ("destination_reserving", "destination_accepted", "transfer_starting",
                    "transferring", "activating", "releasing")  # fmt: skip

# The cells each mutant breaks, and no others: restated parts of a broken event cannot drift.
BROKEN_CELLS: dict[str, set[tuple[str, str]]] = {
    "ActivateBeforeTransferCompleted": {
        ("transferring", "transfer_completed"), ("transfer_starting", "transfer_scheduled")},
    "ActivateOnUnscheduledTransfer": {("transfer_starting", "transfer_completed")},
    "ReleaseBeforeActivation": {
        ("transferring", "transfer_completed"), ("activating", "destination_activated")},
    "ReleaseOnSchedule": {("transfer_starting", "transfer_scheduled")},
    "TransferBeforeReservation": {("destination_reserving", "destination_reserved")},
    "SourceHeldBeforeSubmission": {("prefill_submitting", "source_held")},
    "CompleteTwice": {("canceled", _T)},
    "CanceledReopens": {("canceled", _T)},
    "NoDestinationCancel": {(s, e) for s in ("destination_reserving", "destination_accepted")
                            for e in (_T, _AF)},
    "NoSourceCancelMidTransfer": {("transferring", _T), ("transferring", _AF)},
    "SuccessWithoutRelease": {("activating", "destination_activated")},
    "ReservationRecordedAgain": {("prefill_submitting", "destination_reserved")},
    "ReservationRecordedAgainMidTransfer": {("transfer_starting", "destination_reserved")},
    "HeldRecordedAgain": {("destination_reserving", "source_held")},
    "ActivateOnEveryReport": {("activating", "transfer_completed")},
    "SubmitTwice": {("prefill_submitting", "prefill_submitted")},
    "CancelSourceNeverSubmitted": {(s, e) for s in ("destination_reserving",
                                   "destination_accepted") for e in (_T, _AF)},
    "CancelDestinationNeverReserved": {(s, e) for s in ("prefill_submitting", "prefill_running")
                                       for e in (_T, _AF)},
    "DropsEarlySourceHeld": {("prefill_submitting", "source_held")},
    "RefusesRepeatedTransferReport": {("activating", "transfer_completed")},
    "AcceptsFailedCancel": {("cancelling_source", "cleanup_action_failed")},
    "AcceptsMismatchedOutcome": {("prefill_submitting", "mismatched_outcome")},
    "HeldWithoutTimingCheck": {("prefill_running", "source_held")},
    "TransferWithoutTimingCheck": {("prefill_running", "source_held")},
    "CancelsOutOfOrder": {(s, e) for s in _SF_CLEANUP_BOTH for e in (_T, _AF)},
    "LateCancelComplete": {
        ("cancelling_source", "source_canceled"), ("cancelling_source", "duplicate_outcome")},
    "LateRelease": {("activating", "destination_activated"), ("releasing", "duplicate_outcome")},
    "LostSourceCancel": {("cancelling_both", "source_canceled")},
    "DestinationCancelNeverConfirmed": {("cancelling_destination", "destination_canceled")},
    "NoReopenAfterSuccess": {("succeeded", _T)},
    "IgnoresTerminalMidTransfer": {("transferring", _T)},
    "HeldRecordedInCleanup": {("cancelling_source", "source_held")},
    "EarlySuccess": {("activating", "destination_activated")},
    "DeadTransition": {("idle", "prefill_submitted")},
    "DeadScheduleInIdle": {("idle", "transfer_scheduled")},
    "RefusesWithAnotherEventsPhrase": {("idle", "destination_reserved")},
    "RefusesFittingAcknowledgement": {("destination_reserving", "ownership_accepted")},
    "TimingCheckOnReservation": {("destination_accepted", "destination_reserved")},
    "TransferWithoutDelayCheck": {("prefill_running", "source_held")},
    "UnreachableFailureKept": {("prefill_running", _AF)},
    "UnreachableLeak": {("transferring", _AF)},
    "TableForgetsSourceCancel": {("transferring", _AF)},
    "TableIgnoresEarlyCancel": {("idle", _T)},
}  # fmt: skip


@pytest.mark.parametrize("mutant", [*_CHART_MUTANTS, *CONTROLS], ids=lambda mutant: mutant.name)
def test_each_mutant_breaks_only_its_own_cells(mutant: Mutant) -> None:
    assert _differing(mutant) == BROKEN_CELLS[mutant.name]

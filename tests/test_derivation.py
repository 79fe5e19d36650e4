"""Deriving a chart from a shipped one: a new chart with fresh states, the parent untouched.

The derived charts below are defined when this module is imported, i.e. before any test of
the session runs: every other test (conformance, equivalence, review) runs with them defined.
"""

from __future__ import annotations

import pytest
from charts import SF_ALONE, SF_BOTH, states
from statemachine import State
from statemachine.exceptions import InvalidDefinition
from support import DF, HID, SF

from handoff import HandoffActionOutcome, HandoffCompletion, HandoffCoordinatorCore, HandoffFact
from handoff._chart.base import HandoffChart, refused
from handoff._chart.shipped import DestinationFirstChart, SourceFirstChart
from handoff._chart.vocabulary import ChartEvent, Effect, Refusal
from handoff._compile.table import CompiledChart, compile_chart

SOURCE_FIRST_BEFORE = compile_chart(SourceFirstChart)
DESTINATION_FIRST_BEFORE = compile_chart(DestinationFirstChart)
S = SourceFirstChart


class CancelBothEarly(SourceFirstChart):
    """The first attempt a user makes: redeclare one event with the parent's states."""

    action_failed = S.cancelling_both.from_(
        *states(S, (*SF_ALONE, *SF_BOTH)), on=["cancel_source", "cancel_destination"]
    )


class SettleBeforeRelease(SourceFirstChart):
    """Adds a state: after activation, release only once the engine reports the transfer
    complete a second time (its KV settled on the destination)."""

    title = "Settle"
    settling = State("settling")
    destination_activated = S.activating.to(settling)
    transfer_completed = (
        S.transferring.to(S.activating, on="activate_destination")
        | settling.to(S.releasing, on="release_source")
        | refused(
            Refusal.TRANSFER_NOT_SCHEDULED,
            S.idle,
            S.prefill_submitting,
            S.prefill_running,
            S.destination_reserving,
            S.destination_accepted,
            S.transfer_starting,
        )
    )


def _differing(parent: CompiledChart, derived: CompiledChart) -> list[tuple[str, ChartEvent]]:
    return sorted(
        {
            (parent.states[a.source], a.event)
            for a, b in zip(parent.steps(), derived.steps(), strict=False)
            if (a.target, a.refusal, a.ignored, a.checks, a.effects)
            != (b.target, b.refusal, b.ignored, b.checks, b.effects)
        },
        key=str,
    )


def test_the_parents_are_untouched_by_derivation() -> None:
    assert compile_chart(SourceFirstChart) == SOURCE_FIRST_BEFORE
    assert compile_chart(DestinationFirstChart) == DESTINATION_FIRST_BEFORE
    parent_states = {id(state) for state in SourceFirstChart.states}
    assert parent_states.isdisjoint(id(state) for state in CancelBothEarly.states)


def test_a_derived_chart_differs_in_its_redeclared_event_only() -> None:
    derived = compile_chart(CancelBothEarly)
    assert derived.states == SOURCE_FIRST_BEFORE.states
    assert _differing(SOURCE_FIRST_BEFORE, derived) == [
        ("prefill_running", ChartEvent.ACTION_FAILED),
        ("prefill_submitting", ChartEvent.ACTION_FAILED),
    ]
    step = derived.step(derived.index("prefill_running"), ChartEvent.ACTION_FAILED)
    assert step.effects == (Effect.CANCEL_SOURCE, Effect.CANCEL_DESTINATION)
    # `terminated` is inherited as the parent compiled it: it still cancels the source alone.
    step = derived.step(derived.index("prefill_running"), ChartEvent.TERMINATED)
    assert step.effects == (Effect.CANCEL_SOURCE,)


def test_a_derived_chart_can_add_a_state_and_run_it() -> None:
    table = compile_chart(SettleBeforeRelease)
    assert table.states[-1] == "settling"
    assert (SettleBeforeRelease.title, SettleBeforeRelease.order) == ("Settle", SF)
    assert CancelBothEarly.title == "CancelBothEarly"


def test_the_shipped_orders_still_run_after_derivation() -> None:
    for order in (SF, DF):
        coordinator = HandoffCoordinatorCore(HID, order)
        coordinator.start()
        assert coordinator.on_fact(HandoffFact.Canceled(HID))[0].action.__class__.__name__ in {
            "CancelSource",
            "CancelDestination",
        }


def test_a_redeclared_rule_changes_what_the_coordinator_issues() -> None:
    coordinator = HandoffCoordinatorCore(HID, chart=CancelBothEarly)
    (submit,) = coordinator.start()
    issued = coordinator.on_action_outcome(submit.id, HandoffActionOutcome.failed("boom"))
    assert [type(item.action).__name__ for item in issued] == ["CancelSource", "CancelDestination"]
    assert coordinator.completion is None
    assert HandoffCompletion.CANCELED  # the cleanup still has to be acknowledged


def test_deriving_from_two_charts_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match="derives from one chart at most"):

        class Both(SourceFirstChart, DestinationFirstChart):  # type: ignore[misc]
            pass


def test_a_state_of_another_chart_is_refused_and_that_chart_untouched() -> None:
    with pytest.raises(InvalidDefinition, match=r"uses \['canceled', 'idle'\], not states"):

        class Borrowing(SourceFirstChart):
            start = DestinationFirstChart.idle.to(DestinationFirstChart.canceled)

    assert compile_chart(DestinationFirstChart) == DESTINATION_FIRST_BEFORE
    assert compile_chart(SourceFirstChart) == SOURCE_FIRST_BEFORE


def test_a_refused_derivation_leaves_the_parent_untouched() -> None:
    with pytest.raises(InvalidDefinition, match="is not a handoff chart word"):

        class Misspelled(SourceFirstChart):
            start = S.idle.to(S.prefill_submitting, on="submit_prefil")

    assert compile_chart(SourceFirstChart) == SOURCE_FIRST_BEFORE


def test_a_title_must_be_a_non_empty_string() -> None:
    with pytest.raises(InvalidDefinition, match="`title` must be a non-empty str"):

        class Untitled(HandoffChart):
            order = SF
            title = ""
            idle = State(initial=True)
            done = State(enter="complete_success")
            start = idle.to(done)

"""Renaming a state inside a group: the new state inside the redeclared group keeps the group's
rules; one declared outside it does not, and the review's report says so; a group redeclared
without a state some rule still names is refused when the chart is defined.

The fixture charts are `tests/charts/renamed.py`.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from charts.renamed import HandingBack, HandingBackOutside
from statemachine import State
from statemachine.exceptions import InvalidDefinition
from support import CANCEL_DESTINATION, CANCEL_SOURCE, HID, TIMING, kinds, run_handoff

from handoff import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffChart,
    HandoffCoordinatorCore,
    HandoffFact,
    SourceFirstChart,
)
from handoff._chart.derive import lost_group_rules
from handoff._chart.groups import every_state
from handoff._compile.table import compile_chart
from handoff._review import report
from handoff._review.explore import review_chart
from handoff._system.properties import Key

S = SourceFirstChart
SOURCE_FIRST_BEFORE = compile_chart(SourceFirstChart)
OUTSIDE_NOTE = (
    "handing_back replaces releasing but has no rule for terminated, action_failed, which "
    "releasing took from group 'both_engaged' of SourceFirstChart: handing_back is declared "
    "outside it; declare it inside 'both_engaged' (redeclare the group, with handing_back in "
    "place of releasing), or give it those rules"
)
ACKNOWLEDGED = (
    HandoffActionOutcome.SUBMITTED,
    HandoffActionOutcome.ACCEPTED,
    HandoffActionOutcome.SCHEDULED,
    HandoffActionOutcome.APPLIED,
)
FACTS = (
    HandoffFact.SourceHeld(HID, TIMING),
    HandoffFact.DestinationReserved(HID, 10),
    HandoffFact.TransferCompleted(HID),
)


def _handing_back(chart: type[HandoffChart], state: str = "handing_back") -> HandoffCoordinatorCore:
    """A coordinator on `chart` that has issued ReleaseSource, now in `state`."""
    coordinator = HandoffCoordinatorCore(HID, chart=chart)
    coordinator.start()
    for number, outcome in enumerate(ACKNOWLEDGED):
        coordinator.on_action_outcome(HandoffActionId(number), outcome)
        if number < len(FACTS):
            coordinator.on_fact(FACTS[number])
    assert coordinator.chart_state == state
    return coordinator


# -- inside the group ------------------------------------------------------------------------


def test_a_state_renamed_inside_its_group_keeps_the_groups_cleanup() -> None:
    # SOURCE_FIRST's releasing, failing: both owners are cancelled in the same call.
    assert kinds(_handing_back(HandingBack).on_fact(HandoffFact.Failed(HID))) == [
        CANCEL_SOURCE,
        CANCEL_DESTINATION,
    ]
    failed = HandoffActionOutcome.failed("x")
    assert kinds(_handing_back(HandingBack).on_action_outcome(HandoffActionId(4), failed)) == [
        CANCEL_SOURCE,
        CANCEL_DESTINATION,
    ]


def test_a_state_renamed_inside_its_group_reviews_as_the_shipped_chart() -> None:
    review = review_chart(HandingBack)
    assert review.holds, [verdict.prop.key for verdict in review.verdicts if not verdict.holds]
    assert "handing_back" in review.chart.states
    assert "releasing" not in review.chart.states
    assert lost_group_rules(HandingBack) == ()


def test_the_parent_is_untouched_by_the_renames() -> None:
    assert compile_chart(SourceFirstChart) == SOURCE_FIRST_BEFORE
    assert "handing_back" not in {state.id for state in every_state(SourceFirstChart.states)}


# -- outside the group -----------------------------------------------------------------------


def test_a_state_renamed_outside_its_group_lost_the_groups_cleanup() -> None:
    assert _handing_back(HandingBackOutside).on_fact(HandoffFact.Failed(HID)) == []


def test_the_review_notes_the_rules_a_renamed_state_lost_from_its_group() -> None:
    review = review_chart(HandingBackOutside)
    assert not review.holds
    assert OUTSIDE_NOTE in review.verdict(Key.COVERAGE).notes
    assert f"  Coverage: {OUTSIDE_NOTE}\n" in report.text([review])
    assert lost_group_rules(HandingBackOutside) == (OUTSIDE_NOTE,)


def test_the_review_notes_the_rules_a_state_moved_out_of_its_group_lost() -> None:
    class MovedOut(SourceFirstChart):
        class both_engaged(State.Compound):
            destination_reserving = State("destination reserving", initial=True)
            destination_accepted = State("destination accepted")
            transfer_starting = State("transfer starting")
            transferring = State("transferring")
            activating = State("activating")

        releasing = State("releasing")

    assert _handing_back(MovedOut, "releasing").on_fact(HandoffFact.Failed(HID)) == []
    assert lost_group_rules(MovedOut) == (
        "releasing has no rule for terminated, action_failed, which releasing took from group "
        "'both_engaged' of SourceFirstChart: releasing is declared outside it; declare it "
        "inside 'both_engaged' (redeclare the group with releasing inside), or give it those "
        "rules",
    )


def test_a_state_added_beside_the_one_it_follows_is_no_rename() -> None:
    class Settling(SourceFirstChart):
        # `releasing` stays; `settling` comes between, outside every group.
        settling = State("settling")
        destination_activated = S.activating.to(settling, on="release_source")
        transfer_completed = S.transferring.to(S.activating, on="activate_destination") | (
            settling.to(S.releasing)
        )

    assert "releasing" in {state.id for state in every_state(Settling.states)}
    assert lost_group_rules(Settling) == ()


def test_a_renamed_state_given_the_groups_rules_is_not_noted() -> None:
    class Restated(SourceFirstChart):
        handing_back = State("handing back")
        destination_activated = S.activating.to(handing_back, on="release_source")
        source_released = (
            handing_back.to(S.succeeded)
            | S.cancelling_both.to(S.cancelling_destination)
            | S.cancelling_source.to(S.canceled)
        )
        # The group's cleanup, with handing_back listed beside the group.
        action_failed = S.cancelling_source.from_(S.prefill, on="cancel_source") | (
            S.cancelling_both.from_(
                S.both_engaged, handing_back, on=["cancel_source", "cancel_destination"]
            )
        )
        terminated = (
            action_failed
            | S.idle.to(S.canceled)
            | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
        )

    assert kinds(_handing_back(Restated).on_fact(HandoffFact.Failed(HID))) == [
        CANCEL_SOURCE,
        CANCEL_DESTINATION,
    ]
    assert lost_group_rules(Restated) == ()
    assert lost_group_rules(SourceFirstChart) == ()


# -- a group redeclared without a state ------------------------------------------------------


def test_a_group_redeclared_without_a_state_an_inherited_rule_names_is_refused() -> None:
    said = (
        "HalfRenamed: redeclares 'both_engaged' without 'releasing', yet rules still name it: "
        "'source_released' (inherited from SourceFirstChart); keep 'releasing' in "
        "'both_engaged', or rename it there: declare the new state inside 'both_engaged' and "
        "name it instead of 'releasing' in every rule that named it, redeclaring those events"
    )
    with pytest.raises(InvalidDefinition, match=f"^{re.escape(said)}$"):

        class HalfRenamed(SourceFirstChart):
            class both_engaged(State.Compound):
                destination_reserving = State("destination reserving", initial=True)
                destination_accepted = State("destination accepted")
                transfer_starting = State("transfer starting")
                transferring = State("transferring")
                activating = State("activating")
                handing_back = State("handing back")

            destination_activated = S.activating.to(both_engaged.handing_back)

    assert compile_chart(SourceFirstChart) == SOURCE_FIRST_BEFORE


def test_a_group_redeclared_without_a_state_a_written_rule_names_is_refused() -> None:
    said = (
        "redeclares 'both_engaged' without 'releasing', yet rules still name it: "
        "'destination_activated' (written here), 'source_released' (inherited from "
        "SourceFirstChart)"
    )
    with pytest.raises(InvalidDefinition, match=re.escape(said)):

        class Forgot(SourceFirstChart):
            class both_engaged(State.Compound):
                destination_reserving = State("destination reserving", initial=True)
                destination_accepted = State("destination accepted")
                transfer_starting = State("transfer starting")
                transferring = State("transferring")
                activating = State("activating")

            destination_activated = S.activating.to(S.releasing, on="release_source")

    assert compile_chart(SourceFirstChart) == SOURCE_FIRST_BEFORE


def test_a_parents_state_redeclared_as_no_state_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match="'canceled' is not a state here, yet rules"):

        class NoCanceled(SourceFirstChart):
            canceled = None  # type: ignore[assignment]


HALF_RENAMED = textwrap.dedent(
    """\
    from statemachine import State

    from handoff import SourceFirstChart

    S = SourceFirstChart


    class HalfRenamed(SourceFirstChart):
        class both_engaged(State.Compound):
            destination_reserving = State("destination reserving", initial=True)
            destination_accepted = State("destination accepted")
            transfer_starting = State("transfer starting")
            transferring = State("transferring")
            activating = State("activating")
            handing_back = State("handing back")

        destination_activated = S.activating.to(both_engaged.handing_back)
    """
)


def test_the_review_command_says_why_the_half_renamed_chart_is_refused(tmp_path: Path) -> None:
    (tmp_path / "half_renamed.py").write_text(HALF_RENAMED)
    done = run_handoff("review", "--chart", "half_renamed:HalfRenamed", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(
        "handoff review: error: --chart: importing half_renamed failed: InvalidDefinition: "
        "HalfRenamed: redeclares 'both_engaged' without 'releasing', yet rules still name it: "
        "'source_released' (inherited from SourceFirstChart); keep 'releasing' in"
    ), line

"""The compiled table and python-statemachine's own interpreter agree on every reachable cell.

`compare` visits every reachable chart state with a real coordinator; in each, it gives every
event (including the ones refused or ignored) both to the compiled table and to a fresh
python-statemachine instance of the same chart started in that state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from charts.checked_drops import CHECKED_DROPS
from statemachine import State
from statemachine.exceptions import InvalidDefinition
from support import ORDERS
from test_derivation import CancelBothEarly, SettleBeforeRelease

from handoff import HandoffOrder
from handoff._chart.base import HandoffChart
from handoff._chart.rules import text_problem
from handoff._chart.shipped import CHARTS, SourceFirstChart
from handoff._chart.vocabulary import ChartEvent
from handoff._compile.interpreted import InterpretedChart
from handoff._compile.table import compiled
from handoff._coordinator.core import _plans
from handoff._review.equivalence import Disagreement, compare, reachable
from handoff._review.explore import review_chart

CHARTS_UNDER_TEST = [*ORDERS, CancelBothEarly, SettleBeforeRelease]


def _chart_class(chart: HandoffOrder | type[HandoffChart]) -> type[HandoffChart]:
    return CHARTS[chart] if isinstance(chart, HandoffOrder) else chart


@pytest.mark.parametrize("chart", CHARTS_UNDER_TEST, ids=str)
def test_every_chart_state_is_reachable(chart: HandoffOrder | type[HandoffChart]) -> None:
    assert set(reachable(chart)) == set(compiled(_chart_class(chart)).states)


@pytest.mark.parametrize("chart", CHARTS_UNDER_TEST, ids=str)
def test_compiled_and_interpreted_agree_on_every_event_in_every_state(
    chart: HandoffOrder | type[HandoffChart],
) -> None:
    comparison = compare(chart)
    assert comparison.disagreements == ()
    assert comparison.holds
    # Every event once in every state, and SourceHeld twice more: once per check, with a
    # payload it refuses.
    states = len(compiled(_chart_class(chart)).states)
    assert comparison.cells == states * (len(ChartEvent) + 2)


class Stubborn(HandoffChart):
    """A chart whose table is made to lie below: the comparison must notice."""

    order = ORDERS[0]
    idle = State(initial=True)
    done = State(enter="complete_success")
    start = idle.to(done, on="submit_prefill")


def test_a_table_that_differs_from_the_chart_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    table = compiled(Stubborn)
    lying = table.rows[0][ChartEvent.START.index].__class__(
        source=0, event=ChartEvent.START, target=0, ignored=True
    )
    rows = ((lying, *table.rows[0][1:]), *table.rows[1:])
    monkeypatch.setattr(
        "handoff._coordinator.core.runtime_table", lambda chart: attrs.evolve(table, rows=rows)
    )
    try:
        comparison = compare(Stubborn)
    finally:
        _plans.cache_clear()  # the lying table must not outlive this test
    assert not comparison.holds
    (disagreement,) = comparison.disagreements
    assert (disagreement.state, disagreement.event) == ("idle", ChartEvent.START)
    # Named by states and events, never by table indices.
    assert disagreement.compiled == "drops it"
    assert disagreement.interpreted == "goes to done, issues SUBMIT_PREFILL, COMPLETE_SUCCESS"


def test_the_interpreter_follows_the_state_it_is_given() -> None:
    # A step the coordinator did not commit (an interrupt, a recorder's failed write) leaves
    # the machine elsewhere: the coordinator's state is the truth.
    interpreter = InterpretedChart(ORDERS[0])
    step, _ = interpreter.decide(1, ChartEvent.START, lambda checks, fact: None, None)
    assert (step.source, step.target, step.ignored) == (1, 1, True)
    assert interpreter.state == interpreter.table.states[1]


def test_a_check_only_the_chart_runs_shows_under_an_unusable_payload() -> None:
    # The table takes SourceHeld in prefill_running without checking its timing; the chart
    # checks it.  Given the review's payloads, the unusable ones are refused by the chart
    # alone: each is a disagreement of its own, besides the differing check list.
    from handoff._review.environment import environment
    from handoff._review.world import _payloads

    table = compiled(SourceFirstChart)
    cell = table.step(table.index("prefill_running"), ChartEvent.SOURCE_HELD)
    rows = list(map(list, table.rows))
    rows[cell.source][ChartEvent.SOURCE_HELD.index] = attrs.evolve(cell, checks=())
    lying = attrs.evolve(table, rows=tuple(map(tuple, rows)))
    default = compare(SourceFirstChart, lying)
    found = compare(SourceFirstChart, lying, _payloads(environment()))
    assert (default.cells, found.cells) == (280, 364)
    # The default payloads catch it too: one SourceHeld each check refuses.
    assert {(cell.state, cell.event) for cell in default.disagreements} == {
        ("prefill_running", ChartEvent.SOURCE_HELD)
    }
    assert {(cell.state, cell.event) for cell in found.disagreements} == {
        ("prefill_running", ChartEvent.SOURCE_HELD)
    }
    refused = [cell for cell in found.disagreements if cell.interpreted.startswith("check")]
    assert len(refused) == 5  # every unusable timing of the review's environment
    assert {cell.compiled for cell in refused} == {
        "goes to destination_reserving, issues RESERVE_DESTINATION"
    }
    assert refused[0].interpreted.startswith(
        "check failed: invalid handoff transfer bandwidth -1.0"
    )


def test_python_statemachine_is_built_once_per_reachable_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import handoff._review.equivalence as equivalence

    built: list[str | None] = []

    class Counting(InterpretedChart):
        def __init__(self, chart: Any, state: str | None = None) -> None:
            built.append(state)
            super().__init__(chart, state)

    monkeypatch.setattr(equivalence, "InterpretedChart", Counting)
    comparison = compare(SourceFirstChart)
    assert comparison.holds
    assert sorted(built, key=str) == sorted(compiled(SourceFirstChart).states)


def test_a_table_state_the_chart_class_lacks_is_a_disagreement() -> None:
    table = compiled(SourceFirstChart)
    states = tuple("cancelled" if state == "canceled" else state for state in table.states)
    renamed = attrs.evolve(table, states=states)
    found = compare(SourceFirstChart, renamed).disagreements
    assert [cell for cell in found if cell.state == "cancelled"] == [
        Disagreement(
            "cancelled",
            ChartEvent.START,
            "has state cancelled",
            "the chart class has no such state",
        )
    ]


# -- a check on a dropped repeat: python-statemachine runs it, the table would not ----------


@pytest.mark.parametrize("define", CHECKED_DROPS, ids=lambda define: define.__name__)
def test_a_rule_that_drops_a_checked_repeat_is_refused_when_defined(
    define: Callable[[], type[HandoffChart]],
) -> None:
    with pytest.raises(InvalidDefinition) as refusal:
        define()
    message = str(refusal.value)
    chart = define.__name__.title().replace("_", "")
    assert message.startswith(f"{chart}: transition source_held from ")  # the chart, the rule
    assert "a rule that drops its event judges no payload" in message
    assert 'drop validators= to drop every such call, or drop on="ignore" to take it' in message


@pytest.mark.parametrize("define", CHECKED_DROPS, ids=lambda define: define.__name__)
def test_the_table_property_catches_a_checked_repeat_let_through(
    define: Callable[[], type[HandoffChart]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Were the definition check missing, the table would drop the repeat unjudged while
    # python-statemachine refuses its bad payload: the comparison must say so.
    import handoff._chart.base as chart_base

    def lenient(transition: Any, named: Any) -> str | None:
        problem = text_problem(transition, named)
        return None if problem and problem.startswith("a rule that drops") else problem

    monkeypatch.setattr(chart_base, "text_problem", lenient)
    chart = define()
    found = compare(chart).disagreements
    assert found
    assert {(cell.state, cell.event) for cell in found} == {
        (CHECKED_DROPS[define], ChartEvent.SOURCE_HELD)
    }
    assert {cell.compiled for cell in found} == {"drops it"}
    # A usable payload: checked and dropped by the chart, dropped unchecked by the table; an
    # unusable one: refused by the chart alone.
    said = sorted(cell.interpreted for cell in found)
    assert said[0].startswith("check failed: invalid handoff transfer ")
    assert said[-1].startswith("drops it, checks transfer_timing_is_valid")
    verdict = review_chart(chart).verdict("Table")
    assert not verdict.holds
    assert any("the table drops it; python-statemachine check failed" in note
               for note in verdict.notes)  # fmt: skip

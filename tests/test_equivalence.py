"""The compiled table and python-statemachine's own interpreter agree on every reachable cell.

`compare` visits every reachable chart state with a real coordinator; in each, it gives every
event (including the ones refused or ignored) both to the compiled table and to a fresh
python-statemachine instance of the same chart started in that state.
"""

from __future__ import annotations

import attrs
import pytest
from statemachine import State
from support import ORDERS
from test_derivation import CancelBothEarly, SettleBeforeRelease

from handoff import HandoffOrder
from handoff._chart import CHARTS
from handoff._chart_base import HandoffChart
from handoff._coordinator import _plans
from handoff._equivalence import compare, reachable
from handoff._interpreted import InterpretedChart
from handoff._table import compiled
from handoff._vocabulary import ChartEvent

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
    assert comparison.cells == len(compiled(_chart_class(chart)).states) * len(ChartEvent)


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
        "handoff._coordinator.compiled", lambda chart: attrs.evolve(table, rows=rows)
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


def test_the_interpreter_refuses_to_run_out_of_step() -> None:
    interpreter = InterpretedChart(ORDERS[0])
    with pytest.raises(AssertionError, match="out of step"):
        interpreter.decide(1, ChartEvent.START, lambda checks, fact: None, None)

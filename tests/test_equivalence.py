"""The compiled table and python-statemachine's own interpreter agree on every pair.

Every reachable control state of each order is visited with a real coordinator; in each,
every event (including the ones refused or ignored) is given both to the compiled table
and to a fresh python-statemachine instance of the same chart started in that state.
"""

from __future__ import annotations

from collections import deque

import pytest
from support import FITTING, HID, ORDERS, TIMING

from handoff import HandoffActionId, HandoffCoordinatorCore, HandoffError, HandoffFact
from handoff._interpreted import InterpretedChart
from handoff._table import compiled
from handoff._vocabulary import ChartEvent

PAYLOADS: dict[ChartEvent, HandoffFact] = {
    ChartEvent.SOURCE_HELD: HandoffFact.SourceHeld(HID, TIMING),
    ChartEvent.DESTINATION_RESERVED: HandoffFact.DestinationReserved(HID, 10),
    ChartEvent.TRANSFER_COMPLETED: HandoffFact.TransferCompleted(HID),
    ChartEvent.TERMINATED: HandoffFact.Canceled(HID),
}


def reachable(order) -> dict[str, HandoffCoordinatorCore]:  # type: ignore[no-untyped-def]
    """One coordinator per reachable chart state, found breadth-first from a fresh one."""
    first = HandoffCoordinatorCore(HID, order)
    found = {first.chart_state: first}
    queue = deque([first])
    while queue:
        coordinator = queue.popleft()
        for move in _moves(coordinator):
            twin = coordinator._fork()
            try:
                move(twin)
            except HandoffError:
                continue
            if twin.chart_state not in found:
                found[twin.chart_state] = twin
                queue.append(twin)
    return found


def _moves(coordinator: HandoffCoordinatorCore):  # type: ignore[no-untyped-def]
    yield lambda c: c.start()
    for fact in PAYLOADS.values():
        yield lambda c, fact=fact: c.on_fact(fact)
    for action_id, action in coordinator._issued.items():
        outcome = FITTING.get(type(action))
        if outcome is not None:
            yield lambda c, i=action_id, o=outcome: c.on_action_outcome(HandoffActionId(i), o)


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
def test_every_chart_state_is_reachable(order) -> None:  # type: ignore[no-untyped-def]
    assert set(reachable(order)) == set(compiled(order).states)


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
def test_compiled_and_interpreted_agree_on_every_event_in_every_state(order) -> None:  # type: ignore[no-untyped-def]
    table = compiled(order)
    compared = 0
    for state_id, coordinator in reachable(order).items():
        state = table.index(state_id)
        for event in ChartEvent:
            fact = PAYLOADS.get(event)
            expected = table.step(state, event)
            expected_delay = (
                coordinator._checked_delay(expected.checks, fact) if expected.checks else None
            )
            interpreter = InterpretedChart(order, state_id)
            actual, delay = interpreter.decide(state, event, coordinator._checked_delay, fact)
            assert (actual.target, actual.refusal, actual.ignored) == (
                expected.target,
                expected.refusal,
                expected.ignored,
            ), (state_id, event)
            if expected.refusal is None:
                assert (actual.checks, actual.effects, delay) == (
                    expected.checks,
                    expected.effects,
                    expected_delay,
                ), (state_id, event)
            compared += 1
    assert compared == len(table.states) * len(ChartEvent)

"""A call that raises changes nothing: for every kind of rejection, in both orders."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from support import (
    ACTIVATE,
    CANCEL_SOURCE,
    HID,
    ORDERS,
    OTHER_HID,
    RELEASE,
    RESERVE,
    SF,
    TRANSFER,
    Runtime,
)

from handoff import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffError,
    HandoffFact,
    HandoffOrder,
    HandoffTransferTiming,
    KvTransferTimingMode,
)
from handoff._coordinator import probe as probe

NAN_TIMING = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, math.nan)
OVERFLOWING = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 0, 2**64 - 1, 1e-300)

# name → (state to reach, the bad call, the exception it raises)
Rejection = tuple[str, Callable[[Runtime], object], type[Exception]]
REJECTIONS: dict[str, Rejection] = {
    "foreign fact": (
        "transferring",
        lambda rt: rt.fact(HandoffFact.TransferCompleted(OTHER_HID)),
        HandoffError,
    ),
    "source held early": ("idle", lambda rt: rt.source_held(), HandoffError),
    "destination reserved early": ("idle", lambda rt: rt.destination_reserved(), HandoffError),
    "transfer completed early": (
        "transfer_starting",
        lambda rt: rt.transfer_completed(),
        HandoffError,
    ),
    "invalid bandwidth": (
        "prefill_running",
        lambda rt: rt.fact(HandoffFact.SourceHeld(HID, NAN_TIMING)),
        HandoffError,
    ),
    "unknown action": (
        "transferring",
        lambda rt: rt.coordinator.on_action_outcome(
            HandoffActionId(42), HandoffActionOutcome.APPLIED
        ),
        HandoffError,
    ),
    "conflicting outcome": (
        "transferring",
        lambda rt: rt.ack(TRANSFER, HandoffActionOutcome.failed("late")),
        HandoffError,
    ),
    "mismatched outcome": (
        "activating",
        lambda rt: rt.ack(ACTIVATE, HandoffActionOutcome.NOOP),
        HandoffError,
    ),
    "fact of the wrong type": ("releasing", lambda rt: rt.fact("Canceled"), TypeError),  # type: ignore[arg-type]
    "outcome of the wrong type": (
        "releasing",
        lambda rt: rt.coordinator.on_action_outcome(HandoffActionId(4), "Applied"),  # type: ignore[arg-type]
        TypeError,
    ),
}


def _finish(runtime: Runtime) -> list[object]:
    """Complete the handoff along the success path; returns everything observable."""
    runtime.succeed()
    coordinator = runtime.coordinator
    return [runtime.log, coordinator.lifecycle, coordinator.completion, coordinator.is_complete]


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
@pytest.mark.parametrize("interpreted", [False, True], ids=["compiled", "interpreted"])
@pytest.mark.parametrize("name", sorted(REJECTIONS))
def test_a_rejected_call_changes_nothing(order: HandoffOrder, interpreted: bool, name: str) -> None:
    state, bad_call, error = REJECTIONS[name]
    runtime = Runtime(order, interpreted=interpreted).advance_to(state)
    twin = Runtime(order, interpreted=interpreted).advance_to(state)
    before = probe.configuration(runtime.coordinator)
    with pytest.raises(error):
        bad_call(runtime)
    assert probe.configuration(runtime.coordinator) == before
    assert runtime.coordinator.chart_state == state
    assert _finish(runtime) == _finish(twin)


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
@pytest.mark.parametrize("interpreted", [False, True], ids=["compiled", "interpreted"])
def test_an_overflowing_transfer_delay_changes_nothing(
    order: HandoffOrder, interpreted: bool
) -> None:
    runtime = Runtime(order, timing=OVERFLOWING, tokens=2**64 - 1, interpreted=interpreted)
    trigger = "destination_accepted" if order is SF else "prefill_running"
    runtime.advance_to(trigger)
    before = probe.configuration(runtime.coordinator)
    lifecycle = runtime.coordinator.lifecycle
    with pytest.raises(HandoffError, match="invalid handoff transfer delay"):
        runtime.step()
    assert probe.configuration(runtime.coordinator) == before
    assert runtime.coordinator.lifecycle == lifecycle
    # Nothing was latched: the next id is still the one the transfer would have taken.
    if order is SF:
        runtime.tokens = 0
    else:
        runtime.timing = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 1, 1, 1.0)
    assert [item.id.value for item in runtime.step()] == [2]


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
def test_a_failed_cleanup_action_changes_nothing(order: HandoffOrder) -> None:
    runtime = Runtime(order).advance_to("releasing")
    runtime.fact(HandoffFact.Canceled(HID))
    before = probe.configuration(runtime.coordinator)
    with pytest.raises(HandoffError, match="handoff cleanup action"):
        runtime.ack(CANCEL_SOURCE, HandoffActionOutcome.failed("disk"))
    assert probe.configuration(runtime.coordinator) == before


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
def test_rejections_do_not_consume_action_ids(order: HandoffOrder) -> None:
    runtime = Runtime(order).advance_to("destination_reserving")
    rejected: tuple[Callable[[], object], ...] = (
        lambda: runtime.destination_reserved(),
        lambda: runtime.ack(RESERVE, HandoffActionOutcome.APPLIED),
        lambda: runtime.coordinator.on_action_outcome(
            HandoffActionId(9), HandoffActionOutcome.ACCEPTED
        ),
    )
    for bad in rejected:
        with pytest.raises(HandoffError):
            bad()
    runtime.succeed()
    assert [item.id.value for item in runtime.log] == list(range(6))
    assert RELEASE in {type(item.action) for item in runtime.log}

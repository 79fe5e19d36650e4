"""Random walks over a coordinator's calls, shared by the tests that compare two coordinators
call by call (a snapshot's restored copy, a copy, a recorded one): mostly cooperative calls,
sometimes wrong ones, on both orders and a chart of one's own."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator

import user_charts

from handoff import (
    AnyHandoffFact,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffError,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    KvTransferTimingMode,
)

HID = HandoffId(uuid.UUID(int=7))
SF, DF = HandoffOrder.SOURCE_FIRST, HandoffOrder.DESTINATION_FIRST
TIMING = HandoffTransferTiming(
    mode=KvTransferTimingMode.DESTINATION_MISSING,
    full_prompt_tokens=4096,
    kv_bytes_per_token=131_072,
    bandwidth_gb_s=50.0,
)
FACTS: tuple[AnyHandoffFact, ...] = (
    HandoffFact.SourceHeld(handoff_id=HID, transfer_timing=TIMING),
    HandoffFact.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=4000),
    HandoffFact.TransferCompleted(handoff_id=HID),
    HandoffFact.Failed(handoff_id=HID),
    HandoffFact.TimedOut(handoff_id=HID),
    HandoffFact.Canceled(handoff_id=HID),
)
OUTCOMES = (
    HandoffActionOutcome.SUBMITTED,
    HandoffActionOutcome.ACCEPTED,
    HandoffActionOutcome.SCHEDULED,
    HandoffActionOutcome.APPLIED,
    HandoffActionOutcome.NOOP,
    HandoffActionOutcome.failed(reason="no room"),
)
Call = Callable[[HandoffCoordinatorCore], object]
CHARTS = (user_charts.FreesBoth,)
"""The charts of one's own the coordinators below run, which a restore is handed."""
MAKERS: dict[str, Callable[[], HandoffCoordinatorCore]] = {
    "SourceFirst": lambda: HandoffCoordinatorCore(HID, SF, 1.5),
    "DestinationFirst": lambda: HandoffCoordinatorCore(HID, DF),
    "user chart": lambda: HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth),
}


def random_call(rng: random.Random, coordinator: HandoffCoordinatorCore) -> Call:
    """A call a runtime could make now: mostly cooperative, sometimes wrong."""
    issued = [key for key, _ in coordinator.issued_actions()]
    choice = rng.random()
    if choice < 0.1:
        return HandoffCoordinatorCore.start
    if choice < 0.4 or not issued:
        fact = rng.choice(FACTS)
        return lambda c: c.on_fact(fact)
    action_id = rng.choice([*issued, HandoffActionId(99)])
    outcome = rng.choice(OUTCOMES)
    return lambda c: c.on_action_outcome(action_id, outcome)


def answer(call: Call, coordinator: HandoffCoordinatorCore) -> object:
    try:
        return call(coordinator)
    except HandoffError as error:
        return (type(error), str(error), error.chart_state, error.action_id, error.expected)


def walks(seeds: int) -> Iterator[tuple[str, random.Random]]:
    for name in MAKERS:
        for seed in range(seeds):
            yield name, random.Random(f"{name}-{seed}")

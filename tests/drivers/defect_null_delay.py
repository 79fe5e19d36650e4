"""Plays an upstream defect: a `DestinationReserved` whose delay overflows is not refused; the
transfer is started with an infinite delay, which the wire writes as `null`."""

from __future__ import annotations

import math
import sys

import attrs

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffCoordinatorCore,
    HandoffFact,
    IssuedHandoffAction,
)
from handoff.conform_driver import Answer, Call, Driver, ErrorKind, main


class InfiniteDelay(Driver):
    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        answer = super().answer(coordinator, call)
        reserved = isinstance(call.fact, HandoffFact.DestinationReserved)
        if not reserved or answer.error is not ErrorKind.INVALID_TRANSFER_TIMING:
            return answer
        next_id = HandoffActionId(max(key.value for key, _ in coordinator.issued_actions()) + 1)
        started = HandoffAction.StartTransfer(coordinator.handoff_id, math.inf)
        return attrs.evolve(answer, error=None, issued=(IssuedHandoffAction(next_id, started),))


if __name__ == "__main__":
    sys.exit(main(driver=InfiniteDelay))

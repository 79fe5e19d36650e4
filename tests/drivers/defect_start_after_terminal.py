"""Plays an upstream defect: `start()` after a terminal fact (which completed the handoff before
it began) issues the order's first action anyway."""

from __future__ import annotations

import sys

import attrs

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffCoordinatorCore,
    HandoffOrder,
    IssuedHandoffAction,
)
from handoff.conform_driver import Answer, Call, Driver, main


class StartsAfterTheEnd(Driver):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.started: set[object] = set()

    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        answer = super().answer(coordinator, call)
        if call != Call.start() or coordinator.handoff_id in self.started:
            return answer
        self.started.add(coordinator.handoff_id)
        if answer.issued or not coordinator.is_complete:
            return answer
        hid = coordinator.handoff_id
        first = (
            HandoffAction.SubmitPrefill(hid)
            if coordinator.order is HandoffOrder.SOURCE_FIRST
            else HandoffAction.ReserveDestination(hid)
        )
        return attrs.evolve(answer, issued=(IssuedHandoffAction(HandoffActionId(0), first),))


if __name__ == "__main__":
    sys.exit(main(driver=StartsAfterTheEnd))

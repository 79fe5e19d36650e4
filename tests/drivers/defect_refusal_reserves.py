"""Plays an upstream defect: a `DestinationReserved` refused for its delay still marks the
destination reserved, so the repeat with a usable payload is dropped as a duplicate."""

from __future__ import annotations

import sys

from handoff import HandoffCoordinatorCore, HandoffFact
from handoff.conform_driver import Answer, Call, Driver, ErrorKind, main


class ReservesWhenRefused(Driver):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.reserved: set[object] = set()

    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        reserving = isinstance(call.fact, HandoffFact.DestinationReserved)
        if reserving and coordinator.handoff_id in self.reserved:
            return Answer(
                complete=coordinator.is_complete,
                completion=coordinator.completion,
                lifecycle=coordinator.lifecycle,
            )
        answer = super().answer(coordinator, call)
        if reserving and answer.error is ErrorKind.INVALID_TRANSFER_TIMING:
            self.reserved.add(coordinator.handoff_id)
        return answer


if __name__ == "__main__":
    sys.exit(main(driver=ReservesWhenRefused))

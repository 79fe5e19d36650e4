"""Plays an upstream defect: a failure reported after a successful handoff is dropped, where
the contract reopens the cleanup (the destination still owns the request)."""

from __future__ import annotations

import sys

from handoff import HandoffCompletion, HandoffCoordinatorCore
from handoff.conform_driver import Answer, Call, Driver, main


class NeverReopens(Driver):
    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        if coordinator.completion is HandoffCompletion.SUCCESS and call.terminal:
            return Answer(
                complete=coordinator.is_complete,
                completion=coordinator.completion,
                lifecycle=coordinator.lifecycle,
            )
        return super().answer(coordinator, call)


if __name__ == "__main__":
    sys.exit(main(driver=NeverReopens))

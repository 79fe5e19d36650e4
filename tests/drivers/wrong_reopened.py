"""Refuses a failed `CancelDestination` of a reopened cleanup with the wrong kind of error."""

from __future__ import annotations

import sys

import attrs

from handoff import HandoffCompletion, HandoffCoordinatorCore
from handoff.conform_driver import Answer, Call, Driver, ErrorKind, main


class WrongKindAfterReopen(Driver):
    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        reopened = (
            not coordinator.is_complete and coordinator.completion is HandoffCompletion.SUCCESS
        )
        answer = super().answer(coordinator, call)
        if reopened and answer.error is ErrorKind.CLEANUP_ACTION_FAILED:
            return attrs.evolve(answer, error=ErrorKind.INVALID_OUTCOME)
        return answer


if __name__ == "__main__":
    sys.exit(main(driver=WrongKindAfterReopen))

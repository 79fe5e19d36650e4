"""Forgets the `Complete` when a `CancelDestination` acknowledged `Noop` ends the cleanup."""

from __future__ import annotations

import sys

import attrs

from handoff import HandoffAction, HandoffActionOutcome, HandoffCoordinatorCore
from handoff.conform_driver import Answer, Call, Driver, main


class ForgetsCompletion(Driver):
    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        acknowledged = dict(coordinator.issued_actions()).get(call.action_id)  # type: ignore[arg-type]
        answer = super().answer(coordinator, call)
        if (
            isinstance(acknowledged, HandoffAction.CancelDestination)
            and call.outcome == HandoffActionOutcome.NOOP
        ):
            kept = [
                item
                for item in answer.issued
                if not isinstance(item.action, HandoffAction.Complete)
            ]
            return attrs.evolve(answer, issued=tuple(kept))
        return answer


if __name__ == "__main__":
    sys.exit(main(driver=ForgetsCompletion))

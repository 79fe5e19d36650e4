"""Plays an upstream defect: an outcome refused because it does not fit its action is journaled
anyway, so the fitting outcome that follows is taken for a conflicting one."""

from __future__ import annotations

import sys

import attrs

from handoff import HandoffCoordinatorCore
from handoff.conform_driver import Answer, Call, Driver, ErrorKind, main


class JournalsRefusals(Driver):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.journal: dict[tuple[object, object], object] = {}

    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        key = (coordinator.handoff_id, call.action_id)
        kept = self.journal.get(key)
        if call.outcome is not None and kept is not None and not coordinator.is_complete:
            if kept == call.outcome:
                return attrs.evolve(_now(coordinator), issued=())
            return attrs.evolve(_now(coordinator), error=ErrorKind.CONFLICTING_OUTCOME)
        answer = super().answer(coordinator, call)
        if answer.error is ErrorKind.INVALID_OUTCOME:
            self.journal[key] = call.outcome
        return answer


def _now(coordinator: HandoffCoordinatorCore) -> Answer:
    return Answer(
        complete=coordinator.is_complete,
        completion=coordinator.completion,
        lifecycle=coordinator.lifecycle,
    )


if __name__ == "__main__":
    sys.exit(main(driver=JournalsRefusals))

"""From a handoff's 20th call on, names every refusal `UnknownAction`: no configuration shows
it, only a long enough run, so the suite passes and the random walks find it."""

from __future__ import annotations

import sys
from collections import Counter

import attrs

from handoff import HandoffCoordinatorCore
from handoff.conform_driver import Answer, Call, Driver, ErrorKind, main

LATE = 20


class WrongWhenLate(Driver):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.made: Counter[object] = Counter()

    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        self.made[coordinator.handoff_id] += 1
        answer = super().answer(coordinator, call)
        if self.made[coordinator.handoff_id] >= LATE and answer.error is not None:
            return attrs.evolve(answer, error=ErrorKind.UNKNOWN_ACTION)
        return answer


if __name__ == "__main__":
    sys.exit(main(driver=WrongWhenLate))

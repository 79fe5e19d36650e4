"""Names every refusal with the wrong kind, and says why in 600,000 characters."""

from __future__ import annotations

import sys

import attrs

from handoff import HandoffCoordinatorCore
from handoff.conform_driver import Answer, Call, Driver, ErrorKind, main


class LongWinded(Driver):
    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        answer = super().answer(coordinator, call)
        if answer.error is None:
            return answer
        wrong = ErrorKind.FOREIGN_FACT
        if answer.error is wrong:
            wrong = ErrorKind.UNKNOWN_ACTION
        return attrs.evolve(answer, error=wrong, message="x" * 600_000 + "\nthe end")


if __name__ == "__main__":
    sys.exit(main(driver=LongWinded))

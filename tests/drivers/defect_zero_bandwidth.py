"""Plays an upstream defect: a bandwidth of exactly 0 is refused, where the contract takes it
for "no modelled delay" (the fallback applies)."""

from __future__ import annotations

import sys

from handoff import HandoffCoordinatorCore, HandoffFact
from handoff.conform_driver import Answer, Call, Driver, ErrorKind, main


class RefusesZeroBandwidth(Driver):
    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        fact = call.fact
        if isinstance(fact, HandoffFact.SourceHeld) and fact.transfer_timing.bandwidth_gb_s == 0.0:
            return Answer(
                error=ErrorKind.INVALID_TRANSFER_TIMING,
                message="invalid handoff transfer bandwidth 0",
                complete=coordinator.is_complete,
                completion=coordinator.completion,
                lifecycle=coordinator.lifecycle,
            )
        return super().answer(coordinator, call)


if __name__ == "__main__":
    sys.exit(main(driver=RefusesZeroBandwidth))

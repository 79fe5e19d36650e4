"""Plays an upstream defect: `kv_bytes_per_request` is left out of the modelled delay."""

from __future__ import annotations

import sys

import attrs

from handoff import HandoffCoordinatorCore, HandoffFact
from handoff.conform_driver import Answer, Call, Driver, main


class IgnoresPerRequestBytes(Driver):
    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        fact = call.fact
        if isinstance(fact, HandoffFact.SourceHeld):
            timing = attrs.evolve(fact.transfer_timing, kv_bytes_per_request=0)
            call = Call.of_fact(HandoffFact.SourceHeld(fact.handoff_id, timing))
        return super().answer(coordinator, call)


if __name__ == "__main__":
    sys.exit(main(driver=IgnoresPerRequestBytes))

"""Keeps no lifecycle, as upstream's coordinator does: its hello says it reports `completion`
alone, and its replies leave `lifecycle` out.  With `wrong` as its argument it also answers
every `complete` wrongly once the handoff completed, which the check must still find."""

from __future__ import annotations

import sys

import attrs

from handoff import HandoffCoordinatorCore
from handoff.conform_driver import Answer, Call, Driver, Hello, ProtocolLine, Reply, main

WRONG = sys.argv[1:] == ["wrong"]


class NoLifecycle(Driver):
    def respond(self, request: ProtocolLine) -> ProtocolLine:
        response = super().respond(request)
        if isinstance(response, Hello):
            return attrs.evolve(response, reports=("completion",))
        if isinstance(response, Reply):
            return attrs.evolve(response, left_out=frozenset({"lifecycle"}))
        return response

    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        answer = super().answer(coordinator, call)
        return (
            attrs.evolve(answer, complete=not answer.complete)
            if WRONG and answer.complete
            else answer
        )


if __name__ == "__main__":
    sys.argv[1:] = []
    sys.exit(main(driver=NoLifecycle))

"""Breaks the protocol at a handoff's third call, as its first argument says: `hang`, `exit`,
`garbage` or `handoff` (an answer for another handoff); or at once, with `version` (it speaks
another version of the protocol).  The second argument is a file to
write the process ids into (its own, and a child's it starts so that a hang leaves two)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from handoff import HandoffCoordinatorCore, HandoffId
from handoff.conform_driver import Answer, Call, Driver, Hello, ProtocolLine, Reply, main

HOW, PIDS = sys.argv[1], Path(sys.argv[2])
OTHER = HandoffId(uuid.UUID(int=0xBAD))


class Broken(Driver):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.made: Counter[object] = Counter()

    def respond(self, request: ProtocolLine) -> ProtocolLine:
        response = super().respond(request)
        if HOW == "version" and isinstance(response, Hello):
            return Hello(3, response.implementation)
        if HOW == "handoff" and isinstance(response, Reply) and self.made[response.handoff_id] == 3:
            return Reply(OTHER, response.answer)
        return response

    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        self.made[coordinator.handoff_id] += 1
        if self.made[coordinator.handoff_id] == 3:
            if HOW == "hang":
                PIDS.with_suffix(".hanging").touch()  # for a test that waits for the hang
                time.sleep(600)
            if HOW == "exit":
                print("the driver gave up", file=sys.stderr)
                sys.exit(3)
            if HOW == "garbage":
                print("not a protocol line", flush=True)
        return super().answer(coordinator, call)


if __name__ == "__main__":
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    helper = subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    PIDS.write_text(f"{os.getpid()} {helper.pid}\n")
    sys.exit(main([], driver=Broken))

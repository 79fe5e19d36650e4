"""Speaks version 1 of the protocol, as implementations written before version 2 do: no
`close`, and every reply reports `completion` and `lifecycle`.  As its input ends, it says on
stderr how many handoffs it holds open."""

from __future__ import annotations

import sys

from handoff.conform_driver import Driver, Hello, Message, main


class VersionOne(Driver):
    implementation = "a version 1 engine"

    def respond(self, request: Message) -> Message:
        if isinstance(request, Hello):
            return Hello(1, self.implementation)
        return super().respond(request)


if __name__ == "__main__":
    made: list[VersionOne] = []

    def build(*args: object) -> VersionOne:
        made.append(VersionOne(*args))  # type: ignore[arg-type]
        return made[-1]

    status = main(driver=build)
    print(f"open at the end: {len(made[0].handoffs)}", file=sys.stderr)  # none is ever closed
    sys.exit(status)

"""Speaks version 1 of the protocol, as implementations written before version 2 do: no
`close`, and every reply reports `completion` and `lifecycle`."""

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
    sys.exit(main(driver=VersionOne))

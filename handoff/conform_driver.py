"""The reference implementation of `handoff conform`'s protocol: the library's own coordinator.

`python -m handoff.conform_driver` reads one request a line on stdin and writes one answer a
line on stdout (the protocol of docs/conformance.md), running a `HandoffCoordinatorCore` for each
handoff it is asked to open (and forgetting it once closed); `handoff conform -- python -m
handoff.conform_driver` holds it to the chart.  `--chart MODULE:CLASS` runs a chart of one's
own for the handoffs of its order.
`--vectors FILE` replays test vectors that `handoff conform --export FILE` wrote instead, as an
implementation's own test runner would: `OK` and exit 0, or the first vector answered
differently and exit 1.

A driver that answers differently, to see what the conformance check says, derives from `Driver`
and overrides `answer` (or `coordinator`), then runs `main(driver=TheDerivedDriver)`; `answer`
takes the `Call` made and returns an `Answer` (the issued actions or the refusal's `ErrorKind`,
then the handoff's completion and lifecycle).  A request
this side cannot serve (a line that is not the protocol, a handoff opened twice or never) is one
line on stderr and exit 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.conform.protocol import (
    REPORTED,
    VERSION,
    Answer,
    CallRequest,
    Close,
    Closed,
    ErrorKind,
    Hello,
    Open,
    Opened,
    ProtocolError,
    ProtocolLine,
    Reply,
    read,
    write,
)
from handoff._review.conform.vectors import read_vectors
from handoff._system.call import Call
from handoff._values.values import HandoffId

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

Message = ProtocolLine
"""The name drivers written against protocol 1 import `ProtocolLine` by; kept for them."""

__all__ = [
    "Answer",
    "Call",
    "Close",
    "Closed",
    "Driver",
    "DriverError",
    "ErrorKind",
    "Hello",
    "Message",
    "ProtocolLine",
    "Reply",
    "main",
    "replay_vectors",
    "serve",
]

_PROG = "python -m handoff.conform_driver"


class DriverError(Exception):
    """A request the driver cannot serve: the message says which and why."""


class Driver:
    """Answers protocol requests with the library's coordinator, one per open handoff.

    `charts` replace the shipped chart of their order.
    """

    implementation = "handoff reference driver"
    """What the driver calls itself in its `Hello`."""

    def __init__(self, charts: Sequence[type[HandoffChart]] = ()) -> None:
        from handoff._compile.table import (
            compiled,  # a user's chart only: the shipped orders need none
        )

        self.charts = {compiled(chart).order: chart for chart in charts}
        self.handoffs: dict[HandoffId, HandoffCoordinatorCore] = {}

    def respond(self, request: ProtocolLine) -> ProtocolLine:
        """The response to one request; `DriverError` for a request it cannot serve."""
        match request:
            case Hello(version):  # the newest version both sides speak
                spoken = min(version, VERSION)
                return Hello(spoken, self.implementation, REPORTED if spoken >= 2 else None)
            case Open(handoff_id):
                if handoff_id in self.handoffs:
                    raise DriverError(f"handoff {handoff_id} is open already")
                self.handoffs[handoff_id] = self.coordinator(request)
                return Opened(handoff_id)
            case CallRequest(handoff_id, call):
                coordinator = self.handoffs.get(handoff_id)
                if coordinator is None:
                    raise DriverError(f"a call for handoff {handoff_id}, which was never opened")
                return Reply(handoff_id, self.answer(coordinator, call))
            case Close(handoff_id):
                if self.handoffs.pop(handoff_id, None) is None:
                    raise DriverError(f"closing handoff {handoff_id}, which is not open")
                return Closed(handoff_id)
        raise DriverError(f"{write(request)} is an answer, not a request")

    def coordinator(self, request: Open) -> HandoffCoordinatorCore:
        """A fresh coordinator for the handoff `request` opens."""
        chart = self.charts.get(request.order)
        if chart is None:
            return HandoffCoordinatorCore(
                request.handoff_id, request.order, request.fallback_transfer_delay_ms
            )
        return HandoffCoordinatorCore(
            request.handoff_id, request.order, request.fallback_transfer_delay_ms, chart=chart
        )

    def answer(self, coordinator: HandoffCoordinatorCore, call: Call) -> Answer:
        """Make `call` on `coordinator` and say what it answered."""
        return Answer.of(call, coordinator)


def serve(driver: Driver, lines: Iterable[bytes], out: IO[str]) -> None:
    """Answer each request line until the input ends; `DriverError` for one it cannot serve."""
    for number, line in enumerate(lines, start=1):
        try:
            request = read(line)
        except ProtocolError as error:
            raise DriverError(f"line {number}: {error}") from None
        out.write(write(driver.respond(request)) + "\n")
        out.flush()  # the other side waits for each answer before it may send more


def replay_vectors(driver: Driver, path: Path, out: IO[str]) -> bool:
    """Replay the test vectors at `path` on `driver`; whether every vector was answered as it
    expects (the first one that is not is printed to `out`)."""
    count = 0
    for number, send, expect in read_vectors(path):
        try:
            got = driver.respond(send)
        except DriverError as error:
            raise DriverError(f"{path}:{number}: {error}") from None
        if got != expect:
            out.write(f"FAILED {path}:{number}: {write(send)}\n")
            out.write(f"  expected: {_said(expect)}\n  answered: {_said(got)}\n")
            return False
        count += 1
    out.write(f"OK {path} ({count} vectors)\n")
    return True


def _said(message: ProtocolLine) -> str:
    return message.answer.describe() if isinstance(message, Reply) else write(message)


def main(argv: Sequence[str] | None = None, driver: Callable[..., Driver] = Driver) -> int:
    """Run the driver (`driver` builds it from the charts given); returns the exit status."""
    from handoff import _cli, _process

    parser = _cli.Parser(prog=_PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--chart",
        type=_cli.chart,
        action="append",
        default=[],
        metavar="MODULE:CLASS",
        help="run a chart of your own for the handoffs of its order; repeat for several",
    )
    parser.add_argument(
        "--vectors",
        type=_cli.existing_file,
        metavar="FILE",
        help="replay test vectors (from `handoff conform --export`) instead of serving stdin",
    )
    try:
        args = parser.parse_args(argv)
        served = driver(args.chart)
        if args.vectors is not None:
            return 0 if replay_vectors(served, args.vectors, sys.stdout) else 1
        serve(served, sys.stdin.buffer, sys.stdout)
    except _cli.UsageError as error:
        _cli.error(error.prog or _PROG, str(error))
        return 2
    except (DriverError, ProtocolError) as error:
        _cli.error(_PROG, str(error))
        return 2
    except OSError as error:
        _cli.error(_PROG, str(error))
        return 1
    except BrokenPipeError:  # the other side is gone: nobody is left to tell
        _process.silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

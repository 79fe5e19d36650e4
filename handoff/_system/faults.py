"""Faults: every way a handoff's world misbehaves, named once for the review and the simulation.

The review explores a fault as one more move a run may make (`handoff review --workers`);
the simulation injects it with probability `fault_rate` at each chance (`handoff simulate`).
Each fault says what it is in words and which kind of terminal fact it reports when it is
one; `SIMULATED`, `WITH_WORKERS` and `NETWORK` say which the simulation injects and which the
review explores only when asked.  A fault of `NETWORK` says what it does when it strikes
(`Strike`), what that makes of a message in flight (`strike_message`: the review and the
simulation each only schedule it), and how a run shows its move (`Shown`: the move's kind,
its trace word, its sentence and its drawing's note), so a new fault of the same kinds of
effect is one member, its strike and its words here, and its move's `MoveKind` member.
"""

from __future__ import annotations

import enum
from typing import Generic, TypeVar

import attrs

from handoff._values.messages import HandoffFact
from handoff._values.values import HandoffActionOutcome

__all__ = [
    "NETWORK",
    "SIMULATED",
    "WITH_WORKERS",
    "Fault",
    "Shown",
    "Strike",
    "Struck",
    "TerminalFact",
    "strike_message",
]

TerminalFact = type[HandoffFact.Failed] | type[HandoffFact.TimedOut] | type[HandoffFact.Canceled]
"""A kind of fact that ends a handoff early."""


class Fault(enum.Enum):
    """One kind of fault; the value is its name in reports."""

    __hash__ = object.__hash__  # a singleton: identity hashes in C, `Enum` by its name

    FAILED_OUTCOME = "failed outcome"
    """A worker fails the work it was given (a submission, a reservation, a transfer, an
    activation): it acknowledges it as failed and remembers what it did before."""
    FAILURE = "failure"
    """The runtime reports `Failed` for the request."""
    TIMEOUT = "timeout"
    """The runtime reports `TimedOut`."""
    CANCELLATION = "cancellation"
    """The runtime reports `Canceled`."""
    CANCELLATION_AFTER_SUCCESS = "cancellation after success"
    """`Canceled` after a SUCCESS: the decode destination still owns the request."""
    DUPLICATE_ACKNOWLEDGEMENT = "duplicate acknowledgement"
    """An acknowledgement is delivered twice."""
    REORDERED_ACKNOWLEDGEMENT = "reordered acknowledgement"
    """An acknowledgement overtakes an earlier one."""
    CLEANUP_FAILURE = "cleanup failure"
    """A cancel is acknowledged as failed, not done: the runtime sends it again, unless it
    does not retry (`System.retry`).  The simulation injects it at its rate; a review, as
    `FAILED_CLEANUP` (`--faults cleanup-failure`), within its budget."""
    DELAYED_DELIVERY = "delayed delivery"
    """An action reaches its worker much later than usual, so a cancel may overtake it."""
    DUPLICATION = "duplicate"
    """A message is delivered twice: once now, and a copy later (at-least-once delivery)."""
    LOSS = "lose"
    """A message in flight is lost; the runtime notices it only as a timeout (`TimedOut`)."""
    RESTART = "crash"
    """A worker restarts: it forgets what it remembered (tombstones too) and frees its slots."""
    FAILED_CLEANUP = "cleanup-failure"
    """A worker fails a cancel it gets: it does not do it and acknowledges it as failed; the
    runtime sends it again unless told not to retry (`System.retry`)."""

    @property
    def outcome(self) -> HandoffActionOutcome:
        """The failed acknowledgement this fault sends (a worker's failure, a cleanup's)."""
        return _FAILED

    @property
    def fact(self) -> TerminalFact | None:
        """The terminal fact this fault reports, if it reports one."""
        return _FACTS.get(self)

    @property
    def strike(self) -> Strike:
        """What this fault of `NETWORK` does when it strikes."""
        return _STRIKES[self]

    @property
    def shown(self) -> Shown:
        """How a run shows the move of this fault of `NETWORK`."""
        return _SHOWN[self]


@attrs.frozen
class Strike:
    """What an injected fault does where it strikes: a message in flight, or a worker."""

    message: bool
    """It strikes one message in flight, either way between a coordinator and a worker (else:
    a worker)."""
    delivered: bool = True
    """The message struck still reaches its receiver, now."""
    copy: bool = False
    """A copy of the message is sent again, behind what is in flight (at-least-once
    delivery)."""
    notice: TerminalFact | None = None
    """How the runtime notices it: this fact to the message's coordinator (its timeout)."""
    forgets: bool = False
    """The worker struck forgets every request, tombstones too, and frees every slot."""
    fails_cleanup: bool = False
    """It strikes a cancel as it reaches its worker: the worker does not do it (remembers
    nothing of it) and acknowledges it as failed."""

    @property
    def loses(self) -> bool:
        """The message struck is gone: neither delivered nor sent again (the runtime's timer
        notices it)."""
        return self.message and not (self.delivered or self.copy)


M = TypeVar("M")


@attrs.frozen
class Struck(Generic[M]):
    """What a fault that strikes messages makes of one in flight (`strike_message`)."""

    now: bool
    """It reaches its receiver now."""
    again: M | None
    """What goes out again on its channel, behind what is in flight: a copy of it, or, not
    delivered now, the message itself, held back."""
    lost: bool
    """It is gone: the runtime's timer notices (`runtime.resent` says whether it sends it
    again; else it reports `notice`)."""
    notice: TerminalFact | None
    """The fact the runtime reports for its loss when it does not send it again."""


def strike_message(fault: Fault, message: M, copy: M) -> Struck[M]:
    """What `fault`, a fault of `NETWORK` that strikes messages, does to `message` in flight
    (`copy`: the same message as the network's second copy of it).  A copy of a message
    delivered now follows it; one not delivered now is the message itself, held back."""
    how = fault.strike
    again = None
    if how.copy:
        again = copy if how.delivered else message
    return Struck(how.delivered, again, how.loses, how.notice)


@attrs.frozen
class Shown:
    """How a run shows a fault's move: in a report, a system trace and a drawing."""

    move: str
    """The move's kind (a `MoveKind`'s value; several faults may share one)."""
    word: str
    """How a system trace's move line names the move (`{"move":"lose",…}`)."""
    note: str = ""
    """What the drawing notes beside a message struck on its way to a coordinator."""
    aside: str = ""
    """For a move that neither delivers the message nor loses it: what becomes of it, after
    its name, in the report's sentence and the drawing's note."""


_FAILED = HandoffActionOutcome.failed("injected fault")

_FACTS: dict[Fault, TerminalFact] = {
    Fault.FAILURE: HandoffFact.Failed,
    Fault.TIMEOUT: HandoffFact.TimedOut,
    Fault.CANCELLATION: HandoffFact.Canceled,
    Fault.CANCELLATION_AFTER_SUCCESS: HandoffFact.Canceled,
}

_STRIKES = {
    Fault.DUPLICATION: Strike(message=True, copy=True),
    Fault.LOSS: Strike(message=True, delivered=False, notice=HandoffFact.TimedOut),
    Fault.RESTART: Strike(message=False, forgets=True),
    Fault.FAILED_CLEANUP: Strike(message=True, fails_cleanup=True),
}

_SHOWN = {
    Fault.DUPLICATION: Shown("deliver, leaving a copy in flight", "duplicate", note="duplicated"),
    Fault.LOSS: Shown("message lost", "lose", note="lost"),
    Fault.RESTART: Shown("worker restarts", "restart"),
    Fault.FAILED_CLEANUP: Shown("worker fails the work", "fail"),
}

SIMULATED = (
    Fault.FAILED_OUTCOME,
    Fault.TIMEOUT,
    Fault.CANCELLATION,
    Fault.CANCELLATION_AFTER_SUCCESS,
    Fault.DUPLICATE_ACKNOWLEDGEMENT,
    Fault.REORDERED_ACKNOWLEDGEMENT,
    Fault.CLEANUP_FAILURE,
)
"""The faults the simulation injects, in report order (a `Failed` report is the review's)."""

WITH_WORKERS = (*SIMULATED, Fault.DELAYED_DELIVERY)
"""The faults the simulation injects when its handoffs have workers (`--workers`); those of
`NETWORK` asked for with `--faults` come after them."""

NETWORK = (Fault.DUPLICATION, Fault.LOSS, Fault.RESTART, Fault.FAILED_CLEANUP)
"""The faults a system review explores only when asked (`--faults`), each within a budget;
the value of each is its name on the command line."""

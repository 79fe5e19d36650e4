"""Faults: every way a handoff's world misbehaves, named once for the review and the simulation.

The review explores a fault as one more move a run may make (`handoff review --workers`);
the simulation injects it with probability `fault_rate` at each chance (`handoff simulate`).
Each fault says what it is in words and which kind of terminal fact it reports when it is
one; `SIMULATED`, `WITH_WORKERS` and `NETWORK` say which the simulation injects and which the
review explores only when asked.
"""

from __future__ import annotations

import argparse
import enum

from handoff._runs.workers import DEFAULT_ACKNOWLEDGE, Acknowledge
from handoff._values.messages import HandoffFact
from handoff._values.values import HandoffActionOutcome

__all__ = [
    "FAULTS_HELP",
    "NETWORK",
    "SIMULATED",
    "WITH_WORKERS",
    "Fault",
    "TerminalFact",
    "add_fault_options",
    "budget_argument",
    "faults_argument",
    "slots_argument",
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
    CLEANUP_FAILURE = "cleanup failure (retried)"
    """A release or cancel is acknowledged as failed first, then done."""
    DELAYED_DELIVERY = "delayed delivery"
    """An action reaches its worker much later than usual, so a cancel may overtake it."""
    DUPLICATION = "duplicate"
    """A message is delivered twice: once now, and a copy later (at-least-once delivery)."""
    LOSS = "lose"
    """A message in flight is lost; the runtime notices it only as a timeout (`TimedOut`)."""
    RESTART = "crash"
    """A worker restarts: it forgets what it remembered (tombstones too) and frees its slots."""

    @property
    def outcome(self) -> HandoffActionOutcome:
        """The failed acknowledgement this fault sends (a worker's failure, a cleanup's)."""
        return _FAILED

    @property
    def fact(self) -> TerminalFact | None:
        """The terminal fact this fault reports, if it reports one."""
        return _FACTS.get(self)


_FAILED = HandoffActionOutcome.failed("injected fault")

_FACTS: dict[Fault, TerminalFact] = {
    Fault.FAILURE: HandoffFact.Failed,
    Fault.TIMEOUT: HandoffFact.TimedOut,
    Fault.CANCELLATION: HandoffFact.Canceled,
    Fault.CANCELLATION_AFTER_SUCCESS: HandoffFact.Canceled,
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

NETWORK = (Fault.DUPLICATION, Fault.LOSS, Fault.RESTART)
"""The faults a system review explores only when asked (`--faults`), each within a budget;
the value of each is its name on the command line."""

FAULTS_HELP = ", ".join(fault.value for fault in NETWORK)


def faults_argument(text: str) -> frozenset[Fault]:
    """An argparse type: `duplicate,lose,crash`, any of them, each once."""
    names = [name.strip().casefold() for name in text.split(",")]
    found: set[Fault] = set()
    for name in names:
        fault = next((fault for fault in NETWORK if fault.value == name), None)
        if fault is None:
            raise argparse.ArgumentTypeError(
                f"unknown fault {name!r}: expected a comma-separated list of {FAULTS_HELP}"
            )
        found.add(fault)
    return frozenset(found)


def budget_argument(text: str) -> int:
    """An argparse type: how many faults of each kind a run may suffer (at least 1)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or value > 9:
        # Each unit of budget multiplies the configurations; past a few a review never ends.
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 9, got {text!r}")
    return value


def slots_argument(text: str) -> int:
    """An argparse type: how many KV slots each worker holds at most (at least 1)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, got {text!r}")
    return value


def add_fault_options(parser: argparse.ArgumentParser) -> None:
    """Declare `--fifo`, `--slots`, `--faults`, `--fault-budget` and `--acknowledge`, as
    review and simulate take them (both with `--workers`)."""
    parser.add_argument(
        "--fifo",
        action="store_true",
        help="with --workers: deliver each worker's messages in the order they were sent "
        "(default: in any order)",
    )
    parser.add_argument(
        "--slots",
        type=slots_argument,
        metavar="C",
        help="with --workers: each worker holds at most C KV slots and refuses work that "
        "would take one more (default: unbounded)",
    )
    parser.add_argument(
        "--faults",
        type=faults_argument,
        metavar="FAULT,…",
        help=f"with --workers: let a handoff suffer these faults too ({FAULTS_HELP}): a "
        "message delivered twice, a message lost (the runtime reports TimedOut), a worker "
        "that restarts and forgets the request",
    )
    parser.add_argument(
        "--fault-budget",
        type=budget_argument,
        metavar="K",
        help="with --faults: how many faults of each kind a handoff suffers at most (default 1)",
    )
    parser.add_argument(
        "--acknowledge",
        choices=[policy.value for policy in Acknowledge],
        help="with --workers: when the runtime reports Submitted, Accepted and Scheduled: "
        "on-send, as it sends the work, before the worker has it (the weaker guarantee, "
        "as the documented asyncio runtime gives it); on-reply, once the worker has done the "
        f"work (default: {DEFAULT_ACKNOWLEDGE.value})",
    )

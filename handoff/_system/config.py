"""The configuration of the system around coordinators: which workers, how messages are
delivered, which faults a run may suffer, when the runtime acknowledges, how many handoffs
share the workers.  Every scheduler takes the one `System`: the review explores it, the
simulation samples it, Spin mirrors it and a system trace records it."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import attrs

from handoff._system.faults import NETWORK, Fault

if TYPE_CHECKING:
    from handoff._system.properties import Property
    from handoff._system.workers import WorkerContract

__all__ = ["DEFAULT_ACKNOWLEDGE", "DEFAULT_FAILURES", "Acknowledge", "System"]


class Acknowledge(enum.Enum):
    """When the runtime acknowledges work that takes or moves KV; the value is its option."""

    ON_REPLY = "on-reply"
    """The worker's reply carries the acknowledgement: it has the work when it is reported."""
    ON_SEND = "on-send"
    """The runtime reports `Submitted`, `Accepted` or `Scheduled` as it sends the work, before
    the worker has it (as docs/integrating.md's asyncio runtime does for `Submitted` and
    `Scheduled`); the worker then only
    reports the work's fact, or `Failed` when it did not do it."""

    @property
    def words(self) -> str:
        """The policy in a report's words: `work acknowledged on send`."""
        when = "on send" if self is Acknowledge.ON_SEND else "on the worker's reply"
        return f"work acknowledged {when}"


DEFAULT_ACKNOWLEDGE = Acknowledge.ON_SEND
"""The policy a review and a simulation assume unless told (`--acknowledge`): the weaker
guarantee, as the documented asyncio runtime gives it.  A trace without the field was made
under `ON_REPLY` (the default until this one), and is read so."""


DEFAULT_FAILURES = 2
"""How many terminal facts and failed works a run suffers unless told (`--failures`)."""


@attrs.frozen
class System:
    """How the system around the coordinators behaves: its workers, delivery and faults."""

    contract: WorkerContract
    fifo: bool = False
    """Deliver each worker's messages, in each direction, in the order they were sent."""
    faults: int = DEFAULT_FAILURES
    """The most faults (terminal facts, failed work) a run suffers (`--failures`)."""
    worker_failures: bool = True
    """Whether a worker may fail the work it was given (`Fault.FAILED_OUTCOME`)."""
    injected: frozenset[Fault] = frozenset()
    """The faults of `faults.NETWORK` a run may suffer too (`--faults`)."""
    budget: int = 1
    """How many of each injected fault a handoff suffers at most (`--fault-budget`): a fault
    striking a message counts against the message's handoff; a restart strikes every handoff
    live on the worker, and counts against each."""
    acknowledge: Acknowledge = DEFAULT_ACKNOWLEDGE
    """When the runtime acknowledges work that takes or moves KV (`--acknowledge`)."""
    concurrency: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    """How many handoffs are live at once, sharing the two workers (`--concurrency`)."""
    slots: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    """How many KV slots each worker holds at most (`--slots`; None: unbounded)."""
    properties: tuple[Property, ...] = ()
    """Properties of one's own (`--property`), judged at every configuration."""
    symmetry: bool = True
    """Count configurations that differ only by which handoff is which once, and explore the
    moves of one handoff that commute with every other handoff's in one order only."""

    def describe(self) -> str:
        """`forgetful workers, messages delivered in any order`, then the handoffs sharing the
        workers and their slots, the faults injected when they are not the defaults, and when
        work is acknowledged (always said: the policy decides some verdicts)."""
        delivery = "FIFO per worker" if self.fifo else "any order"
        words = f"{self.contract.name} workers, messages delivered in {delivery}"
        if self.concurrency > 1:
            words += f", {self.concurrency} handoffs sharing them"
        if self.slots is not None:
            words += f", {self.slots} slot{'s' if self.slots > 1 else ''} per worker"
        if self.faults != DEFAULT_FAILURES:
            words += f", at most {self.faults} failure{'s' if self.faults != 1 else ''} a run"
        if self.injected:
            names = ", ".join(fault.value for fault in NETWORK if fault in self.injected)
            words += f", faults {names} ({self.budget} each)"
        return f"{words}, {self.acknowledge.words}"

    def allows(self, fault: Fault, spent: int) -> bool:
        """Whether a handoff that suffered `spent` faults of kind `fault` may suffer one more."""
        return fault in self.injected and spent < self.budget

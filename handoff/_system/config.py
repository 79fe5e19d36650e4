"""The configuration of the system around coordinators: which workers, how messages are
delivered, which faults a run may suffer, when the runtime acknowledges, how many handoffs
share the workers.  Every scheduler takes the one `System`: the review explores it, the
simulation samples it, Spin mirrors it and a system trace records it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from handoff._system.acknowledge import Acknowledge, AnyAcknowledge, PerAction, acknowledge_of
from handoff._system.duties import Resend, Restart
from handoff._system.faults import NETWORK, Fault

if TYPE_CHECKING:
    from handoff._system.properties import Property
    from handoff._system.workers import WorkerContract

__all__ = [
    "DEFAULT_ACKNOWLEDGE",
    "DEFAULT_FAILURES",
    "DEFAULT_RUNTIME",
    "Acknowledge",
    "AnyAcknowledge",
    "PerAction",
    "Resend",
    "Restart",
    "System",
    "acknowledge_of",
]


DEFAULT_ACKNOWLEDGE = Acknowledge.ON_SEND
"""The policy a `System` built without one assumes (the `eager` runtime's): the weaker
guarantee, as the documented asyncio runtime gives it.  The command line's default is its
default runtime's (`profiles.DEFAULT_RUNTIME`).  A trace without the field was made under
`ON_REPLY` (the default until this one), and is read so."""


DEFAULT_FAILURES = 2
"""How many terminal facts and failed works a run suffers unless told (`--failures`)."""

DEFAULT_RUNTIME = "eager"
"""The runtime profile a `System` built without one assumes (`profiles.EAGER`: what reviews
assumed before profiles); a trace names any other.  The command line's default runtime is
`profiles.DEFAULT_RUNTIME`."""


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
    acknowledge: AnyAcknowledge = DEFAULT_ACKNOWLEDGE
    """When the runtime acknowledges work that takes or moves KV (`--acknowledge`), for
    every kind alike or per kind (`PerAction`)."""
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

    # -- the runtime's duties beyond carrying messages
    retry: bool = True
    """Send a cancel acknowledged as failed again until it is done, as the contract demands
    (`--no-retry`: a runtime that gives up on it)."""
    resend: Resend = Resend.NONE
    """What the runtime sends again once its timer says a message was lost (`--resend`)."""
    restart: Restart = attrs.field(factory=Restart)
    """What a worker's restart does (`--restart`)."""
    deadline: float | None = None
    """Each handoff's deadline, in ms after its start: the runtime reports `TimedOut` when it
    fires, once, unless the handoff completed first (`--deadline`; None: no deadline).  The
    review is untimed: any deadline fires at any moment before the handoff completes."""
    # -- the runtime profile's settings (`--runtime`, `handoff._system.profiles`) ----------
    runtime: str = DEFAULT_RUNTIME
    """The runtime profile these settings came from, as `--runtime` names it (a shipped
    name, or `MODULE:NAME`), for reports and traces."""
    holds_early: bool = False
    """Hold back a `SourceHeld` or `DestinationReserved` the coordinator would refuse as early,
    rather than deliver it to be refused (`runtime.held_back`)."""
    one_at_a_time: bool = False
    """A worker takes one action at a time: the next once its last reply reached the
    coordinator (`runtime.busy`)."""
    answers_again: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    """The destination answers a repeated action again from the outcomes of its last N
    actions, without doing it again (0: it stays silent, as the shipped contracts do)."""
    expires: bool = False
    """A retired request's tombstone may expire (the session timeout: untimed, at any move
    once its handoff is complete or abandoned and none of its actions is on its way to the
    worker, `runtime.may_expire`)."""
    abandons: bool = False
    """Sessions end outside the chart instead of a terminal fact (`runtime.abandoned`): the
    coordinator hears nothing more, the runtime cancels on its own."""
    # -- draining transfers before the destination's cleanup (`--drain-transfers`) --------
    drains_transfers: bool = False
    """Hold a handoff's `CancelDestination` while a `StartTransfer` of that handoff has not
    reached the source yet (`runtime.drained`): cleanup issues both cancels together, and
    without the hold the destination may free the request's slot before the source writes
    the KV into it (W9)."""

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
        return f"{words}, {self.acknowledge.words}{self._duties_words()}{self.runtime_words()}"

    def _duties_words(self) -> str:
        """The runtime's duties it does not do as the contract says (nothing when it does)."""
        retry = "" if self.retry else ", failed cancels not retried"
        deadline = "" if self.deadline is None else ", a deadline per handoff"
        drains = ", transfers drained before the destination's cancel" * self.drains_transfers
        return f"{retry}{self.resend.words}{self.restart.words}{deadline}{drains}"

    @property
    def features(self) -> tuple[str, ...]:
        """The runtime's settings besides acknowledgement that are on, in a report's words."""
        said = (
            (self.holds_early, "early facts held back"),
            (self.one_at_a_time, "one action at a time per worker"),
            (self.answers_again > 0, f"last {self.answers_again} outcomes answered again"),
            (self.expires, "tombstones expire"),
            (self.abandons, "sessions end with cleanup outside the chart"),
        )
        return tuple(words for on, words in said if on)

    def runtime_words(self) -> str:
        """`, runtime live` after the settings it adds, naming what an option overrode."""
        from handoff._system.profiles import RUNTIMES  # profiles build on this module

        features = "".join(f", {words}" for words in self.features)
        profile = RUNTIMES.get(self.runtime)
        if profile is None:
            return f"{features}, runtime {self.runtime}"
        # The workers are named first in every report: a contract other than the runtime's
        # own is plain there, so only the settings the words do not attribute are noted.
        differs = [
            name for name, value in profile.settings().items() if getattr(self, name) != value
        ]
        overridden = f" ({', '.join(differs)} overridden)" if differs else ""
        return f"{features}, runtime {self.runtime}{overridden}"

    @property
    def loses(self) -> bool:
        """Whether a run may lose a message in flight: an injected fault loses one
        (`Strike.loses`), or a restart loses its worker's inbox (`Restart.loses_inbox`)."""
        inbox = self.restart.loses_inbox
        return any(
            fault.strike.loses or (fault.strike.forgets and inbox)
            for fault in NETWORK
            if fault in self.injected
        )

    @property
    def needs_timer(self) -> bool:
        """Whether lost messages wait on the runtime's timer: those it sends again
        (`resend`), and, re-sent or not, those a restart lost with its worker's inbox."""
        return self.restart.loses_inbox or (self.resend is not Resend.NONE and self.loses)

    def allows(self, fault: Fault, spent: int) -> bool:
        """Whether a handoff that suffered `spent` faults of kind `fault` may suffer one more."""
        return fault in self.injected and spent < self.budget

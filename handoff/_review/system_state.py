"""A system configuration, what the runtime has seen of it, and the judgments read off one
configuration alone: the values the system world (`handoff._review.system`) explores, and their
canonical form when handoffs are interchangeable."""

from __future__ import annotations

from typing import NamedTuple

import attrs

from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.graph import End, stuck
from handoff._review.properties import Property
from handoff._runs.faults import NETWORK, Fault
from handoff._runs.worker_state import SystemView, WorkerState
from handoff._runs.workers import (
    DEFAULT_ACKNOWLEDGE,
    Acknowledge,
    Message,
    Role,
    WorkerContract,
)
from handoff._values.values import HandoffCompletion

__all__ = [
    "DEFAULT_FAILURES",
    "Spent",
    "System",
    "SystemState",
    "SystemWatch",
    "canonical",
    "completion_finding",
    "judge_own",
]


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
    """How many of each injected fault a run suffers at most (`--fault-budget`)."""
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
        """Whether a run that suffered `spent` faults of kind `fault` may suffer one more."""
        return fault in self.injected and spent < self.budget


Flight = tuple[tuple[Message, ...], ...]


class SystemWatch(NamedTuple):
    """What the runtime has seen of one handoff, for the properties: ids issued and performed,
    frees told."""

    started: bool = False
    issued: int = 0
    """Bit n set: action n was issued."""
    performed: int = 0
    """Bit n set: action n was performed by a worker."""
    told: frozenset[Role] = frozenset()
    """Workers whose freeing the coordinator was told of (a release or cancel acknowledged)."""
    terminated: bool = False
    """A terminal fact was reported for the handoff (a fault, or a loss's timeout): every run
    must then end with it CANCELED (W5)."""


class Spent(NamedTuple):
    """The faults a run suffered so far, for every handoff."""

    faults: int = 0
    """Terminal facts and failed work."""
    duplicated: int = 0
    lost: int = 0
    restarts: int = 0
    restarted: frozenset[Role] = frozenset()
    """Workers that restarted: they may have lost a request the coordinator handed over."""


class SystemState(NamedTuple):
    """One system configuration: what decides everything after it."""

    coordinators: tuple[int, ...]
    """Each handoff's coordinator configuration, by number (`SystemWorld._intern`)."""
    source: WorkerState
    destination: WorkerState
    flight: Flight
    """Messages in flight: one channel, canonically sorted (any order), or four, in order."""
    watches: tuple[SystemWatch, ...]
    spent: Spent

    def worker(self, role: Role) -> WorkerState:
        """What the worker of `role` remembers."""
        return self.source if role is Role.SOURCE else self.destination

    @property
    def quiet(self) -> bool:
        """Nothing in flight."""
        return not any(self.flight)

    def quiet_for(self, handoff: int | None) -> bool:
        """Nothing of `handoff`'s in flight (None: the only handoff's)."""
        return all(message.handoff != handoff for channel in self.flight for message in channel)


class _Node(NamedTuple):
    coordinators: tuple[HandoffCoordinatorCore, ...]
    state: SystemState

    def end(self, terminated: bool = False) -> End:
        """How the run that ends here ended, for every handoff (`terminated`: for those a
        terminal fact was reported for)."""
        chosen = [
            coordinator
            for coordinator, watch in zip(self.coordinators, self.state.watches, strict=True)
            if watch.terminated or not terminated
        ]
        if not all(coordinator.is_complete for coordinator in chosen):
            return End.STUCK
        if all(c.completion is HandoffCompletion.SUCCESS for c in chosen):
            return End.SUCCESS
        return End.CANCELED

    @property
    def terminated(self) -> bool:
        """Whether a terminal fact was reported for some handoff."""
        return any(watch.terminated for watch in self.state.watches)

    def stuck(self) -> str:
        """W4's words for a run that ends here."""
        waiting = [message.describe() for channel in self.state.flight for message in channel]
        what = f"only {', '.join(waiting)} in flight, refused" if waiting else "nothing in flight"
        if len(self.coordinators) == 1:
            return stuck(self.coordinators[0].chart_state, what)
        states = ", ".join(
            f"h{n + 1} in {c.chart_state}"
            for n, c in enumerate(self.coordinators)
            if not c.is_complete
        )
        return stuck(states, what, several=True)


def completion_finding(
    state: SystemState, completion: HandoffCompletion | None, handoff: int | None = None
) -> str | None:
    """W1 for a complete handoff with nothing of its own in flight: which worker holds a slot
    for its request that it must not."""
    number = _number_of(handoff)
    holders = [role for role in Role if state.worker(role).slots(number)]
    whose = "the handoff" if handoff is None else f"h{handoff + 1}"
    if completion is HandoffCompletion.CANCELED and holders:
        who = " and the ".join(role.value for role in holders)
        return (
            f"{whose} completed CANCELED and, with nothing of it in flight, the {who} holds a "
            "KV slot for it"
        )
    if completion is HandoffCompletion.SUCCESS and holders != [Role.DESTINATION]:
        if Role.SOURCE in holders:
            return f"{whose} completed SUCCESS and the source still holds a KV slot for it"
        if Role.DESTINATION not in state.spent.restarted:
            # A destination that restarted lost the request it was decoding: no chart can
            # prevent that, and no slot leaks.
            return f"{whose} completed SUCCESS and the destination holds no KV slot for it"
    return None


def _number_of(handoff: int | None) -> int:
    return 0 if handoff is None else handoff


def judge_own(entry: Property, view: SystemView) -> str | None:
    """A property of one's own at one configuration: None where it holds, else why not."""
    predicate = entry.predicate
    assert predicate is not None
    try:
        found = predicate(view)
    except Exception as error:  # a user's predicate may raise anything
        return f"the property {entry.key.value} raised {type(error).__name__}: {error}"
    if found is True:
        return None
    if isinstance(found, str) and found:
        return found
    if found is False or found is None or found == "":
        return f"{entry.title} does not hold"
    return f"the property {entry.key.value} returned {found!r}; expected True, False or a reason"


def canonical(
    state: SystemState, ordered: tuple[bool, ...] = (True, True)
) -> tuple[SystemState, tuple[int, ...] | None]:
    """`state` with its handoffs numbered in a canonical order: configurations that differ only
    by which handoff is which get one key (symmetry reduction).

    Each handoff is ordered by everything about it that no renumbering changes (its
    coordinator, what each worker remembers of it and how recently, its messages and their
    places in flight); handoffs alike in all of that are interchangeable, so any order of
    them gives the same state.  Also says how it renumbered them (None: it did not).
    `ordered` says, for the source and the destination, whether the order of the requests it
    remembers idle matters (a bounded memory forgets the longest idle first)."""
    count = len(state.coordinators)
    places: list[list[object]] = [[] for _ in range(count)]
    fifo = len(state.flight) > 1  # in any order, a message's place says nothing
    for channel, messages in enumerate(state.flight):
        for position, message in enumerate(messages):
            number: int | None = message[_HANDOFF]  # type: ignore[assignment]
            places[0 if number is None else number].append(
                (channel, position, message[:_HANDOFF]) if fifo else message[:_HANDOFF]
            )
    source = _remembered(state.source, ordered[0])
    destination = _remembered(state.destination, ordered[1])
    signatures = [
        hash(
            (
                state.coordinators[n],
                state.watches[n],
                source.get(n),
                destination.get(n),
                tuple(places[n]),
            )
        )
        for n in range(count)
    ]
    order = sorted(range(count), key=signatures.__getitem__)
    if all(old == new for new, old in enumerate(order)):
        return state, None
    renamed = [0] * count
    for new, old in enumerate(order):
        renamed[old] = new
    make = tuple.__new__
    flight = tuple(
        tuple(
            make(Message, (*message[:_HANDOFF], renamed[message[_HANDOFF]]))  # type: ignore[index]
            for message in channel
        )
        for channel in state.flight
    )
    if not fifo:
        flight = (tuple(sorted(flight[0], key=_order)),)
    keyed = SystemState(
        tuple(state.coordinators[old] for old in order),
        state.source.relabel(renamed, ordered=ordered[0]),
        state.destination.relabel(renamed, ordered=ordered[1]),
        flight,
        tuple(state.watches[old] for old in order),
        state.spent,
    )
    return keyed, tuple(renamed)


def _remembered(worker: WorkerState, ordered: bool) -> dict[int, tuple[object, ...]]:
    """What a worker remembers of each request, and, when it matters, how long it has been
    idle (a place no renumbering changes)."""
    found: dict[int, tuple[object, ...]] = {}
    place = 0
    for entry in worker.entries:
        if entry.slots or not ordered:
            found[entry[0]] = entry[1:]
        else:
            found[entry[0]] = (place, *entry[1:])
            place += 1
    return found


_HANDOFF = Message._fields.index("handoff")
assert len(Message._fields) - 1 == _HANDOFF


def _number(message: Message) -> int:
    return 0 if message.handoff is None else message.handoff


def _order(message: Message) -> tuple[int, int, int, bool]:
    return _number(message), message.kind, message.action_id, message.copy

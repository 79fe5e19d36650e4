"""A system configuration, what the runtime has seen of it, and the judgments read off one
configuration alone: the values the system world (`handoff._review.system`) explores, and their
canonical form when handoffs are interchangeable.

A configuration holds each message in flight and each worker's memory by number (`Codes`): a
message hashes its action and its outcome in Python, a memory its contract's values, so a
configuration made of them cost more to hash and compare, at every move, than the rest of the
move; made of numbers it hashes in C, and what depends on one message or memory alone (the
worker's reaction, its renaming) is worked out once per number."""

from __future__ import annotations

from collections.abc import Hashable
from typing import NamedTuple, TypeVar

from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.graph import End, stuck
from handoff._review.monitors import Checked
from handoff._review.verdict import TraceStep
from handoff._system.faults import NETWORK, Fault
from handoff._system.properties import Property
from handoff._system.worker_state import SystemView, WorkerState
from handoff._system.workers import (
    Message,
    MessageKind,
    Role,
    Slots,
    WorkerReaction,
    WorkerReply,
)
from handoff._values.values import HandoffCompletion

__all__ = [
    "Codes",
    "Spent",
    "SystemState",
    "SystemWatch",
    "canonical",
    "judge_own",
]


T = TypeVar("T")

Flight = tuple[tuple[int, ...], ...]
"""Messages in flight, by number (`Codes.messages`)."""


class Codes:
    """Every message and worker memory an exploration met, each numbered once (the
    configurations hold the numbers), and what is worked out once per number: a message's
    place in the canonical order of a channel, its handoff, its number under another handoff;
    what a memory remembers of each request, renamed.  `ordered` says, for the source and the
    destination, whether the order of the requests it remembers idle matters."""

    def __init__(self, ordered: tuple[bool, bool] = (True, True)) -> None:
        self.ordered = ordered
        self.messages: list[Message] = []
        self.order: list[tuple[int, int, int, bool]] = []
        """Each message's place in a channel delivered in any order (`_order`)."""
        self.handoff: list[int] = []
        """Each message's handoff number (0 for the only one)."""
        self.content: list[int] = []
        """The number of each message without its handoff (what no renumbering changes)."""
        self.workers: list[WorkerState] = []
        self._messages: dict[Message, int] = {}
        self._contents: dict[tuple[object, ...], int] = {}
        self._workers: dict[WorkerState, int] = {}
        self._renamed: dict[tuple[int, int], int] = {}
        self._relabelled: dict[tuple[int, int, tuple[int, ...]], int] = {}
        self._remembered: dict[tuple[int, int], dict[int, int]] = {}
        self._memories: dict[tuple[object, ...], int] = {}
        self._pairs: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
        self.worker(WorkerState())  # number 0: a worker that remembers nothing

    def message(self, message: Message) -> int:
        """The number of `message`."""
        found = self._messages.get(message)
        if found is None:
            found = self._messages[message] = len(self.messages)
            self.messages.append(message)
            self.order.append(_order(message))
            self.handoff.append(_number(message))
            content = message[:_HANDOFF]
            self.content.append(self._contents.setdefault(content, len(self._contents)))
        return found

    def worker(self, state: WorkerState) -> int:
        """The number of the worker memory `state`."""
        found = self._workers.get(state)
        if found is None:
            found = self._workers[state] = len(self.workers)
            self.workers.append(state)
        return found

    def decoded(self, flight: Flight) -> tuple[Message, ...]:
        """Every message in `flight`, channel after channel."""
        messages = self.messages
        return tuple(messages[code] for channel in flight for code in channel)

    def renamed(self, code: int, handoff: int) -> int:
        """The number of message `code` as handoff `handoff`'s."""
        key = (code, handoff)
        found = self._renamed.get(key)
        if found is None:
            message = self.messages[code]
            found = self._renamed[key] = self.message(message._replace(handoff=handoff))
        return found

    def relabelled(self, role: int, code: int, renamed: tuple[int, ...]) -> int:
        """The number of worker memory `code` with request n known as `renamed[n]` (`role`:
        0 for the source, 1 for the destination)."""
        key = (role, code, renamed)
        found = self._relabelled.get(key)
        if found is None:
            state = self.workers[code].relabel(renamed, ordered=self.ordered[role])
            found = self._relabelled[key] = self.worker(state)
        return found

    def memories(self, source: int, destination: int, count: int) -> list[tuple[int, int]]:
        """What the source remembering `source` and the destination remembering
        `destination` remember of each of `count` requests, numbered (-1: nothing)."""
        key = (source, destination, count)
        found = self._pairs.get(key)
        if found is None:
            mine, theirs = self.remembered(0, source), self.remembered(1, destination)
            found = self._pairs[key] = [(mine.get(n, -1), theirs.get(n, -1)) for n in range(count)]
        return found

    def remembered(self, role: int, code: int) -> dict[int, int]:
        """What worker memory `code` remembers of each request, numbered (`_remembered`)."""
        key = (role, code)
        found = self._remembered.get(key)
        if found is None:
            memories = self._memories
            found = self._remembered[key] = {
                request: memories.setdefault(what, len(memories))
                for request, what in _remembered(self.workers[code], self.ordered[role]).items()
            }
        return found


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
    abandoned: bool = False
    """Its session ended outside the chart (`System.abandons`): the coordinator hears nothing
    more, and a run may end with it incomplete."""
    answers: tuple[tuple[int, int], ...] = ()
    """The destination's cache of outcomes (`System.answers_again`): each action id it
    answered and the outcome it sent, by number."""
    target: int = 0
    """The destination slot its reservation took, where which slot is whose is modelled
    (`Remembered.where`): where the source's transfer writes its KV (W8, W9)."""
    vouch: int = 0
    """Whether the destination vouches for the slot its reservation took (`runtime.Vouch`),
    kept only where it refuses a write its restart left unvouched (`Restart.refuses_unvouched`)."""


class Spent(NamedTuple):
    """The faults a run suffered so far: for every handoff, and for each one.

    A fault of `NETWORK` that strikes a message (`--faults duplicate,lose`) counts against the
    handoff whose message it strikes (`struck`): each handoff suffers at most the budget of
    each.  One that strikes a worker (`crash`) strikes every handoff sharing it at once, all
    of them live from the start of a run to its end: it counts against the run (`injected`)."""

    faults: int = 0
    """Terminal facts and failed work."""
    injected: tuple[int, ...] = (0,) * len(NETWORK)
    """How many of each fault of `NETWORK` that strikes a worker, in its order (`of`)."""
    restarted: frozenset[Role] = frozenset()
    """Workers that restarted: they may have lost a request the coordinator handed over."""
    struck: tuple[tuple[int, ...], ...] = ()
    """For each handoff, how many of each fault of `NETWORK` that strikes a message struck
    one of its messages, in `NETWORK`'s order (empty: no such fault is injected)."""

    def of(self, fault: Fault, handoff: int = 0) -> int:
        """How many times the run (a fault striking a message: handoff number `handoff`)
        suffered `fault` of `NETWORK`."""
        if fault.strike.message:
            return self.struck[handoff][_PLACES[fault]] if self.struck else 0
        return self.injected[_PLACES[fault]]

    def plus(self, fault: Fault, handoff: int = 0) -> Spent:
        """The faults spent once `fault` of `NETWORK` struck once more (a message of handoff
        number `handoff`, when it strikes a message)."""
        place = _PLACES[fault]
        if fault.strike.message:
            struck = self.struck
            return self._replace(
                struck=(*struck[:handoff], _more(struck[handoff], place), *struck[handoff + 1 :])
            )
        return self._replace(injected=_more(self.injected, place))

    @classmethod
    def first(cls, handoffs: int, struck: bool) -> Spent:
        """Nothing spent yet by `handoffs` handoffs (`struck`: with faults striking messages,
        counted for each)."""
        return cls(struck=((0,) * len(NETWORK),) * handoffs if struck else ())


def _more(counts: tuple[int, ...], place: int) -> tuple[int, ...]:
    return (*counts[:place], counts[place] + 1, *counts[place + 1 :])


_PLACES = {fault: place for place, fault in enumerate(NETWORK)}


class SystemState(NamedTuple):
    """One system configuration: what decides everything after it."""

    coordinators: tuple[int, ...]
    """Each handoff's coordinator configuration, by number (`SystemWorld._intern`)."""
    source: int
    """What the source remembers, by number (`Codes.workers`)."""
    destination: int
    flight: Flight
    """Messages in flight: one channel, canonically sorted (any order), or four, in order."""
    watches: tuple[SystemWatch, ...]
    spent: Spent

    def worker(self, role: Role) -> int:
        """The number of what the worker of `role` remembers."""
        return self.source if role is Role.SOURCE else self.destination


class _Node(NamedTuple):
    coordinators: tuple[HandoffCoordinatorCore, ...]
    state: SystemState
    codes: Codes
    """What the numbers in `state` stand for."""

    def memory(self, role: Role) -> WorkerState:
        """What the worker of `role` remembers."""
        return self.codes.workers[self.state.worker(role)]

    def quiet_for(self, handoff: int) -> bool:
        """Nothing of handoff number `handoff`'s in flight."""
        numbers = self.codes.handoff
        return all(numbers[code] != handoff for channel in self.state.flight for code in channel)

    def end(self, terminated: bool = False) -> End:
        """How the run that ends here ended, for every handoff (`terminated`: for those a
        terminal fact was reported for): STUCK when one is incomplete, else SUCCESS when every
        one succeeded (`terminated`: when one did), else CANCELED."""
        chosen = [
            coordinator
            for coordinator, watch in zip(self.coordinators, self.state.watches, strict=True)
            if (watch.terminated or not terminated) and not watch.abandoned
        ]
        if not all(coordinator.is_complete for coordinator in chosen):
            return End.STUCK
        # A handoff whose session ended outside the chart ended as its runtime ended it: never
        # SUCCESS, and no coordinator completion is asked of it.
        succeeded = [c.completion is HandoffCompletion.SUCCESS for c in chosen]
        if len(chosen) < len(self.coordinators) and not terminated:
            succeeded.append(False)
        # Every handoff SUCCESS; for those a terminal fact was reported for, any one SUCCESS
        # (each of them must end CANCELED: W5).
        if all(succeeded) or (terminated and any(succeeded)):
            return End.SUCCESS
        return End.CANCELED

    @property
    def terminated(self) -> bool:
        """Whether a terminal fact was reported for some handoff."""
        return any(watch.terminated for watch in self.state.watches)

    def stuck(self) -> str:
        """W4's words for a run that ends here."""
        waiting = [message.describe() for message in self.codes.decoded(self.state.flight)]
        what = f"only {', '.join(waiting)} in flight, refused" if waiting else "nothing in flight"
        if len(self.coordinators) == 1:
            return stuck(self.coordinators[0].chart_state, what)
        states = ", ".join(
            f"h{n + 1} in {c.chart_state}"
            for n, (c, watch) in enumerate(zip(self.coordinators, self.state.watches, strict=True))
            if not c.is_complete and not watch.abandoned
        )
        return stuck(states, what, several=True)


class _Reaction(NamedTuple):
    """One way a worker remembering one memory takes one message (`SystemWorld._reaction`)."""

    memory: int
    """What the worker remembers afterwards, by number."""
    sent: tuple[int, ...]
    """The acknowledgement and fact it sends back, by number."""
    step: TraceStep
    slots: int
    """The slots it holds for the request afterwards."""
    checks: tuple[Checked, ...]
    """The properties the move is checked for, none broken (`_checked`)."""
    broken: tuple[Checked, ...] = ()
    """What the reaction alone breaks (W10)."""
    transfers: bool = False
    """The source performs a transfer: W8 and W9 are judged on where its KV goes."""
    took: int = 0
    """The destination slots it took for the request, where which is whose is modelled."""
    done: bool = True
    """It performed the action (False: a cancel it failed, which the runtime may retry)."""


class _Raw(NamedTuple):
    """A move before it is judged: the step, where it leads, what it broke."""

    step: TraceStep
    node: _Node | None
    """None when the call crashed."""
    findings: tuple[Checked, ...]
    fault: bool
    loop: bool = False
    """A refused early fact, kept in flight: the move leads back where it started."""
    checks: tuple[Checked, ...] | None = None
    """The properties it is checked for, when not those of its kind (a worker's move)."""


def _failed(memory: Hashable) -> WorkerReaction:
    return WorkerReaction(memory, WorkerReply.FAILED, Slots.KEEP)


def _silent(memory: Hashable, slots: Slots = Slots.KEEP) -> WorkerReaction:
    """A worker's reaction that sends nothing, as a run shows a move of its own (a restart,
    an expiry) or an answer from its cache."""
    return WorkerReaction(memory, WorkerReply.SILENT, slots)


def _replaced(items: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*items[:index], value, *items[index + 1 :])


def _channel(message: Message) -> int:
    towards = message.kind is MessageKind.ACTION
    return (0 if message.role is Role.SOURCE else 1) + (0 if towards else 2)


def _without(flight: Flight, channel: int, code: int) -> Flight:
    messages = flight[channel]
    index = messages.index(code)
    rest = messages[:index] + messages[index + 1 :]
    return (*flight[:channel], rest, *flight[channel + 1 :])


def judge_own(entry: Property, view: SystemView) -> str | None:
    """A property of one's own at one configuration: None where it holds, else why not."""
    predicate = entry.predicate
    assert predicate is not None
    try:
        found = predicate(view)
    except MemoryError:  # the review's own limit, not the property's finding
        raise
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
    state: SystemState, codes: Codes, queues: int | None = None
) -> tuple[SystemState, tuple[int, ...] | None]:
    """`state` with its handoffs numbered in a canonical order: configurations that differ only
    by which handoff is which get one key (symmetry reduction).

    Each handoff is ordered by everything about it that no renumbering changes (its
    coordinator, what each worker remembers of it and how recently, its messages and their
    places in flight); handoffs alike in all of that are interchangeable, so any order of
    them gives the same state.  Also says how it renumbered them (None: it did not).

    `queues` channels come first, each delivering in order (FIFO); every channel after them
    is a set, kept sorted (None: four queues when there are several channels, as FIFO
    delivery has them, else one set)."""
    coordinators, source, destination, flight, watches, spent = state
    count = len(coordinators)
    places: list[list[object]] = [[] for _ in range(count)]
    handoffs, contents = codes.handoff, codes.content
    if queues is None:
        queues = 4 if len(flight) > 1 else 0
    for channel, messages in enumerate(flight):
        if channel < queues:
            for position, code in enumerate(messages):
                places[handoffs[code]].append((channel, position, contents[code]))
        elif channel == 0:  # in a set, a message's place says nothing
            for code in messages:
                places[handoffs[code]].append(contents[code])
        else:
            for code in messages:
                places[handoffs[code]].append((channel, contents[code]))
    memories = codes.memories(source, destination, count)
    struck = spent.struck  # each handoff's own budget of faults striking messages
    signatures = [
        hash((coordinators[n], watches[n], memories[n], tuple(places[n]), struck[n]))
        if struck
        else hash((coordinators[n], watches[n], memories[n], tuple(places[n])))
        for n in range(count)
    ]
    if count == 2 and signatures[0] <= signatures[1]:
        return state, None  # already in order (`sorted` keeps ties as they are)
    order = sorted(range(count), key=signatures.__getitem__)
    if all(old == new for new, old in enumerate(order)):
        return state, None
    renamed = [0] * count
    for new, old in enumerate(order):
        renamed[old] = new
    flight = tuple(
        tuple(codes.renamed(code, renamed[handoffs[code]]) for code in channel)
        for channel in state.flight
    )
    if queues < len(flight):
        flight = tuple(
            messages if channel < queues else tuple(sorted(messages, key=codes.order.__getitem__))
            for channel, messages in enumerate(flight)
        )
    names = tuple(renamed)
    keyed = SystemState(
        tuple(state.coordinators[old] for old in order),
        codes.relabelled(0, state.source, names),
        codes.relabelled(1, state.destination, names),
        flight,
        tuple(state.watches[old] for old in order),
        spent._replace(struck=tuple(struck[old] for old in order)) if struck else spent,
    )
    return keyed, names


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

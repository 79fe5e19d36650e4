"""A worker serving many requests: what it remembers of each, the slots it holds, its bounds.

One prefill worker (the *source*) and one decode worker (the *destination*) serve every live
handoff.  Each knows a handoff's request by the handoff's number, and remembers of it what its
contract says (`WorkerContract.react`), the KV slots it holds for it (`Slots`) and which of its
actions it already did: a worker that remembers a request ignores a second copy of work it did
(at-least-once delivery is answered by an idempotent worker), while one that forgot the
request takes the copy as new work.

A worker forgets a request once it remembers nothing of it but its contract's `initial`
memory and holds no slot; a contract with bounded memory (`WorkerContract.remembers`, as
`tombstone:K`) forgets the request that has been idle (remembered, holding no slot) longest
when it would remember one idle request too many; a worker with `--slots C` refuses
(`FAILED`) work that would take its C+1st slot; a worker that restarts forgets everything and
frees every slot.  The system review explores this model, each worker's memory a value
(`WorkerState`) so that equal memories are one configuration; the simulation runs it
(`handoff._runs.simulated_workers`), one source and one destination for every live handoff,
each worker's memory kept in a `WorkerBook`: the same entries indexed by request and changed
in place, by the same rules (`Worker`), for the thousands of requests a simulation serves.

`SystemView` is the public view of one system configuration that properties of one's own
(`handoff review --property MODULE:NAME`) judge.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import NamedTuple, Protocol

import attrs

from handoff._system.workers import (
    ContractTable,
    Message,
    Role,
    Slots,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
)
from handoff._values.values import HandoffCompletion

__all__ = [
    "HandoffView",
    "Memory",
    "Remembered",
    "SystemView",
    "Worker",
    "WorkerBook",
    "WorkerState",
    "WorkerView",
]


class Remembered(NamedTuple):
    """What a worker remembers of one request."""

    request: int
    memory: Hashable
    slots: int
    """KV slots held for the request."""
    done: int
    """Bit n set: the worker did (or refused) the request's action n."""
    where: int = 0
    """Bit k set: it holds the worker's slot number k for the request (kept only where which
    slot is whose matters: `Worker.identity`)."""


class WorkerState(NamedTuple):
    """What one worker remembers, of every request it remembers: first those it holds slots
    for, by request; then the idle ones (remembered, holding no slot), the longest idle first
    when the worker's memory is bounded (by request when not: then nothing depends on the
    order).  A value, so that equal states are one configuration."""

    entries: tuple[Remembered, ...] = ()

    def find(self, request: int) -> Remembered | None:
        """The worker's memory of `request`, if it remembers it."""
        for entry in self.entries:
            if entry[0] == request:
                return entry
        return None

    def slots(self, request: int) -> int:
        """The KV slots it holds for `request`."""
        entry = self.find(request)
        return 0 if entry is None else entry.slots

    @property
    def held(self) -> int:
        """The KV slots it holds, for every request."""
        return sum(entry.slots for entry in self.entries)

    @property
    def taken(self) -> int:
        """Bit k set: its slot number k is held (`Remembered.where`)."""
        taken = 0
        for entry in self.entries:
            taken |= entry.where
        return taken

    def holder(self, where: int) -> int | None:
        """The request holding the slots `where` names (None: none does)."""
        return next((entry[0] for entry in self.entries if entry.where & where), None)

    def idle(self, request: int) -> bool:
        """Whether it remembers `request` while holding no slot for it."""
        entry = self.find(request)
        return entry is not None and not entry.slots

    def relabel(self, renamed: Sequence[int], *, ordered: bool) -> WorkerState:
        """The same memories with request n known as `renamed[n]` (`ordered`: the idle ones
        keep their order, as a worker with bounded memory needs)."""
        make = tuple.__new__
        held = sorted(
            (make(Remembered, (renamed[e[0]], *e[1:])) for e in self.entries if e.slots),
        )
        idle = [make(Remembered, (renamed[e[0]], *e[1:])) for e in self.entries if not e.slots]
        if not ordered:
            idle.sort(key=_request)
        return WorkerState((*held, *idle))


def _request(entry: Remembered) -> int:
    return entry[0]


class _Place(enum.Enum):
    """Where a worker keeps what it now remembers of a request (`Worker.place`)."""

    HELD = enum.auto()
    """Among the requests it holds slots for."""
    FORGOTTEN = enum.auto()
    """Nowhere: it remembers nothing of the request but `initial`, and holds no slot."""
    STAYS = enum.auto()
    """Idle still: in its place among the idle requests."""
    IDLE = enum.auto()
    """Newly idle: the most recently idle, evicting the longest idle beyond a bounded memory."""


class Memory(Protocol):
    """What a worker's rules read of its memory: a `WorkerState` (the review's, a value) or a
    `WorkerBook` (the simulation's, indexed for thousands of requests)."""

    def find(self, request: int, /) -> Remembered | None: ...

    @property
    def held(self) -> int: ...

    @property
    def taken(self) -> int: ...


class WorkerBook:
    """One worker's memory as the simulation keeps it: the entries of a `WorkerState`, by
    request, changed in place by `Worker.take` and `Worker.fail_in` (so that a worker serving
    a thousand live handoffs finds and changes one request's memory in constant time)."""

    def __init__(self) -> None:
        self._entries: dict[int, Remembered] = {}
        self._idle: dict[int, None] = {}
        """The idle requests, the longest idle first."""
        self.held = 0
        """The KV slots it holds, for every request."""
        self.taken = 0
        """Bit k set: its slot number k is held (`Remembered.where`)."""

    def find(self, request: int) -> Remembered | None:
        """The worker's memory of `request`, if it remembers it."""
        return self._entries.get(request)

    def slots(self, request: int) -> int:
        """The KV slots it holds for `request`."""
        entry = self._entries.get(request)
        return 0 if entry is None else entry.slots

    def idle(self, request: int) -> bool:
        """Whether it remembers `request` while holding no slot for it."""
        return request in self._idle

    def holder(self, where: int) -> int | None:
        """The request holding the slots `where` names (None: none does)."""
        return next((entry[0] for entry in self._entries.values() if entry.where & where), None)

    @property
    def entries(self) -> tuple[Remembered, ...]:
        """Every request it remembers."""
        return tuple(self._entries.values())

    def state(self, ordered: bool) -> WorkerState:
        """The same memories as a `WorkerState` (`ordered`: the worker's memory is bounded)."""
        held = sorted(entry for entry in self._entries.values() if entry.slots)
        idle = [self._entries[request] for request in self._idle]
        if not ordered:
            idle.sort(key=_request)
        return WorkerState((*held, *idle))

    def forget(self, request: int) -> None:
        """`request` gone from its memory and its slots: the simulation lets a request go once
        nothing of it is left in flight (decode took over a SUCCESS, or an unbounded memory no
        longer needs what it remembers of it)."""
        entry = self._entries.pop(request, None)
        if entry is not None:
            self.held -= entry.slots
            self.taken &= ~entry.where
            self._idle.pop(request, None)

    def hand_over(self, request: int) -> None:
        """Decode takes one of the slots held for `request` (it succeeded): the request is
        gone from the worker when that was its only one."""
        entry = self._entries.get(request)
        if entry is None or not entry.slots:
            return
        if entry.slots == 1:
            self.forget(request)
        else:
            where = entry.where & (entry.where - 1)  # decode takes its lowest slot
            self.put(entry._replace(slots=entry.slots - 1, where=where), _Place.HELD, None)

    def put(self, new: Remembered, place: _Place, remembers: int | None) -> None:
        """Keep `new` where `place` says, forgetting the longest idle beyond `remembers`."""
        request = new[0]
        old = self._entries.get(request)
        if old is not None:
            self.held -= old.slots
            self.taken &= ~old.where
        if place is _Place.FORGOTTEN:
            self._entries.pop(request, None)
            self._idle.pop(request, None)
            return
        self._entries[request] = new
        if place is _Place.HELD:
            self._idle.pop(request, None)
            self.held += new.slots
            self.taken |= new.where
        elif place is _Place.IDLE:
            self._idle[request] = None
            while remembers is not None and len(self._idle) > remembers:
                evicted = next(iter(self._idle))
                del self._idle[evicted]
                del self._entries[evicted]


class Worker:
    """The worker of one role: its contract's table, its memory bound and its slot bound.

    With `identity` and a slot bound, the destination keeps which of its `slots` each request
    holds too (`Remembered.where`): a request takes the lowest-numbered free one, so that a
    transfer aimed at a slot its request no longer holds is seen landing in another
    request's."""

    def __init__(
        self, table: ContractTable, role: Role, slots: int | None = None, identity: bool = False
    ) -> None:
        self.table = table
        self.role = role
        self.slots = slots
        self.identity = identity and slots is not None and role is Role.DESTINATION
        self.initial = table.initial(role)
        self.remembers = table.remembers(role)

    def memory(self, state: Memory, request: int) -> Hashable:
        """What the worker remembers of `request` (its contract's `initial`: nothing)."""
        entry = state.find(request)
        return self.initial if entry is None else entry.memory

    def react(
        self, state: WorkerState, request: int, action_id: int, task: WorkerTask
    ) -> tuple[tuple[WorkerState, WorkerReaction], ...]:
        """Every way the worker may take `task` (action `action_id` of `request`): what it
        remembers afterwards, and the reaction it had."""
        return tuple(
            (self._remember(state, new), reaction)
            for new, reaction in self._ways(state, request, action_id, task)
        )

    def take(
        self,
        book: WorkerBook,
        request: int,
        action_id: int,
        task: WorkerTask,
        choose: Callable[
            [Sequence[tuple[Remembered, WorkerReaction]]], tuple[Remembered, WorkerReaction]
        ],
    ) -> WorkerReaction:
        """The worker takes `task` as `react` says, in one of its ways (`choose`: of several),
        changing `book`; the reaction it had."""
        ways = self._ways(book, request, action_id, task)
        new, reaction = ways[0] if len(ways) == 1 else choose(ways)
        self._record(book, new)
        return reaction

    def _ways(
        self, state: Memory, request: int, action_id: int, task: WorkerTask
    ) -> list[tuple[Remembered, WorkerReaction]]:
        entry = state.find(request)
        bit = 1 << action_id
        if entry is not None and entry.done & bit:
            return [(entry, WorkerReaction(entry.memory, WorkerReply.SILENT, Slots.KEEP))]
        before = self.initial if entry is None else entry.memory
        held = 0 if entry is None else entry.slots
        done = (0 if entry is None else entry.done) | bit
        where = 0 if entry is None else entry.where
        found = []
        for reaction in self.table.reactions(task, before, self.role):
            change = reaction.change(before)
            if change is Slots.TAKE and self.slots is not None and state.held >= self.slots:
                reaction = WorkerReaction(before, WorkerReply.FAILED, Slots.KEEP)  # full
                change = Slots.KEEP
            slots = held + 1 if change is Slots.TAKE else 0 if change is Slots.FREE else held
            did = done
            if task is WorkerTask.CANCEL and reaction.reply is WorkerReply.FAILED:
                did &= ~bit  # a cancel it failed is not done: the runtime's retry is taken anew
            now = self._where(state, where, change)
            found.append((Remembered(request, reaction.memory, slots, did, now), reaction))
        return found

    def _where(self, state: Memory, where: int, change: Slots) -> int:
        """Which slots the request holds after `change`, when identity is kept."""
        if change is Slots.FREE or not self.identity:
            return 0
        if change is Slots.KEEP:
            return where
        taken = state.taken
        return where | (~taken & (taken + 1))  # the lowest-numbered free slot

    def fail(self, state: WorkerState, request: int, action_id: int) -> WorkerState:
        """The worker fails the work (a fault): it remembers only that it saw it."""
        return self._remember(state, self._failed(state, request, action_id))

    def fail_in(self, book: WorkerBook, request: int, action_id: int) -> None:
        """`fail`, changing `book`."""
        self._record(book, self._failed(book, request, action_id))

    def _failed(self, state: Memory, request: int, action_id: int) -> Remembered:
        entry = state.find(request)
        if entry is None:
            return Remembered(request, self.initial, 0, 1 << action_id)
        return entry._replace(done=entry.done | 1 << action_id)

    def place(self, entry: Remembered | None, new: Remembered) -> _Place:
        """Where the worker keeps `new`, having remembered `entry` of its request before."""
        if new.slots:
            return _Place.HELD
        if new.memory == self.initial:
            return _Place.FORGOTTEN
        if entry is not None and not entry.slots:
            return _Place.STAYS
        return _Place.IDLE

    def _record(self, book: WorkerBook, new: Remembered) -> None:
        entry = book.find(new[0])
        if entry != new:
            book.put(new, self.place(entry, new), self.remembers)

    def _remember(self, state: WorkerState, new: Remembered) -> WorkerState:
        request = new[0]
        entry = state.find(request)
        if entry is not None and entry == new:
            return state
        place = self.place(entry, new)
        held = [other for other in state.entries if other.slots and other[0] != request]
        idle = [other for other in state.entries if not other.slots]
        if place is _Place.HELD:
            held.append(new)
            held.sort(key=_request)
            idle = [other for other in idle if other[0] != request]
        elif place is _Place.FORGOTTEN:
            idle = [other for other in idle if other[0] != request]
        elif place is _Place.STAYS:
            idle = [new if other[0] == request else other for other in idle]
        else:
            idle.append(new)
            if self.remembers is None:
                idle.sort(key=_request)
            else:
                del idle[: max(0, len(idle) - self.remembers)]
        return WorkerState((*held, *idle))

    def restarted(
        self, entries: Sequence[Remembered], *, keeps_slots: bool, durable: bool
    ) -> tuple[Remembered, ...]:
        """What the worker remembers of `entries` after a restart: nothing, unless it keeps
        the slots it held (`keeps_slots`: it holds them still, for requests it no longer
        knows, and did none of their work) or its tombstones (`durable`: what it remembers of
        the requests it holds no slot for survives)."""
        kept = []
        for entry in entries:
            if entry.slots:
                if keeps_slots:
                    kept.append(
                        Remembered(entry.request, self.initial, entry.slots, 0, entry.where)
                    )
            elif durable:
                kept.append(entry)
        return tuple(kept)

    def restart_book(self, book: WorkerBook, *, keeps_slots: bool, durable: bool) -> WorkerBook:
        """`restarted`, for the simulation's book: a new one."""
        fresh = WorkerBook()
        ordered = book.state(self.remembers is not None).entries
        for entry in self.restarted(ordered, keeps_slots=keeps_slots, durable=durable):
            self._record(fresh, entry)
        return fresh

    def local(self, before: WorkerState, after: WorkerState, request: int) -> bool:
        """Whether a move of `request` taking this worker from `before` to `after` commutes
        with every other request's move on it: it neither needs nor changes the worker's idle
        requests when they compete for a bounded memory, and no slot bound couples them."""
        if self.slots is not None:
            return False
        if self.remembers is None:
            return True
        return not before.idle(request) and not after.idle(request)


# -- the public view of a system configuration ---------------------------------------------


@attrs.frozen
class HandoffView:
    """One handoff as a property sees it."""

    state: str
    """Its chart state id (`"Idle"` before it starts)."""
    completion: HandoffCompletion | None
    """How it completed, once complete."""
    started: bool


@attrs.frozen
class WorkerView:
    """One worker as a property sees it: per handoff number, the slots it holds and what it
    remembers (only the requests it remembers are keys)."""

    role: Role
    slots: Mapping[int, int]
    memory: Mapping[int, Hashable]

    @property
    def held(self) -> int:
        """The slots it holds, for every handoff."""
        return sum(self.slots.values())


@attrs.frozen
class SystemView:
    """One configuration of the system a review explores, as a property of one's own sees it.

    A property is a function of a `SystemView` returning True where it holds (or a string, or
    False, where it does not: the string says why); `handoff review --workers … --property
    MODULE:NAME` judges it at every configuration and reports its shortest counterexample.
    """

    handoffs: tuple[HandoffView, ...]
    source: WorkerView
    destination: WorkerView
    in_flight: tuple[Message, ...]
    """Every message in flight (each names its handoff's number when there are several)."""

    def worker(self, role: Role) -> WorkerView:
        """The worker of `role`."""
        return self.source if role is Role.SOURCE else self.destination


def worker_view(role: Role, state: WorkerState) -> WorkerView:
    """What a property sees of a worker."""
    return WorkerView(
        role,
        {entry.request: entry.slots for entry in state.entries if entry.slots},
        {entry.request: entry.memory for entry in state.entries},
    )


# A property of one's own reads these: the names say `handoff`.
for _exported in (HandoffView, SystemView, WorkerView):
    _exported.__module__ = "handoff"

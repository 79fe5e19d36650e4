"""The runtime's side of the system world (`handoff._review.system`): what it puts in flight
and which messages it delivers, the moves a runtime profile adds (a session ended outside the
chart, a reply dropped after it, a tombstone expiring, the destination answering from its
cache), and the public view of a configuration.  `SystemWorld` inherits them; each schedules a
pure step of `handoff._system.runtime`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from handoff._review.environment import Rules
from handoff._review.system_state import (
    Codes,
    Flight,
    SystemState,
    SystemWatch,
    _channel,
    _Node,
    _Raw,
    _Reaction,
    _replaced,
    _silent,
)
from handoff._review.verdict import MoveKind, TraceStep
from handoff._system.config import System
from handoff._system.runtime import abandoned, busy, drained, held_back, may_expire, retried
from handoff._system.worker_state import HandoffView, SystemView, Worker, WorkerState, worker_view
from handoff._system.workers import Message, MessageKind, Role, WorkerReaction, WorkerReply

__all__ = ["RuntimeMoves"]

_DONE_REPLIES = (WorkerReply.DONE, WorkerReply.NOOP)
"""A worker's replies to a cancel that say nothing of the request is held any more."""


class RuntimeMoves:
    """What `SystemWorld` schedules for the runtime, reading the world's own fields (the
    lowest layer of its moves: `system_moves`)."""

    system: System
    codes: Codes
    rules: Rules
    workers: dict[Role, Worker]
    several: bool
    _busy: dict[Flight, tuple[frozenset[int], frozenset[int]]]
    _timer: int | None
    """The channel of lost messages the runtime's timer will send again (`--resend`, or
    lost with a worker's inbox): after the delivery channels, only when there are any."""
    _queues: int
    """How many channels deliver in order (`canonical`)."""
    _inbox_struck: bool
    """Whether a restart changes what is in flight (`_alone`)."""

    def _runtime_setup(self, system: System) -> None:
        """The channels the runtime's duties need, as the world starts."""
        self._timer = None
        if system.needs_timer:
            self._timer = 4 if system.fifo else 1
        self._queues = 4 if system.fifo else 0
        self._inbox_struck = system.restart.loses_inbox or system.restart.refuses_unvouched

    def _tag(self, handoff: int) -> int | None:
        """How messages name `handoff`: by number when several share the workers."""
        return handoff if self.several else None

    def _aside(
        self,
        node: _Node,
        handoff: int,
        after: SystemState,
        kind: MoveKind,
        *,
        fault: bool,
        message: Message | None = None,
        reaction: WorkerReaction | None = None,
        sent: tuple[Message, ...] = (),
        worker: Role | None = None,
    ) -> _Raw:
        """A move of `handoff` from `node` to `after` that calls no coordinator (the
        runtime's, or a worker's the coordinators do not see), as a run shows it."""
        where = node.coordinators[handoff].chart_state
        step = TraceStep(
            None,
            where,
            kind=kind,
            message=message,
            reaction=reaction,
            sent=sent,
            worker=worker,
            handoff=self._tag(handoff),
        )
        return _Raw(step, _Node(node.coordinators, after, node.codes), (), fault)

    def _abandon(self, node: _Node, handoff: int, flight: Flight, *, lost: bool = False) -> _Raw:
        """The runtime ends `handoff`'s session outside the chart (`runtime.abandoned`): its
        coordinator hears nothing more, and the runtime's own cleanup goes to both workers.
        A session ended by a lost message (`lost`: a transport error) spends the loss's
        budget, not the terminal facts'; one already over only loses the message."""
        coordinators, state, _codes = node
        watch = state.watches[handoff]
        spent = state.spent
        if lost and (watch.abandoned or coordinators[handoff].is_complete):
            sent: tuple[Message, ...] = ()
        else:
            sent = abandoned(self.rules.handoff_id, self._tag(handoff))
            watch = watch._replace(abandoned=True)
            if not lost:
                spent = spent._replace(faults=spent.faults + 1)
        after = state._replace(
            flight=self._send(flight, tuple(self.codes.message(item) for item in sent)),
            watches=_replaced(state.watches, handoff, watch),
            spent=spent,
        )
        return self._aside(node, handoff, after, MoveKind.ABANDON, fault=True, sent=sent)

    def _dropped(self, node: _Node, code: int, flight: Flight) -> _Raw:
        """A reply for a handoff whose session ended: the runtime drops it (a delivery), or,
        a failure of its own cleanup, sends that cancel again when it retries (`retried`)."""
        handoff = self.codes.handoff[code]
        message = self.codes.messages[code]
        sent, numbers = self._retry(message)
        after = node.state._replace(flight=self._send(flight, numbers))
        drop = MoveKind.DROP
        return self._aside(node, handoff, after, drop, fault=False, message=message, sent=sent)

    def _expiries(self, node: _Node, only: int | None) -> Iterator[_Raw]:
        """Each tombstone of a retired request may expire once nothing of it is on its way to
        the worker (`runtime.may_expire`): the session timeout, at any move after that."""
        coordinators, state, codes = node
        for role in Role:
            memory = codes.workers[state.worker(role)]
            for entry in memory.entries:
                handoff = entry.request
                if entry.slots or only not in (None, handoff):
                    continue
                retired = state.watches[handoff].abandoned or coordinators[handoff].is_complete
                mine = [
                    codes.messages[code]
                    for channel in state.flight
                    for code in channel
                    if codes.handoff[code] == handoff
                ]
                if may_expire(role, retired, mine):
                    yield self._expire(node, role, handoff)

    def _expire(self, node: _Node, role: Role, handoff: int) -> _Raw:
        state = node.state
        memory = self.codes.workers[state.worker(role)]
        kept = WorkerState(tuple(entry for entry in memory.entries if entry.request != handoff))
        number = self.codes.worker(kept)
        after = state._replace(
            source=number if role is Role.SOURCE else state.source,
            destination=number if role is Role.DESTINATION else state.destination,
        )
        reaction = _silent(self.workers[role].initial)
        expire = MoveKind.EXPIRE
        return self._aside(node, handoff, after, expire, fault=True, reaction=reaction, worker=role)

    def _retry(self, message: Message | None) -> tuple[tuple[Message, ...], tuple[int, ...]]:
        """What the runtime sends again once its coordinator refused `message` (`retried`),
        and its numbers."""
        again = None if message is None else retried(message, self.system.retry)
        if again is None:
            return (), ()
        return (again,), (self.codes.message(again),)

    def _set_aside(self, state: SystemState, flight: Flight, code: int) -> Flight | None:
        """Where a fact refused as early goes with FIFO delivery and a runtime that re-sends:
        behind what its channel holds, as a runtime that sets it aside and reads on (a
        re-sent acknowledgement may come behind its fact).  None: it stays where it was."""
        if self._timer is None or not self.system.fifo:
            return None
        behind = self._send(flight, (code,))
        return None if behind == state.flight else behind

    def _holds(self, raw: _Raw) -> bool:
        """Whether the runtime holds back the early fact `raw` offered, instead of delivering
        it to be refused (`runtime.held_back`)."""
        message = raw.step.message
        return (
            self.system.holds_early and message is not None and held_back(message, early=raw.loop)
        )

    def _cached(
        self,
        watches: tuple[SystemWatch, ...],
        handoff: int,
        message: Message,
        reaction: _Reaction,
    ) -> tuple[SystemWatch, ...]:
        """The destination keeps the outcome it sent for `message` in its cache."""
        messages = self.codes.messages
        outcome = next((n for n in reaction.sent if messages[n].kind is MessageKind.OUTCOME), None)
        if outcome is None:
            return watches
        watch = watches[handoff]
        watch = watch._replace(answers=(*watch.answers, (message.action_id, outcome)))
        return _replaced(watches, handoff, watch)

    def _answered_again(self, node: _Node, code: int, flight: Flight, outcome: int) -> _Raw:
        """The destination gets an action it did already and answers it from its cache: the
        outcome it sent then, sent again, and nothing done (`System.answers_again`)."""
        _coordinators, state, codes = node
        message = codes.messages[code]
        handoff = codes.handoff[code]
        memory = self.workers[Role.DESTINATION].memory(codes.workers[state.destination], handoff)
        reaction = _silent(memory)
        after = state._replace(flight=self._send(flight, (outcome,)))
        sent = (codes.messages[outcome],)
        kind = MoveKind.TO_WORKER
        return self._aside(
            node, handoff, after, kind, fault=False, message=message, reaction=reaction, sent=sent
        )

    def _waiting(self, flight: Flight) -> tuple[frozenset[int], frozenset[int]]:
        """The messages in `flight` the runtime does not deliver yet: the actions for a worker
        busy with an earlier one (`runtime.busy`), and, apart, the cancels it has not sent
        while a transfer of their handoff is on its way to the source (`runtime.drained`).
        Each depends only on what is in flight: worked out once per `flight`."""
        found = self._busy.get(flight)
        if found is None:
            messages = self.codes.messages
            codes = [code for channel in flight for code in channel]
            in_flight = [messages[code] for code in codes]
            system = self.system
            found = self._busy[flight] = (
                frozenset(
                    code
                    for code, message in zip(codes, in_flight, strict=True)
                    if system.one_at_a_time and busy(message, in_flight)
                ),
                frozenset(
                    code
                    for code, message in zip(codes, in_flight, strict=True)
                    if system.drains_transfers and drained(message, in_flight)
                ),
            )
        return found

    def _deliverable(
        self, state: SystemState, only: int | None = None
    ) -> Iterator[tuple[int, int]]:
        """Each message in flight the runtime may deliver next, by channel (with `only`: of
        that handoff).  A runtime holding some back delivers through `_gated` instead."""
        numbers = self.codes.handoff
        for channel, codes in enumerate(state.flight):
            if channel == self._timer:  # lost, waiting on the runtime's timer (`_resends`)
                continue
            if self.system.fifo:
                if codes and only in (None, numbers[codes[0]]):
                    yield channel, codes[0]
            elif only is None:
                for code in codes:
                    yield channel, code
            else:
                for code in codes:
                    if numbers[code] == only:
                        yield channel, code

    def _gated(self, state: SystemState, only: int | None = None) -> Iterator[tuple[int, int]]:
        """`_deliverable` without the messages the runtime keeps waiting (`_waiting`).

        A busy worker takes nothing: its channel waits.  A cancel held back was not sent yet,
        so with FIFO delivery what was sent behind it goes first (the cancel keeps its place
        at the front, to go once the transfer reached the source)."""
        busy_codes, held = self._waiting(state.flight)
        if not (self.system.fifo and held):
            for channel, code in RuntimeMoves._deliverable(self, state, only):
                if code not in busy_codes and code not in held:
                    yield channel, code
            return
        numbers = self.codes.handoff
        for channel, codes in enumerate(state.flight):
            if channel == self._timer:
                continue
            first = next((code for code in codes if code not in held), None)
            if first is None or first in busy_codes:
                continue
            if only in (None, numbers[first]):
                yield channel, first

    def _send(self, flight: Flight, sent: Sequence[int]) -> Flight:
        if not sent:
            return flight
        if not self.system.fifo:
            merged = tuple(sorted((*flight[0], *sent), key=self.codes.order.__getitem__))
            return (merged,) if self._timer is None else (merged, *flight[1:])
        channels = list(flight)
        messages = self.codes.messages
        for code in sent:
            index = _channel(messages[code])
            channels[index] = (*channels[index], code)
        return tuple(channels)

    def view(self, node: _Node) -> SystemView:
        """The public view of `node` that properties of one's own judge."""
        coordinators, state, codes = node
        handoffs = tuple(
            HandoffView(c.chart_state, c.completion, watch.started)
            for c, watch in zip(coordinators, state.watches, strict=True)
        )
        return SystemView(
            handoffs,
            worker_view(Role.SOURCE, node.memory(Role.SOURCE)),
            worker_view(Role.DESTINATION, node.memory(Role.DESTINATION)),
            codes.decoded(state.flight),
        )


def _freeing(reaction: _Reaction) -> bool:
    """Whether a worker's reaction to a cancel leaves nothing of the request held."""
    done = reaction.step.reaction
    return done is not None and done.reply in _DONE_REPLIES

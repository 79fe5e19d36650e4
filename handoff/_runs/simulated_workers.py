"""The simulation's workers: one source and one destination serving every live handoff.

Without workers the simulation acknowledges an action the moment it is issued.  With them
(`SimulationConfig.system`) each action is a message that reaches its worker after its own
latency (sometimes much later: the "delayed delivery" fault), so a cancel may overtake the
submission it cancels.  The two workers are the system review's (`handoff._system.worker_state`: a
`Worker`, its memory kept in a `WorkerBook`), shared by every live handoff and knowing each
request by its handoff's number: a bounded memory (`tombstone:K`) forgets the longest-idle
request of any handoff, a slot bound (`--slots C`) refuses work beyond C slots held for all of
them, and a restart forgets every request and frees every slot.  The worker reacts as its
contract says, acknowledges, and reports the work's fact on its own; a fact the coordinator
refuses as early is delivered again later.  With `fifo`, each worker's messages, in each
direction, arrive in the order they were sent (each channel's clock never runs backwards).

Where a transfer lands and whether an activated destination serves are judged as the review
judges them (W8, W9, W10): the destination keeps which of its `--slots` each request holds, so
a transfer the source performs after the destination freed its request's slot is seen landing
in a free slot or in the slot another request took since.

A handoff with nothing left in flight is settled (`SimulatedWorkers.settle`): after SUCCESS
exactly the destination holds the request's slot (decode owns it, and the request leaves the
simulation), after any other completion neither does, and a handoff that never completed is
counted with whatever it still holds.

With `faults` (`--faults`), each up to `budget` times a handoff, at the fault rate, as its
`Strike` says (the review's): a message on the wire, either way, is delivered twice (a copy is
sent again as it arrives, behind what is on its way) or lost (the runtime reports `TimedOut`
later), or a worker restarts just before an action arrives (every handoff's requests
forgotten).  With `Acknowledge.ON_SEND` the runtime acknowledges work that
takes or moves KV as it sends it, and the worker reports `Failed` for such work it did not do.

A runtime profile's settings (`System`) run here as in the review: a session ended outside the
chart sends the runtime's own cleanup (`end_session`), a worker taking one action at a time
keeps the next waiting until its last reply reached its coordinator (`replied`), the
destination answers a repeated action from its cache of outcomes, and an expiring tombstone is
let go once its request is settled.  A runtime draining transfers (`System.drains_transfers`)
holds a destination's cancel until every `StartTransfer` of its request still coming has
reached the source or was lost for good (`runtime.drained`).  A destination refusing
unvouched work (`Restart.refuses_unvouched`) refuses the KV write of a transfer whose
reservation it took before its restart (`runtime.fenced`), as in the review.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable, Sequence
from typing import Generic, NamedTuple, Protocol, TypeVar

import attrs

from handoff._system.bound import retried_too_often
from handoff._system.call import Call
from handoff._system.config import Resend, System
from handoff._system.faults import NETWORK, Fault, strike_message
from handoff._system.judgments import (
    after_abandoned,
    at_completion,
    held_after_freed,
    performed,
    serving,
    told_while_held,
    transferred,
    two_slots,
)
from handoff._system.properties import Finding, Key
from handoff._system.runtime import (
    REFUSED_WRITE,
    Vouch,
    Workload,
    abandoned,
    answered,
    call_of,
    carried,
    cleanup_failed,
    drained,
    fenced,
    kept_in_flight,
    refused_unvouched,
    resent,
    retried,
    tells_freed,
)
from handoff._system.worker_state import Worker, WorkerBook
from handoff._system.workers import (
    RUNTIME_OWN,
    ContractTable,
    Message,
    MessageKind,
    Role,
    WorkerReply,
    WorkerTask,
    role_of,
    task_of,
)
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
)

__all__ = [
    "Channel",
    "Event",
    "Resent",
    "SessionEnds",
    "Settled",
    "SimulatedWorkers",
    "Waited",
    "ending",
]


_FAILABLE = (WorkerTask.TAKE, WorkerTask.TRANSFER, WorkerTask.ACTIVATE)
_FAILED = Fault.FAILED_OUTCOME.outcome
_SLOT_FREED = Key.NO_SLOT_AFTER_FREED
_ONE_SLOT = Key.ONE_SLOT_PER_REQUEST

Channel = tuple[Role, bool]
"""A worker's messages in one direction: its role, and True towards it (False: from it)."""


class Resent(NamedTuple):
    """The runtime's timer for a lost message it sends again (`--resend`): when it fires, the
    message goes out again on its channel, behind whatever was sent meanwhile."""

    item: Call | Message
    channel: Channel


class SessionEnds(NamedTuple):
    """The runtime ends the handoff's session outside the chart (`System.abandons`)."""


class Waited(NamedTuple):
    """An action a worker taking one at a time kept waiting, taken now (`runtime.busy`)."""

    message: Message


Event = Call | Message | Resent | SessionEnds | Waited
"""What the simulation's clock delivers: a call, a message, a lost one sent again, a
session's end, a waited action."""


def ending(fact: HandoffFact, abandons: bool) -> Event:
    """How the runtime ends a handoff it must end (a deadline, a client's cancel, a loss its
    timer noticed): it reports `fact` to the coordinator, or, a runtime that cleans up outside
    the chart (`System.abandons`), ends the session untold."""
    return SessionEnds() if abandons else Call.of_fact(fact)


_DONE_REPLIES = (WorkerReply.DONE, WorkerReply.NOOP)

SHARED = (
    " (the trace has this handoff's calls only: the workers are shared, and what they did for "
    "other handoffs, such as forgetting this request to remember theirs or restarting, is not "
    "in it)"
)
"""Said of a worker's slot a trace cannot explain by itself."""


class _WorkerHandoff(Protocol):
    """What the workers read and change of a handoff of the simulation (its `_Handoff`, which
    says what each field holds)."""

    number: int
    handoff_id: HandoffId
    workload: Workload
    pending: int
    spent: Counter[Fault]
    restarts: int
    issued_bits: int
    performed_bits: int
    told: set[Role]
    findings: list[Finding]
    issued: dict[int, HandoffAction]
    abandoned: bool
    target: int
    retries: int
    runaway: str | None


H = TypeVar("H", bound=_WorkerHandoff)
H_contra = TypeVar("H_contra", bound=_WorkerHandoff, contravariant=True)
T = TypeVar("T")


class _WorkerWorld(Protocol[H_contra]):
    """What the workers need of the simulation: its clock, its faults, its sends."""

    def at(
        self,
        delay: float,
        handoff: H_contra,
        call: Event,
        channel: Channel | None = None,
        /,
    ) -> float: ...

    def fault(self, kind: Fault, /) -> bool: ...

    def latency(self) -> float: ...

    def uniform(self, low: float, high: float, /) -> float: ...

    def choice(self, options: Sequence[T], /) -> T: ...

    def send(
        self,
        handoff: H_contra,
        action_id: HandoffActionId,
        outcome: HandoffActionOutcome,
        channel: Channel | None = None,
        /,
    ) -> None: ...

    def fact_delay(self, handoff: H_contra, kind: type, /) -> float: ...


@attrs.frozen
class Settled:
    """What the workers hold for a handoff with nothing left in flight, judged."""

    findings: tuple[Finding, ...] = ()
    """What the slots held break: W1, or W4 for a handoff that never completed."""
    held: int = 0
    """Slots held for the request that its completion says must be free."""
    lost: Finding | None = None
    """It completed SUCCESS and the destination holds no slot for it: the KV is gone (W1,
    though no slot leaked)."""


def _unfinished(source: int, destination: int) -> str:
    pairs = zip(Role, (source, destination), strict=True)
    holders = [f"the {role.value} holds {slots}" for role, slots in pairs if slots]
    return f"a worker slot held by a handoff that never completed: {', '.join(holders)}{SHARED}"


def _outcome_of(handoff: _WorkerHandoff, call: Call) -> Message | None:
    """The acknowledgement `call` delivers, as the message that carried it (None: a fact)."""
    number = None if call.action_id is None else call.action_id.value
    action = None if number is None else handoff.issued.get(number)
    role = None if action is None else role_of(action)
    if number is None or action is None or role is None or call.outcome is None:
        return None
    return Message(MessageKind.OUTCOME, number, role, action, call.outcome)


class SimulatedWorkers(Generic[H]):
    """The source and the destination of a simulation, following one contract, shared by
    every handoff."""

    def __init__(self, system: System, world: _WorkerWorld[H]) -> None:
        self.table = ContractTable(system.contract)
        self.world = world
        self.system = system
        self._message_faults = tuple(
            f
            for f in NETWORK
            if f in system.injected and f.strike.message and not f.strike.fails_cleanup
        )  # a cleanup's failure strikes as the cancel arrives (`arrive`)
        self._stamps: dict[int, tuple[int, Message]] = {}
        """Each action on its way to a worker: the worker's generation when it was sent (the
        message is kept so that its id names it until it arrives)."""
        self.replying: dict[Role, set[tuple[int, int]]] = {role: set() for role in Role}
        """With one action at a time: each worker's replies not yet at their coordinator."""
        self.waiting: dict[Role, deque[tuple[H, Message]]] = {role: deque() for role in Role}
        """With one action at a time: the actions each worker keeps waiting, in order."""
        self.cache: dict[tuple[int, int], Message] = {}
        """The destination's last `answers_again` outcomes, by request and action id."""
        self.transfers: dict[int, list[Message]] = {}
        """With `drains`: each request's arrivals of a `StartTransfer` at the source still
        coming (sent, copied by the network, or lost and to be re-sent)."""
        self.drained: dict[int, list[tuple[H, Message]]] = {}
        """With `drains`: the cancels of each request's destination the runtime holds."""
        self._worker_faults = tuple(f for f in NETWORK if f in system.injected and f.strike.forgets)
        self.workers = {role: Worker(self.table, role, system.slots, True) for role in Role}
        self.books = {role: WorkerBook() for role in Role}
        """What each worker remembers, of every request."""
        self.restarts = dict.fromkeys(Role, 0)
        self.fences = system.restart.refuses_unvouched
        self.vouches: dict[int, Vouch] = {}
        """With `fences`: whether the destination vouches for the slot each request's
        reservation took (`runtime.Vouch`; absent: none taken yet)."""
        self.live: dict[int, H] = {}
        """The handoffs begun and not yet settled, by number: those a restart strikes."""
        self.leaked: set[int] = set()
        """The requests settled with slots held against their completion."""

    def begin(self, handoff: H) -> None:
        """A handoff begins: the workers know nothing of its request yet."""
        handoff.restarts = self.restarts[Role.DESTINATION]
        self.live[handoff.number] = handoff

    def carry(self, handoff: H, item: IssuedHandoffAction) -> bool:
        """Send `item` to its worker; False for `Complete`, which no worker gets."""
        sent = carried((item,), self.system.acknowledge, handoff.number)
        if not sent:
            return False
        action, *acknowledgement = sent
        for early in acknowledgement:  # acknowledged as it is sent, before the worker has it
            self._send_back(handoff, early)
        self._to_worker(handoff, action)
        return True

    def _to_worker(self, handoff: H, action: Message) -> None:
        """Put the action `action` carries on its way to its worker, stamped with the worker's
        generation (`Restart.refuses_unvouched`)."""
        self._stamps[id(action)] = (self.restarts[action.role], action)
        self._coming(handoff, action, 1)
        delay = self.world.latency()
        if self.world.fault(Fault.DELAYED_DELIVERY):
            delay += self.world.uniform(5, 30)
        self.world.at(delay, handoff, action, (action.role, True))

    def struck(self, handoff: H, item: Call | Message, channel: Channel) -> bool:
        """Whether `item`, arriving on a worker's `channel` either way, is delivered now, once
        each injected fault that strikes messages had its chance at it, as `strike_message`
        says (the review's, at a rate): what goes out again (a copy, or the item held back)
        arrives later, behind what is on its way (with FIFO delivery, after a cancel sent
        meanwhile); a lost item is sent again by the runtime's timer, or its loss noticed."""
        if isinstance(item, Message) and item.copy:
            return True  # a copy is the network's already: it is not struck again
        copy = item._replace(copy=True) if isinstance(item, Message) else item
        delivered = True
        for fault in self._message_faults:
            if not delivered or not self._injects(handoff, fault):
                continue
            struck = strike_message(fault, item, copy)
            if struck.again is not None:
                self.world.at(self.world.uniform(5, 30), handoff, struck.again, channel)
                self._coming(handoff, struck.again, 1)
            if struck.now:
                continue
            delivered = False
            if struck.lost and self._resent(handoff, item):  # the timer fires: it goes again
                timer = Resent(item, channel)
                self.world.at(self.world.uniform(5, 30), handoff, timer)
                continue
            self._coming(handoff, item, -1)  # not this arrival: the hold must not wait on it
            if struck.notice is not None:  # a transport error, for a runtime that abandons
                notice = ending(struck.notice(handoff.handoff_id), self.system.abandons)
                self.world.at(self.world.uniform(5, 30), handoff, notice)
        return delivered

    def _resent(self, handoff: H, item: Call | Message) -> bool:
        """Whether the runtime sends the lost `item` again (`runtime.resent`)."""
        outcome = item if isinstance(item, Message) else _outcome_of(handoff, item)
        if outcome is None:
            # A fact: no cleanup leads to one, so only "everything" sends it again.
            return self.system.resend is Resend.EVERYTHING
        return resent(outcome, self.system.resend)

    def end_session(self, handoff: H) -> None:
        """The runtime ends `handoff`'s session outside the chart: its coordinator hears
        nothing more, and the runtime's own cleanup goes to both workers
        (`runtime.abandoned`)."""
        if handoff.abandoned:
            return
        handoff.abandoned = True
        for message in abandoned(handoff.handoff_id, handoff.number):
            self.world.at(self.world.latency(), handoff, message, (message.role, True))

    def replied(self, handoff: H, call: Call, channel: Channel) -> None:
        """A worker's reply reached its coordinator (or was lost): with one action at a time,
        the worker takes the next action it kept waiting."""
        if not self.system.one_at_a_time or call.action_id is None:
            return
        role = channel[0]
        self.replying[role].discard((handoff.number, call.action_id.value))
        self._next(role)

    def _next(self, role: Role) -> None:
        waiting = self.waiting[role]
        if waiting and not self.replying[role]:
            handoff, message = waiting.popleft()
            handoff.pending -= 1  # the clock has it again
            self.world.at(0.0, handoff, Waited(message))

    def _send_back(self, handoff: H, message: Message) -> None:
        """Put an acknowledgement or a fact in flight to the coordinator, on its worker's
        channel: an acknowledgement after the usual latency (or the network's faults), a
        fact when the work it reports is done."""
        back = (message.role, False)
        if message.kind is MessageKind.OUTCOME:
            assert message.outcome is not None
            if self.system.one_at_a_time:
                self.replying[message.role].add((handoff.number, message.action_id))
            self.world.send(handoff, HandoffActionId(message.action_id), message.outcome, back)
            return
        if isinstance(message.fact, HandoffFact.Failed):
            delay = self.world.latency()  # work not done: nothing to wait for
        else:
            delay = self.world.fact_delay(handoff, type(message.action))
        self.world.at(delay, handoff, call_of(message), back)

    def _strikes_every(self, fault: Fault) -> bool:
        """Whether `fault`, striking a worker, happens now: it strikes every live handoff at
        once (the workers are shared), so each must be within its budget, and it counts
        against each (as the review counts a restart against the run, whose handoffs are all
        live from its start to its end)."""
        live = self.live.values()
        if any(handoff.spent[fault] >= self.system.budget for handoff in live):
            return False
        if not self.world.fault(fault):
            return False
        for handoff in live:
            handoff.spent[fault] += 1
        return True

    def _injects(self, handoff: H, fault: Fault) -> bool:
        """Whether `fault`, asked for and within the handoff's budget, happens now."""
        if not self.system.allows(fault, handoff.spent[fault]) or not self.world.fault(fault):
            return False
        handoff.spent[fault] += 1
        return True

    def arrive(self, handoff: H, message: Message, *, waited: bool = False) -> None:
        """The worker gets the action `message` carries, reacts, and the runtime sends back
        what it answered (with one action at a time, once its last reply is at its
        coordinator: `waited`, it was kept waiting and its turn came)."""
        role = message.role
        if not waited and self._holds(handoff, message):
            return
        if self.system.one_at_a_time and not waited and (self.replying[role] or self.waiting[role]):
            self.waiting[role].append((handoff, message))
            handoff.pending += 1  # still on its way, in the worker's queue
            return
        self._take(handoff, message)
        self._coming(handoff, message, -1)
        if self.system.one_at_a_time:
            self._next(role)

    def _holds(self, handoff: H, message: Message) -> bool:
        """Whether the runtime, draining transfers, holds the cancel `message` back rather
        than let it reach the destination (`runtime.drained`): a `StartTransfer` of its
        request has yet to reach the source.  The arrivals still coming stand for the
        messages in flight the review looks at."""
        coming = self.transfers.get(handoff.number, ())
        if not self.system.drains_transfers or not drained(message, coming):
            return False
        self.drained.setdefault(handoff.number, []).append((handoff, message))
        handoff.pending += 1  # held by the runtime: still to be delivered
        return True

    def _coming(self, handoff: H, message: Call | Message, change: int) -> None:
        """Count an arrival of a `StartTransfer` at the source coming (`change` 1) or done
        with (-1: taken, or lost for good); once none is coming, the runtime sends the
        destination's cancels it held."""
        if not self.system.drains_transfers or not isinstance(message, Message):
            return
        if not isinstance(message.action, HandoffAction.StartTransfer):
            return
        number = handoff.number
        coming = self.transfers.setdefault(number, [])
        if change > 0:
            coming.append(message)
        elif message in coming:
            coming.remove(message)
        if coming:
            return
        del self.transfers[number]
        for held, cancel in self.drained.pop(number, ()):
            held.pending -= 1
            self.world.at(self.world.latency(), held, cancel)

    def _take(self, handoff: H, message: Message) -> None:
        action = message.action
        task = task_of(action)
        role = message.role
        key = (handoff.number, message.action_id)
        caches = self.system.answers_again and role is Role.DESTINATION
        if caches and key in self.cache:
            self._send_back(handoff, self.cache[key])  # a repeat, answered from the cache
            return
        for fault in self._worker_faults:
            if self._strikes_every(fault):
                self.restart(role)  # just before the message arrives
        stamp = self._stamps.pop(id(message), None)
        if (
            stamp is not None
            and stamp[0] != self.restarts[role]
            and self._unvouched(handoff, message)
        ):
            return
        worker, book = self.workers[role], self.books[role]
        request, action_id = handoff.number, message.action_id
        own = action_id == RUNTIME_OWN  # the runtime's own cleanup: no coordinator issued it
        for found, words in (
            () if own else performed(handoff.issued_bits, handoff.performed_bits, message)
        ):
            handoff.findings.append(Finding.of(found, words))
        if task is WorkerTask.CANCEL and self._cleanup_fails(handoff, book, action_id):
            # It does not do the cancel, so it neither performs nor remembers it.
            system = self.system
            for sent in cleanup_failed(message, handoff.workload, system.acknowledge, system.retry):
                if sent.kind is MessageKind.ACTION:  # its own cleanup, retried at once
                    self._retry(handoff, sent)
                else:
                    self._send_back(handoff, sent)
            return
        handoff.performed_bits |= 1 << action_id
        entry = book.find(request)
        before = worker.memory(book, request), 0 if entry is None else entry.where
        failed = None
        if self.fences and fenced(message, self.vouches.get(request, Vouch.NONE)):
            failed = REFUSED_WRITE  # the destination refuses the write: no fault, no draw
            reply = WorkerReply.FAILED
            worker.fail_in(book, request, action_id)
        elif task in _FAILABLE and self.world.fault(Fault.FAILED_OUTCOME):
            failed = _FAILED
            reply = WorkerReply.FAILED
            worker.fail_in(book, request, action_id)
        else:
            reply = worker.take(book, request, action_id, task, self.world.choice).reply
        if self.fences and role is Role.DESTINATION:
            vouch = self.vouches.get(request, Vouch.NONE).taken(message, reply)
            if vouch:
                self.vouches[request] = vouch
        if own and reply in _DONE_REPLIES:
            handoff.told.add(role)
        slots = book.slots(request)
        if slots and role in handoff.told:
            freed = held_after_freed(role, message, handoff.abandoned)
            handoff.findings.append(Finding.of(_SLOT_FREED, freed))
        if slots > 1:
            handoff.findings.append(Finding.of(_ONE_SLOT, two_slots(role, message, slots)))
        if task is WorkerTask.CANCEL and reply is WorkerReply.FAILED:
            handoff.performed_bits &= ~(1 << action_id)  # failed: not performed, retried anew
        done = reply is WorkerReply.DONE and failed is None
        if role is Role.DESTINATION:
            self._destination(handoff, message, done and task is WorkerTask.ACTIVATE, *before)
        elif done and task is WorkerTask.TRANSFER:
            self._transferred(handoff, message)
        for sent in answered(
            message, reply, handoff.workload, self.system.acknowledge, failed=failed
        ):
            if caches and sent.kind is MessageKind.OUTCOME:
                self._cache(key, sent)
            self._send_back(handoff, sent)

    def _cleanup_fails(self, handoff: H, book: WorkerBook, action_id: int) -> bool:
        """Whether the worker fails the cancel `action_id` as it arrives: at the fault rate,
        or as `--faults cleanup-failure` within its budget.  A cancel the worker did already
        (a copy) is answered as before, and has no chance to fail."""
        entry = book.find(handoff.number)
        if entry is not None and entry.done & 1 << action_id:
            return False
        return self.world.fault(Fault.CLEANUP_FAILURE) or self._injects(
            handoff, Fault.FAILED_CLEANUP
        )

    def _cache(self, key: tuple[int, int], sent: Message) -> None:
        """The destination keeps `sent`, forgetting its oldest beyond `answers_again`."""
        self.cache[key] = sent
        if len(self.cache) > self.system.answers_again:
            del self.cache[next(iter(self.cache))]

    def _transferred(self, handoff: H, message: Message) -> None:
        """W8 and W9 as the source performs the transfer `message` carries: whose is the
        destination slot the request's reservation took."""
        book = self.books[Role.DESTINATION]
        told_apart = self.workers[Role.DESTINATION].identity and bool(handoff.target)
        holder = book.holder(handoff.target) if told_apart else None
        held = book.slots(handoff.number)
        for key, words in transferred(message, held, holder, told_apart=told_apart):
            handoff.findings.append(Finding.of(key, words))

    def _destination(
        self, handoff: H, message: Message, activated: bool, before: Hashable, where: int
    ) -> None:
        """W10 once the destination took the action `message` carries (`before`: what it
        remembered of the request; `where`: the slots it held for it), and the slot its
        reservation took."""
        worker, book = self.workers[Role.DESTINATION], self.books[Role.DESTINATION]
        request = handoff.number
        after = worker.memory(book, request)
        served, serves = (self.table.serves(memory) for memory in (before, after))
        words = serving(message, activated, served, serves, book.slots(request))
        if words is not None:
            handoff.findings.append(Finding.of(Key.ACTIVATED_SERVES, words))
        entry = book.find(request)
        if not handoff.target and entry is not None:
            handoff.target = entry.where & ~where

    def restart(self, role: Role) -> None:
        """The worker of `role` restarts: it forgets every request and frees every slot, or
        as `System.restart` says (`Worker.restarted`)."""
        restart = self.system.restart
        self.books[role] = self.workers[role].restart_book(
            self.books[role], keeps_slots=restart.keeps_slots, durable=restart.durable_tombstones
        )
        self.restarts[role] += 1
        if self.fences and role is Role.DESTINATION:  # `runtime.fenced`
            for request, vouch in self.vouches.items():
                self.vouches[request] = vouch.restarted()

    def _unvouched(self, handoff: H, message: Message) -> bool:
        """Whether the action `message`, sent before its worker restarted, is lost with the
        inbox (re-sent, if the runtime's policy covers it, else noticed as `TimedOut`) or
        refused as failed work;
        False when the restart leaves it to be taken as usual."""
        restart = self.system.restart
        if restart.loses_inbox:  # the runtime's timer notices: it re-sends, or times out
            timer: Resent | Call = Call.of_fact(HandoffFact.TimedOut(handoff.handoff_id))
            if resent(message, self.system.resend):
                timer = Resent(message, (message.role, True))
                self._coming(handoff, message, 1)  # it arrives once more
            self.world.at(self.world.uniform(5, 30), handoff, timer)
            return True
        if not restart.refuses_unvouched:
            return False
        refused = refused_unvouched(message, handoff.workload, self.system.acknowledge)
        if refused is None:
            return False
        for sent in refused:
            self._send_back(handoff, sent)
        return True

    def told(self, handoff: H, action: HandoffAction, outcome: HandoffActionOutcome) -> None:
        """The coordinator took `outcome` for its `action`: a release or cancel acknowledged as
        done tells it the worker freed the request's slot (W2 when the worker holds one)."""
        role = role_of(action)
        if role is None:
            return
        message = Message(MessageKind.OUTCOME, 0, role, action, outcome)
        if not tells_freed(message):
            return
        handoff.told.add(role)
        if self.books[role].slots(handoff.number):
            handoff.findings.append(Finding.of(_SLOT_FREED, told_while_held(message)))

    def refused(self, handoff: H, call: Call, error: HandoffError) -> None:
        """A fact refused as early (its acknowledgement still on its way) is reported again.

        Only while something else of the handoff is on its way: else no acknowledgement is
        coming, and the fact is dropped.  The runtime reports it again, on no worker's
        channel: a worker sent it once.
        """
        if kept_in_flight(error) and call.fact is not None and handoff.pending:
            self.world.at(self.world.latency(), handoff, call)
        outcome = _outcome_of(handoff, call)
        if outcome is None:
            return
        again = retried(outcome._replace(handoff=handoff.number), self.system.retry)
        if again is not None:
            self._retry(handoff, again)

    def _retry(self, handoff: H, again: Message) -> None:
        """Send the failed cancel `again`, unless the run retried so often that it is cut as
        one that never ends (`bound.retried_too_often`): its worker fails every cancel."""
        handoff.retries += 1
        why = retried_too_often(handoff.retries)
        if why is None:
            self._to_worker(handoff, again)
        elif handoff.runaway is None:
            handoff.runaway = why

    def settle(self, handoff: H, completion: HandoffCompletion | None) -> Settled:
        """Judge the slots the workers hold for `handoff`, which has nothing left in flight
        and ended with `completion` (None: it never completed), and let the request go.

        W1 as the review judges it (`judgments.at_completion`); a handoff that never
        completed holds every slot against it.  After SUCCESS the destination's slot leaves
        with the request (decode finishes at once, for the simulation: the slot is free for the
        next handoff); a slot held against the completion stays held: a leak.  A worker whose
        memory is unbounded forgets what it remembers idle of the request (no message of it is
        left to need it); one with bounded memory keeps it, competing with the live requests
        as a real worker's would, unless its tombstones expire (`System.expires`: nothing of
        the request is on its way to it any more, `runtime.may_expire`).
        """
        request = handoff.number
        source, destination = (self.books[role].slots(request) for role in Role)
        findings: list[Finding] = []
        held = source + destination
        lost = None
        if handoff.abandoned and completion is None:
            words = after_abandoned(source, destination)
            if words is not None:
                findings.append(Finding.of(Key.SLOTS_AT_COMPLETION, words + SHARED))
        elif completion is None:
            if held:
                findings.append(
                    Finding.of(Key.DELIVERIES_COMPLETE, _unfinished(source, destination))
                )
        else:
            restarted = self.restarts[Role.DESTINATION] != handoff.restarts
            words = at_completion(source, destination, completion, restarted)
            if completion is HandoffCompletion.SUCCESS and destination:
                self.books[Role.DESTINATION].hand_over(request)
                held -= 1
            if words is not None:
                finding = Finding.of(Key.SLOTS_AT_COMPLETION, words + SHARED)
                if held:
                    findings.append(finding)
                else:
                    lost = finding
        if held:
            self.leaked.add(request)
        self.live.pop(request, None)
        self.vouches.pop(request, None)
        for role in Role:
            forgets = self.workers[role].remembers is None or self.system.expires  # `may_expire`
            if forgets and self.books[role].idle(request):
                self._let_go(role, request)
        return Settled(tuple(findings), held, lost)

    def _let_go(self, role: Role, request: int) -> None:
        self.books[role].forget(request)

    def held(self) -> dict[int, int]:
        """The slots each worker still holds, by request, for both workers together."""
        found: Counter[int] = Counter()
        for book in self.books.values():
            for entry in book.entries:
                if entry.slots:
                    found[entry.request] += entry.slots
        return dict(found)

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

import attrs

from handoff._system.call import Call
from handoff._system.config import System
from handoff._system.faults import NETWORK, Fault
from handoff._system.judgments import (
    at_completion,
    held_after_freed,
    performed,
    told_while_held,
    two_slots,
)
from handoff._system.properties import Finding, Key
from handoff._system.runtime import (
    CANCELS,
    Workload,
    answered,
    call_of,
    carried,
    kept_in_flight,
    tells_freed,
)
from handoff._system.worker_state import Worker, WorkerBook
from handoff._system.workers import (
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

__all__ = ["Channel", "Settled", "SimulatedWorkers"]


_FAILABLE = (WorkerTask.TAKE, WorkerTask.TRANSFER, WorkerTask.ACTIVATE)
_FAILED = Fault.FAILED_OUTCOME.outcome
_SLOT_FREED = Key.NO_SLOT_AFTER_FREED
_ONE_SLOT = Key.ONE_SLOT_PER_REQUEST

Channel = tuple[Role, bool]
"""A worker's messages in one direction: its role, and True towards it (False: from it)."""

SHARED = (
    " (the trace has this handoff's calls only: the workers are shared, and what they did for "
    "other handoffs, such as forgetting this request to remember theirs or restarting, is not "
    "in it)"
)
"""Said of a worker's slot a trace cannot explain by itself."""


class _WorkerHandoff(Protocol):
    number: int
    """The request's number, by which the workers know it."""
    handoff_id: HandoffId
    workload: Workload
    pending: int
    spent: Counter[Fault]
    """The injected faults (`--faults`) this handoff suffered, by kind."""
    restarts: int
    """How many times the destination had restarted when the handoff began."""
    issued_bits: int
    """Bit n set: action n was issued."""
    performed_bits: int
    """Bit n set: a worker performed action n."""
    told: set[Role]
    """The workers whose freeing the coordinator was told of."""
    findings: list[Finding]
    """What its run broke so far, judged as the review judges a move."""


H = TypeVar("H", bound=_WorkerHandoff)
H_contra = TypeVar("H_contra", bound=_WorkerHandoff, contravariant=True)
T = TypeVar("T")


class _WorkerWorld(Protocol[H_contra]):
    """What the workers need of the simulation: its clock, its faults, its sends."""

    def at(
        self,
        delay: float,
        handoff: H_contra,
        call: Call | Message,
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


class SimulatedWorkers(Generic[H]):
    """The source and the destination of a simulation, following one contract, shared by
    every handoff."""

    def __init__(self, system: System, world: _WorkerWorld[H]) -> None:
        self.table = ContractTable(system.contract)
        self.world = world
        self.faults = system.injected
        self.budget = system.budget
        self.acknowledge = system.acknowledge
        self._message_faults = tuple(f for f in NETWORK if f in self.faults and f.strike.message)
        self._worker_faults = tuple(f for f in NETWORK if f in self.faults and f.strike.forgets)
        self.workers = {role: Worker(self.table, role, system.slots) for role in Role}
        self.books = {role: WorkerBook() for role in Role}
        """What each worker remembers, of every request."""
        self.restarts = dict.fromkeys(Role, 0)
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
        sent = carried((item,), self.acknowledge, handoff.number)
        if not sent:
            return False
        action, *acknowledgement = sent
        for early in acknowledgement:  # acknowledged as it is sent, before the worker has it
            self._send_back(handoff, early)
        delay = self.world.latency()
        if self.world.fault(Fault.DELAYED_DELIVERY):
            delay += self.world.uniform(5, 30)
        self.world.at(delay, handoff, action, (action.role, True))
        return True

    def struck(self, handoff: H, item: Call | Message, channel: Channel) -> bool:
        """Whether `item`, arriving on a worker's `channel` either way, is delivered now, once
        each injected fault that strikes messages had its chance at it, as its `Strike` says
        (the review's, at a rate): a copy sent again behind what is on its way (with FIFO
        delivery, after a cancel sent meanwhile), the message lost, the loss noticed by the
        runtime's timer later."""
        if isinstance(item, Message) and item.copy:
            return True  # a copy is the network's already: it is not struck again
        delivered = True
        for fault in self._message_faults:
            if not delivered or not self._injects(handoff, fault):
                continue
            strike = fault.strike
            if strike.copy:
                again = item._replace(copy=True) if isinstance(item, Message) else item
                self.world.at(self.world.uniform(5, 30), handoff, again, channel)
            if not strike.delivered:
                delivered = False
            if strike.notice is not None:
                notice = Call.of_fact(strike.notice(handoff.handoff_id))
                self.world.at(self.world.uniform(5, 30), handoff, notice)
        return delivered

    def _send_back(self, handoff: H, message: Message) -> None:
        """Put an acknowledgement or a fact in flight to the coordinator, on its worker's
        channel: an acknowledgement after the usual latency (or the network's faults), a
        fact when the work it reports is done."""
        back = (message.role, False)
        if message.kind is MessageKind.OUTCOME:
            assert message.outcome is not None
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
        if any(handoff.spent[fault] >= self.budget for handoff in live):
            return False
        if not self.world.fault(fault):
            return False
        for handoff in live:
            handoff.spent[fault] += 1
        return True

    def _injects(self, handoff: H, fault: Fault) -> bool:
        """Whether `fault`, asked for and within the handoff's budget, happens now."""
        spent = handoff.spent
        if fault not in self.faults or spent[fault] >= self.budget or not self.world.fault(fault):
            return False
        spent[fault] += 1
        return True

    def arrive(self, handoff: H, message: Message) -> None:
        """The worker gets the action `message` carries, reacts, and the runtime sends back
        what it answered."""
        action = message.action
        task = task_of(action)
        role = message.role
        for fault in self._worker_faults:
            if self._strikes_every(fault):
                self.restart(role)  # just before the message arrives
        worker, book = self.workers[role], self.books[role]
        request, action_id = handoff.number, message.action_id
        for key, words in performed(handoff.issued_bits, handoff.performed_bits, message):
            handoff.findings.append(Finding.of(key, words))
        handoff.performed_bits |= 1 << action_id
        failed = None
        if task in _FAILABLE and self.world.fault(Fault.FAILED_OUTCOME):
            failed = _FAILED
            reply = WorkerReply.FAILED
            worker.fail_in(book, request, action_id)
        else:
            reply = worker.take(book, request, action_id, task, self.world.choice).reply
        slots = book.slots(request)
        if slots and role in handoff.told:
            handoff.findings.append(Finding.of(_SLOT_FREED, held_after_freed(role, message)))
        if slots > 1:
            handoff.findings.append(Finding.of(_ONE_SLOT, two_slots(role, message, slots)))
        for sent in answered(message, reply, handoff.workload, self.acknowledge, failed=failed):
            cleanup = isinstance(action, CANCELS) and sent.kind is MessageKind.OUTCOME
            if cleanup and self.world.fault(Fault.CLEANUP_FAILURE):
                self._send_back(handoff, sent._replace(outcome=_FAILED))
            self._send_back(handoff, sent)

    def restart(self, role: Role) -> None:
        """The worker of `role` restarts: it forgets every request and frees every slot."""
        self.books[role] = WorkerBook()
        self.restarts[role] += 1

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

    def settle(self, handoff: H, completion: HandoffCompletion | None) -> Settled:
        """Judge the slots the workers hold for `handoff`, which has nothing left in flight
        and ended with `completion` (None: it never completed), and let the request go.

        W1 as the review judges it (`judgments.at_completion`); a handoff that never
        completed holds every slot against it.  After SUCCESS the destination's slot leaves
        with the request (decode finishes at once, for the simulation: the slot is free for the
        next handoff); a slot held against the completion stays held: a leak.  A worker whose
        memory is unbounded forgets what it remembers idle of the request (no message of it is
        left to need it); one with bounded memory keeps it, competing with the live requests
        as a real worker's would.
        """
        request = handoff.number
        source, destination = (self.books[role].slots(request) for role in Role)
        findings: list[Finding] = []
        held = source + destination
        lost = None
        if completion is None:
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
        for role in Role:
            if self.workers[role].remembers is None and self.books[role].idle(request):
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

"""The runtime between a coordinator and its workers, written once for every scheduler.

A cooperative runtime performs every action it is given and acknowledges it with the one
outcome that fits (`acknowledgement`); performing `SubmitPrefill`, `ReserveDestination` or
`StartTransfer` then leads to a fact it reports (`Workload.fact_after`).  `CooperativeRuntime`
drives one coordinator that way, first issued first, and the sequence diagrams draw it.

With workers, the runtime's duties are pure steps over messages (`Message`): what it puts in
flight for what a call issued (`carried`), what it sends back once a worker took an action
(`answered`), the call a message in flight becomes (`call_of`), and which refused message it
keeps in flight (`kept_in_flight`).  The system review enumerates these steps and the
simulation samples them with a clock; neither restates them.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable

import attrs

from handoff._coordinator.binding import FITTING_OUTCOME
from handoff._system.call import Call
from handoff._system.config import AnyAcknowledge, Resend
from handoff._system.faults import Fault
from handoff._system.workers import (
    RUNTIME_OWN,
    Message,
    MessageKind,
    Role,
    WorkerReply,
    WorkerTask,
    on_send,
    outcome_of,
    role_of,
    task_of,
)
from handoff._values.errors import HandoffError, OutOfOrderFactError
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffId,
    KvTransferTimingMode,
)

__all__ = [
    "CANCELS",
    "DEMO_WORKLOAD",
    "DONE_OUTCOMES",
    "HELD_FACTS",
    "REFUSED_WRITE",
    "CooperativeRuntime",
    "Vouch",
    "Workload",
    "abandoned",
    "acknowledgement",
    "answered",
    "busy",
    "call_of",
    "carried",
    "cleanup_failed",
    "drained",
    "fenced",
    "held_back",
    "kept_in_flight",
    "may_expire",
    "refused_unvouched",
    "resent",
    "retried",
    "retried_own",
    "tells_freed",
]

CANCELS: tuple[type[HandoffAction], ...] = (
    HandoffAction.CancelSource,
    HandoffAction.CancelDestination,
)
"""The cleanup actions: a failed outcome for one of them is refused, and retried later."""

DONE_OUTCOMES = (HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP)
"""The outcomes that acknowledge a release or a cancel as done."""


def acknowledgement(action: HandoffAction) -> HandoffActionOutcome:
    """The outcome a cooperative runtime acknowledges `action` with."""
    return FITTING_OUTCOME[type(action)]


@attrs.frozen
class Workload:
    """The request a runtime serves: what its facts report."""

    timing: HandoffTransferTiming
    """Reported by `SourceHeld`, once prefill is done."""
    transferable_prompt_tokens: int
    """Reported by `DestinationReserved`: the prompt tokens the destination still lacks."""

    def fact_after(self, action: HandoffAction) -> HandoffFact | None:
        """The fact a runtime reports once it has performed (and acknowledged) `action`."""
        hid = action.handoff_id
        if isinstance(action, HandoffAction.SubmitPrefill):
            return HandoffFact.SourceHeld(hid, self.timing)
        if isinstance(action, HandoffAction.ReserveDestination):
            return HandoffFact.DestinationReserved(hid, self.transferable_prompt_tokens)
        if isinstance(action, HandoffAction.StartTransfer):
            return HandoffFact.TransferCompleted(hid)
        return None


DEMO_WORKLOAD = Workload(
    HandoffTransferTiming(
        mode=KvTransferTimingMode.DESTINATION_MISSING,
        full_prompt_tokens=4096,
        kv_bytes_per_token=131_072,
        bandwidth_gb_s=50.0,
    ),
    transferable_prompt_tokens=4000,
)
"""A 4096-token prompt of which the destination lacks 4000, moved at 50 GB/s."""


class CooperativeRuntime:
    """Drives a coordinator cooperatively, one call at a time.

    The caller asks for `next_call()`, sends it, and hands what it issued to `answered()`.
    The first call is `start()`; then each issued action, first issued first, is acknowledged
    with its fitting outcome and followed by the fact it leads to.  `report(fact)` puts a fact
    ahead of everything still to do, as a runtime does when a request is canceled.
    """

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self._calls: deque[Call] = deque([Call.start()])
        self._pending: deque[IssuedHandoffAction] = deque()

    def next_call(self) -> Call | None:
        """The next call to make, or None when nothing is left to do."""
        if self._calls:
            return self._calls.popleft()
        if not self._pending:
            return None
        item = self._pending.popleft()
        fact = self.workload.fact_after(item.action)
        if fact is not None:
            self._calls.append(Call.of_fact(fact))
        return Call.of_outcome(item.id, acknowledgement(item.action))

    def answered(self, issued: Iterable[IssuedHandoffAction]) -> None:
        """Take on the actions the last call issued (`Complete` needs no acknowledgement)."""
        self._pending.extend(
            item for item in issued if not isinstance(item.action, HandoffAction.Complete)
        )

    def report(self, fact: HandoffFact) -> None:
        """Report `fact` next, before anything still to do."""
        self._calls.appendleft(Call.of_fact(fact))


# -- the runtime's duties with workers ---------------------------------------------------

_CLEANUPS: tuple[type[HandoffAction], ...] = (HandoffAction.ReleaseSource, *CANCELS)
_WORK = (WorkerTask.TAKE, WorkerTask.TRANSFER, WorkerTask.ACTIVATE)
_UNVOUCHED = HandoffActionOutcome.failed("sent before the worker restarted")


def carried(
    issued: Iterable[IssuedHandoffAction], acknowledge: AnyAcknowledge, handoff: int | None = None
) -> tuple[Message, ...]:
    """What the runtime puts in flight for the actions one call issued: each to its worker
    (`Complete` is the runtime's own and goes nowhere), and, acknowledging on send, the
    action's acknowledgement back to the coordinator right behind it."""
    sent: list[Message] = []
    for item in issued:
        action = item.action
        role = role_of(action)
        if role is None:
            continue
        number = item.id.value
        sent.append(Message(MessageKind.ACTION, number, role, action, handoff=handoff))
        if acknowledge.sends(action):  # acknowledged as it is sent
            outcome = on_send(action)
            sent.append(
                Message(MessageKind.OUTCOME, number, role, action, outcome, handoff=handoff)
            )
    return tuple(sent)


def answered(
    message: Message,
    reply: WorkerReply,
    workload: Workload,
    acknowledge: AnyAcknowledge,
    *,
    failed: HandoffActionOutcome | None = None,
) -> tuple[Message, ...]:
    """What goes back to the coordinator once a worker took the action `message` carried and
    replied `reply`: its acknowledgement, then the fact its work leads to.

    `failed` is the outcome of work the worker failed through a fault (its reply is then
    `FAILED`).  Work the runtime acknowledged as it sent it has been reported done already:
    the worker reports only its fact, or, when it did not do the work, the one word left,
    `Failed`."""
    if message.action_id == RUNTIME_OWN:
        return ()  # the runtime's own cleanup: it takes the reply, no coordinator hears it
    action = message.action
    outcome = failed if failed is not None else outcome_of(action, reply)
    fact = workload.fact_after(action) if reply is WorkerReply.DONE else None
    if acknowledge.sends(action):
        outcome = None
        if reply is WorkerReply.FAILED:
            fact = HandoffFact.Failed(action.handoff_id)
    number, role, whose = message.action_id, message.role, message.handoff
    sent: list[Message] = []
    if outcome is not None:
        sent.append(Message(MessageKind.OUTCOME, number, role, action, outcome, handoff=whose))
    if fact is not None:
        sent.append(Message(MessageKind.FACT, number, role, action, fact=fact, handoff=whose))
    return tuple(sent)


def refused_unvouched(
    message: Message, workload: Workload, acknowledge: AnyAcknowledge
) -> tuple[Message, ...] | None:
    """What a worker restarted since the action `message` was sent answers it with, when it
    refuses such work as failed (`Restart.refuses_unvouched`): None for an action that is no
    work (a release or a cancel is taken as usual)."""
    if task_of(message.action) not in _WORK:
        return None
    return answered(message, WorkerReply.FAILED, workload, acknowledge, failed=_UNVOUCHED)


def call_of(message: Message) -> Call:
    """The call the runtime makes when it delivers `message` (an outcome or a fact) to its
    coordinator."""
    if message.fact is not None:
        return Call.of_fact(message.fact)
    assert message.outcome is not None
    return Call.of_outcome(HandoffActionId(message.action_id), message.outcome)


def kept_in_flight(error: HandoffError) -> bool:
    """Whether the runtime keeps a message its coordinator refused with `error`, to deliver
    it again later: a fact refused as early (its acknowledgement is still on its way).  Any
    other refused message is dropped."""
    return isinstance(error, OutOfOrderFactError)


def retried(message: Message, retry: bool) -> Message | None:
    """The action a runtime sends again once its coordinator refused `message`: a cancel
    acknowledged as failed, when the runtime retries (`System.retry`), as the contract
    demands until the cancel is `Applied` or `Noop`.  A failed `ReleaseSource` needs no
    retry: the coordinator records it and cancels the source itself.

    The action sent again is marked a copy: like the network's copies, it is the same action
    again, not new work of the coordinator's (W3), and a worker that did it already answers
    it with silence (a failure acknowledged twice is retried twice)."""
    outcome = message.outcome
    if not retry or outcome is None or not outcome.is_failed:
        return None
    if message.kind is not MessageKind.OUTCOME or not isinstance(message.action, CANCELS):
        return None
    return Message(
        MessageKind.ACTION,
        message.action_id,
        message.role,
        message.action,
        copy=True,
        handoff=message.handoff,
    )


def retried_own(message: Message, retry: bool) -> Message | None:
    """The runtime's own cleanup (`abandoned`) that its worker failed, sent again when the
    runtime retries: no coordinator hears that failure, so the runtime retries at once, as
    `retried` does once a coordinator refused a failed cancel of its own."""
    if not retry or message.action_id != RUNTIME_OWN or not isinstance(message.action, CANCELS):
        return None
    return message._replace(copy=True)


def cleanup_failed(
    message: Message, workload: Workload, acknowledge: AnyAcknowledge, retry: bool
) -> tuple[Message, ...]:
    """What goes out once a worker failed the cancel `message`: for the runtime's own cleanup,
    the cancel again at once when it retries (`retried_own`: no coordinator hears of it);
    else the failure, back to the coordinator, which refuses it and so has the runtime
    retry (`retried`)."""
    again = retried_own(message, retry)
    if again is not None:
        return (again,)
    failed = Fault.FAILED_CLEANUP.outcome
    return answered(message, WorkerReply.FAILED, workload, acknowledge, failed=failed)


def resent(message: Message, policy: Resend) -> bool:
    """Whether a runtime re-sending under `policy` sends the lost `message` again once its
    timer notices the loss, rather than reporting `TimedOut`: every message, or a cleanup
    action and its acknowledgement.  It sends the message itself (for a reply, it asks the
    worker again, and the worker answers as it did), behind whatever went out meanwhile."""
    if policy is Resend.EVERYTHING:
        return True
    return (
        policy is Resend.CLEANUPS
        and message.kind is not MessageKind.FACT
        and isinstance(message.action, _CLEANUPS)
    )


def tells_freed(message: Message) -> bool:
    """Whether `message` tells the coordinator its worker freed the request's slot: a release
    or cancel acknowledged as done."""
    outcome = message.outcome
    return (
        message.kind is MessageKind.OUTCOME
        and isinstance(message.action, _CLEANUPS)
        and outcome is not None
        and not outcome.is_failed
    )


# -- what a runtime profile adds (`handoff._system.profiles`) ------------------------------

HELD_FACTS: tuple[type[HandoffFact], ...] = (
    HandoffFact.SourceHeld,
    HandoffFact.DestinationReserved,
)
"""The facts a runtime holding early facts keeps back until their acknowledgement went out
(the live mocker: `SourceHeld` before `Submitted`, `DestinationReserved` before `Accepted`)."""


def held_back(message: Message, early: bool) -> bool:
    """Whether a runtime that holds early facts keeps `message` back rather than deliver it:
    a fact of `HELD_FACTS` its coordinator would refuse as `early` (`kept_in_flight`: its
    acknowledgement has not reached the coordinator yet).  A runtime that does not hold it
    delivers it, is refused, and keeps it in flight: the same runs, with the refusal in
    between."""
    return early and isinstance(message.fact, HELD_FACTS)


def busy(message: Message, in_flight: Iterable[Message]) -> bool:
    """Whether a worker taking one action at a time is still busy when `message` (an action)
    reaches it: its reply to an earlier action, of any handoff, has not reached the
    coordinator yet (a copy the network made of a reply does not count)."""
    if message.kind is not MessageKind.ACTION:
        return False
    return any(
        other.kind is MessageKind.OUTCOME and other.role is message.role and not other.copy
        for other in in_flight
    )


def drained(message: Message, in_flight: Iterable[Message]) -> bool:
    """Whether a runtime draining transfers (`System.drains_transfers`) holds `message` back:
    a `CancelDestination` (the coordinator's, a retry, or the runtime's own once a session
    ended) while a `StartTransfer` of the same handoff is still on its way to the source, in
    `in_flight` (a copy, or a lost one waiting on the runtime's timer, included).

    Cleanup issues both cancels together, so without the hold the destination may free the
    request's slot before the source performs the transfer into it (W9).  The hold depends
    on the handoff's own messages only, and ends: a transfer reaches the source, or is lost
    for good and its handoff timed out."""
    if message.kind is not MessageKind.ACTION:
        return False
    if not isinstance(message.action, HandoffAction.CancelDestination):
        return False
    return any(
        other.kind is MessageKind.ACTION
        and other.handoff == message.handoff
        and isinstance(other.action, HandoffAction.StartTransfer)
        for other in in_flight
    )


def abandoned(handoff_id: HandoffId, handoff: int | None = None) -> tuple[Message, Message]:
    """What a runtime cleaning up outside the chart sends when a session ends (a deadline, a
    client's cancel, a shutdown, a transport error) instead of telling the coordinator: a
    `CancelSource` with no action id to the source, and an `Abort` that makes the destination
    run `CancelDestination` on its own.  Neither reply goes to the coordinator (`answered`)."""
    return (
        Message(
            MessageKind.ACTION,
            RUNTIME_OWN,
            Role.SOURCE,
            HandoffAction.CancelSource(handoff_id),
            handoff=handoff,
        ),
        Message(
            MessageKind.ACTION,
            RUNTIME_OWN,
            Role.DESTINATION,
            HandoffAction.CancelDestination(handoff_id),
            handoff=handoff,
        ),
    )


def may_expire(role: Role, retired: bool, in_flight: Iterable[Message]) -> bool:
    """Whether the worker of `role` may let its tombstone for a request expire: the request
    retired (its handoff complete, or its session ended) and none of its actions, `in_flight`
    (the request's messages), is still on its way to the worker.  The session timeout the
    tombstone outlives is taken to outlast every delivery; a worker that forgets sooner is
    `tombstone:K`'s bounded memory, reviewed as that."""
    return retired and not any(
        message.kind is MessageKind.ACTION and message.role is role for message in in_flight
    )


# -- the KV write lands at the destination, which may refuse it (`Restart.refuses_unvouched`)

REFUSED_WRITE = HandoffActionOutcome.failed(
    "the destination refused the KV write: it restarted since the reservation"
)
"""How the source answers a transfer whose KV write the destination refused (`fenced`)."""


class Vouch(enum.IntEnum):
    """Whether the destination still vouches for the slot a handoff's reservation took, as a
    runtime that stamps work with the worker's generation (`Restart.refuses_unvouched`) knows
    it: the destination's reply to the reservation carries the generation it took the slot
    in, and the `StartTransfer` the coordinator then issues carries that stamp to the source,
    whose KV write presents it where it lands.

    Kept only by such a runtime (every other one stays at `NONE`, its states as before)."""

    NONE = 0
    """No reservation taken yet: the first one taken stamps the generation."""
    VOUCHED = 1
    """Taken in the destination's current generation: the write lands."""
    UNVOUCHED = 2
    """The destination restarted since: it refuses the write (`fenced`)."""

    def taken(self, message: Message, reply: WorkerReply) -> Vouch:
        """After the destination replied `reply` to the action `message` carries: a
        reservation it took (`DONE`) stamps its current generation, unless an earlier one
        did (the coordinator's transfer follows the first `DestinationReserved`)."""
        if self is not Vouch.NONE or reply is not WorkerReply.DONE:
            return self
        if message.role is not Role.DESTINATION or message.kind is not MessageKind.ACTION:
            return self
        return Vouch.VOUCHED if task_of(message.action) is WorkerTask.TAKE else self

    def restarted(self) -> Vouch:
        """After the destination restarted: a slot reserved before is no longer vouched for
        (freed, or kept for a request the restarted worker no longer knows)."""
        return Vouch.UNVOUCHED if self is Vouch.VOUCHED else self


def fenced(message: Message, vouch: Vouch) -> bool:
    """Whether the KV write of the transfer `message` carries is refused where it lands: the
    source performs a `StartTransfer` whose reservation the destination no longer vouches for
    (`Vouch.UNVOUCHED`).  The source then answers the transfer as failed (`REFUSED_WRITE`,
    or `Failed` when the runtime acknowledged it as it sent it), holding its KV as before, and
    the coordinator cleans up as after any failed transfer.  In a real transport a restarted
    destination's memory registrations die with it, and a runtime stamping work with a
    generation rejects a write stamped before the restart.

    The fence is the generation's, not the slot's: a destination that freed the slot for a
    `CancelDestination` has not restarted, its generation is the one the transfer carries,
    and the write lands in the freed slot (or in the slot another request took since).
    Telling that apart needs a stamp per slot tenancy, which neither the contract nor the
    upstream runtimes keep; holding the cancel until the transfer reached the source is the
    runtime's remedy for that race (`drained`, `--drain-transfers`).  So refusing unvouched
    work removes the restart's race only, and a review claims nothing of the cancel's."""
    if vouch is not Vouch.UNVOUCHED or message.role is not Role.SOURCE:
        return False
    return message.kind is MessageKind.ACTION and isinstance(
        message.action, HandoffAction.StartTransfer
    )

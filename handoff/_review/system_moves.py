"""The pieces a move of the system world (`handoff._review.system`) is made of: what a call
does to a coordinator in one configuration, what a worker does with one message, and the
words of what a move broke.  The world works each piece out once, for the numbers that decide
it, and a move made again only puts the pieces together."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import NamedTuple, Protocol, TypeVar

from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.monitors import Checked
from handoff._review.system_state import Codes, Flight, SystemState, _Node
from handoff._review.verdict import MoveKind, TraceStep
from handoff._system.config import System
from handoff._system.faults import Fault
from handoff._system.judgments import serving, transferred
from handoff._system.properties import Key
from handoff._system.runtime import Workload
from handoff._system.worker_state import Worker, WorkerState
from handoff._system.workers import (
    ContractTable,
    Message,
    MessageKind,
    Role,
    Slots,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    task_of,
)

T = TypeVar("T")

_SLOT_FREED = Key.NO_SLOT_AFTER_FREED
_ONLY_ISSUED = Key.ONLY_ISSUED_WORK
_ONE_SLOT = Key.ONE_SLOT_PER_REQUEST


class _Transition(NamedTuple):
    """What one call does to a coordinator in one configuration."""

    coordinator: HandoffCoordinatorCore | None
    """The coordinator afterwards (unchanged when it refused the call; None: it crashed)."""
    configuration: int
    step: TraceStep
    """The move, as a run shows it."""
    sent: tuple[int, ...] = ()
    """The issued actions as messages in flight, by number (and their acknowledgements, on
    send)."""
    issued_bits: int = 0
    error: str | None = None
    early: bool = False
    """Refused as early (`OutOfOrderFactError`)."""


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


def _checked(
    call: bool, worker: bool, *, transfer: bool = False, destination: bool = False
) -> Iterator[Key]:
    """The properties a move is checked for: Errors when it made a call, W3 and W6 when it
    was a worker's, W2 always; W8 and W9 when the source performed a transfer, W10 when the
    destination took an action."""
    if call:
        yield Key.ERRORS
    if worker:
        yield from (_ONLY_ISSUED, _ONE_SLOT)
    yield _SLOT_FREED
    if transfer:
        yield from (Key.SLOT_OWNED_ONCE, Key.KV_INTO_OWN_SLOT)
    if destination:
        yield Key.ACTIVATED_SERVES


_WORKER_CHECKS = {
    (transfer, destination): tuple(
        (key, None) for key in _checked(False, True, transfer=transfer, destination=destination)
    )
    for transfer in (False, True)
    for destination in (False, True)
}
"""The checks of a worker's move that broke nothing, by whether the source performed a
transfer and whether the worker was the destination."""


class _Owned(NamedTuple):
    """What one worker reaction means for whose a slot is and what it does (the tail of
    `_Reaction`)."""

    checks: tuple[Checked, ...]
    broken: tuple[Checked, ...]
    transfers: bool
    took: int


def ownership(
    table: ContractTable,
    message: Message,
    handoff: int,
    memories: tuple[WorkerState, WorkerState],
    reaction: WorkerReaction,
) -> _Owned:
    """The checks of a worker taking `message` of `handoff` with `reaction` (its memory
    `memories` before and after), W10's finding, whether the source performed a transfer
    (W8 and W9 are judged where its KV goes) and the destination slots it took."""
    _before, after = memories
    task, destination = task_of(message.action), message.role is Role.DESTINATION
    done = reaction.reply is WorkerReply.DONE  # a failed work's reply is FAILED
    transfers = done and task is WorkerTask.TRANSFER and not destination
    checks = _WORKER_CHECKS[transfers, destination]
    if not destination:
        return _Owned(checks, (), transfers, 0)
    old, new = (state.find(handoff) for state in memories)
    was = table.initial(Role.DESTINATION) if old is None else old.memory
    served, serves = (table.serves(memory) for memory in (was, reaction.memory))
    activated = done and task is WorkerTask.ACTIVATE
    words = serving(message, activated, served, serves, after.slots(handoff))
    broken: tuple[Checked, ...] = () if words is None else ((Key.ACTIVATED_SERVES, words),)
    took = 0 if new is None else new.where & ~(0 if old is None else old.where)
    return _Owned(checks, broken, transfers, took)


def transfer_findings(destination: WorkerState, target: int, message: Message) -> Iterator[Checked]:
    """W8 and W9 as the source performs the transfer `message` carries: whose is the
    destination slot `target` its request's reservation took (0: slots not told apart)."""
    handoff = 0 if message.handoff is None else message.handoff
    holder = destination.holder(target) if target else None
    held = destination.slots(handoff)
    yield from transferred(message, held, holder, told_apart=bool(target))


def _failed(memory: Hashable) -> WorkerReaction:
    return WorkerReaction(memory, WorkerReply.FAILED, Slots.KEEP)


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


class WorldMoves(Protocol):
    """What the system world's moves written apart from it (the injected faults,
    `system_faults`; the runtime's duties, `system_duties`) need of it: its methods take
    this as `self`."""

    codes: Codes
    system: System
    workers: dict[Role, Worker]
    workload: Workload
    timeout_call: int
    _timer: int | None
    _message_faults: tuple[Fault, ...]
    _struck_workers: tuple[Fault, ...]

    def _park(self, flight: Flight, code: int) -> Flight: ...

    def _inbox(
        self, flight: Flight, role: Role
    ) -> tuple[Flight, tuple[Message, ...], tuple[Message, ...]]: ...

    def _deliverable(
        self, state: SystemState, only: int | None = None
    ) -> Iterator[tuple[int, int]]: ...

    def _send(self, flight: Flight, sent: Sequence[int]) -> Flight: ...

    def _perform(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        code: int,
        flight: Flight,
        *,
        fail: bool,
    ) -> Iterator[_Raw]: ...

    def _deliver(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        code: int,
        flight: Flight,
    ) -> _Raw: ...

    def _call(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        handoff: int,
        kind: MoveKind,
        code: int | None,
        call: int,
        flight: Flight,
    ) -> _Raw: ...

    def _lost(
        self,
        fault: Fault,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        code: int,
        flight: Flight,
    ) -> _Raw: ...

    def _abandon(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        handoff: int,
        flight: Flight,
        *,
        lost: bool = False,
    ) -> _Raw: ...

    def _cleanup_fails(
        self,
        fault: Fault,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        code: int,
        flight: Flight,
    ) -> Iterator[_Raw]: ...

    def _restart(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        role: Role,
        fault: Fault,
    ) -> _Raw: ...

    def _worker_faults(
        self, coordinators: tuple[HandoffCoordinatorCore, ...], state: SystemState
    ) -> Iterator[_Raw]: ...

    def _strike(
        self,
        fault: Fault,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        channel: int,
        code: int,
    ) -> Iterator[_Raw]: ...

"""The pieces a move of the system world (`handoff._review.system`) is made of: what a call
does to a coordinator in one configuration, what a worker does with one message, and the
words of what a move broke.  The world works each piece out once, for the numbers that decide
it, and a move made again only puts the pieces together."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import NamedTuple, TypeVar

from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.monitors import Checked
from handoff._review.system_state import Flight, SystemWatch, _Node
from handoff._review.verdict import TraceStep
from handoff._system.properties import Key
from handoff._system.workers import (
    Message,
    MessageKind,
    Role,
    Slots,
    WorkerReaction,
    WorkerReply,
    role_of,
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


class _Raw(NamedTuple):
    """A move before it is judged: the step, where it leads, what it broke."""

    step: TraceStep
    node: _Node | None
    """None when the call crashed."""
    findings: tuple[Checked, ...]
    fault: bool
    loop: bool = False
    """A refused early fact, kept in flight: the move leads back where it started."""


def _checked(call: bool, worker: bool) -> Iterator[Key]:
    """The properties a move is checked for: Errors when it made a call, W3 and W6 when it
    was a worker's, W2 always."""
    if call:
        yield Key.ERRORS
    if worker:
        yield from (_ONLY_ISSUED, _ONE_SLOT)
    yield _SLOT_FREED


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


def _performed_findings(watch: SystemWatch, message: Message) -> Iterator[Checked]:
    bit = 1 << message.action_id
    if not watch.issued & bit:
        yield _ONLY_ISSUED, f"the {message.role.value} performed {message.describe()}, never issued"
    elif watch.performed & bit and not message.copy:
        # A copy is the network's doing, not the coordinator's: W3 judges what was issued.
        yield _ONLY_ISSUED, f"the {message.role.value} performed {message.describe()} a second time"
    elif role_of(message.action) is not message.role:
        yield _ONLY_ISSUED, f"{message.describe()} went to the {message.role.value}"


def _held_after_freed(role: Role, message: Message) -> str:
    return (
        f"the {role.value} took a KV slot for {message.describe()} after the coordinator was "
        "told its slot was freed"
    )


def _told_while_held(message: Message) -> str:
    return (
        f"the coordinator was told the {message.role.value}'s slot was freed "
        f"({message.describe()}) while the {message.role.value} holds it"
    )


def _two_slots(role: Role, message: Message, slots: int) -> str:
    return f"the {role.value} holds {slots} KV slots for one request after {message.describe()}"

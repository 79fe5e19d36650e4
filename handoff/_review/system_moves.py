"""The pieces a move of the system world (`handoff._review.system`) is made of: what a call
does to a coordinator in one configuration, what a worker does with one message, and the
words of what a move broke.  The world works each piece out once, for the numbers that decide
it, and a move made again only puts the pieces together."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import NamedTuple, TypeVar

from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.monitors import Checked
from handoff._review.system_state import Flight, _Node
from handoff._review.verdict import TraceStep
from handoff._system.properties import Key
from handoff._system.workers import (
    Message,
    MessageKind,
    Role,
    Slots,
    WorkerReaction,
    WorkerReply,
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

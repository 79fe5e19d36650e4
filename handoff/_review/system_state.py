"""The system review's vocabulary: messages in flight, configurations, moves and findings.

A system configuration (`SystemState`) is the coordinator's configuration, what each worker
remembers of the request, the messages in flight and what the runtime has seen
(`SystemWatch`); a `Move` leads from one to the next, described by a `SystemStep`.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import attrs

from handoff._coordinator import HandoffCoordinatorCore
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._review.properties import Key
from handoff._runs.call import Call
from handoff._runs.workers import RequestMemory, Role, WorkerContract, WorkerReaction
from handoff._values import HandoffActionOutcome

__all__ = [
    "MessageKind",
    "Move",
    "SystemFinding",
    "SystemKey",
    "SystemMessage",
    "SystemOptions",
    "SystemState",
    "SystemStep",
    "SystemStepKind",
    "SystemWatch",
]


@attrs.frozen
class SystemOptions:
    """How the system around the coordinator behaves."""

    contract: WorkerContract
    fifo: bool = False
    """Deliver each worker's messages, in each direction, in the order they were sent."""
    faults: int = 2
    """The most faults (terminal facts, failed work) a run suffers."""
    worker_failures: bool = True
    """Whether a worker may fail the work it was given (one kind of fault)."""


class MessageKind(enum.IntEnum):
    """What a message in flight carries; the value orders messages canonically."""

    ACTION = 0
    OUTCOME = 1
    FACT = 2


class SystemMessage(NamedTuple):
    """One message in flight: an action to a worker, or an outcome or fact back."""

    kind: MessageKind
    action_id: int
    """The action's id; for a fact, the id of the action that led to it."""
    role: Role
    """The worker the message goes to or comes from."""
    action: HandoffAction
    """The action, or the one acknowledged or followed."""
    outcome: HandoffActionOutcome | None = None
    fact: HandoffFact | None = None

    def describe(self) -> str:
        """The message in words: `#0 SubmitPrefill`, `#0 Submitted`, `SourceHeld`."""
        if self.kind is MessageKind.ACTION:
            return f"#{self.action_id} {type(self.action).__name__}"
        if self.kind is MessageKind.OUTCOME:
            return f"#{self.action_id} {self.outcome}"
        return type(self.fact).__name__


class SystemWatch(NamedTuple):
    """What the runtime has seen, for the properties: ids issued and performed, frees told."""

    started: bool = False
    issued: int = 0
    """Bit n set: action n was issued."""
    performed: int = 0
    """Bit n set: action n was performed by a worker."""
    told: frozenset[Role] = frozenset()
    """Workers whose freeing the coordinator was told of (a release or cancel acknowledged)."""
    faults: int = 0
    """Faults suffered so far."""


class SystemState(NamedTuple):
    """One system configuration: what decides everything after it."""

    coordinator: tuple[object, ...]
    source: RequestMemory
    destination: RequestMemory
    flight: tuple[tuple[SystemMessage, ...], ...]
    """Messages in flight: one channel, canonically sorted (any order), or four, in order."""
    watch: SystemWatch

    def memory(self, role: Role) -> RequestMemory:
        """What the worker of `role` remembers."""
        return self.source if role is Role.SOURCE else self.destination

    @property
    def quiet(self) -> bool:
        """Nothing in flight."""
        return not any(self.flight)


class SystemStepKind(enum.Enum):
    """What one move of the system is."""

    START = "start"
    TO_WORKER = "deliver to worker"
    WORKER_FAILS = "worker fails the work"
    TO_COORDINATOR = "deliver to coordinator"
    FAULT = "terminal fact"


@attrs.frozen
class SystemStep:
    """One move of a system run: what was delivered or reported, and what followed."""

    kind: SystemStepKind
    message: SystemMessage | None = None
    call: Call | None = None
    """The coordinator call the move made, if any."""
    issued: tuple[IssuedHandoffAction, ...] = ()
    error: str | None = None
    """The refusal or crash of the call, as `Class: message`."""
    reaction: WorkerReaction | None = None
    sent: tuple[SystemMessage, ...] = ()
    """The messages the move put in flight."""
    state: str = ""
    """The chart state after the move."""


SystemKey = Key
"""The system properties are keys of the review's one table of properties: W1-W5, Bound,
Errors (`handoff._review.system_properties`)."""


class SystemFinding(NamedTuple):
    """A property the move broke, in words."""

    key: SystemKey
    words: str


class Move(NamedTuple):
    """A move from a configuration: the step, where it leads, what it broke."""

    step: SystemStep
    coordinator: HandoffCoordinatorCore | None
    """The coordinator after the move; None when the call crashed."""
    state: SystemState | None
    findings: tuple[SystemFinding, ...]
    fault: bool
    """Whether the move is a fault (a terminal fact or failed work)."""
    loop: bool = False
    """A refused early fact, kept in flight: the move leads back where it started."""

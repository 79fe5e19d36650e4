"""What a review finds: each property's verdict, its shortest counterexample, the dead cells.

`Tally` counts one property's checks as the explorer makes them and keeps the first violation;
breadth-first exploration makes that violation's run a shortest one.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import attrs

from handoff._review.environment import Call
from handoff._system.faults import NETWORK, Fault
from handoff._values.messages import IssuedHandoffAction

if TYPE_CHECKING:
    from handoff._system.properties import Property
    from handoff._system.workers import Message, Role, WorkerReaction

__all__ = [
    "Counterexample",
    "DeadCell",
    "MoveKind",
    "Parents",
    "Tally",
    "TraceStep",
    "Verdict",
    "path",
]


class MoveKind(enum.Enum):
    """What one move of a run is: a call the environment makes, or, with workers, who moved.

    An injected fault's move is its own member (code asks `step.kind is MoveKind.LOSS`), its
    value and trace word read from the fault (`Fault.shown`); a fault may share a move
    another fault or the world makes (`--faults cleanup-failure` is `WORKER_FAILS`)."""

    __hash__ = object.__hash__  # a singleton: identity hashes in C, `Enum` by its name

    CALL = "call"
    """The environment calls the coordinator (the chart reviewed alone)."""
    START = "start"
    TO_WORKER = "deliver to worker"
    WORKER_FAILS = "worker fails the work"
    TO_COORDINATOR = "deliver to coordinator"
    FAULT = "terminal fact"
    DUPLICATE = Fault.DUPLICATION.shown.move
    """With `--faults duplicate`: a delivery whose message the network delivers again later."""
    LOSS = Fault.LOSS.shown.move
    """With `--faults lose`: a message vanishes; the runtime reports `TimedOut` for it."""
    RESTART = Fault.RESTART.shown.move
    """With `--faults crash`: a worker forgets the request and frees its slot."""
    LOST = "message lost, to be re-sent"
    """With `--faults lose` and `--resend`: a message vanishes; the runtime's timer will send
    it again."""
    RESEND = "the runtime re-sends"
    """With `--resend`: the runtime's timer fires and a lost message goes out again."""
    DEADLINE = "the handoff's deadline fires"
    """With `--deadline`: the runtime reports `TimedOut` for a handoff not yet complete."""
    TIMER = "the runtime's timer reports TimedOut"
    """With `--restart loses-inbox`: the runtime's timer fires for a lost action it does not
    re-send, and it reports `TimedOut`."""
    ABANDON = "session ends outside the chart"
    """With a runtime that cleans up outside the chart (`--runtime live`): a session ends
    without telling the coordinator, and the runtime sends its own cleanup."""
    DROP = "dropped after its session ended"
    """A reply for a handoff whose session ended: the runtime drops it."""
    EXPIRE = "tombstone expires"
    """With expiring tombstones: a worker forgets a retired request it held no slot for."""

    @property
    def word(self) -> str:
        """How a system trace's move line names the move (`{"move":"deliver",…}`): both
        deliveries are `deliver`, the message says which way it goes."""
        return _WORDS[self]


_WORDS = {
    MoveKind.CALL: "call",
    MoveKind.START: "start",
    MoveKind.FAULT: "fault",
    MoveKind.TO_WORKER: "deliver",
    MoveKind.TO_COORDINATOR: "deliver",
    MoveKind.WORKER_FAILS: "fail",
    **{MoveKind(fault.shown.move): fault.shown.word for fault in NETWORK},
    MoveKind.LOST: "lose",
    MoveKind.RESEND: "resend",
    MoveKind.TIMER: "timeout",
    MoveKind.DEADLINE: "deadline",
    MoveKind.ABANDON: "abandon",
    MoveKind.DROP: "deliver",
    MoveKind.EXPIRE: "expire",
}


@attrs.frozen
class TraceStep:
    """One move of a counterexample and what it did.

    Reviewed alone, every move is a call (`MoveKind.CALL`).  Reviewed with its workers, a move
    is the runtime calling the coordinator (`call` set), or a worker getting a message
    (`message`, and its `reaction`); `sent` is what the move put in flight.
    """

    call: Call | None
    state: str
    """The chart state id after the move."""
    issued: tuple[IssuedHandoffAction, ...] = ()
    error: str | None = None
    """The message of the exception the call raised, if it raised."""
    kind: MoveKind = MoveKind.CALL
    message: Message | None = None
    """The message the move delivered, if it delivered one."""
    reaction: WorkerReaction | None = None
    sent: tuple[Message, ...] = ()
    worker: Role | None = None
    """The worker that restarted (`MoveKind.RESTART`)."""
    handoff: int | None = None
    """Whose move it is, when several handoffs share the workers (None: the only one)."""
    lost: tuple[Message, ...] = ()
    """What the move lost from flight: the inbox of a worker whose restart loses it."""

    def renumbered(self, names: list[int]) -> TraceStep:
        """The same move with handoff n called `names[n]`."""

        def rename(message: Message | None) -> Message | None:
            if message is None or message.handoff is None:
                return message
            return message._replace(handoff=names[message.handoff])

        return attrs.evolve(
            self,
            message=rename(self.message),
            sent=tuple(rename(message) or message for message in self.sent),
            lost=tuple(rename(message) or message for message in self.lost),
            handoff=None if self.handoff is None else names[self.handoff],
        )

    @property
    def label(self) -> str:
        """The move in words: the call it made, or the message a worker got."""
        if self.call is not None:
            return self.call.label
        if self.worker is not None:
            return f"the {self.worker.value} restarts"
        assert self.message is not None
        return f"the {self.message.role.value} gets {self.message.describe()}"


@attrs.frozen
class Counterexample:
    """A shortest run that breaks a property (`shortest` False: a run Spin's depth-first
    search found first, confirmed in the review's world, not the shortest one)."""

    steps: tuple[TraceStep, ...]
    finding: str
    shortest: bool = True

    @property
    def with_workers(self) -> bool:
        """Whether the run has moves besides calls: it was found with workers."""
        return any(step.kind is not MoveKind.CALL for step in self.steps)

    @property
    def heading(self) -> str:
        """`shortest counterexample (5 moves):`, or `counterexample (the first Spin found, …)`."""
        unit = "moves" if self.with_workers else "calls"
        if self.shortest:
            return f"shortest counterexample ({len(self.steps)} {unit}):"
        return f"counterexample (the first Spin found, {len(self.steps)} {unit}):"

    @property
    def calls(self) -> tuple[TraceStep, ...]:
        """The moves that called the coordinator: its path through the chart."""
        return tuple(step for step in self.steps if step.call is not None)

    @property
    def made(self) -> tuple[Call, ...]:
        """The calls the run made to the coordinator, in order."""
        return tuple(step.call for step in self.steps if step.call is not None)


@attrs.frozen
class DeadCell:
    """A state no run reaches (`target` None), or a declared transition no run takes."""

    source: str
    target: str | None = None
    events: str = ""
    """The transition's events, `|`-separated; "refuses " before them for a refusal."""


@attrs.frozen
class Verdict:
    """One property's result for one chart."""

    prop: Property
    checked: int
    violations: int
    counterexample: Counterexample | None = None
    summary: str = ""
    """What was checked, when a count and the property's unit do not say it well."""
    notes: tuple[str, ...] = ()
    """What a reviewer should know besides the verdict (e.g. the dead transitions)."""
    dead: tuple[DeadCell, ...] = ()
    """Coverage: the states no run reaches and the declared transitions no run takes."""
    unjudged: str = ""
    """Why the property was not judged (the exploration did not reach every run's end), or
    "" when it was: a verdict not judged neither holds nor fails."""

    @property
    def holds(self) -> bool:
        """Whether the property holds: judged, and never broken."""
        return self.violations == 0 and not self.unjudged

    @property
    def fails(self) -> bool:
        """Whether the property was found broken (a counterexample found is true, whatever
        was left unexplored)."""
        return self.violations > 0

    @property
    def word(self) -> str:
        """The verdict in a report's words: `PASS`, `FAIL` or `NOT JUDGED`."""
        if self.fails:
            return "FAIL"
        return "NOT JUDGED" if self.unjudged else "PASS"


Parents = Sequence[tuple[int, TraceStep] | None]
"""For each configuration, the configuration and the call that first reached it (None: root)."""


T = TypeVar("T")


def path(
    parents: Sequence[tuple[int, T] | None] | Mapping[int, tuple[int, T] | None], node: int
) -> list[T]:
    """The links that first reached configuration `node`, first one first (`parents` by
    index, or by node): the moves of a run, or whatever each link carries."""
    links: list[T] = []
    link = parents[node]
    while link is not None:
        node, edge = link
        links.append(edge)
        link = parents[node]
    links.reverse()
    return links


@attrs.define
class Tally:
    """How often one property was checked and broken, and its first (so shortest) violation."""

    checked: int = 0
    violations: int = 0
    first: Counterexample | None = None

    def note(
        self,
        finding: str | None,
        parents: Parents,
        node: int,
        edge: TraceStep | None = None,
        tail: Sequence[TraceStep] = (),
    ) -> None:
        """Count a check at `node` (after `edge`, if any, then `tail`); keep the first failure."""
        self.checked += 1
        if finding is None:
            return
        self.violations += 1
        if self.first is None:
            run = path(parents, node) + ([edge] if edge is not None else []) + list(tail)
            self.first = Counterexample(tuple(run), finding)

    def verdict(
        self,
        prop: Property,
        *,
        checked: int | None = None,
        summary: str = "",
        notes: tuple[str, ...] = (),
    ) -> Verdict:
        """The verdict these checks give `prop`; `checked` overrides the count of checks."""
        checked = self.checked if checked is None else checked
        return Verdict(prop, checked, self.violations, self.first, summary, notes)

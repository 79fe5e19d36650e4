"""The second world: coordinators, the two workers they share and the messages in flight.

A system configuration is each handoff's coordinator configuration (`System.concurrency` of
them, live at once), what each worker remembers of each request and the slots it holds for it
(`handoff._runs.worker_state`), the messages in flight and what the runtime has seen.  The
runtime carries each issued action to its worker as a message, and each acknowledgement and
fact back to the coordinator as another; any message in flight may be delivered next (or, with
`fifo`, the first of each worker's channel in each direction).  Besides deliveries, the system
may suffer up to `faults` faults in a run (`handoff._runs.faults` names them): a terminal fact
(`Failed`, `TimedOut`, `Canceled`) reported to the coordinator, or a worker failing the work
it was given (acknowledged as failed, memory unchanged).

With `System.injected` (`--faults`), each up to `System.budget` times a run, offered after
every other move so that a review without them is the review of before: a delivery that
leaves a copy of its message in flight, a message lost (the runtime reports `TimedOut`), a
worker restarting (forgetting the request).  With `Acknowledge.ON_SEND` the runtime puts the
fitting acknowledgement of `SubmitPrefill`, `ReserveDestination` and `StartTransfer` in flight
as it sends the work; the worker then reports only the work's fact, or `Failed`.

The runtime's one policy: a fact the coordinator refuses as early (its acknowledgement is still
in flight) stays in flight and is delivered again later; any other refused message is dropped.
`Complete` is the runtime's own: it goes to no worker.

W1 is judged for each complete handoff with nothing of its own in flight, W2, W3 and W6 at
each move, properties of one's own (`System.properties`) at each configuration, W4, W5 and W7
over the explored graph under the fairness that every message in flight is eventually
delivered: a run that suffers no further fault then ends once nothing is in flight, so every
such end must complete every handoff (W4), after a terminal fact its handoff CANCELED (W5), and
from the first configuration with no fault at all, every handoff SUCCESS (W7).  With several
handoffs, configurations that differ only by which handoff is which are one (`canonical`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import NamedTuple, TypeVar

import attrs

from handoff._compile.table import CompiledChart, compiled
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._coordinator.probe import Configuration
from handoff._review.environment import Rules
from handoff._review.graph import End, Liveness, Tag, no_cancel, stuck
from handoff._review.monitors import Checked
from handoff._review.properties import AnyKey, Key, Property, WorldKind, prop
from handoff._review.verdict import MoveKind, TraceStep, Verdict
from handoff._review.world import Explored, Judge, Move, WorldBase, error_words
from handoff._runs.call import Call
from handoff._runs.faults import NETWORK, Fault
from handoff._runs.runtime import DEMO_WORKLOAD, Workload
from handoff._runs.trace import MoveLine, Trace
from handoff._runs.worker_state import HandoffView, SystemView, Worker, WorkerState, worker_view
from handoff._runs.workers import (
    Acknowledge,
    ContractTable,
    Message,
    MessageKind,
    Role,
    Slots,
    WorkerContract,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    find_contract,
    on_send,
    outcome_of,
    role_of,
    task_of,
)
from handoff._values.errors import HandoffError, OutOfOrderFactError, TraceError
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffActionId, HandoffCompletion

__all__ = [
    "Spent",
    "System",
    "SystemState",
    "SystemWatch",
    "SystemWorld",
    "canonical",
    "completion_finding",
    "line_of",
    "replay_moves",
    "replay_system_run",
]


T = TypeVar("T")


@attrs.frozen
class System:
    """How the system around the coordinators behaves: its workers, delivery and faults."""

    contract: WorkerContract
    fifo: bool = False
    """Deliver each worker's messages, in each direction, in the order they were sent."""
    faults: int = 2
    """The most faults (terminal facts, failed work) a run suffers."""
    worker_failures: bool = True
    """Whether a worker may fail the work it was given (`Fault.FAILED_OUTCOME`)."""
    injected: frozenset[Fault] = frozenset()
    """The faults of `faults.NETWORK` a run may suffer too (`--faults`)."""
    budget: int = 1
    """How many of each injected fault a run suffers at most (`--fault-budget`)."""
    acknowledge: Acknowledge = Acknowledge.ON_REPLY
    """When the runtime acknowledges work that takes or moves KV (`--acknowledge`)."""
    concurrency: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    """How many handoffs are live at once, sharing the two workers (`--concurrency`)."""
    slots: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    """How many KV slots each worker holds at most (`--slots`; None: unbounded)."""
    properties: tuple[Property, ...] = ()
    """Properties of one's own (`--property`), judged at every configuration."""
    symmetry: bool = True
    """Count configurations that differ only by which handoff is which once, and explore the
    moves of one handoff that commute with every other handoff's in one order only."""

    def describe(self) -> str:
        """`forgetful workers, messages delivered in any order`, then the handoffs sharing the
        workers, their slots, the faults injected and the acknowledgement policy when they
        are not the defaults."""
        delivery = "FIFO per worker" if self.fifo else "any order"
        words = f"{self.contract.name} workers, messages delivered in {delivery}"
        if self.concurrency > 1:
            words += f", {self.concurrency} handoffs sharing them"
        if self.slots is not None:
            words += f", {self.slots} slot{'s' if self.slots > 1 else ''} per worker"
        if self.injected:
            names = ", ".join(fault.value for fault in NETWORK if fault in self.injected)
            words += f", faults {names} ({self.budget} each)"
        if self.acknowledge is Acknowledge.ON_SEND:
            words += ", work acknowledged on send"
        return words

    def allows(self, fault: Fault, spent: int) -> bool:
        """Whether a run that suffered `spent` faults of kind `fault` may suffer one more."""
        return fault in self.injected and spent < self.budget


Flight = tuple[tuple[Message, ...], ...]


class SystemWatch(NamedTuple):
    """What the runtime has seen of one handoff, for the properties: ids issued and performed,
    frees told."""

    started: bool = False
    issued: int = 0
    """Bit n set: action n was issued."""
    performed: int = 0
    """Bit n set: action n was performed by a worker."""
    told: frozenset[Role] = frozenset()
    """Workers whose freeing the coordinator was told of (a release or cancel acknowledged)."""
    terminated: bool = False
    """A terminal fact was reported for the handoff (a fault, or a loss's timeout): every run
    must then end with it CANCELED (W5)."""


class Spent(NamedTuple):
    """The faults a run suffered so far, for every handoff."""

    faults: int = 0
    """Terminal facts and failed work."""
    duplicated: int = 0
    lost: int = 0
    restarts: int = 0
    restarted: frozenset[Role] = frozenset()
    """Workers that restarted: they may have lost a request the coordinator handed over."""


class SystemState(NamedTuple):
    """One system configuration: what decides everything after it."""

    coordinators: tuple[int, ...]
    """Each handoff's coordinator configuration, by number (`SystemWorld._intern`)."""
    source: WorkerState
    destination: WorkerState
    flight: Flight
    """Messages in flight: one channel, canonically sorted (any order), or four, in order."""
    watches: tuple[SystemWatch, ...]
    spent: Spent

    def worker(self, role: Role) -> WorkerState:
        """What the worker of `role` remembers."""
        return self.source if role is Role.SOURCE else self.destination

    @property
    def quiet(self) -> bool:
        """Nothing in flight."""
        return not any(self.flight)

    def quiet_for(self, handoff: int | None) -> bool:
        """Nothing of `handoff`'s in flight (None: the only handoff's)."""
        return all(message.handoff != handoff for channel in self.flight for message in channel)


class _Node(NamedTuple):
    coordinators: tuple[HandoffCoordinatorCore, ...]
    state: SystemState

    def end(self, terminated: bool = False) -> End:
        """How the run that ends here ended, for every handoff (`terminated`: for those a
        terminal fact was reported for)."""
        chosen = [
            coordinator
            for coordinator, watch in zip(self.coordinators, self.state.watches, strict=True)
            if watch.terminated or not terminated
        ]
        if not all(coordinator.is_complete for coordinator in chosen):
            return End.STUCK
        if all(c.completion is HandoffCompletion.SUCCESS for c in chosen):
            return End.SUCCESS
        return End.CANCELED

    @property
    def terminated(self) -> bool:
        """Whether a terminal fact was reported for some handoff."""
        return any(watch.terminated for watch in self.state.watches)

    def stuck(self) -> str:
        """W4's words for a run that ends here."""
        waiting = [message.describe() for channel in self.state.flight for message in channel]
        what = f"only {', '.join(waiting)} in flight, refused" if waiting else "nothing in flight"
        if len(self.coordinators) == 1:
            return stuck(self.coordinators[0].chart_state, what)
        states = ", ".join(
            f"h{n + 1} in {c.chart_state}"
            for n, c in enumerate(self.coordinators)
            if not c.is_complete
        )
        return stuck(states, what, several=True)


_SLOT_FREED = Key.NO_SLOT_AFTER_FREED
_ONLY_ISSUED = Key.ONLY_ISSUED_WORK
_ONE_SLOT = Key.ONE_SLOT_PER_REQUEST
_CLEANUPS = (
    HandoffAction.ReleaseSource,
    HandoffAction.CancelSource,
    HandoffAction.CancelDestination,
)
_FAILABLE = (WorkerTask.TAKE, WorkerTask.TRANSFER, WorkerTask.ACTIVATE)
_FAILED_WORK = Fault.FAILED_OUTCOME.outcome
_WORKER_MOVES = (MoveKind.TO_WORKER, MoveKind.WORKER_FAILS)
_TERMINAL_MOVES = (MoveKind.FAULT, MoveKind.LOSS)
"""Moves after which the handoff must end CANCELED (W5): a terminal fact, a loss's timeout."""
_TERMINAL_FAULTS = (Fault.FAILURE, Fault.TIMEOUT, Fault.CANCELLATION)
"""The faults a run suffers as a terminal fact reported to the coordinator, at any time."""


class SystemWorld(WorldBase):
    """The moves of the system around `concurrency` coordinators driven by `chart`, sharing
    two workers, judged as they are made, and the liveness of the whole graph."""

    kind = WorldKind.SYSTEM

    def __init__(
        self,
        chart: CompiledChart,
        system: System,
        rules: Rules,
        *,
        workload: Workload = DEMO_WORKLOAD,
    ) -> None:
        self.chart = chart
        self.system = system
        self.contract = ContractTable(system.contract)
        self.workers = {role: Worker(self.contract, role, system.slots) for role in Role}
        self.rules = rules
        self.workload = workload
        self.several = system.concurrency > 1
        self.ordered = tuple(self.workers[role].remembers is not None for role in Role)
        """Whether the order of the requests each worker remembers idle matters."""
        self.reduce = self.several and system.symmetry and not system.properties and not system.fifo
        """Whether to explore commuting moves in one order (a property of one's own may
        look at anything, so it sees every order; with FIFO delivery, two handoffs' messages
        queued on one channel do not commute)."""
        self._configurations: dict[Configuration, int] = {}
        self._transitions: dict[tuple[int, Call, int | None], _Transition] = {}
        self._keys: dict[SystemState, tuple[SystemState, tuple[int, ...] | None]] = {}
        """Each configuration reached, and its key (`canonical`)."""
        self._calls: dict[Message, Call] = {}
        self.terminal_facts = tuple(
            kind(rules.handoff_id)
            for kind in (fault.fact for fault in _TERMINAL_FAULTS)
            if kind is not None
        )

    @property
    def properties(self) -> tuple[Property, ...]:
        return (*super().properties, *self.system.properties)

    def root(self) -> tuple[_Node, Hashable]:
        """Every coordinator before `start()`, both workers knowing nothing, nothing in flight."""
        rules = self.rules
        coordinator = probe.for_table(
            rules.handoff_id, self.chart, rules.fallback_transfer_delay_ms
        )
        count = self.system.concurrency
        channels = 4 if self.system.fifo else 1
        state = SystemState(
            (self._intern(coordinator),) * count,
            WorkerState(),
            WorkerState(),
            ((),) * channels,
            (SystemWatch(),) * count,
            Spent(),
        )
        coordinators = (coordinator, *(coordinator.fork() for _ in range(count - 1)))
        return _Node(coordinators, state), state

    def checks(self, node: _Node) -> Iterable[Checked]:
        """W1 for each handoff complete with nothing of its own in flight; the properties of
        one's own."""
        coordinators, state = node
        for handoff, coordinator in enumerate(coordinators):
            tag = self._tag(handoff)
            watch = state.watches[handoff]
            if watch.started and coordinator.is_complete and state.quiet_for(tag):
                finding = completion_finding(state, coordinator.completion, tag)
                yield Key.SLOTS_AT_COMPLETION, finding
        if self.system.properties:
            view = self.view(node)
            for entry in self.system.properties:
                yield entry.key, judge_own(entry, view)

    def view(self, node: _Node) -> SystemView:
        """The public view of `node` that properties of one's own judge."""
        coordinators, state = node
        handoffs = tuple(
            HandoffView(c.chart_state, c.completion, watch.started)
            for c, watch in zip(coordinators, state.watches, strict=True)
        )
        flight = tuple(message for channel in state.flight for message in channel)
        return SystemView(
            handoffs,
            worker_view(Role.SOURCE, state.source),
            worker_view(Role.DESTINATION, state.destination),
            flight,
        )

    def moves(self, node: _Node) -> Iterator[Move]:
        """Every move from `node`, in a fixed order: starts, deliveries, then faults (with
        several handoffs and `symmetry`, only one handoff's when they commute with the rest:
        `_alone`)."""
        if not self.reduce:
            for raw in self._moves(*node):
                yield self._judged(raw)
            return
        coordinators, state = node
        groups = []
        for handoff in range(len(state.watches)):
            raws = list(self._moves(coordinators, state, only=handoff))
            if self._alone(state, handoff, raws):
                for raw in raws:
                    yield self._judged(raw)
                return
            groups.append(raws)
        for raws in groups:
            for raw in raws:
                yield self._judged(raw)
        if self.system.allows(Fault.RESTART, state.spent.restarts):
            for role in Role:
                if state.worker(role).entries:
                    yield self._judged(self._restart(coordinators, state, role))

    def _alone(self, state: SystemState, handoff: int, raws: Sequence[_Raw]) -> bool:
        """Whether the moves `raws` of `handoff` can all be explored first, the others'
        after (a partial-order reduction).

        They can when each changes only what is the handoff's own (its coordinator, its
        messages, its memory on a worker whose other requests it does not compete with:
        `Worker.local`), so that it commutes with every other handoff's move, and nothing
        another handoff does makes a further move of it possible (with FIFO delivery, each of
        its messages is first in its channel), and one of them is fault-free.  Then every run
        is explored in some order with the same moves, every configuration where runs end is
        reached, and every property, each judged on what is its handoff's own, is judged the
        same (the exploration has no cycles: each move spends a budget, issues an action or
        consumes a message).  A restart touches every request at once: while one may come,
        only moves that leave the workers alone are explored first."""
        watch = state.watches[handoff]
        if not watch.started:
            return True
        if self.system.fifo:
            for channel in state.flight:
                if any(_number(m) == handoff for m in channel[1:]):
                    return False
        restart = self.system.allows(Fault.RESTART, state.spent.restarts)
        cooperative = False
        for raw in raws:
            step = raw.step
            if step.kind in _WORKER_MOVES or (
                step.kind is MoveKind.DUPLICATE and step.reaction is not None
            ):
                if restart or raw.node is None:
                    return False
                role = step.message.role if step.message is not None else Role.SOURCE
                worker = self.workers[role]
                if not worker.local(state.worker(role), raw.node.state.worker(role), handoff):
                    return False
            if not (raw.fault or raw.loop):
                cooperative = True
        return cooperative

    def _tag(self, handoff: int) -> int | None:
        """How messages name `handoff`: by number when several share the workers."""
        return handoff if self.several else None

    def _moves(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        *,
        only: int | None = None,
    ) -> Iterator[_Raw]:
        for handoff, watch in enumerate(state.watches):
            if not watch.started and only in (None, handoff):
                yield self._call(
                    coordinators, state, handoff, MoveKind.START, None, Call.start(), state.flight
                )
        faults_left = state.spent.faults < self.system.faults
        for channel, message in self._deliverable(state, only):
            flight = _without(state.flight, channel, message)
            if message.kind is MessageKind.ACTION:
                yield from self._perform(coordinators, state, message, flight, fail=False)
                failable = task_of(message.action) in _FAILABLE
                if faults_left and self.system.worker_failures and failable:
                    yield from self._perform(coordinators, state, message, flight, fail=True)
            else:
                yield self._deliver(coordinators, state, message, flight)
        for handoff, watch in enumerate(state.watches):
            if watch.started and faults_left and only in (None, handoff):
                for fact in self.terminal_facts:
                    call = Call.of_fact(fact)
                    yield self._call(
                        coordinators, state, handoff, MoveKind.FAULT, None, call, state.flight
                    )
        if self.system.injected:
            yield from self._injected(coordinators, state, only)

    def _deliver(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        message: Message,
        flight: Flight,
    ) -> _Raw:
        """The runtime gives an acknowledgement or a fact to its handoff's coordinator."""
        handoff = _number(message)
        call = self._calls.get(message)
        if call is None:
            call = self._calls[message] = _call_of(message)
        return self._call(
            coordinators, state, handoff, MoveKind.TO_COORDINATOR, message, call, flight
        )

    def _injected(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        only: int | None,
    ) -> Iterator[_Raw]:
        """The faults `--faults` asks for, each within its budget, after every other move (so
        a review without them makes exactly the moves it made before)."""
        system = self.system
        for channel, message in self._deliverable(state, only):
            if system.allows(Fault.DUPLICATION, state.spent.duplicated):
                yield from self._duplicate(coordinators, state, channel, message)
            if system.allows(Fault.LOSS, state.spent.lost):
                yield self._lose(coordinators, state, channel, message)
        if system.allows(Fault.RESTART, state.spent.restarts) and only is None:
            # With the moves grouped by handoff (`moves`), restarts come after every group.
            for role in Role:
                if state.worker(role).entries:
                    yield self._restart(coordinators, state, role)

    def _duplicate(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        channel: int,
        message: Message,
    ) -> Iterator[_Raw]:
        """`message` is delivered and a copy of it sent again, behind what is in flight."""
        copy = message._replace(copy=True)
        flight = self._send(_without(state.flight, channel, message), [copy])
        if message.kind is MessageKind.ACTION:
            raws = list(self._perform(coordinators, state, message, flight, fail=False))
        else:
            raws = [self._deliver(coordinators, state, message, flight)]
        for raw in raws:
            if raw.node is None or raw.loop:
                # A crash is already the delivery's own finding; a refused early fact stays in
                # flight anyway, so a copy of it adds nothing.
                continue
            after = raw.node.state
            spent = after.spent._replace(duplicated=after.spent.duplicated + 1)
            node = _Node(raw.node.coordinators, after._replace(spent=spent))
            step = attrs.evolve(raw.step, kind=MoveKind.DUPLICATE, sent=(*raw.step.sent, copy))
            yield _Raw(step, node, raw.findings, fault=True)

    def _lose(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        channel: int,
        message: Message,
    ) -> _Raw:
        """`message` vanishes; the runtime's timer for its handoff reports `TimedOut`.

        The timeout is reported in the same move: a run in which other messages are
        delivered between the loss and its notice is explored as those deliveries first."""
        flight = _without(state.flight, channel, message)
        call = Call.of_fact(HandoffFact.TimedOut(self.rules.handoff_id))
        raw = self._call(coordinators, state, _number(message), MoveKind.LOSS, None, call, flight)
        step = attrs.evolve(raw.step, message=message)
        if raw.node is None:
            return _Raw(step, None, raw.findings, fault=True)
        after = raw.node.state
        spent = after.spent._replace(lost=after.spent.lost + 1)
        node = _Node(raw.node.coordinators, after._replace(spent=spent))
        return _Raw(step, node, raw.findings, fault=True)

    def _restart(
        self, coordinators: tuple[HandoffCoordinatorCore, ...], state: SystemState, role: Role
    ) -> _Raw:
        """The worker of `role` restarts: it forgets every request and frees every slot.

        The coordinators are not told: a restart is seen only in what the worker does next."""
        spent = state.spent
        spent = spent._replace(restarts=spent.restarts + 1, restarted=spent.restarted | {role})
        forgotten = WorkerState()
        after = state._replace(
            source=forgotten if role is Role.SOURCE else state.source,
            destination=forgotten if role is Role.DESTINATION else state.destination,
            spent=spent,
        )
        initial = self.workers[role].initial
        reaction = WorkerReaction(initial, WorkerReply.SILENT, Slots.FREE)
        where = ", ".join(coordinator.chart_state for coordinator in coordinators)
        step = TraceStep(None, where, kind=MoveKind.RESTART, reaction=reaction, worker=role)
        return _Raw(step, _Node(coordinators, after), (), fault=True)

    # -- moves -------------------------------------------------------------------------

    def _deliverable(
        self, state: SystemState, only: int | None = None
    ) -> Iterator[tuple[int, Message]]:
        for channel, messages in enumerate(state.flight):
            if self.system.fifo:
                if messages and only in (None, _number(messages[0])):
                    yield channel, messages[0]
            else:
                for message in messages:
                    if only in (None, _number(message)):
                        yield channel, message

    def _perform(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        message: Message,
        flight: Flight,
        *,
        fail: bool,
    ) -> Iterator[_Raw]:
        """A worker gets an action and reacts in each way its contract allows (or fails it: a
        fault)."""
        role, action, handoff = message.role, message.action, _number(message)
        worker = self.workers[role]
        before = state.worker(role)
        task = task_of(action)
        if fail:
            memory = worker.memory(before, handoff)
            reactions: tuple[tuple[WorkerState, WorkerReaction], ...] = (
                (worker.fail(before, handoff, message.action_id), _failed(memory)),
            )
        else:
            reactions = worker.react(before, handoff, message.action_id, task)
        for memory_after, reaction in reactions:
            yield self._performed(
                coordinators, state, message, flight, memory_after, reaction, fail=fail
            )

    def _performed(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        message: Message,
        flight: Flight,
        memory_after: WorkerState,
        reaction: WorkerReaction,
        *,
        fail: bool,
    ) -> _Raw:
        role, action, handoff = message.role, message.action, _number(message)
        tag = message.handoff
        sent: list[Message] = []
        outcome = _FAILED_WORK if fail else outcome_of(action, reaction.reply)
        fact = self.workload.fact_after(action) if reaction.reply is WorkerReply.DONE else None
        if self._on_send(action):
            # The runtime acknowledged the work as it sent it: what the worker did is told by
            # the work's fact, or, when it did not do it, by the only word left: `Failed`.
            outcome = None
            if fail or reaction.reply is WorkerReply.FAILED:
                fact = HandoffFact.Failed(self.rules.handoff_id)
        if outcome is not None:
            sent.append(
                Message(MessageKind.OUTCOME, message.action_id, role, action, outcome, handoff=tag)
            )
        if fact is not None:
            sent.append(
                Message(MessageKind.FACT, message.action_id, role, action, fact=fact, handoff=tag)
            )
        watch = state.watches[handoff]
        findings = list(_performed_findings(watch, message))
        slots = memory_after.slots(handoff)
        if slots and role in watch.told:
            findings.append((_SLOT_FREED, _held_after_freed(role, message)))
        if slots > 1:
            findings.append((_ONE_SLOT, _two_slots(role, message, slots)))
        watch = watch._replace(performed=watch.performed | 1 << message.action_id)
        after = SystemState(
            state.coordinators,
            memory_after if role is Role.SOURCE else state.source,
            memory_after if role is Role.DESTINATION else state.destination,
            self._send(flight, sent),
            _replaced(state.watches, handoff, watch),
            state.spent._replace(faults=state.spent.faults + fail),
        )
        kind = MoveKind.WORKER_FAILS if fail else MoveKind.TO_WORKER
        step = TraceStep(
            None,
            coordinators[handoff].chart_state,
            kind=kind,
            message=message,
            reaction=reaction,
            sent=tuple(sent),
            handoff=tag,
        )
        return _Raw(step, _Node(coordinators, after), tuple(findings), fail)

    def _call(
        self,
        coordinators: tuple[HandoffCoordinatorCore, ...],
        state: SystemState,
        handoff: int,
        kind: MoveKind,
        message: Message | None,
        call: Call,
        flight: Flight,
    ) -> _Raw:
        """The runtime makes a call to a coordinator and puts what it issued in flight."""
        tag = self._tag(handoff)
        fault = kind is MoveKind.FAULT
        watch = state.watches[handoff]._replace(started=True)
        if kind in _TERMINAL_MOVES:
            watch = watch._replace(terminated=True)
        spent = state.spent._replace(faults=state.spent.faults + fault)
        done = self._transition(coordinators[handoff], state.coordinators[handoff], call, tag)
        if done.error is not None:
            step = TraceStep(
                call, done.state, error=done.error, kind=kind, message=message, handoff=tag
            )
            if done.coordinator is None:  # a crash is a finding, not a reason to stop reviewing
                return _Raw(step, None, ((Key.ERRORS, f"the call raised {done.error}"),), fault)
            if done.early and message is not None:
                return _Raw(step, _Node(coordinators, state), (), fault, loop=True)
            after = state._replace(
                flight=flight, watches=_replaced(state.watches, handoff, watch), spent=spent
            )
            return _Raw(step, _Node(coordinators, after), (), fault)
        assert done.coordinator is not None
        findings: list[Checked] = []
        watch = watch._replace(issued=watch.issued | done.issued_bits)
        if message is not None and _tells_freed(message):
            watch = watch._replace(told=watch.told | {message.role})
            if state.worker(message.role).slots(handoff):
                findings.append((_SLOT_FREED, _told_while_held(message)))
        after = SystemState(
            _replaced(state.coordinators, handoff, done.configuration),
            state.source,
            state.destination,
            self._send(flight, done.sent),
            _replaced(state.watches, handoff, watch),
            spent,
        )
        step = TraceStep(
            call, done.state, done.issued, kind=kind, message=message, sent=done.sent, handoff=tag
        )
        after_node = _Node(_replaced(coordinators, handoff, done.coordinator), after)
        return _Raw(step, after_node, tuple(findings), fault)

    def _transition(
        self, coordinator: HandoffCoordinatorCore, configuration: int, call: Call, tag: int | None
    ) -> _Transition:
        """What `call` does to a coordinator in `configuration`: worked out once, since a
        coordinator's configuration decides everything it does."""
        key = (configuration, call, tag)
        found = self._transitions.get(key)
        if found is not None:
            return found
        twin = coordinator.fork()
        try:
            issued = tuple(call.send(twin))
        except HandoffError as error:
            early = isinstance(error, OutOfOrderFactError)
            found = _Transition(
                coordinator, configuration, twin.chart_state, error=error_words(error), early=early
            )
        except Exception as error:  # a crash is a finding, not a reason to stop reviewing
            found = _Transition(None, configuration, twin.chart_state, error=error_words(error))
        else:
            sent: list[Message] = []
            bits = 0
            for item in issued:
                bits |= 1 << item.id.value
                role = role_of(item.action)
                if role is None:
                    continue
                sent.append(
                    Message(MessageKind.ACTION, item.id.value, role, item.action, handoff=tag)
                )
                acknowledged = on_send(item.action) if self._on_send(item.action) else None
                if acknowledged is not None:
                    sent.append(
                        Message(
                            MessageKind.OUTCOME,
                            item.id.value,
                            role,
                            item.action,
                            acknowledged,
                            handoff=tag,
                        )
                    )
            number = self._intern(twin)
            found = _Transition(twin, number, twin.chart_state, issued, tuple(sent), bits)
        self._transitions[key] = found
        return found

    def _intern(self, coordinator: HandoffCoordinatorCore) -> int:
        """The number of `coordinator`'s configuration: equal configurations, one number."""
        configuration = probe.configuration(coordinator)
        return self._configurations.setdefault(configuration, len(self._configurations))

    def _on_send(self, action: HandoffAction) -> bool:
        """Whether the runtime acknowledged `action` as it sent it."""
        return self.system.acknowledge is Acknowledge.ON_SEND and on_send(action) is not None

    def _send(self, flight: Flight, sent: Sequence[Message]) -> Flight:
        if not sent:
            return flight
        if not self.system.fifo:
            return (tuple(sorted((*flight[0], *sent), key=_order)),)
        channels = list(flight)
        for message in sent:
            index = _channel(message)
            channels[index] = (*channels[index], message)
        return tuple(channels)

    def _judged(self, raw: _Raw) -> Move:
        """A move as the explorer takes it: every property it was checked for, its tags, and
        the key of where it leads (handoffs interchangeable, with `symmetry`)."""
        step, after = raw.step, raw.node
        broken = dict(raw.findings)
        checked: list[Key] = []
        if step.call is not None:
            checked.append(Key.ERRORS)
        if step.kind in _WORKER_MOVES:
            checked.extend((_ONLY_ISSUED, _ONE_SLOT))
        checked.append(_SLOT_FREED)
        checks = tuple((key, broken.get(key)) for key in checked)
        if step.kind in _TERMINAL_MOVES:
            tags = Tag.TERMINAL
        else:
            tags = Tag.NONE if raw.fault or raw.loop else Tag.COOPERATIVE
        if after is None:
            return Move(step, checks, None, tags=tags)
        if self.several and self.system.symmetry:
            known = self._keys.get(after.state)
            if known is None:
                known = self._keys[after.state] = canonical(after.state, self.ordered)
            key, renamed = known
            return Move(step, checks, after, key, tags, stays=raw.loop, renamed=renamed)
        return Move(step, checks, after, after.state, tags, stays=raw.loop)

    # -- judging over the graph --------------------------------------------------------

    def judges(self, explored: Explored) -> dict[AnyKey, Judge]:
        liveness = Liveness(explored.nodes, explored.edges, explored.parents)
        return {
            Key.DELIVERIES_COMPLETE: liveness.deliveries_complete,
            Key.TERMINAL_CANCELS: liveness.terminal_cancels,
            Key.EVERY_HANDOFF_SUCCEEDS: liveness.every_handoff_succeeds,
            Key.BOUND: lambda: _bound(explored),
        }


class _Transition(NamedTuple):
    """What one call does to a coordinator in one configuration."""

    coordinator: HandoffCoordinatorCore | None
    """The coordinator afterwards (unchanged when it refused the call; None: it crashed)."""
    configuration: int
    state: str
    issued: tuple[IssuedHandoffAction, ...] = ()
    sent: tuple[Message, ...] = ()
    """The issued actions as messages in flight (and their acknowledgements, on send)."""
    issued_bits: int = 0
    error: str | None = None
    early: bool = False
    """Refused as early (`OutOfOrderFactError`)."""


class _Raw(NamedTuple):
    """A move before it is judged: the step, where it leads, what it broke."""

    step: TraceStep
    node: _Node | None
    """None when the call crashed."""
    findings: tuple[Checked, ...]
    fault: bool
    loop: bool = False
    """A refused early fact, kept in flight: the move leads back where it started."""


def _failed(memory: Hashable) -> WorkerReaction:
    return WorkerReaction(memory, WorkerReply.FAILED, Slots.KEEP)


def _number(message: Message) -> int:
    return 0 if message.handoff is None else message.handoff


def _replaced(items: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*items[:index], value, *items[index + 1 :])


def _order(message: Message) -> tuple[int, int, int, bool]:
    return _number(message), message.kind, message.action_id, message.copy


def _channel(message: Message) -> int:
    towards = message.kind is MessageKind.ACTION
    return (0 if message.role is Role.SOURCE else 1) + (0 if towards else 2)


def _without(flight: Flight, channel: int, message: Message) -> Flight:
    messages = flight[channel]
    index = messages.index(message)
    rest = messages[:index] + messages[index + 1 :]
    return (*flight[:channel], rest, *flight[channel + 1 :])


def _call_of(message: Message) -> Call:
    if message.fact is not None:
        return Call.of_fact(message.fact)
    assert message.outcome is not None
    return Call.of_outcome(HandoffActionId(message.action_id), message.outcome)


def _tells_freed(message: Message) -> bool:
    """An acknowledgement that tells the coordinator its worker freed the request's slot."""
    outcome = message.outcome
    return (
        message.kind is MessageKind.OUTCOME
        and isinstance(message.action, _CLEANUPS)
        and outcome is not None
        and not outcome.is_failed
    )


def _performed_findings(watch: SystemWatch, message: Message) -> Iterator[Checked]:
    bit = 1 << message.action_id
    name = message.describe()
    if not watch.issued & bit:
        yield _ONLY_ISSUED, f"the {message.role.value} performed {name}, never issued"
    elif watch.performed & bit and not message.copy:
        # A copy is the network's doing, not the coordinator's: W3 judges what was issued.
        yield _ONLY_ISSUED, f"the {message.role.value} performed {name} a second time"
    elif role_of(message.action) is not message.role:
        yield _ONLY_ISSUED, f"{name} went to the {message.role.value}"


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


def completion_finding(
    state: SystemState, completion: HandoffCompletion | None, handoff: int | None = None
) -> str | None:
    """W1 for a complete handoff with nothing of its own in flight: which worker holds a slot
    for its request that it must not."""
    number = _number_of(handoff)
    holders = [role for role in Role if state.worker(role).slots(number)]
    whose = "the handoff" if handoff is None else f"h{handoff + 1}"
    if completion is HandoffCompletion.CANCELED and holders:
        who = " and the ".join(role.value for role in holders)
        return (
            f"{whose} completed CANCELED and, with nothing of it in flight, the {who} holds a "
            "KV slot for it"
        )
    if completion is HandoffCompletion.SUCCESS and holders != [Role.DESTINATION]:
        if Role.SOURCE in holders:
            return f"{whose} completed SUCCESS and the source still holds a KV slot for it"
        if Role.DESTINATION not in state.spent.restarted:
            # A destination that restarted lost the request it was decoding: no chart can
            # prevent that, and no slot leaks.
            return f"{whose} completed SUCCESS and the destination holds no KV slot for it"
    return None


def _number_of(handoff: int | None) -> int:
    return 0 if handoff is None else handoff


def judge_own(entry: Property, view: SystemView) -> str | None:
    """A property of one's own at one configuration: None where it holds, else why not."""
    predicate = entry.predicate
    assert predicate is not None
    try:
        found = predicate(view)
    except Exception as error:  # a user's predicate may raise anything
        return f"the property {entry.key.value} raised {type(error).__name__}: {error}"
    if found is True:
        return None
    if isinstance(found, str) and found:
        return found
    if found is False or found is None or found == "":
        return f"{entry.title} does not hold"
    return f"the property {entry.key.value} returned {found!r}; expected True, False or a reason"


def canonical(
    state: SystemState, ordered: tuple[bool, ...] = (True, True)
) -> tuple[SystemState, tuple[int, ...] | None]:
    """`state` with its handoffs numbered in a canonical order: configurations that differ only
    by which handoff is which get one key (symmetry reduction).

    Each handoff is ordered by everything about it that no renumbering changes (its
    coordinator, what each worker remembers of it and how recently, its messages and their
    places in flight); handoffs alike in all of that are interchangeable, so any order of
    them gives the same state.  Also says how it renumbered them (None: it did not).
    `ordered` says, for the source and the destination, whether the order of the requests it
    remembers idle matters (a bounded memory forgets the longest idle first)."""
    count = len(state.coordinators)
    places: list[list[object]] = [[] for _ in range(count)]
    fifo = len(state.flight) > 1  # in any order, a message's place says nothing
    for channel, messages in enumerate(state.flight):
        for position, message in enumerate(messages):
            number: int | None = message[_HANDOFF]  # type: ignore[assignment]
            places[0 if number is None else number].append(
                (channel, position, message[:_HANDOFF]) if fifo else message[:_HANDOFF]
            )
    source = _remembered(state.source, ordered[0])
    destination = _remembered(state.destination, ordered[1])
    signatures = [
        hash(
            (
                state.coordinators[n],
                state.watches[n],
                source.get(n),
                destination.get(n),
                tuple(places[n]),
            )
        )
        for n in range(count)
    ]
    order = sorted(range(count), key=signatures.__getitem__)
    if all(old == new for new, old in enumerate(order)):
        return state, None
    renamed = [0] * count
    for new, old in enumerate(order):
        renamed[old] = new
    make = tuple.__new__
    flight = tuple(
        tuple(
            make(Message, (*message[:_HANDOFF], renamed[message[_HANDOFF]]))  # type: ignore[index]
            for message in channel
        )
        for channel in state.flight
    )
    if not fifo:
        flight = (tuple(sorted(flight[0], key=_order)),)
    keyed = SystemState(
        tuple(state.coordinators[old] for old in order),
        state.source.relabel(renamed, ordered=ordered[0]),
        state.destination.relabel(renamed, ordered=ordered[1]),
        flight,
        tuple(state.watches[old] for old in order),
        state.spent,
    )
    return keyed, tuple(renamed)


def _remembered(worker: WorkerState, ordered: bool) -> dict[int, tuple[object, ...]]:
    """What a worker remembers of each request, and, when it matters, how long it has been
    idle (a place no renumbering changes)."""
    found: dict[int, tuple[object, ...]] = {}
    place = 0
    for entry in worker.entries:
        if entry.slots or not ordered:
            found[entry[0]] = entry[1:]
        else:
            found[entry[0]] = (place, *entry[1:])
            place += 1
    return found


_HANDOFF = Message._fields.index("handoff")
assert len(Message._fields) - 1 == _HANDOFF


def _bound(explored: Explored) -> Verdict:
    count = len(explored.nodes)
    summary = f"{count:,} configurations, every run to its end"
    if explored.cut:
        summary = f"{count:,} configurations; some runs were cut off"
    tally = explored.tallies[Key.BOUND]
    return tally.verdict(prop(Key.BOUND), checked=count, summary=summary)


# -- runs written down and replayed ----------------------------------------------------------


_LINES = {
    MoveKind.START: "start",
    MoveKind.FAULT: "fault",
    MoveKind.TO_WORKER: "deliver",
    MoveKind.TO_COORDINATOR: "deliver",
    MoveKind.WORKER_FAILS: "fail",
    MoveKind.DUPLICATE: "duplicate",
    MoveKind.LOSS: "lose",
    MoveKind.RESTART: "restart",
}


def line_of(step: TraceStep) -> MoveLine:
    """One system move as a trace line: what moved, named as the report names it (with several
    handoffs, a start or a fault names its handoff, `h2`)."""
    whose = None if step.handoff is None else f"h{step.handoff + 1}"
    if step.kind is MoveKind.FAULT:
        assert step.call is not None
        assert step.call.fact is not None
        return MoveLine(_LINES[step.kind], fact=type(step.call.fact).__name__, handoff=whose)
    if step.worker is not None:
        return MoveLine(_LINES[step.kind], worker=step.worker.value)
    if step.kind is MoveKind.START:
        return MoveLine(_LINES[step.kind], handoff=whose)
    message = None if step.message is None else step.message.describe()
    return MoveLine(_LINES[step.kind], message=message)


@attrs.frozen
class Replayed:
    """What a replayed system run broke, move by move: each property once, first broken first,
    with the line that broke it."""

    moves: int
    findings: tuple[tuple[int, AnyKey, str], ...]


def replay_moves(world: SystemWorld, lines: Sequence[MoveLine], first_line: int = 2) -> Replayed:
    """Make each move again from the system's first configuration and judge them; raises
    TraceError for a move the system cannot make where the trace makes it.

    Where the run ends with nothing more to deliver, W4 and W5 are judged on how it ended:
    a counterexample to either ends so.
    """
    node, _key = world.root()
    found: dict[AnyKey, tuple[int, AnyKey, str]] = {}

    def note(number: int, checks: Iterable[Checked]) -> None:
        for key, words in checks:
            if words is not None:
                found.setdefault(key, (number, key, words))

    number = first_line - 1
    for number, wanted in enumerate(lines, start=first_line):
        move = next((m for m in world.moves(node) if line_of(m.step) == wanted), None)
        if move is None:
            raise TraceError(f"line {number}: the system cannot make the move {wanted} here")
        note(number, move.checks)
        if move.node is None:
            return Replayed(len(lines), tuple(found.values()))
        node = move.node
        note(number, world.checks(node))
    if not any(move.tags & Tag.COOPERATIVE and move.node is not None for move in world.moves(node)):
        note(number, _how_it_ended(node))
    return Replayed(len(lines), tuple(found.values()))


def _how_it_ended(node: _Node) -> Iterator[Checked]:
    if node.end() & End.STUCK:
        yield Key.DELIVERIES_COMPLETE, node.stuck()
    if node.terminated:
        end = node.end(terminated=True)
        if end is not End.CANCELED:
            yield Key.TERMINAL_CANCELS, no_cancel(end)


def replay_system_run(trace: Trace) -> Replayed:
    """Replay a system run's trace on its chart with the workers its header names."""
    workers = trace.workers
    assert workers is not None
    try:
        contract = find_contract(workers.contract)
        system = System(
            contract,
            fifo=workers.fifo,
            faults=workers.faults,
            injected=workers.injected,
            budget=workers.budget,
            acknowledge=workers.acknowledge,
            concurrency=workers.concurrency,
            slots=workers.slots,
        )
        rules = Rules(trace.order, trace.handoff_id, trace.fallback_transfer_delay_ms)
        world = SystemWorld(_table(trace), system, rules)
    except ValueError as error:
        raise TraceError(f"the trace's workers {workers.contract!r}: {error}") from None
    return replay_moves(world, trace.moves)


def _table(trace: Trace) -> CompiledChart:
    rules = trace.rules
    if isinstance(rules, CompiledChart):
        return rules
    return compiled(trace.order if rules is None else rules)

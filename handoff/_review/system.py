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

from handoff._compile.table import CompiledChart
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._coordinator.probe import Configuration
from handoff._review.environment import Rules
from handoff._review.graph import Liveness, Tag
from handoff._review.monitors import Checked
from handoff._review.properties import AnyKey, Key, Property, WorldKind, prop
from handoff._review.system_state import (
    Flight,
    Spent,
    System,
    SystemState,
    SystemWatch,
    _Node,
    _number,
    _order,
    canonical,
    completion_finding,
    judge_own,
)
from handoff._review.verdict import MoveKind, TraceStep, Verdict
from handoff._review.world import Explored, Judge, Move, WorldBase, error_words
from handoff._runs.call import Call
from handoff._runs.faults import Fault
from handoff._runs.runtime import DEMO_WORKLOAD, Workload
from handoff._runs.worker_state import HandoffView, SystemView, Worker, WorkerState, worker_view
from handoff._runs.workers import (
    Acknowledge,
    ContractTable,
    Message,
    MessageKind,
    Role,
    Slots,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    on_send,
    outcome_of,
    role_of,
    task_of,
)
from handoff._values.errors import HandoffError, OutOfOrderFactError
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffActionId

T = TypeVar("T")

__all__ = ["Spent", "System", "SystemState", "SystemWatch", "SystemWorld", "canonical"]


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


def _replaced(items: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*items[:index], value, *items[index + 1 :])


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


def _bound(explored: Explored) -> Verdict:
    count = len(explored.nodes)
    summary = f"{count:,} configurations, every run to its end"
    if explored.cut:
        summary = f"{count:,} configurations; some runs were cut off"
    tally = explored.tallies[Key.BOUND]
    return tally.verdict(prop(Key.BOUND), checked=count, summary=summary)


# -- runs written down and replayed ----------------------------------------------------------

"""The second world: a coordinator, its two workers and the messages in flight between them.

A system configuration is the coordinator's configuration, what each worker remembers of the
request (`RequestMemory`: holding a KV slot or not), the messages in flight and what the
runtime has seen.  The runtime carries each issued action to its worker as a message, and
each acknowledgement and fact back to the coordinator as another; any message in flight may
be delivered next (or, with `fifo`, the first of each worker's channel in each direction).
Besides deliveries, the system may suffer up to `faults` faults in a run (`handoff._runs.faults`
names them): a terminal fact (`Failed`, `TimedOut`, `Canceled`) reported to the coordinator,
or a worker failing the work it was given (acknowledged as failed, memory unchanged).

With `System.injected` (`--faults`), each up to `System.budget` times a run, offered after
every other move so that a review without them is the review of before: a delivery that
leaves a copy of its message in flight, a message lost (the runtime reports `TimedOut`), a
worker restarting (forgetting the request).  With `Acknowledge.ON_SEND` the runtime puts the
fitting acknowledgement of `SubmitPrefill`, `ReserveDestination` and `StartTransfer` in flight
as it sends the work; the worker then reports only the work's fact, or `Failed`.

The runtime's one policy: a fact the coordinator refuses as early (its acknowledgement is still
in flight) stays in flight and is delivered again later; any other refused message is dropped.
`Complete` is the runtime's own: it goes to no worker.

W1 is judged at each quiet configuration, W2 and W3 at each move, W4 and W5 over the explored
graph under the fairness that every message in flight is eventually delivered: a run that
suffers no further fault then ends once nothing is in flight, so every such end must be a
completion (W4), and after a terminal fact a CANCELED one (W5).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import NamedTuple

import attrs

from handoff._compile.table import CompiledChart, compiled
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.environment import Rules
from handoff._review.graph import End, Liveness, Tag, no_cancel, stuck
from handoff._review.monitors import Checked
from handoff._review.properties import Key, WorldKind, prop
from handoff._review.verdict import MoveKind, TraceStep, Verdict
from handoff._review.world import Explored, Judge, Move, WorldBase, error_words
from handoff._runs.call import Call
from handoff._runs.faults import NETWORK, Fault
from handoff._runs.runtime import DEMO_WORKLOAD, Workload
from handoff._runs.trace import MoveLine, Trace
from handoff._runs.workers import (
    Acknowledge,
    ContractTable,
    Message,
    MessageKind,
    RequestMemory,
    Role,
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
from handoff._values.messages import HandoffAction, HandoffFact
from handoff._values.values import HandoffActionId, HandoffCompletion

__all__ = [
    "System",
    "SystemState",
    "SystemWatch",
    "SystemWorld",
    "completion_finding",
    "line_of",
    "replay_moves",
    "replay_system_run",
]


@attrs.frozen
class System:
    """How the system around the coordinator behaves: its workers, delivery and faults."""

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

    def describe(self) -> str:
        """`forgetful workers, messages delivered in any order`, then the faults injected and
        the acknowledgement policy when they are not the defaults."""
        delivery = "FIFO per worker" if self.fifo else "any order"
        words = f"{self.contract.name} workers, messages delivered in {delivery}"
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
    duplicated: int = 0
    lost: int = 0
    restarts: int = 0
    restarted: frozenset[Role] = frozenset()
    """Workers that restarted: they may have lost a request the coordinator handed over."""


class SystemState(NamedTuple):
    """One system configuration: what decides everything after it."""

    coordinator: tuple[object, ...]
    source: RequestMemory
    destination: RequestMemory
    flight: Flight
    """Messages in flight: one channel, canonically sorted (any order), or four, in order."""
    watch: SystemWatch

    def memory(self, role: Role) -> RequestMemory:
        """What the worker of `role` remembers."""
        return self.source if role is Role.SOURCE else self.destination

    @property
    def quiet(self) -> bool:
        """Nothing in flight."""
        return not any(self.flight)


class _Node(NamedTuple):
    coordinator: HandoffCoordinatorCore
    state: SystemState


_HELD = RequestMemory.HELD
_SLOT_FREED = Key.NO_SLOT_AFTER_FREED
_ONLY_ISSUED = Key.ONLY_ISSUED_WORK
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
    """The moves of the system around one coordinator driven by `chart`, judged as they are
    made, and the liveness of the whole graph."""

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
        self.rules = rules
        self.workload = workload
        self.terminal_facts = tuple(
            kind(rules.handoff_id)
            for kind in (fault.fact for fault in _TERMINAL_FAULTS)
            if kind is not None
        )

    def root(self) -> tuple[_Node, Hashable]:
        """The coordinator before `start()`, both workers knowing nothing, nothing in flight."""
        rules = self.rules
        coordinator = probe.for_table(
            rules.handoff_id, self.chart, rules.fallback_transfer_delay_ms
        )
        channels = 4 if self.system.fifo else 1
        state = SystemState(
            probe.configuration(coordinator),
            RequestMemory.UNKNOWN,
            RequestMemory.UNKNOWN,
            ((),) * channels,
            SystemWatch(),
        )
        return _Node(coordinator, state), state

    def checks(self, node: _Node) -> Iterable[Checked]:
        """W1 at a quiet, complete configuration."""
        coordinator, state = node
        if state.quiet and state.watch.started and coordinator.is_complete:
            yield Key.SLOTS_AT_COMPLETION, completion_finding(state, coordinator.completion)

    def moves(self, node: _Node) -> Iterator[Move]:
        """Every move from `node`, in a fixed order: deliveries first, then faults."""
        for step, after, findings, fault, loop in self._moves(*node):
            yield _judged(step, after, findings, fault=fault, loop=loop)

    def _moves(self, coordinator: HandoffCoordinatorCore, state: SystemState) -> Iterator[_Raw]:
        if not state.watch.started:
            yield self._call(coordinator, state, MoveKind.START, None, Call.start(), state.flight)
            return
        faults_left = state.watch.faults < self.system.faults
        for channel, message in self._deliverable(state):
            flight = _without(state.flight, channel, message)
            if message.kind is MessageKind.ACTION:
                yield self._perform(coordinator, state, message, flight, fail=False)
                failable = task_of(message.action) in _FAILABLE
                if faults_left and self.system.worker_failures and failable:
                    yield self._perform(coordinator, state, message, flight, fail=True)
            else:
                call = _call_of(message)
                yield self._call(coordinator, state, MoveKind.TO_COORDINATOR, message, call, flight)
        if faults_left:
            for fact in self.terminal_facts:
                call = Call.of_fact(fact)
                yield self._call(coordinator, state, MoveKind.FAULT, None, call, state.flight)
        if self.system.injected:
            yield from self._injected(coordinator, state)

    def _injected(self, coordinator: HandoffCoordinatorCore, state: SystemState) -> Iterator[_Raw]:
        """The faults `--faults` asks for, each within its budget, after every other move (so
        a review without them makes exactly the moves it made before)."""
        watch, system = state.watch, self.system
        for channel, message in self._deliverable(state):
            if system.allows(Fault.DUPLICATION, watch.duplicated):
                duplicated = self._duplicate(coordinator, state, channel, message)
                if duplicated is not None:
                    yield duplicated
            if system.allows(Fault.LOSS, watch.lost):
                yield self._lose(coordinator, state, channel, message)
        if system.allows(Fault.RESTART, watch.restarts):
            for role in Role:
                if state.memory(role) is not RequestMemory.UNKNOWN:
                    yield self._restart(coordinator, state, role)

    def _duplicate(
        self,
        coordinator: HandoffCoordinatorCore,
        state: SystemState,
        channel: int,
        message: Message,
    ) -> _Raw | None:
        """`message` is delivered and a copy of it sent again, behind what is in flight."""
        copy = message._replace(copy=True)
        flight = self._send(_without(state.flight, channel, message), [copy])
        if message.kind is MessageKind.ACTION:
            raw = self._perform(coordinator, state, message, flight, fail=False)
        else:
            call = _call_of(message)
            raw = self._call(coordinator, state, MoveKind.TO_COORDINATOR, message, call, flight)
        if raw.node is None or raw.loop:
            # A crash is already the delivery's own finding; a refused early fact stays in
            # flight anyway, so a copy of it adds nothing.
            return None
        after = raw.node.state
        spent = after.watch._replace(duplicated=after.watch.duplicated + 1)
        node = _Node(raw.node.coordinator, after._replace(watch=spent))
        step = attrs.evolve(raw.step, kind=MoveKind.DUPLICATE, sent=(*raw.step.sent, copy))
        return _Raw(step, node, raw.findings, fault=True)

    def _lose(
        self,
        coordinator: HandoffCoordinatorCore,
        state: SystemState,
        channel: int,
        message: Message,
    ) -> _Raw:
        """`message` vanishes; the runtime's timer for the handoff reports `TimedOut`.

        The timeout is reported in the same move: a run in which other messages are
        delivered between the loss and its notice is explored as those deliveries first."""
        flight = _without(state.flight, channel, message)
        call = Call.of_fact(HandoffFact.TimedOut(self.rules.handoff_id))
        raw = self._call(coordinator, state, MoveKind.LOSS, None, call, flight)
        step = attrs.evolve(raw.step, message=message)
        if raw.node is None:
            return _Raw(step, None, raw.findings, fault=True)
        after = raw.node.state
        spent = after.watch._replace(lost=after.watch.lost + 1)
        node = _Node(raw.node.coordinator, after._replace(watch=spent))
        return _Raw(step, node, raw.findings, fault=True)

    def _restart(self, coordinator: HandoffCoordinatorCore, state: SystemState, role: Role) -> _Raw:
        """The worker of `role` restarts: it forgets the request, tombstone and slot alike.

        The coordinator is not told: a restart is seen only in what the worker does next."""
        watch = state.watch
        watch = watch._replace(restarts=watch.restarts + 1, restarted=watch.restarted | {role})
        forgotten = RequestMemory.UNKNOWN
        after = state._replace(
            source=forgotten if role is Role.SOURCE else state.source,
            destination=forgotten if role is Role.DESTINATION else state.destination,
            watch=watch,
        )
        reaction = WorkerReaction(forgotten, WorkerReply.SILENT)
        step = TraceStep(
            None, coordinator.chart_state, kind=MoveKind.RESTART, reaction=reaction, worker=role
        )
        return _Raw(step, _Node(coordinator, after), (), fault=True)

    # -- moves -------------------------------------------------------------------------

    def _deliverable(self, state: SystemState) -> Iterator[tuple[int, Message]]:
        for channel, messages in enumerate(state.flight):
            if self.system.fifo:
                if messages:
                    yield channel, messages[0]
            else:
                for message in messages:
                    yield channel, message

    def _perform(
        self,
        coordinator: HandoffCoordinatorCore,
        state: SystemState,
        message: Message,
        flight: Flight,
        *,
        fail: bool,
    ) -> _Raw:
        """A worker gets an action and reacts as its contract says (or fails it: a fault)."""
        role, action = message.role, message.action
        before = state.memory(role)
        task = task_of(action)
        reaction = (
            WorkerReaction(before, WorkerReply.FAILED)
            if fail
            else self.contract.react(task, before)
        )
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
            sent.append(Message(MessageKind.OUTCOME, message.action_id, role, action, outcome))
        if fact is not None:
            sent.append(Message(MessageKind.FACT, message.action_id, role, action, fact=fact))
        watch = state.watch
        findings = list(_performed_findings(watch, message))
        if reaction.holds and role in watch.told:
            findings.append((_SLOT_FREED, _held_after_freed(role, message)))
        watch = watch._replace(
            performed=watch.performed | 1 << message.action_id, faults=watch.faults + fail
        )
        memories = {Role.SOURCE: state.source, Role.DESTINATION: state.destination}
        memories[role] = reaction.memory
        after = SystemState(
            state.coordinator,
            memories[Role.SOURCE],
            memories[Role.DESTINATION],
            self._send(flight, sent),
            watch,
        )
        kind = MoveKind.WORKER_FAILS if fail else MoveKind.TO_WORKER
        step = TraceStep(
            None,
            coordinator.chart_state,
            kind=kind,
            message=message,
            reaction=reaction,
            sent=tuple(sent),
        )
        return _Raw(step, _Node(coordinator, after), tuple(findings), fail)

    def _call(
        self,
        coordinator: HandoffCoordinatorCore,
        state: SystemState,
        kind: MoveKind,
        message: Message | None,
        call: Call,
        flight: Flight,
    ) -> _Raw:
        """The runtime makes a call to the coordinator and puts what it issued in flight."""
        twin = coordinator.fork()
        fault = kind is MoveKind.FAULT
        watch = state.watch._replace(started=True, faults=state.watch.faults + fault)
        try:
            issued = tuple(call.send(twin))
        except HandoffError as error:
            step = TraceStep(
                call, twin.chart_state, error=error_words(error), kind=kind, message=message
            )
            if isinstance(error, OutOfOrderFactError) and message is not None:
                return _Raw(step, _Node(coordinator, state), (), fault, loop=True)
            after = state._replace(flight=flight, watch=watch)
            return _Raw(step, _Node(coordinator, after), (), fault)
        except Exception as error:  # a crash is a finding, not a reason to stop reviewing
            words = error_words(error)
            step = TraceStep(call, twin.chart_state, error=words, kind=kind, message=message)
            return _Raw(step, None, ((Key.ERRORS, f"the call raised {words}"),), fault)
        findings: list[Checked] = []
        sent = []
        for item in issued:
            watch = watch._replace(issued=watch.issued | 1 << item.id.value)
            role = role_of(item.action)
            if role is not None:
                sent.append(Message(MessageKind.ACTION, item.id.value, role, item.action))
                acknowledged = on_send(item.action) if self._on_send(item.action) else None
                if acknowledged is not None:
                    ack = Message(
                        MessageKind.OUTCOME, item.id.value, role, item.action, acknowledged
                    )
                    sent.append(ack)
        if message is not None and _tells_freed(message):
            watch = watch._replace(told=watch.told | {message.role})
            if state.memory(message.role) is _HELD:
                findings.append((_SLOT_FREED, _told_while_held(message)))
        after = SystemState(
            probe.configuration(twin),
            state.source,
            state.destination,
            self._send(flight, sent),
            watch,
        )
        step = TraceStep(
            call, twin.chart_state, issued, kind=kind, message=message, sent=tuple(sent)
        )
        return _Raw(step, _Node(twin, after), tuple(findings), fault)

    def _on_send(self, action: HandoffAction) -> bool:
        """Whether the runtime acknowledged `action` as it sent it."""
        return self.system.acknowledge is Acknowledge.ON_SEND and on_send(action) is not None

    def _send(self, flight: Flight, sent: list[Message]) -> Flight:
        if not sent:
            return flight
        if not self.system.fifo:
            return (tuple(sorted((*flight[0], *sent), key=_order)),)
        channels = list(flight)
        for message in sent:
            index = _channel(message)
            channels[index] = (*channels[index], message)
        return tuple(channels)

    # -- judging over the graph --------------------------------------------------------

    def judges(self, explored: Explored) -> dict[Key, Judge]:
        liveness = Liveness(explored.nodes, explored.edges, explored.parents)
        return {
            Key.DELIVERIES_COMPLETE: liveness.deliveries_complete,
            Key.TERMINAL_CANCELS: liveness.terminal_cancels,
            Key.BOUND: lambda: _bound(explored),
        }


class _Raw(NamedTuple):
    """A move before it is judged: the step, where it leads, what it broke."""

    step: TraceStep
    node: _Node | None
    """None when the call crashed."""
    findings: tuple[Checked, ...]
    fault: bool
    loop: bool = False
    """A refused early fact, kept in flight: the move leads back where it started."""


def _judged(
    step: TraceStep, after: _Node | None, findings: Sequence[Checked], *, fault: bool, loop: bool
) -> Move:
    """A move as the explorer takes it: every property it was checked for, and its tags."""
    broken = dict(findings)
    checked: list[Key] = []
    if step.call is not None:
        checked.append(Key.ERRORS)
    if step.kind in _WORKER_MOVES:
        checked.append(_ONLY_ISSUED)
    checked.append(_SLOT_FREED)
    checks = tuple((key, broken.get(key)) for key in checked)
    if step.kind in _TERMINAL_MOVES:
        tags = Tag.TERMINAL
    else:
        tags = Tag.NONE if fault or loop else Tag.COOPERATIVE
    if after is None:
        return Move(step, checks, None, tags=tags)
    return Move(step, checks, after, after.state, tags, stays=loop)


def _order(message: Message) -> tuple[int, int, bool]:
    return message.kind, message.action_id, message.copy


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


def completion_finding(state: SystemState, completion: HandoffCompletion | None) -> str | None:
    """W1 at a quiet, complete configuration: which worker holds a slot it must not."""
    holders = [role for role in Role if state.memory(role) is _HELD]
    if completion is HandoffCompletion.CANCELED and holders:
        who = " and the ".join(role.value for role in holders)
        return (
            f"the handoff completed CANCELED and, with nothing in flight, the {who} holds a KV slot"
        )
    if completion is HandoffCompletion.SUCCESS and holders != [Role.DESTINATION]:
        if Role.SOURCE in holders:
            return "the handoff completed SUCCESS and the source still holds a KV slot"
        if Role.DESTINATION not in state.watch.restarted:
            # A destination that restarted lost the request it was decoding: no chart can
            # prevent that, and no slot leaks.
            return "the handoff completed SUCCESS and the destination holds no KV slot"
    return None


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
    """One system move as a trace line: what moved, named as the report names it."""
    if step.kind is MoveKind.FAULT:
        assert step.call is not None
        assert step.call.fact is not None
        return MoveLine(_LINES[step.kind], fact=type(step.call.fact).__name__)
    if step.worker is not None:
        return MoveLine(_LINES[step.kind], worker=step.worker.value)
    message = None if step.message is None else step.message.describe()
    return MoveLine(_LINES[step.kind], message=message)


@attrs.frozen
class Replayed:
    """What a replayed system run broke, move by move: each property once, first broken first,
    with the line that broke it."""

    moves: int
    findings: tuple[tuple[int, Key, str], ...]


def replay_moves(world: SystemWorld, lines: Sequence[MoveLine], first_line: int = 2) -> Replayed:
    """Make each move again from the system's first configuration and judge them; raises
    TraceError for a move the system cannot make where the trace makes it.

    Where the run ends with nothing more to deliver, W4 and W5 are judged on how it ended:
    a counterexample to either ends so.
    """
    node, _key = world.root()
    found: dict[Key, tuple[int, Key, str]] = {}

    def note(number: int, checks: Iterable[Checked]) -> None:
        for key, words in checks:
            if words is not None:
                found.setdefault(key, (number, key, words))

    terminal = False
    number = first_line - 1
    for number, wanted in enumerate(lines, start=first_line):
        move = next((m for m in world.moves(node) if line_of(m.step) == wanted), None)
        if move is None:
            raise TraceError(f"line {number}: the system cannot make the move {wanted} here")
        note(number, move.checks)
        if move.node is None:
            return Replayed(len(lines), tuple(found.values()))
        terminal |= move.step.kind is MoveKind.FAULT
        node = move.node
        note(number, world.checks(node))
    if not any(move.tags & Tag.COOPERATIVE and move.node is not None for move in world.moves(node)):
        note(number, _how_it_ended(node, terminal=terminal))
    return Replayed(len(lines), tuple(found.values()))


def _how_it_ended(node: _Node, *, terminal: bool) -> Iterator[Checked]:
    coordinator = node.coordinator
    if not coordinator.is_complete:
        yield Key.DELIVERIES_COMPLETE, stuck(node)
    if terminal and coordinator.completion is not HandoffCompletion.CANCELED:
        yield Key.TERMINAL_CANCELS, no_cancel(End.SUCCESS if coordinator.is_complete else End.STUCK)


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

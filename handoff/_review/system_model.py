"""The system a coordinator runs in: two workers and a runtime whose messages take their time.

A system configuration is the coordinator's configuration, what each worker remembers of the
request (`RequestMemory`: holding a KV slot or not), the messages in flight and what the
runtime has seen.  The runtime carries each issued action to its worker as a message, and
each acknowledgement and fact back to the coordinator as another; any message in flight may
be delivered next (or, with `fifo`, the first of each worker's channel in each direction).
Besides deliveries, the system may suffer up to `faults` faults in a run: a terminal fact
(`Failed`, `TimedOut`, `Canceled`) reported to the coordinator, or a worker failing the work
it was given (`TAKE`, `TRANSFER`, `ACTIVATE`: acknowledged as failed, memory unchanged).

The runtime's one policy: a fact the coordinator refuses as early (its acknowledgement is still
in flight) stays in flight and is delivered again later; any other refused message is dropped.
`Complete` is the runtime's own: it goes to no worker.  Each move is judged as it is made:
`SystemFinding`s for the properties of `handoff._review.system`.
"""

from __future__ import annotations

from collections.abc import Iterator

from handoff import _probe as probe
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError, OutOfOrderFactError
from handoff._messages import HandoffAction
from handoff._review.system_state import (
    MessageKind,
    Move,
    SystemFinding,
    SystemKey,
    SystemMessage,
    SystemOptions,
    SystemState,
    SystemStep,
    SystemStepKind,
    SystemWatch,
)
from handoff._runs.call import TERMINAL_FACTS, Call
from handoff._runs.runtime import DEMO_WORKLOAD, HANDOFF_ID, Workload
from handoff._runs.workers import (
    ContractTable,
    RequestMemory,
    Role,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    outcome_of,
    role_of,
    task_of,
)
from handoff._table import CompiledChart
from handoff._values import HandoffActionId, HandoffActionOutcome, HandoffCompletion, HandoffId

__all__ = ["SystemModel", "completion_finding"]

_HELD = RequestMemory.HELD
_SLOT_FREED = SystemKey.NO_SLOT_AFTER_FREED
_ONLY_ISSUED = SystemKey.ONLY_ISSUED_WORK
_CLEANUPS = (
    HandoffAction.ReleaseSource,
    HandoffAction.CancelSource,
    HandoffAction.CancelDestination,
)
_FAILABLE = (WorkerTask.TAKE, WorkerTask.TRANSFER, WorkerTask.ACTIVATE)
_FAILED_WORK = HandoffActionOutcome.failed("worker fault")


class SystemModel:
    """The moves of the system around one coordinator driven by `table`."""

    def __init__(
        self,
        table: CompiledChart,
        options: SystemOptions,
        *,
        handoff_id: HandoffId = HANDOFF_ID,
        fallback_transfer_delay_ms: float = 0.0,
        workload: Workload = DEMO_WORKLOAD,
    ) -> None:
        self.table = table
        self.options = options
        self.contract = ContractTable(options.contract)
        self.handoff_id = handoff_id
        self.fallback_transfer_delay_ms = fallback_transfer_delay_ms
        self.workload = workload
        self.terminal_facts = tuple(fact(handoff_id) for fact in TERMINAL_FACTS)

    def root(self) -> tuple[HandoffCoordinatorCore, SystemState]:
        """The coordinator before `start()`, both workers knowing nothing, nothing in flight."""
        coordinator = probe.for_table(self.handoff_id, self.table, self.fallback_transfer_delay_ms)
        channels = 4 if self.options.fifo else 1
        state = SystemState(
            probe.configuration(coordinator),
            RequestMemory.UNKNOWN,
            RequestMemory.UNKNOWN,
            ((),) * channels,
            SystemWatch(),
        )
        return coordinator, state

    def moves(self, coordinator: HandoffCoordinatorCore, state: SystemState) -> Iterator[Move]:
        """Every move from `state`, in a fixed order: deliveries first, then faults."""
        if not state.watch.started:
            yield self._call(
                coordinator, state, SystemStepKind.START, None, Call.start(), state.flight
            )
            return
        faults_left = state.watch.faults < self.options.faults
        for channel, message in self._deliverable(state):
            flight = _without(state.flight, channel, message)
            if message.kind is MessageKind.ACTION:
                yield self._perform(coordinator, state, message, flight, fail=False)
                failable = task_of(message.action) in _FAILABLE
                if faults_left and self.options.worker_failures and failable:
                    yield self._perform(coordinator, state, message, flight, fail=True)
            else:
                call = _call_of(message)
                yield self._call(
                    coordinator, state, SystemStepKind.TO_COORDINATOR, message, call, flight
                )
        if faults_left:
            for fact in self.terminal_facts:
                yield self._call(
                    coordinator, state, SystemStepKind.FAULT, None, Call.of_fact(fact), state.flight
                )

    # -- moves -------------------------------------------------------------------------

    def _deliverable(self, state: SystemState) -> Iterator[tuple[int, SystemMessage]]:
        for channel, messages in enumerate(state.flight):
            if self.options.fifo:
                if messages:
                    yield channel, messages[0]
            else:
                for message in messages:
                    yield channel, message

    def _perform(
        self,
        coordinator: HandoffCoordinatorCore,
        state: SystemState,
        message: SystemMessage,
        flight: tuple[tuple[SystemMessage, ...], ...],
        *,
        fail: bool,
    ) -> Move:
        """A worker gets an action and reacts as its contract says (or fails it: a fault)."""
        role, action = message.role, message.action
        before = state.memory(role)
        task = task_of(action)
        reaction = (
            WorkerReaction(before, WorkerReply.FAILED)
            if fail
            else self.contract.react(task, before)
        )
        sent: list[SystemMessage] = []
        outcome = _FAILED_WORK if fail else outcome_of(action, reaction.reply)
        if outcome is not None:
            sent.append(
                SystemMessage(MessageKind.OUTCOME, message.action_id, role, action, outcome)
            )
        fact = self.workload.fact_after(action) if reaction.reply is WorkerReply.DONE else None
        if fact is not None and not fail:
            sent.append(SystemMessage(MessageKind.FACT, message.action_id, role, action, fact=fact))
        watch = state.watch
        findings = list(_performed_findings(watch, message))
        if reaction.holds and role in watch.told:
            findings.append(SystemFinding(_SLOT_FREED, _held_after_freed(role, message)))
        watch = watch._replace(
            performed=watch.performed | 1 << message.action_id, faults=watch.faults + fail
        )
        memories = {Role.SOURCE: state.source, Role.DESTINATION: state.destination}
        memories[role] = reaction.memory
        flight = self._send(flight, sent)
        after = SystemState(
            state.coordinator, memories[Role.SOURCE], memories[Role.DESTINATION], flight, watch
        )
        kind = SystemStepKind.WORKER_FAILS if fail else SystemStepKind.TO_WORKER
        step = SystemStep(
            kind, message, reaction=reaction, sent=tuple(sent), state=coordinator.chart_state
        )
        return Move(step, coordinator, after, tuple(findings), fault=fail)

    def _call(
        self,
        coordinator: HandoffCoordinatorCore,
        state: SystemState,
        kind: SystemStepKind,
        message: SystemMessage | None,
        call: Call,
        flight: tuple[tuple[SystemMessage, ...], ...],
    ) -> Move:
        """The runtime makes a call to the coordinator and puts what it issued in flight."""
        twin = coordinator.fork()
        fault = kind is SystemStepKind.FAULT
        watch = state.watch._replace(started=True, faults=state.watch.faults + fault)
        try:
            issued = tuple(call.send(twin))
        except HandoffError as error:
            words = f"{type(error).__name__}: {error}"
            step = SystemStep(kind, message, call, error=words, state=twin.chart_state)
            if isinstance(error, OutOfOrderFactError) and message is not None:
                return Move(step, coordinator, state, (), fault, loop=True)
            after = state._replace(flight=flight, watch=watch)
            return Move(step, coordinator, after, (), fault)
        except Exception as error:  # a crash is a finding, not a reason to stop reviewing
            words = f"{type(error).__name__}: {error}"
            step = SystemStep(kind, message, call, error=words, state=twin.chart_state)
            return Move(
                step,
                None,
                None,
                (SystemFinding(SystemKey.ERRORS, f"the call raised {words}"),),
                fault,
            )
        findings: list[SystemFinding] = []
        sent = []
        for item in issued:
            watch = watch._replace(issued=watch.issued | 1 << item.id.value)
            role = role_of(item.action)
            if role is not None:
                sent.append(SystemMessage(MessageKind.ACTION, item.id.value, role, item.action))
        if message is not None and _tells_freed(message):
            watch = watch._replace(told=watch.told | {message.role})
            if state.memory(message.role) is _HELD:
                findings.append(SystemFinding(_SLOT_FREED, _told_while_held(message)))
        after = SystemState(
            probe.configuration(twin),
            state.source,
            state.destination,
            self._send(flight, sent),
            watch,
        )
        step = SystemStep(kind, message, call, issued, sent=tuple(sent), state=twin.chart_state)
        return Move(step, twin, after, tuple(findings), fault)

    def _send(
        self, flight: tuple[tuple[SystemMessage, ...], ...], sent: list[SystemMessage]
    ) -> tuple[tuple[SystemMessage, ...], ...]:
        if not sent:
            return flight
        if not self.options.fifo:
            return (tuple(sorted((*flight[0], *sent), key=_order)),)
        channels = list(flight)
        for message in sent:
            index = _channel(message)
            channels[index] = (*channels[index], message)
        return tuple(channels)


def _order(message: SystemMessage) -> tuple[int, int]:
    return message.kind, message.action_id


def _channel(message: SystemMessage) -> int:
    towards = message.kind is MessageKind.ACTION
    return (0 if message.role is Role.SOURCE else 1) + (0 if towards else 2)


def _without(
    flight: tuple[tuple[SystemMessage, ...], ...], channel: int, message: SystemMessage
) -> tuple[tuple[SystemMessage, ...], ...]:
    messages = flight[channel]
    index = messages.index(message)
    rest = messages[:index] + messages[index + 1 :]
    return (*flight[:channel], rest, *flight[channel + 1 :])


def _call_of(message: SystemMessage) -> Call:
    if message.fact is not None:
        return Call.of_fact(message.fact)
    assert message.outcome is not None
    return Call.of_outcome(HandoffActionId(message.action_id), message.outcome)


def _tells_freed(message: SystemMessage) -> bool:
    """An acknowledgement that tells the coordinator its worker freed the request's slot."""
    outcome = message.outcome
    return (
        message.kind is MessageKind.OUTCOME
        and isinstance(message.action, _CLEANUPS)
        and outcome is not None
        and not outcome.is_failed
    )


def _performed_findings(watch: SystemWatch, message: SystemMessage) -> Iterator[SystemFinding]:
    bit = 1 << message.action_id
    name = message.describe()
    if not watch.issued & bit:
        yield SystemFinding(
            _ONLY_ISSUED, f"the {message.role.value} performed {name}, never issued"
        )
    elif watch.performed & bit:
        yield SystemFinding(
            _ONLY_ISSUED, f"the {message.role.value} performed {name} a second time"
        )
    elif role_of(message.action) is not message.role:
        yield SystemFinding(_ONLY_ISSUED, f"{name} went to the {message.role.value}")


def _held_after_freed(role: Role, message: SystemMessage) -> str:
    return (
        f"the {role.value} took a KV slot for {message.describe()} after the coordinator was "
        "told its slot was freed"
    )


def _told_while_held(message: SystemMessage) -> str:
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
        return "the handoff completed SUCCESS and the destination holds no KV slot"
    return None

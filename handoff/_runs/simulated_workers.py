"""The simulation's workers: each action travels to its worker, which follows a contract.

Without workers the simulation acknowledges an action the moment it is issued.  With them
(`SimulationConfig.workers`) each action is a message that reaches its worker after its own
latency (sometimes much later: the "delayed delivery" fault), so a cancel may overtake the
submission it cancels.  The worker then reacts as its `WorkerContract` says, acknowledges,
and reports the work's fact on its own; a fact the coordinator refuses as early is delivered
again later.  A finished handoff is checked for the slots its workers still hold.

With `faults` (`--faults`), each up to `budget` times a handoff, at the fault rate: an action
is delivered twice (the copy later), or lost (the runtime reports `TimedOut` later), or its
worker restarts just before it arrives (forgetting the request).  With `Acknowledge.ON_SEND`
the runtime acknowledges work that takes or moves KV as it sends it, and the worker reports
`Failed` for such work it did not do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

import attrs

from handoff._runs.call import Call
from handoff._runs.faults import Fault
from handoff._runs.runtime import Workload
from handoff._runs.workers import (
    Acknowledge,
    ContractTable,
    RequestMemory,
    Role,
    WorkerContract,
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
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
)

__all__ = ["Delivery", "SimulatedWorkers", "WorkerSlots"]


_FAILABLE = (WorkerTask.TAKE, WorkerTask.TRANSFER, WorkerTask.ACTIVATE)
_FAILED = Fault.FAILED_OUTCOME.outcome


class _WorkerHandoff(Protocol):
    handoff_id: HandoffId
    workload: Workload
    slots: WorkerSlots | None
    pending: int


H = TypeVar("H", bound=_WorkerHandoff)
H_contra = TypeVar("H_contra", bound=_WorkerHandoff, contravariant=True)


class _WorkerWorld(Protocol[H_contra]):
    """What the workers need of the simulation: its clock, its faults, its sends."""

    def at(self, delay: float, handoff: H_contra, call: Call | Delivery, /) -> None: ...

    def fault(self, kind: Fault, /) -> bool: ...

    def latency(self) -> float: ...

    def uniform(self, low: float, high: float, /) -> float: ...

    def send(
        self, handoff: H_contra, action_id: HandoffActionId, outcome: HandoffActionOutcome, /
    ) -> None: ...

    def fact_delay(self, handoff: H_contra, kind: type, /) -> float: ...


@attrs.frozen
class Delivery:
    """An action on its way to its worker."""

    item: IssuedHandoffAction


@attrs.define
class WorkerSlots:
    """What one handoff's two workers remember of its request."""

    source: Hashable = RequestMemory.UNKNOWN
    destination: Hashable = RequestMemory.UNKNOWN
    spent: Counter[Fault] = attrs.Factory(Counter)
    """The injected faults (`--faults`) this handoff suffered, by kind."""

    def memory(self, role: Role) -> Hashable:
        """What the worker of `role` remembers."""
        return self.source if role is Role.SOURCE else self.destination

    def remember(self, role: Role, memory: Hashable) -> None:
        """Set what the worker of `role` remembers."""
        if role is Role.SOURCE:
            self.source = memory
        else:
            self.destination = memory

    def leaks(self, completion: HandoffCompletion | None) -> list[str]:
        """The slots held once nothing is in flight that the completion says must be free."""
        held = [role for role in Role if self.memory(role) is RequestMemory.HELD]
        if completion is HandoffCompletion.SUCCESS:
            held = [role for role in held if role is Role.SOURCE]
        return [
            f"leaked a worker slot: the {role.value} holds it after {_name(completion)}"
            for role in held
        ]


def _name(completion: HandoffCompletion | None) -> str:
    return "no completion" if completion is None else completion.name


class SimulatedWorkers(Generic[H]):
    """The workers of every handoff in a simulation, following one contract."""

    def __init__(
        self,
        contract: WorkerContract,
        world: _WorkerWorld[H],
        *,
        faults: frozenset[Fault] = frozenset(),
        budget: int = 1,
        acknowledge: Acknowledge = Acknowledge.ON_REPLY,
    ) -> None:
        self.table = ContractTable(contract)
        self.world = world
        self.faults = faults
        self.budget = budget
        self.acknowledge = acknowledge

    def carry(self, handoff: H, item: IssuedHandoffAction) -> bool:
        """Send `item` to its worker; False for `Complete`, which no worker gets."""
        if role_of(item.action) is None:
            return False
        if self._acknowledged_on_send(item.action):
            outcome = on_send(item.action)
            assert outcome is not None
            self.world.send(handoff, item.id, outcome)
        delay = self.world.latency()
        if self.world.fault(Fault.DELAYED_DELIVERY):
            delay += self.world.uniform(5, 30)
        if self._injects(handoff, Fault.LOSS):
            # The runtime notices only that the handoff went quiet, after its timeout.
            timed_out = Call.of_fact(HandoffFact.TimedOut(handoff.handoff_id))
            self.world.at(delay + self.world.uniform(5, 30), handoff, timed_out)
            return True
        self.world.at(delay, handoff, Delivery(item))
        if self._injects(handoff, Fault.DUPLICATION):
            self.world.at(delay + self.world.uniform(5, 30), handoff, Delivery(item))
        return True

    def _injects(self, handoff: H, fault: Fault) -> bool:
        """Whether `fault`, asked for and within the handoff's budget, happens now."""
        assert handoff.slots is not None
        spent = handoff.slots.spent
        if fault not in self.faults or spent[fault] >= self.budget or not self.world.fault(fault):
            return False
        spent[fault] += 1
        return True

    def _acknowledged_on_send(self, action: HandoffAction) -> bool:
        return self.acknowledge is Acknowledge.ON_SEND and on_send(action) is not None

    def arrive(self, handoff: H, delivery: Delivery) -> None:
        """The worker gets the action, reacts, acknowledges and reports what follows."""
        item = delivery.item
        action = item.action
        role, task = role_of(action), task_of(action)
        assert role is not None
        assert handoff.slots is not None
        if self._injects(handoff, Fault.RESTART):
            handoff.slots.remember(role, RequestMemory.UNKNOWN)  # restarted, it forgot
        before = handoff.slots.memory(role)
        outcome: HandoffActionOutcome | None = _FAILED
        if task in _FAILABLE and self.world.fault(Fault.FAILED_OUTCOME):
            reaction = WorkerReaction(before, WorkerReply.FAILED)
        else:
            reaction = self.table.react(task, before)
            outcome = outcome_of(action, reaction.reply)
        handoff.slots.remember(role, reaction.memory)
        fact = handoff.workload.fact_after(action)
        if self._acknowledged_on_send(action):
            # Acknowledged as it was sent: undone work can only be reported as `Failed`.
            outcome = None
            if reaction.reply is WorkerReply.FAILED:
                fact = HandoffFact.Failed(handoff.handoff_id)
                self.world.at(self.world.latency(), handoff, Call.of_fact(fact))
        if outcome is not None:
            self._acknowledge(handoff, item, outcome)
        if fact is not None and reaction.reply is WorkerReply.DONE:
            self.world.at(self.world.fact_delay(handoff, type(action)), handoff, Call.of_fact(fact))

    def _acknowledge(
        self, handoff: H, item: IssuedHandoffAction, outcome: HandoffActionOutcome
    ) -> None:
        cancel = isinstance(
            item.action, (HandoffAction.CancelSource, HandoffAction.CancelDestination)
        )
        if cancel and self.world.fault(Fault.CLEANUP_FAILURE):
            self.world.send(handoff, item.id, _FAILED)
        self.world.send(handoff, item.id, outcome)

    def refused(self, handoff: H, call: Call, error: HandoffError) -> None:
        """A fact refused as early (its acknowledgement still on its way) is reported again.

        Only while something else of the handoff is on its way: else no acknowledgement is
        coming, and the fact is dropped.
        """
        if isinstance(error, OutOfOrderFactError) and call.fact is not None and handoff.pending:
            self.world.at(self.world.latency(), handoff, call)

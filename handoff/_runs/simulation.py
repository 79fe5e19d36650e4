"""A discrete-event simulation: many handoffs, simulated workers, injected faults, checks.

A virtual clock orders every acknowledgement and fact.  A simulated source and destination
acknowledge the coordinator's actions after random latencies and report the facts those
actions lead to (`TransferCompleted` after the issued delay); with `SimulationConfig.system`
they are the system review's two workers, shared by every live handoff
(`handoff._runs.simulated_workers`).  With probability `fault_rate` at each opportunity a
fault is injected.  A handoff with nothing left in flight is checked (completed, no owner
leaked, the workers' slots as its completion says) and forgotten: memory is bounded by the
concurrency.  One that never ends is cut as the review cuts a run, and fails.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TypeVar

import attrs

from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._runs.simulated_workers import (
    Channel,
    Event,
    Resent,
    SessionEnds,
    SimulatedWorkers,
    Waited,
    ending,
)
from handoff._runs.simulation_report import HandoffRecord, SimulationReport
from handoff._runs.trace import Entry
from handoff._system.bound import loop, overrun
from handoff._system.call import Call, Coordinator
from handoff._system.config import System
from handoff._system.faults import SIMULATED, Fault
from handoff._system.properties import LEAKS, Finding, Key
from handoff._system.runtime import CANCELS, DONE_OUTCOMES, Workload, acknowledgement
from handoff._system.workers import Message, Role
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
)

__all__ = [
    "FAULTS",
    "Coordinator",
    "HandoffRecord",
    "SimulationConfig",
    "SimulationReport",
    "shipped_chart",
    "simulate",
]

FAULTS = SIMULATED
"""Every fault the simulation injects, each with probability `fault_rate` at its chance."""


T = TypeVar("T")

MakeCoordinator = Callable[[HandoffId, HandoffOrder, float], Coordinator]

_TIMING = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 2048, 131_072, 50.0)
_INJECTED = Fault.FAILED_OUTCOME.outcome
_ENDINGS = tuple(
    (fault, fact)
    for fault in SIMULATED
    if (fact := fault.fact) is not None and fault is not Fault.CANCELLATION_AFTER_SUCCESS
)
"""The faults that end a handoff at any time, drawn as it begins, with the terminal fact each
reports (a cancel after success is drawn when the handoff succeeds)."""
_DEADLINE = Call.of_fact(HandoffFact.TimedOut(HandoffId(uuid.UUID(int=0))))
"""A handoff's deadline (`System.deadline`), as its event: known by identity, and made the
handoff's own `TimedOut` when it fires before the handoff completed."""


def _as_tuple(orders: Iterable[HandoffOrder]) -> tuple[HandoffOrder, ...]:
    # A typed converter, so callers may pass any iterable of orders and type checkers agree.
    return tuple(orders)


@attrs.frozen
class SimulationConfig:
    """What to simulate; times are virtual milliseconds."""

    handoffs: int = attrs.field(default=10_000, validator=attrs.validators.ge(1))
    concurrency: int = attrs.field(default=100, validator=attrs.validators.ge(1))
    fault_rate: float = attrs.field(default=0.05)
    seed: int = 0
    orders: tuple[HandoffOrder, ...] = attrs.field(
        default=tuple(HandoffOrder),
        converter=_as_tuple,
        validator=attrs.validators.deep_iterable(
            attrs.validators.instance_of(HandoffOrder), attrs.validators.min_len(1)
        ),
    )
    """The orders handoffs are drawn from, uniformly."""
    fallback_transfer_delay_ms: float = 1.0
    record_calls: bool = False
    """Keep every handoff's calls while it is in flight, for `HandoffRecord.calls`."""
    system: System | None = None
    """Carry each action to the source or the destination worker of this system, shared by
    every live handoff: their contract, delivery, slots, the faults of `faults.NETWORK`
    injected too (each at most `System.budget` times a handoff) and when work is
    acknowledged.  The review's bounds (`faults`, `concurrency`) are the review's: the
    simulation injects at `fault_rate` and keeps `concurrency` handoffs in flight."""

    @fault_rate.validator
    def _check_rate(self, attribute: attrs.Attribute[float], value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {value!r}")


@attrs.define
class _Handoff:
    """One handoff in flight: its coordinator and what its workers have seen."""

    number: int
    """Its place among the handoffs: the workers know its request by it."""
    handoff_id: HandoffId
    order: HandoffOrder
    coordinator: Coordinator
    workload: Workload
    pending: int = 0
    issued: dict[int, HandoffAction] = attrs.Factory(dict)
    """Every action issued so far, by id."""
    done: set[type] = attrs.Factory(set)
    """Kinds of action acknowledged with a fitting, non-failed outcome."""
    completions: list[HandoffCompletion | None] = attrs.Factory(list)
    transfer_delay_ms: float = 0.0
    calls: list[Entry] | None = None
    spent: Counter[Fault] = attrs.Factory(Counter)
    """The injected faults (`--faults`) this handoff suffered, by kind."""
    restarts: int = 0
    """How many times the destination had restarted when the handoff began."""
    issued_bits: int = 0
    """Bit n set: action n was issued."""
    performed_bits: int = 0
    """Bit n set: a worker performed action n."""
    told: set[Role] = attrs.Factory(set)
    """The workers whose freeing the coordinator was told of."""
    findings: list[Finding] = attrs.Factory(list)
    """What its run broke so far, judged as the review judges a move."""
    abandoned: bool = False
    """Its session ended outside the chart (`System.abandons`): no more calls are made."""
    target: int = 0
    """The destination slot its reservation took (`Remembered.where`; 0: none yet)."""
    runaway: str | None = None  # why it was cut as one that never ends: no more calls are made
    retries: int = 0
    """Failed cleanups the runtime retried for it (`bound.retried_too_often`)."""


class _World:
    """The virtual clock, the event queue and the simulated workers' behaviour."""

    def __init__(
        self, config: SimulationConfig, make: MakeCoordinator, report: SimulationReport
    ) -> None:
        self.config = config
        self.make = make
        self.report = report
        self.rng = random.Random(config.seed)
        self.queue: list[tuple[float, int, _Handoff, Event, Channel | None]] = []
        self.sequence = 0
        self.now = 0.0
        self.channels: dict[Hashable, float] = {}
        """With `fifo`: when each worker channel's last message arrives."""
        self.fifo = config.system is not None and config.system.fifo
        self.workers = None if config.system is None else SimulatedWorkers(config.system, self)
        self.abandons = config.system is not None and config.system.abandons
        """The runtime ends sessions outside the chart instead of reporting terminal facts."""

    # -- scheduling --------------------------------------------------------------------

    def at(
        self,
        delay: float,
        handoff: _Handoff,
        call: Event,
        channel: Channel | None = None,
    ) -> float:
        """Deliver `call` after `delay` (on a worker's `channel`: with `fifo`, never before
        what was sent on it earlier; ties go in the order sent); when it arrives."""
        when = self.now + delay
        if channel is not None and self.fifo:
            when = max(when, self.channels.get(channel, 0.0))
            self.channels[channel] = when
        self.sequence += 1
        handoff.pending += 1
        heapq.heappush(self.queue, (when, self.sequence, handoff, call, channel))
        return when

    def fault(self, kind: Fault) -> bool:
        if self.rng.random() < self.config.fault_rate:
            self.report.faults[kind] += 1
            return True
        return False

    def latency(self) -> float:
        return self.rng.expovariate(1.0)  # mean 1 ms

    def uniform(self, low: float, high: float) -> float:
        return self.rng.uniform(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)

    # -- a handoff's life ----------------------------------------------------------------

    def begin(self, number: int) -> None:
        order = self.rng.choice(self.config.orders)
        handoff_id = HandoffId(uuid.UUID(int=number + 1))
        coordinator = self.make(handoff_id, order, self.config.fallback_transfer_delay_ms)
        # Each request lacks its own number of prompt tokens at the destination.
        workload = Workload(_TIMING, self.rng.randrange(0, 2049))
        handoff = _Handoff(number, handoff_id, order, coordinator, workload)
        if self.workers is not None:
            self.workers.begin(handoff)
        if self.config.record_calls:
            handoff.calls = []
        self.at(0.0, handoff, Call.start())
        for fault, fact in _ENDINGS:
            if self.fault(fault):
                # A deadline or a client's cancel: reported, or the session ends untold.
                self.at(self.rng.uniform(0, 40), handoff, ending(fact(handoff_id), self.abandons))
        system = self.config.system
        if system is not None and system.deadline is not None:
            self.at(system.deadline, handoff, _DEADLINE)

    def deliver(self, handoff: _Handoff, call: Event, channel: Channel | None = None) -> None:
        handoff.pending -= 1
        workers = self.workers
        if call is _DEADLINE:  # the runtime's timer: nothing once the handoff completed
            if handoff.coordinator.is_complete:
                return
            call = ending(HandoffFact.TimedOut(handoff.handoff_id), self.abandons)
        if isinstance(call, Resent):
            self.at(self.latency(), handoff, call.item, call.channel)
            return
        if isinstance(call, SessionEnds | Waited):
            assert workers is not None  # only a runtime with workers ends sessions or waits
            if isinstance(call, Waited):
                workers.arrive(handoff, call.message, waited=True)
            elif not handoff.coordinator.is_complete:
                workers.end_session(handoff)
            return
        if channel is not None and workers is not None:
            if isinstance(call, Call) and not channel[1]:
                workers.replied(handoff, call, channel)  # delivered or lost: it arrived
            if not workers.struck(handoff, call, channel):
                return  # lost on the wire
        if isinstance(call, Message):
            assert workers is not None  # only the workers' actions travel as messages
            workers.arrive(handoff, call)
            return
        if handoff.runaway is not None or handoff.abandoned:
            return  # no more calls: cut as endless, or its session is over
        self.report.calls += 1
        try:
            issued = call.send(handoff.coordinator)
        except HandoffError as error:
            self.report.refusals[type(error).__name__] += 1
            if handoff.calls is not None:
                handoff.calls.append(Entry(call, expect_error=str(error)))
            if self.workers is not None:
                self.workers.refused(handoff, call, error)
            else:
                self.after_refusal(handoff, call)
            return
        if handoff.calls is not None:
            handoff.calls.append(Entry(call, expect=tuple(issued)))
        if (runaway := overrun(len(handoff.issued) + len(issued))) is not None:
            handoff.runaway = f"{runaway}; the loop: {loop(call, issued, handoff.issued.values())}"
            return
        if call.outcome is not None:
            assert call.action_id is not None
            self.acknowledged(handoff, call.action_id, call.outcome)
        for item in issued:
            self.perform(handoff, item)

    def perform(self, handoff: _Handoff, item: IssuedHandoffAction) -> None:
        """The workers carry out an issued action and will acknowledge it."""
        action = item.action
        kind = type(action)
        handoff.issued[item.id.value] = action
        handoff.issued_bits |= 1 << item.id.value
        if isinstance(action, HandoffAction.StartTransfer):
            handoff.transfer_delay_ms = action.delay_ms
        if kind is HandoffAction.Complete:
            handoff.completions.append(handoff.coordinator.completion)
            success = handoff.coordinator.completion is HandoffCompletion.SUCCESS
            # A runtime ending sessions outside the chart never reports Canceled.
            if success and not self.abandons and self.fault(Fault.CANCELLATION_AFTER_SUCCESS):
                fact = HandoffFact.Canceled(handoff.handoff_id)
                self.at(self.rng.uniform(0, 5), handoff, Call.of_fact(fact))
            return
        if self.workers is not None and self.workers.carry(handoff, item):
            return
        if kind in CANCELS:
            outcome = self.rng.choice(DONE_OUTCOMES)
            if self.fault(Fault.CLEANUP_FAILURE):
                self.send(handoff, item.id, _INJECTED)
        elif self.fault(Fault.FAILED_OUTCOME):
            outcome = _INJECTED
        else:
            outcome = acknowledgement(action)
        self.send(handoff, item.id, outcome)

    def send(
        self,
        handoff: _Handoff,
        action_id: HandoffActionId,
        outcome: HandoffActionOutcome,
        channel: Channel | None = None,
    ) -> None:
        delay = self.latency()
        if self.fault(Fault.REORDERED_ACKNOWLEDGEMENT):
            delay += self.rng.uniform(5, 30)
        call = Call.of_outcome(action_id, outcome)
        self.at(delay, handoff, call, channel)
        if self.fault(Fault.DUPLICATE_ACKNOWLEDGEMENT):
            self.at(delay + self.latency(), handoff, call, channel)

    def acknowledged(
        self, handoff: _Handoff, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> None:
        """An accepted acknowledgement: the worker goes on to report what follows from it."""
        action = handoff.issued.get(action_id.value)
        if action is not None and self.workers is not None:
            self.workers.told(handoff, action, outcome)
        if action is None or outcome.is_failed or type(action) in handoff.done:
            return
        kind = type(action)
        handoff.done.add(kind)
        fact = handoff.workload.fact_after(action)
        if fact is not None and self.workers is None:  # a worker reports its facts itself
            self.at(self.fact_delay(handoff, kind), handoff, Call.of_fact(fact))

    def fact_delay(self, handoff: _Handoff, kind: type) -> float:
        """How long after its acknowledgement an action's fact arrives."""
        if kind is HandoffAction.SubmitPrefill:
            return self.rng.uniform(1, 10)  # prefill takes a while
        if kind is HandoffAction.StartTransfer:
            return handoff.transfer_delay_ms
        return self.latency()

    def after_refusal(self, handoff: _Handoff, call: Call) -> None:
        """A refused cleanup failure is retried: the worker reports the cancel done later."""
        action_id = call.action_id
        if (
            call.outcome is _INJECTED
            and action_id is not None
            and type(handoff.issued.get(action_id.value)) in CANCELS
        ):
            self.at(self.latency(), handoff, Call.of_outcome(action_id, DONE_OUTCOMES[0]))


def shipped_chart(handoff_id: HandoffId, order: HandoffOrder, delay: float) -> Coordinator:
    """A coordinator of `order`'s shipped chart, compiled from its class: an edited chart is
    what the simulation runs, never the generated start-up table."""
    from handoff._chart.shipped import CHARTS

    return HandoffCoordinatorCore(handoff_id, order, delay, chart=CHARTS[order])


_Keep = Callable[[HandoffRecord], None]


def simulate(
    config: SimulationConfig,
    make: MakeCoordinator = shipped_chart,
    progress: Callable[[int], None] | None = None,
    failed: Callable[[HandoffRecord], None] | None = None,
) -> SimulationReport:
    """Run the simulation; `progress(finished)` is called every 1% of handoffs.  Each handoff
    failing a check goes to `failed` as it finishes, or without one to `report.violations`."""
    report = SimulationReport()
    world = _World(config, make, report)
    started = 0
    in_flight = 0
    step = max(config.handoffs // 100, 1)
    while started < min(config.concurrency, config.handoffs):
        world.begin(started)
        started += 1
        in_flight += 1
    while world.queue:
        world.now, _, handoff, call, channel = heapq.heappop(world.queue)
        world.deliver(handoff, call, channel)
        if handoff.pending:
            continue
        _finish(world, handoff, report, failed or report.violations.append)
        in_flight -= 1
        if progress is not None and report.handoffs % step == 0:
            progress(report.handoffs)
        if started < config.handoffs:
            world.begin(started)
            started += 1
            in_flight += 1
    report.virtual_ms = world.now
    assert in_flight == 0
    if world.workers is not None:
        held = world.workers.held()
        report.still_held = sum(held.values())
        # Nothing of a finished handoff is in flight: no slot is taken for it after it was
        # settled, and a SUCCESS's destination slot left with it, so every slot still held is
        # one its handoff was settled as holding against its completion.
        assert set(held) <= world.workers.leaked, sorted(set(held) - world.workers.leaked)
        assert report.still_held <= report.worker_slots
    return report


def _finish(world: _World, handoff: _Handoff, report: SimulationReport, keep: _Keep) -> None:
    config = world.config
    report.handoffs += 1
    if handoff.runaway is not None:
        report.endless += 1
        report.runaway = report.runaway or handoff.runaway
    findings = [*handoff.findings, *_findings(handoff)]
    lost: list[Finding] = []  # broken, though nothing leaked
    final = handoff.coordinator.completion
    if world.workers is not None:
        ended = final if handoff.runaway is None and handoff.coordinator.is_complete else None
        settled = world.workers.settle(handoff, ended)
        findings.extend(settled.findings)
        report.worker_slots += settled.held
        if settled.lost is not None:
            report.lost += 1
            lost.append(settled.lost)
    report.completions[final.name if final is not None else "none"] += 1
    report.reopened += len(handoff.completions) > 1
    if handoff.abandoned and not handoff.coordinator.is_complete:
        report.abandoned += 1
    elif not handoff.coordinator.is_complete:
        report.incomplete += 1
    if any(finding.key in LEAKS for finding in findings):
        report.leaks += 1
    findings += lost
    report.broken.update({finding.key for finding in findings})
    if findings:
        keep(
            HandoffRecord(
                handoff.handoff_id,
                handoff.order,
                config.fallback_transfer_delay_ms,
                findings,
                handoff.calls or [],
            )
        )


def _findings(handoff: _Handoff) -> Iterator[Finding]:
    """What a finished handoff's own run broke, judged as the review judges the chart: it ends
    (Bound), completes (W4), completes once (S4) and frees or hands over every owner (S5)."""
    coordinator = handoff.coordinator
    if handoff.runaway is not None:
        yield Finding.of(Key.BOUND, f"never ends: {handoff.runaway}")
    if handoff.abandoned and not coordinator.is_complete:
        return  # its runtime ended it outside the chart: no completion is asked of it
    if not coordinator.is_complete:
        yield Finding.of(
            Key.DELIVERIES_COMPLETE, "nothing of it is in flight and it never completed"
        )
        return
    issued = {type(action) for action in handoff.issued.values()}
    done = handoff.done
    final = coordinator.completion
    if handoff.completions.count(HandoffCompletion.SUCCESS) > 1 or len(handoff.completions) > 2:
        yield Finding.of(Key.ONE_COMPLETE, f"completed {len(handoff.completions)} times")
    if HandoffAction.SubmitPrefill in issued and not done & {
        HandoffAction.ReleaseSource,
        HandoffAction.CancelSource,
    }:
        yield Finding.of(Key.OWNERS_FREED, "the source's KV was never released nor canceled")
    if HandoffAction.ReserveDestination in issued:
        if final is HandoffCompletion.CANCELED and HandoffAction.CancelDestination not in done:
            yield Finding.of(Key.OWNERS_FREED, "canceled without canceling the destination's slot")
        if final is HandoffCompletion.SUCCESS and HandoffAction.ActivateDestination not in done:
            yield Finding.of(Key.OWNERS_FREED, "succeeded without activating the destination")

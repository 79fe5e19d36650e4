"""A discrete-event simulation: many handoffs, simulated workers, injected faults, checks.

A virtual clock orders every acknowledgement and fact.  Each handoff gets a simulated
source and destination that acknowledge the coordinator's actions after random latencies
and report the facts those actions lead to (`TransferCompleted` after the issued delay).
With probability `fault_rate` at each opportunity a fault is injected.  When a handoff has
nothing left in flight it is checked — completed, and no owner leaked — and forgotten, so
memory is bounded by the concurrency, not by the number of handoffs.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import attrs

from handoff._binding import FITTING_OUTCOME
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._timing import HandoffTransferTiming
from handoff._values import (
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
    "simulate",
]

FAULTS = (
    "failed outcome",
    "timeout",
    "cancellation",
    "cancellation after success",
    "duplicate acknowledgement",
    "reordered acknowledgement",
    "cleanup failure (retried)",
)
"""Every fault the simulation injects, each with probability `fault_rate` at its chance."""


class Coordinator(Protocol):
    """What the simulation needs of a coordinator (the real one, or a test's fake)."""

    @property
    def is_complete(self) -> bool: ...

    @property
    def completion(self) -> HandoffCompletion | None: ...

    def start(self) -> list[IssuedHandoffAction]: ...

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]: ...

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]: ...


MakeCoordinator = Callable[[HandoffId, HandoffOrder, float], Coordinator]

_CANCELS = (HandoffAction.CancelSource, HandoffAction.CancelDestination)
_DONE = (HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP)
_INJECTED = HandoffActionOutcome.failed("injected fault")


@attrs.frozen
class SimulationConfig:
    """What to simulate; times are virtual milliseconds."""

    handoffs: int = attrs.field(default=10_000, validator=attrs.validators.ge(0))
    concurrency: int = attrs.field(default=100, validator=attrs.validators.ge(1))
    fault_rate: float = attrs.field(default=0.05)
    seed: int = 0
    orders: tuple[HandoffOrder, ...] = attrs.field(
        default=tuple(HandoffOrder),
        converter=tuple,
        validator=attrs.validators.deep_iterable(
            attrs.validators.instance_of(HandoffOrder), attrs.validators.min_len(1)
        ),
    )
    """The orders handoffs are drawn from, uniformly."""
    fallback_transfer_delay_ms: float = 1.0
    record_calls: bool = False
    """Keep every handoff's calls while it is in flight, for `HandoffRecord.calls`."""

    @fault_rate.validator
    def _check_rate(self, attribute: attrs.Attribute[float], value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {value!r}")


@attrs.define
class HandoffRecord:
    """A finished handoff that violated a check, with the calls that led there."""

    handoff_id: HandoffId
    order: HandoffOrder
    fallback_transfer_delay_ms: float
    problems: list[str]
    calls: list[tuple[str, Any, Any]]
    """(call, argument, result) in order: ("start", None, actions), ("fact", fact, actions),
    ("outcome", (action_id, outcome), actions); a refused call's result is the error."""


@attrs.define
class SimulationReport:
    """Totals of one simulation run."""

    handoffs: int = 0
    completions: Counter[str] = attrs.Factory(Counter)
    """Handoffs by final completion."""
    reopened: int = 0
    """Handoffs that succeeded, were canceled after success and cleaned up again."""
    faults: Counter[str] = attrs.Factory(Counter)
    leaks: int = 0
    incomplete: int = 0
    calls: int = 0
    refusals: Counter[str] = attrs.Factory(Counter)
    """Refused calls by error class: the runtime's late or conflicting reports."""
    virtual_ms: float = 0.0
    violations: list[HandoffRecord] = attrs.Factory(list)

    @property
    def ok(self) -> bool:
        """Every handoff completed and no owner leaked."""
        return self.leaks == 0 and self.incomplete == 0


@attrs.define
class _Handoff:
    """One handoff in flight: its coordinator and what its workers have seen."""

    handoff_id: HandoffId
    order: HandoffOrder
    coordinator: Coordinator
    pending: int = 0
    issued: dict[int, type] = attrs.Factory(dict)
    done: set[type] = attrs.Factory(set)
    """Kinds of action acknowledged with a fitting, non-failed outcome."""
    completions: list[HandoffCompletion | None] = attrs.Factory(list)
    transfer_delay_ms: float = 0.0
    calls: list[tuple[str, Any, Any]] | None = None


class _World:
    """The virtual clock, the event queue and the simulated workers' behaviour."""

    def __init__(
        self, config: SimulationConfig, make: MakeCoordinator, report: SimulationReport
    ) -> None:
        self.config = config
        self.make = make
        self.report = report
        self.rng = random.Random(config.seed)
        self.queue: list[tuple[float, int, _Handoff, str, Any]] = []
        self.sequence = 0
        self.now = 0.0
        self.timing = HandoffTransferTiming(
            KvTransferTimingMode.DESTINATION_MISSING, 2048, 131_072, 50.0
        )

    # -- scheduling --------------------------------------------------------------------

    def at(self, delay: float, handoff: _Handoff, kind: str, payload: Any) -> None:
        self.sequence += 1
        handoff.pending += 1
        heapq.heappush(self.queue, (self.now + delay, self.sequence, handoff, kind, payload))

    def fault(self, kind: str) -> bool:
        if self.rng.random() < self.config.fault_rate:
            self.report.faults[kind] += 1
            return True
        return False

    def latency(self) -> float:
        return self.rng.expovariate(1.0)  # mean 1 ms

    # -- a handoff's life ----------------------------------------------------------------

    def begin(self, number: int) -> None:
        order = self.rng.choice(self.config.orders)
        handoff_id = HandoffId(uuid.UUID(int=number + 1))
        coordinator = self.make(handoff_id, order, self.config.fallback_transfer_delay_ms)
        handoff = _Handoff(handoff_id, order, coordinator)
        if self.config.record_calls:
            handoff.calls = []
        self.at(0.0, handoff, "start", None)
        if self.fault("timeout"):
            self.at(self.rng.uniform(0, 40), handoff, "fact", HandoffFact.TimedOut(handoff_id))
        if self.fault("cancellation"):
            self.at(self.rng.uniform(0, 40), handoff, "fact", HandoffFact.Canceled(handoff_id))

    def deliver(self, handoff: _Handoff, kind: str, payload: Any) -> None:
        handoff.pending -= 1
        coordinator = handoff.coordinator
        self.report.calls += 1
        try:
            if kind == "start":
                issued = coordinator.start()
            elif kind == "fact":
                issued = coordinator.on_fact(payload)
            else:
                issued = coordinator.on_action_outcome(*payload)
        except HandoffError as error:
            self.report.refusals[type(error).__name__] += 1
            if handoff.calls is not None:
                handoff.calls.append((kind, payload, error))
            self.after_refusal(handoff, kind, payload)
            return
        if handoff.calls is not None:
            handoff.calls.append((kind, payload, issued))
        if kind == "outcome":
            self.acknowledged(handoff, *payload)
        for item in issued:
            self.perform(handoff, item)

    def perform(self, handoff: _Handoff, item: IssuedHandoffAction) -> None:
        """The workers carry out an issued action and will acknowledge it."""
        action = item.action
        kind = type(action)
        handoff.issued[item.id.value] = kind
        if isinstance(action, HandoffAction.StartTransfer):
            handoff.transfer_delay_ms = action.delay_ms
        if kind is HandoffAction.Complete:
            handoff.completions.append(handoff.coordinator.completion)
            if handoff.coordinator.completion is HandoffCompletion.SUCCESS and self.fault(
                "cancellation after success"
            ):
                fact = HandoffFact.Canceled(handoff.handoff_id)
                self.at(self.rng.uniform(0, 5), handoff, "fact", fact)
            return
        if kind in _CANCELS:
            outcome = self.rng.choice(_DONE)
            if self.fault("cleanup failure (retried)"):
                self.send(handoff, item.id, _INJECTED)
        elif self.fault("failed outcome"):
            outcome = _INJECTED
        else:
            outcome = FITTING_OUTCOME[kind]
        self.send(handoff, item.id, outcome)

    def send(self, handoff: _Handoff, action_id: HandoffActionId, outcome: Any) -> None:
        delay = self.latency()
        if self.fault("reordered acknowledgement"):
            delay += self.rng.uniform(5, 30)
        self.at(delay, handoff, "outcome", (action_id, outcome))
        if self.fault("duplicate acknowledgement"):
            self.at(delay + self.latency(), handoff, "outcome", (action_id, outcome))

    def acknowledged(
        self, handoff: _Handoff, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> None:
        """An accepted acknowledgement: the worker goes on to report what follows from it."""
        kind = handoff.issued.get(action_id.value)
        if kind is None or outcome.is_failed or kind in handoff.done:
            return
        handoff.done.add(kind)
        hid = handoff.handoff_id
        if kind is HandoffAction.SubmitPrefill:
            self.at(
                self.rng.uniform(1, 10), handoff, "fact", HandoffFact.SourceHeld(hid, self.timing)
            )
        elif kind is HandoffAction.ReserveDestination:
            tokens = self.rng.randrange(0, 2049)
            self.at(self.latency(), handoff, "fact", HandoffFact.DestinationReserved(hid, tokens))
        elif kind is HandoffAction.StartTransfer:
            fact = HandoffFact.TransferCompleted(hid)
            self.at(handoff.transfer_delay_ms, handoff, "fact", fact)

    def after_refusal(self, handoff: _Handoff, kind: str, payload: Any) -> None:
        """A refused cleanup failure is retried: the worker reports the cancel done later."""
        if kind == "outcome" and payload[1] is _INJECTED:
            action_kind = handoff.issued.get(payload[0].value)
            if action_kind in _CANCELS:
                self.at(self.latency(), handoff, "outcome", (payload[0], _DONE[0]))


def simulate(
    config: SimulationConfig,
    make: MakeCoordinator = HandoffCoordinatorCore,
    progress: Callable[[int], None] | None = None,
) -> SimulationReport:
    """Run the simulation; `progress(finished)` is called every 1% of handoffs."""
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
        world.now, _, handoff, kind, payload = heapq.heappop(world.queue)
        world.deliver(handoff, kind, payload)
        if handoff.pending:
            continue
        _finish(handoff, config, report)
        in_flight -= 1
        if progress is not None and report.handoffs % step == 0:
            progress(report.handoffs)
        if started < config.handoffs:
            world.begin(started)
            started += 1
            in_flight += 1
    report.virtual_ms = world.now
    assert in_flight == 0
    return report


def _finish(handoff: _Handoff, config: SimulationConfig, report: SimulationReport) -> None:
    report.handoffs += 1
    problems = list(_problems(handoff))
    final = handoff.coordinator.completion
    report.completions[final.name if final is not None else "none"] += 1
    report.reopened += len(handoff.completions) > 1
    if not handoff.coordinator.is_complete:
        report.incomplete += 1
    if any("leaked" in problem for problem in problems):
        report.leaks += 1
    if problems:
        report.violations.append(
            HandoffRecord(
                handoff.handoff_id,
                handoff.order,
                config.fallback_transfer_delay_ms,
                problems,
                handoff.calls or [],
            )
        )


def _problems(handoff: _Handoff) -> Iterator[str]:
    """Every check a finished handoff fails, in words."""
    coordinator = handoff.coordinator
    if not coordinator.is_complete:
        yield "never completed"
        return
    issued = set(handoff.issued.values())
    done = handoff.done
    final = coordinator.completion
    if handoff.completions.count(HandoffCompletion.SUCCESS) > 1 or len(handoff.completions) > 2:
        yield f"completed {len(handoff.completions)} times"
    if HandoffAction.SubmitPrefill in issued and not done & {
        HandoffAction.ReleaseSource,
        HandoffAction.CancelSource,
    }:
        yield "leaked the source's KV: never released nor canceled"
    if HandoffAction.ReserveDestination in issued:
        if final is HandoffCompletion.CANCELED and HandoffAction.CancelDestination not in done:
            yield "leaked the destination's slot: canceled without CancelDestination"
        if final is HandoffCompletion.SUCCESS and HandoffAction.ActivateDestination not in done:
            yield "leaked the destination's slot: succeeded without activation"

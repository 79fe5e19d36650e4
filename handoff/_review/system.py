"""System review: explore every configuration of a coordinator, its workers and the messages
in flight between them (`handoff._review.system_model`), and judge the system properties.

Exploration is breadth-first, so each counterexample is a shortest run.  The safety
properties W1-W3 are judged at each move and at each quiet configuration; the liveness
properties W4 and W5 over the explored graph, under the fairness that every message in
flight is eventually delivered (a refused early fact again and again, until it is taken):
a run that suffers no further fault then ends once nothing is in flight, so every such end
must be a completion (W4), and after a terminal fact a CANCELED one (W5).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence

import attrs

from handoff._coordinator import HandoffCoordinatorCore
from handoff._review.system_model import SystemModel, completion_finding
from handoff._review.system_properties import (
    MAX_CONFIGURATIONS,
    SYSTEM_PROPERTIES,
    SystemCounterexample,
    SystemProperty,
    SystemVerdict,
)
from handoff._review.system_state import (
    SystemFinding,
    SystemKey,
    SystemOptions,
    SystemState,
    SystemStep,
    SystemStepKind,
)
from handoff._runs.workers import WorkerContract
from handoff._table import CompiledChart
from handoff._values import HandoffCompletion, HandoffId, HandoffOrder

__all__ = [
    "SYSTEM_PROPERTIES",
    "SystemCounterexample",
    "SystemKey",
    "SystemProperty",
    "SystemReview",
    "SystemVerdict",
    "review_system",
]


@attrs.frozen
class SystemReview:
    """The review of one chart in its system: what was explored and each property's verdict."""

    chart: CompiledChart
    options: SystemOptions
    handoff_id: HandoffId
    fallback_transfer_delay_ms: float
    configurations: int
    moves: int
    verdicts: tuple[SystemVerdict, ...]
    seconds: float
    origin: str | None = None
    """How the chart was named, `MODULE:NAME`, when it is not an order's shipped chart."""

    @property
    def name(self) -> str:
        """The chart's name."""
        return self.chart.name

    @property
    def order(self) -> HandoffOrder:
        """The chart's order."""
        return self.chart.order

    @property
    def contract(self) -> WorkerContract:
        """The workers' contract."""
        return self.options.contract

    @property
    def holds(self) -> bool:
        """Whether every property holds."""
        return all(verdict.holds for verdict in self.verdicts)

    def verdict(self, key: SystemKey | str) -> SystemVerdict:
        """The verdict of property `key` (a `SystemKey` or its short name, "W1", …)."""
        key = key if isinstance(key, SystemKey) else SystemKey(key)
        return next(verdict for verdict in self.verdicts if verdict.prop.key is key)

    def failures(self) -> tuple[SystemVerdict, ...]:
        """The verdicts of the properties that do not hold."""
        return tuple(verdict for verdict in self.verdicts if not verdict.holds)


def review_system(
    chart: CompiledChart,
    options: SystemOptions,
    *,
    fallback_transfer_delay_ms: float = 0.0,
    origin: str | None = None,
) -> SystemReview:
    """Explore every configuration of `chart`'s coordinator in its system; judge it."""
    began = time.perf_counter()
    model = SystemModel(chart, options, fallback_transfer_delay_ms=fallback_transfer_delay_ms)
    explorer = _SystemExplorer(model)
    explorer.explore()
    return SystemReview(
        chart=chart,
        options=options,
        handoff_id=model.handoff_id,
        fallback_transfer_delay_ms=fallback_transfer_delay_ms,
        configurations=len(explorer.states),
        moves=explorer.moves,
        verdicts=explorer.verdicts(),
        seconds=time.perf_counter() - began,
        origin=origin,
    )


class _End(enum.IntFlag):
    """How the fault-free runs from a configuration may end."""

    SUCCESS = 1
    CANCELED = 2
    STUCK = 4
    """Nothing more can be delivered and the handoff is not complete."""


@attrs.define
class _Tally:
    checked: int = 0
    violations: int = 0
    first: tuple[int, tuple[SystemStep, ...], str] | None = None
    """Where the first violation was found: the configuration, the moves after it, the words."""


class _SystemExplorer:
    """Breadth-first exploration of the system configurations, keeping what verdicts need."""

    def __init__(self, model: SystemModel) -> None:
        self.model = model
        coordinator, state = model.root()
        self.coordinators: list[HandoffCoordinatorCore] = [coordinator]
        self.states: list[SystemState] = [state]
        self.index = {state: 0}
        self.parents: list[tuple[int, SystemStep] | None] = [None]
        self.deliveries: list[list[int]] = []
        self.delivery_steps: list[list[SystemStep]] = []
        """Each configuration's fault-free successors (refused early facts left out)."""
        self.terminal: list[int] = []
        """The configurations a terminal fact led to."""
        self.tallies = {key: _Tally() for key in SystemKey}
        self.moves = 0
        self.cut = False
        self.cycles: set[int] = set()

    def explore(self) -> None:
        node = 0
        while node < len(self.states):
            self._expand(node)
            node += 1

    def _expand(self, node: int) -> None:
        coordinator, state = self.coordinators[node], self.states[node]
        self._judge_quiet(node, coordinator, state)
        following: list[int] = []
        steps: list[SystemStep] = []
        for move in self.model.moves(coordinator, state):
            self.moves += 1
            step = move.step
            if step.call is not None:
                self.tallies[SystemKey.ERRORS].checked += 1
            if step.kind in (SystemStepKind.TO_WORKER, SystemStepKind.WORKER_FAILS):
                self.tallies[SystemKey.ONLY_ISSUED_WORK].checked += 1
            self.tallies[SystemKey.NO_SLOT_AFTER_FREED].checked += 1
            for finding in move.findings:
                self._note(finding, node, step)
            if move.loop or move.state is None or move.coordinator is None:
                continue
            target = self._reach(node, step, move.coordinator, move.state)
            if target is None:
                continue
            if step.kind is SystemStepKind.FAULT:
                self.terminal.append(target)
            elif not move.fault:
                following.append(target)
                steps.append(step)
        self.deliveries.append(following)
        self.delivery_steps.append(steps)

    def _judge_quiet(
        self, node: int, coordinator: HandoffCoordinatorCore, state: SystemState
    ) -> None:
        if not (state.quiet and state.watch.started and coordinator.is_complete):
            return
        tally = self.tallies[SystemKey.SLOTS_AT_COMPLETION]
        tally.checked += 1
        words = completion_finding(state, coordinator.completion)
        if words is not None:
            self._note(SystemFinding(SystemKey.SLOTS_AT_COMPLETION, words), node, None)

    def _reach(
        self, node: int, step: SystemStep, coordinator: HandoffCoordinatorCore, state: SystemState
    ) -> int | None:
        found = self.index.get(state)
        if found is not None:
            return found
        if len(self.states) >= MAX_CONFIGURATIONS:
            if not self.cut:
                self.cut = True
                words = f"cut off: the exploration reached its guard of {MAX_CONFIGURATIONS:,}"
                self._note(SystemFinding(SystemKey.BOUND, words), node, step)
            return None
        self.index[state] = len(self.states)
        self.coordinators.append(coordinator)
        self.states.append(state)
        self.parents.append((node, step))
        return len(self.states) - 1

    def _note(
        self,
        finding: SystemFinding,
        node: int,
        step: SystemStep | None,
        tail: Sequence[SystemStep] = (),
    ) -> None:
        tally = self.tallies[finding.key]
        tally.violations += 1
        if tally.first is None:
            after = (step,) if step is not None else ()
            tally.first = (node, (*after, *tail), finding.words)

    # -- judging -----------------------------------------------------------------------

    def verdicts(self) -> tuple[SystemVerdict, ...]:
        """Each property's verdict, in the order of `SYSTEM_PROPERTIES`."""
        self._liveness()
        bound = self.tallies[SystemKey.BOUND]
        bound.checked = len(self.states)
        return tuple(self._verdict(prop) for prop in SYSTEM_PROPERTIES)

    def _verdict(self, prop: SystemProperty) -> SystemVerdict:
        tally = self.tallies[prop.key]
        example = None
        if tally.first is not None:
            node, after, words = tally.first
            example = SystemCounterexample((*self._path(node), *after), words)
        return SystemVerdict(prop, tally.checked, tally.violations, example)

    def _path(self, node: int) -> list[SystemStep]:
        steps: list[SystemStep] = []
        link = self.parents[node]
        while link is not None:
            node, step = link
            steps.append(step)
            link = self.parents[node]
        steps.reverse()
        return steps

    def _liveness(self) -> None:
        ends = self._ends()
        live = self.tallies[SystemKey.DELIVERIES_COMPLETE]
        for node in range(len(self.states)):
            live.checked += 1
            ended = not self.deliveries[node] or node in self.cycles
            if ends[node] & _End.STUCK and ended:
                self._note(
                    SystemFinding(SystemKey.DELIVERIES_COMPLETE, self._stuck(node)), node, None
                )
        cancels = self.tallies[SystemKey.TERMINAL_CANCELS]
        for node in self.terminal:
            cancels.checked += 1
            if ends[node] & ~_End.CANCELED:
                words = self._no_cancel(node, ends)
                tail = self._to_a_wrong_end(node, ends)
                self._note(SystemFinding(SystemKey.TERMINAL_CANCELS, words), node, None, tail)

    def _to_a_wrong_end(self, start: int, ends: Sequence[_End]) -> list[SystemStep]:
        """The deliveries from `start` to the nearest end that is not CANCELED."""
        came: dict[int, tuple[int, SystemStep] | None] = {start: None}
        queue = [start]
        for node in queue:
            if (not self.deliveries[node] or node in self.cycles) and ends[node] & ~_End.CANCELED:
                steps: list[SystemStep] = []
                link = came[node]
                while link is not None:
                    node, step = link
                    steps.append(step)
                    link = came[node]
                return steps[::-1]
            for target, step in zip(self.deliveries[node], self.delivery_steps[node], strict=True):
                if target not in came:
                    came[target] = (node, step)
                    queue.append(target)
        return []

    def _ends(self) -> list[_End]:
        """For each configuration, how its fault-free runs may end (a cycle counts as stuck)."""
        ends: list[_End | None] = [None] * len(self.states)
        for root in range(len(self.states)):
            if ends[root] is not None:
                continue
            stack = [(root, 0)]
            on_path = {root}
            while stack:
                node, position = stack[-1]
                following = self.deliveries[node]
                if position < len(following):
                    stack[-1] = (node, position + 1)
                    nxt = following[position]
                    if nxt in on_path:
                        ends[nxt] = _End.STUCK  # a livelock: the run never ends
                        self.cycles.add(nxt)
                    elif ends[nxt] is None:
                        stack.append((nxt, 0))
                        on_path.add(nxt)
                    continue
                stack.pop()
                on_path.discard(node)
                ends[node] = self._end_of(node, [ends[n] for n in following], ends[node])
        return [end if end is not None else _End.STUCK for end in ends]

    def _end_of(self, node: int, following: Sequence[_End | None], own: _End | None) -> _End:
        end = own if own is not None else _End(0)
        if following:
            for found in following:
                end |= found if found is not None else _End.STUCK
            return end
        coordinator = self.coordinators[node]
        if not coordinator.is_complete:
            return end | _End.STUCK
        if coordinator.completion is HandoffCompletion.SUCCESS:
            return end | _End.SUCCESS
        return end | _End.CANCELED

    def _stuck(self, node: int) -> str:
        state = self.states[node]
        waiting = [message.describe() for channel in state.flight for message in channel]
        what = f"only {', '.join(waiting)} in flight, refused" if waiting else "nothing in flight"
        chart_state = self.coordinators[node].chart_state
        return f"the run ends with the handoff incomplete, in {chart_state}: {what}"

    def _no_cancel(self, node: int, ends: Sequence[_End]) -> str:
        end = ends[node]
        if end & _End.SUCCESS:
            return "after the terminal fact a run still ends with a SUCCESS"
        return "after the terminal fact a run ends with the handoff incomplete"

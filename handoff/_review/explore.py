"""Model review: explore every reachable configuration of a coordinator and check it.

A configuration is the coordinator's `configuration()` together with a `Watch`: what the
nondeterministic environment of `handoff._review.environment` has itself seen. From each
configuration the review makes every call the environment may make; the monitors judge each
accepted call as it is made, and `handoff._review.properties` judges the liveness properties and
coverage over the whole explored graph.

The space is finite because a run of the real charts issues at most eight actions (five steps,
`Complete`, a reopened `CancelDestination` and its `Complete`); runs issuing more than
`MAX_ACTIONS` are cut off and reported (property "Bound"), so a review never claims more than it
explored. Exploration is breadth-first, so each counterexample is a shortest one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs

from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._lifecycle import expected_normalized_handoff
from handoff._messages import HandoffAction
from handoff._review.environment import (
    HANDOFF_ID,
    MAX_ACTIONS,
    Call,
    Environment,
    Phase,
    Watch,
    environment,
    observe,
)
from handoff._review.properties import (
    PROPERTIES,
    Edge,
    Graph,
    Property,
    Tag,
    Tally,
    TraceStep,
    Verdict,
    cancellation,
    coverage,
    progress,
    tag,
)
from handoff._table import CompiledChart, Step, compiled
from handoff._values import HandoffCompletion, HandoffId, HandoffOrder

__all__ = ["OrderReview", "replay", "review", "review_order"]

_MAX_CONFIGURATIONS = 200_000
"""A last guard against a chart whose space is far larger than any handoff needs."""


@attrs.frozen
class OrderReview:
    """The review of one chart: how much was explored and each property's verdict."""

    order: HandoffOrder
    chart: CompiledChart
    handoff_id: HandoffId
    fallback_transfer_delay_ms: float
    configurations: int
    transitions: int
    verdicts: tuple[Verdict, ...]
    seconds: float

    @property
    def holds(self) -> bool:
        """Whether every property holds."""
        return all(verdict.holds for verdict in self.verdicts)

    def verdict(self, key: str) -> Verdict:
        """The verdict of the property named `key` ("S1", "L2", "Coverage", …)."""
        return next(verdict for verdict in self.verdicts if verdict.prop.key == key)

    def failures(self) -> tuple[Verdict, ...]:
        """The verdicts of the properties that do not hold."""
        return tuple(verdict for verdict in self.verdicts if not verdict.holds)


def replay(
    chart: CompiledChart,
    calls: Sequence[Call],
    *,
    handoff_id: HandoffId = HANDOFF_ID,
    fallback_transfer_delay_ms: float = 0.0,
) -> tuple[TraceStep, ...]:
    """Run `calls` on a fresh coordinator for `chart`, recording each call's effect."""
    coordinator = HandoffCoordinatorCore.for_table(handoff_id, chart, fallback_transfer_delay_ms)
    steps = []
    for call in calls:
        try:
            issued, error = tuple(call.send(coordinator)), None
        except Exception as raised:  # a crash is part of the story a counterexample tells
            issued, error = (), _error(raised)
        steps.append(TraceStep(call, coordinator.chart_state, issued, error))
    return tuple(steps)


def review_order(order: HandoffOrder, fallback_transfer_delay_ms: float = 0.0) -> OrderReview:
    """Review the real chart of `order`."""
    return review(compiled(order), fallback_transfer_delay_ms=fallback_transfer_delay_ms)


def review(
    chart: CompiledChart,
    *,
    fallback_transfer_delay_ms: float = 0.0,
    handoff_id: HandoffId = HANDOFF_ID,
) -> OrderReview:
    """Explore every reachable configuration of a coordinator driven by `chart`; check it."""
    began = time.perf_counter()
    explorer = _Explorer(chart, environment(handoff_id), fallback_transfer_delay_ms)
    explorer.explore()
    verdicts = explorer.verdicts()
    return OrderReview(
        order=chart.order,
        chart=chart,
        handoff_id=handoff_id,
        fallback_transfer_delay_ms=fallback_transfer_delay_ms,
        configurations=len(explorer.watches),
        transitions=explorer.transitions,
        verdicts=verdicts,
        seconds=time.perf_counter() - began,
    )


# -- the exploration -----------------------------------------------------------------------


class _Explorer:
    """Breadth-first exploration of one chart, keeping what the verdicts need."""

    def __init__(self, chart: CompiledChart, env: Environment, fallback: float) -> None:
        self.chart = chart
        self.env = env
        self.state_index = {state: index for index, state in enumerate(chart.states)}
        self.expected = expected_normalized_handoff(chart.order)
        root = HandoffCoordinatorCore.for_table(env.handoff_id, chart, fallback)
        self.coordinators = [root]
        self.configurations = [root.configuration()]
        self.watches = [Watch()]
        self.parents: list[tuple[int, TraceStep] | None] = [None]
        self.index = {(self.configurations[0], self.watches[0]): 0}
        self.edges: list[list[Edge]] = []
        self.tallies = {prop.key: Tally() for prop in PROPERTIES}
        self.covered_states = {self.state_index[root.chart_state]}
        self.covered_steps: set[tuple[int, int]] = set()
        self.transitions = 0
        self.longest_run = 0

    # -- walking --

    def explore(self) -> None:
        node = 0
        while node < len(self.watches):
            next_id = self.watches[node].next_id
            self.edges.append([self._try(node, call) for call in self.env.calls(next_id)])
            node += 1

    def _try(self, node: int, call: Call) -> Edge:
        self.transitions += 1
        coordinator = self.coordinators[node]
        twin = coordinator.fork()
        step = self._step(coordinator, call)
        try:
            issued = tuple(call.send(twin))
        except HandoffError as error:
            return self._refused(
                node, TraceStep(call, twin.chart_state, (), _error(error)), twin, step
            )
        except Exception as error:
            edge = TraceStep(call, twin.chart_state, (), _error(error))
            self._note(node, edge, "Errors", edge.error)
            return edge, -1, Tag.NONE
        edge = TraceStep(call, twin.chart_state, issued)
        self._note(node, edge, "Errors", None)
        if step is not None and step.kind != "refused":
            self.covered_steps.add((step.source, step.event.index))
        watch = self.watches[node]
        after, findings = observe(watch, call, issued)
        for key, finding in findings:
            self._note(node, edge, key, finding)
        self._check_lifecycle(node, edge, twin, watch, after)
        tags = tag(call, watch, accepted=True)
        return edge, self._reach(node, edge, twin, after), tags

    def _refused(
        self, node: int, edge: TraceStep, twin: HandoffCoordinatorCore, step: Step | None
    ) -> Edge:
        self._note(node, edge, "Errors", None)
        if step is not None and step.kind == "refused":
            self.covered_steps.add((step.source, step.event.index))
        changed = twin.configuration() != self.configurations[node]
        self._note(
            node, edge, "S6", "the refused call changed the coordinator" if changed else None
        )
        tags = tag(edge.call, self.watches[node], accepted=False)
        if not changed:
            return edge, node, tags
        return edge, self._reach(node, edge, twin, self.watches[node]), tags

    def _reach(self, node: int, edge: TraceStep, twin: HandoffCoordinatorCore, watch: Watch) -> int:
        """The index of the configuration (twin, watch), added when new; -1 when cut off."""
        issued = len(watch.issued)
        self.longest_run = max(self.longest_run, issued)
        if issued > MAX_ACTIONS or len(self.watches) >= _MAX_CONFIGURATIONS:
            self._note(node, edge, "Bound", f"cut off: {issued} actions issued in one run")
            return -1
        configuration = twin.configuration()
        key = (configuration, watch)
        found = self.index.get(key)
        if found is not None:
            return found
        self.index[key] = len(self.watches)
        self.coordinators.append(twin)
        self.configurations.append(configuration)
        self.watches.append(watch)
        self.parents.append((node, edge))
        self.covered_states.add(self.state_index[twin.chart_state])
        return len(self.watches) - 1

    def _step(self, coordinator: HandoffCoordinatorCore, call: Call) -> Step | None:
        """The table step the call will take, for coverage (None: refused before the chart)."""
        event = coordinator.classify(call.fact, call.action_id, call.outcome)
        if event is None:
            return None
        return self.chart.step(self.state_index[coordinator.chart_state], event)

    def _check_lifecycle(
        self, node: int, edge: TraceStep, twin: HandoffCoordinatorCore, before: Watch, after: Watch
    ) -> None:
        if not any(isinstance(item.action, HandoffAction.Complete) for item in edge.issued):
            return
        seen_success = before.phase is Phase.LIVE and after.phase is not Phase.LIVE
        seen_success = seen_success and after.succeeded
        if not (seen_success or twin.completion is HandoffCompletion.SUCCESS):
            return
        lifecycle = twin.lifecycle
        finding = None
        if lifecycle != self.expected:
            finding = f"lifecycle {_events(lifecycle)}, expected {_events(self.expected)}"
        self._note(node, edge, "L3", finding)

    def _note(self, node: int, edge: TraceStep, key: str, finding: str | None) -> None:
        """Count a check of `key` after `edge` from `node`; keep the first failure."""
        self.tallies[key].note(finding, self.parents, node, edge)

    # -- judging --

    def verdicts(self) -> tuple[Verdict, ...]:
        """Each property's verdict, in the order of `PROPERTIES`."""
        graph = Graph(self.watches, self.edges, self.parents)
        return tuple(self._verdict(prop, graph) for prop in PROPERTIES)

    def _verdict(self, prop: Property, graph: Graph) -> Verdict:
        if prop.key == "L1":
            return progress(prop, graph)
        if prop.key == "L2":
            return cancellation(prop, graph)
        if prop.key == "Coverage":
            return coverage(prop, self.chart, self.covered_states, self.covered_steps)
        tally = self.tallies[prop.key]
        if prop.key == "Bound":
            summary = f"longest run: {self.longest_run} of {MAX_ACTIONS} actions"
            return tally.verdict(prop, checked=self.longest_run, summary=summary)
        return tally.verdict(prop)


def _error(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def _events(lifecycle: Sequence[object]) -> str:
    return "[" + ", ".join(getattr(event, "value", str(event)) for event in lifecycle) + "]"

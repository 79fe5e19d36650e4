"""Model review: explore every reachable configuration of a coordinator and check it.

A configuration is the coordinator's `configuration()` together with a `Watch`: what the
nondeterministic environment of `handoff._review.environment` has itself seen.  From each
configuration the review makes every call the environment may make; the monitors of
`handoff._review.monitors` judge each call as it is made, and `handoff._review.graph` judges
the liveness properties and coverage over the whole explored graph.

The space is finite for the real charts: a run issues at most eight actions (five steps,
`Complete`, a reopened `CancelDestination` and its `Complete`).  A broken chart may not be,
so a run is cut off, and property "Bound" fails with the shortest such run, when it issues
more than `MAX_ACTIONS` actions or grows the configuration `MAX_STALLS + 1` times without
progress; a last guard caps the number of configurations.  Exploration is breadth-first, so
each counterexample is a shortest one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import attrs

from handoff import _probe as probe
from handoff._binding import FACT_EVENTS
from handoff._chart_base import HandoffChart
from handoff._chart_lookup import NamedChart, spelling
from handoff._coordinator import HandoffCoordinatorCore
from handoff._equivalence import compare
from handoff._errors import HandoffError
from handoff._messages import HandoffFact
from handoff._review.environment import (
    HANDOFF_ID,
    MAX_ACTIONS,
    Call,
    Environment,
    Rules,
    environment,
)
from handoff._review.graph import Edge, Graph, Tag, cancellation, coverage, progress, tag
from handoff._review.monitors import EdgeVerdict, judge_edge
from handoff._review.properties import PROPERTIES, Family, Key, prop
from handoff._review.verdict import Tally, TraceStep, Verdict
from handoff._review.watch import Watch
from handoff._table import CompiledChart, Step, StepKind, compiled
from handoff._values import HandoffId, HandoffOrder
from handoff._vocabulary import ChartEvent

__all__ = [
    "OrderReview",
    "explore_from",
    "review",
    "review_chart",
    "review_order",
]

_MAX_CONFIGURATIONS = 4_000
"""A last guard, far above any handoff's needs (the real charts reach fewer than 150), that
keeps a review of any chart within seconds."""


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
    origin: str | None = None
    """How the chart was named, `MODULE:NAME`, when it is not an order's shipped chart."""
    phases: tuple[tuple[str, float], ...] = ()
    """Where the time went, in seconds: the exploration, the Table check, the liveness walks."""

    @property
    def name(self) -> str:
        """The chart's name (its title), which reports use; `order` is its lifecycle."""
        return self.chart.name

    @property
    def holds(self) -> bool:
        """Whether every property holds."""
        return all(verdict.holds for verdict in self.verdicts)

    def verdict(self, key: Key | str) -> Verdict:
        """The verdict of property `key` (a `Key`, or its short name: "S1", "Coverage", …)."""
        key = key if isinstance(key, Key) else Key(key)
        return next(verdict for verdict in self.verdicts if verdict.prop.key is key)

    @property
    def safe(self) -> bool:
        """Whether every safety property holds (conformance to the reference aside)."""
        return all(verdict.holds for verdict in self.verdicts if verdict.prop.family is _SAFETY)

    def failures(self) -> tuple[Verdict, ...]:
        """The verdicts of the properties that do not hold, root cause first.

        The root cause is where the chart first departs from what the SPEC answers: the
        failure whose shortest counterexample is shortest (ties in the order of `PROPERTIES`;
        a failure without a counterexample, a judgment over the whole chart, last).
        """
        failing = [verdict for verdict in self.verdicts if not verdict.holds]
        return tuple(sorted(failing, key=_departure))


_SAFETY = Family.SAFETY
_PHASES = {Key.EQUIVALENCE: "Table", Key.PROGRESS: "liveness", Key.CANCELLATION: "liveness"}
"""The judgments whose time the report shows apart from the exploration's."""


def _departure(verdict: Verdict) -> float:
    """How many calls it takes to show `verdict`'s failure (a whole-chart one: infinitely)."""
    example = verdict.counterexample
    return math.inf if example is None else len(example.steps)


def review_order(order: HandoffOrder, fallback_transfer_delay_ms: float = 0.0) -> OrderReview:
    """Review the real chart of `order`."""
    return review(compiled(order), fallback_transfer_delay_ms=fallback_transfer_delay_ms)


def review_chart(
    chart: type[HandoffChart] | NamedChart, fallback_transfer_delay_ms: float = 0.0
) -> OrderReview:
    """Review any chart class (or named table): its table, judged also against the class."""
    named = chart if isinstance(chart, NamedChart) else NamedChart(spelling(chart), chart)
    source = named.rules if isinstance(named.rules, type) else None
    found = review(
        named.table, fallback_transfer_delay_ms=fallback_transfer_delay_ms, source=source
    )
    return attrs.evolve(found, origin=named.spec)


def review(
    chart: CompiledChart,
    *,
    fallback_transfer_delay_ms: float = 0.0,
    handoff_id: HandoffId = HANDOFF_ID,
    source: type[HandoffChart] | None = None,
) -> OrderReview:
    """Explore every reachable configuration of a coordinator driven by `chart`; check it.

    `source` is the chart class the table claims to be (default: the shipped chart of its
    order): the Table property compares the two on every reachable cell.
    """
    began = time.perf_counter()
    rules = Rules(chart.order, handoff_id, fallback_transfer_delay_ms)
    explorer = _Explorer(chart, environment(handoff_id), rules, source=source)
    explorer.explore()
    explored = time.perf_counter() - began
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
        phases=(("exploration", explored), *explorer.spent.items()),
    )


def explore_from(coordinator: HandoffCoordinatorCore, watch: Watch, rules: Rules) -> Graph:
    """Every configuration reachable from `coordinator` (a copy is explored), which the
    environment saw as `watch`: for judging L1 and L2 from the end of a recorded run."""
    root = (coordinator.fork(), watch)
    explorer = _Explorer(probe.table(coordinator), environment(rules.handoff_id), rules, root)
    explorer.explore()
    return explorer.graph()


# -- the exploration -----------------------------------------------------------------------


class _Explorer:
    """Breadth-first exploration of one chart, keeping what the verdicts need."""

    def __init__(
        self,
        chart: CompiledChart,
        env: Environment,
        rules: Rules,
        root: tuple[HandoffCoordinatorCore, Watch] | None = None,
        source: type[HandoffChart] | None = None,
    ) -> None:
        self.chart = chart
        self.env = env
        self.rules = rules
        self.state_index = {state: index for index, state in enumerate(chart.states)}
        coordinator, watch = root or (
            probe.for_table(env.handoff_id, chart, rules.fallback_transfer_delay_ms),
            Watch(),
        )
        self.coordinators = [coordinator]
        self.configurations = [probe.configuration(coordinator)]
        self.watches = [watch]
        self.stalls = [0]
        self.parents: list[tuple[int, TraceStep] | None] = [None]
        self.index = {(self.configurations[0], self.watches[0]): 0}
        self.edges: list[list[Edge]] = []
        self.tallies = {prop.key: Tally() for prop in PROPERTIES}
        self.covered_states = {self.state_index[coordinator.chart_state]}
        self.covered_steps: set[tuple[int, int]] = set()
        self.transitions = 0
        self.longest_run = 0
        self.deferred = 0
        self.cut = False
        self.spent: dict[str, float] = {}
        """Seconds spent judging, by phase (see `_PHASES`)."""
        self.source: HandoffOrder | type[HandoffChart] = chart.order if source is None else source

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
        error: HandoffError | None = None
        try:
            issued = tuple(call.send(twin))
        except HandoffError as raised:
            issued, error = (), raised
        except Exception as raised:  # a crash is a finding, not a reason to stop reviewing
            edge = TraceStep(call, twin.chart_state, (), _error(raised))
            self._note(node, edge, Key.ERRORS, edge.error)
            return Edge(edge, -1, Tag.NONE)
        edge = TraceStep(call, twin.chart_state, issued, None if error is None else _error(error))
        self._note(node, edge, Key.ERRORS, None)
        self._cover(step, refused=error is not None)
        watch = self.watches[node]
        before = self.configurations[node]
        verdict = judge_edge(
            self.rules, watch, self.stalls[node], call, before, twin, issued, error
        )
        for key, finding in verdict.findings:
            self._note(node, edge, key, finding)
        self.deferred += verdict.observation.deferred
        moves = tag(call, watch, accepted=error is None)
        if verdict.still:
            return Edge(edge, node, moves)
        target = self._reach(node, edge, twin, verdict)
        return Edge(edge, target, moves if target >= 0 else moves | Tag.CUT)

    def _cover(self, step: Step | None, *, refused: bool) -> None:
        """Count the table cell a call took (a refusal covers a refusing cell only)."""
        if step is not None and (step.kind is StepKind.REFUSED) == refused:
            self.covered_steps.add((step.source, step.event.index))

    def _reach(
        self, node: int, edge: TraceStep, twin: HandoffCoordinatorCore, verdict: EdgeVerdict
    ) -> int:
        """The index of the configuration `edge` leads to (twin's and the watch's), added when
        new.  Returns -1 when the run is cut off."""
        watch = verdict.observation.watch
        key = (verdict.configuration, watch)
        stalls = verdict.stalls
        self.longest_run = max(self.longest_run, len(watch.issued))
        why = None if verdict.overrun is None else f"cut off: {verdict.overrun}"
        if why is None and len(self.watches) >= _MAX_CONFIGURATIONS:
            why = f"cut off: the exploration reached its guard of {_MAX_CONFIGURATIONS:,} states"
        if why is not None:
            self.cut = True
            self._note(node, edge, Key.BOUND, why)
            return -1
        found = self.index.get(key)
        if found is not None:
            return found
        self.index[key] = len(self.watches)
        self.coordinators.append(twin)
        self.configurations.append(verdict.configuration)
        self.watches.append(watch)
        self.stalls.append(stalls)
        self.parents.append((node, edge))
        self.covered_states.add(self.state_index[twin.chart_state])
        return len(self.watches) - 1

    def _step(self, coordinator: HandoffCoordinatorCore, call: Call) -> Step | None:
        """The table step the call will take, for coverage (None: refused before the chart)."""
        event = probe.classify(coordinator, call.fact, call.action_id, call.outcome)
        if event is None:
            return None
        return self.chart.step(self.state_index[coordinator.chart_state], event)

    def _note(self, node: int, edge: TraceStep, key: Key, finding: str | None) -> None:
        """Count a check of `key` after `edge` from `node`; keep the first failure."""
        self.tallies[key].note(finding, self.parents, node, edge)

    # -- judging --

    def graph(self) -> Graph:
        """The explored configurations and the moves between them."""
        return Graph(self.watches, self.edges, self.parents)

    def verdicts(self) -> tuple[Verdict, ...]:
        """Each property's verdict, in the order of `PROPERTIES`.

        A property judged at each call has the tally of its checks (Bound and P1 add what
        the exploration itself saw); one judged over the graph or the chart, its own judge.
        """
        graph = self.graph()
        judges: dict[Key, Callable[[], Verdict]] = {
            Key.PROGRESS: lambda: progress(prop(Key.PROGRESS), graph),
            Key.CANCELLATION: lambda: cancellation(prop(Key.CANCELLATION), graph),
            Key.COVERAGE: lambda: coverage(
                prop(Key.COVERAGE), self.chart, self.covered_states, self.covered_steps
            ),
            Key.EQUIVALENCE: self._equivalence,
            Key.BOUND: self._bound,
            Key.PAYLOADS: self._payloads,
        }
        found = []
        for entry in PROPERTIES:
            began = time.perf_counter()
            found.append(
                judges[entry.key]()
                if entry.key in judges
                else self.tallies[entry.key].verdict(entry)
            )
            phase = _PHASES.get(entry.key)
            if phase is not None:
                self.spent[phase] = self.spent.get(phase, 0.0) + time.perf_counter() - began
        return tuple(found)

    def _bound(self) -> Verdict:
        summary = (
            f"{len(self.watches):,} configurations, every run to its end; "
            f"the longest issued {self.longest_run} of at most {MAX_ACTIONS} actions"
        )
        if self.cut:
            summary = f"{len(self.watches):,} configurations; some runs were cut off"
        tally = self.tallies[Key.BOUND]
        return tally.verdict(prop(Key.BOUND), checked=len(self.watches), summary=summary)

    def _payloads(self) -> Verdict:
        notes: tuple[str, ...] = ()
        if self.deferred:
            notes = (
                f"the documented exception, taken in {self.deferred} configurations: a "
                "DESTINATION_FIRST reservation whose delay overflows arrives before any timing, "
                "so it is judged, and refused, only at SourceHeld",
            )
        return self.tallies[Key.PAYLOADS].verdict(prop(Key.PAYLOADS), notes=notes)

    def _equivalence(self) -> Verdict:
        judged = prop(Key.EQUIVALENCE)
        try:
            comparison = compare(self.source, self.chart, _payloads(self.env))
        except Exception as error:  # Errors names the crash; this verdict fails
            return Verdict(judged, 0, 1, notes=(f"the comparison raised {_error(error)}",))
        wrong = comparison.disagreements
        said = dict.fromkeys(
            f"in {cell.state}, {cell.event.value}: the table {cell.compiled}; "
            f"python-statemachine {cell.interpreted}"
            for cell in wrong
        )
        notes = tuple(said)[:3]
        more = len(said) - len(notes)
        notes += (f"and {more} more cells",) if more > 0 else ()
        return Verdict(judged, comparison.cells, len(wrong), notes=notes)


def _payloads(env: Environment) -> dict[ChartEvent, tuple[HandoffFact, ...]]:
    """Every payload the environment gives each fact event, unusable ones included."""
    found: dict[ChartEvent, tuple[HandoffFact, ...]] = {}
    for call in env.facts:
        fact = call.fact
        if fact is not None and fact.handoff_id == env.handoff_id:
            event = FACT_EVENTS[type(fact)]
            found[event] = (*found.get(event, ()), fact)
    return found


def _error(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"

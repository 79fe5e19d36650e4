"""The worlds a chart is reviewed in, and the first of them: the chart alone.

A world says what can happen next to a coordinator and what each move breaks; the explorer
(`handoff._review.explore`) walks every configuration a world can reach, breadth first, and
asks the world to judge what only the whole graph shows.  Two worlds plug into that one
explorer: `ChartWorld` here, where a nondeterministic environment makes every call it may make
(`handoff._review.environment`) and the monitors judge each (`handoff._review.monitors`), and
the system world of `handoff._review.system`, where the calls come from a runtime carrying
messages between the coordinator and two workers.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

import attrs

from handoff._chart.base import HandoffChart
from handoff._chart.derive import lost_group_rules
from handoff._chart.vocabulary import ChartEvent
from handoff._compile.table import CompiledChart, Step, StepKind
from handoff._coordinator import probe as probe
from handoff._coordinator.binding import FACT_EVENTS
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._coordinator.probe import Configuration
from handoff._review.environment import MAX_ACTIONS, Call, Environment, Rules
from handoff._review.equivalence import compare
from handoff._review.graph import Edge, Graph, Tag, cancellation, coverage, progress, tag
from handoff._review.monitors import Checked, error_words, judge_edge
from handoff._review.verdict import Parents, Tally, TraceStep, Verdict
from handoff._review.watch import Watch
from handoff._system.properties import GUARDS, AnyKey, Key, Property, WorldKind, prop, properties_of
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffOrder

__all__ = ["ChartWorld", "Explored", "Judge", "Move", "World", "WorldBase", "error_words"]


class Move(NamedTuple):
    """One move a world can make from a configuration, judged as it is made."""

    step: TraceStep
    checks: tuple[Checked, ...]
    """Each property the move was checked for, and what broke it (None: it held)."""
    node: Any
    """The world's next configuration; None when the move leads nowhere (a crash)."""
    key: Hashable = None
    """What identifies the next configuration: moves to equal keys reach the same one."""
    tags: Tag = Tag.NONE
    stays: bool = False
    """The move leaves the configuration as it was (a dropped call, a fact kept in flight)."""
    cut: str | None = None
    """Why the run is cut off here, when it is one that never ends (Bound)."""
    renamed: tuple[int, ...] | None = None
    """How `key` renumbers the handoffs of `node` (`renamed[n]`: handoff n's number in the
    key), when handoffs are interchangeable; None: as they are."""


@attrs.frozen
class Explored:
    """What the explorer found, for the judgments only the whole graph can make."""

    nodes: Sequence[Any]
    edges: Sequence[Sequence[Edge]]
    """`edges[node]`: every move from configuration `node` and where it led."""
    parents: Parents
    tallies: dict[AnyKey, Tally]
    cut: bool
    """Whether some run was cut off (Bound)."""


Judge = Callable[[], Verdict]


class World(Protocol):
    """What can happen next to a coordinator, and what each move breaks."""

    kind: WorldKind
    chart: CompiledChart

    @property
    def properties(self) -> tuple[Property, ...]:
        """The properties judged in this world, in report order."""
        ...

    @property
    def guard(self) -> int:
        """The most configurations explored before every further run is cut off."""
        ...

    def root(self) -> tuple[Any, Hashable]:
        """The first configuration and its key."""
        ...

    def checks(self, node: Any) -> Iterable[Checked]:
        """What a configuration itself is checked for, before any move from it."""
        ...

    def moves(self, node: Any) -> Iterator[Move]:
        """Every move from `node`, in a fixed order."""
        ...

    def reached(self, node: Any) -> None:
        """A move reached a configuration not seen before (for what the world counts)."""
        ...

    def judges(self, explored: Explored) -> dict[AnyKey, Judge]:
        """The verdicts a tally of checks does not give: each judged over the graph."""
        ...


class WorldBase:
    """What every world shares: its properties and guard are its kind's."""

    kind: WorldKind

    @property
    def properties(self) -> tuple[Property, ...]:
        return properties_of(self.kind)

    @property
    def guard(self) -> int:
        return GUARDS[self.kind]

    def checks(self, node: Any) -> Iterable[Checked]:
        return ()

    def reached(self, node: Any) -> None:
        return None


class _ChartNode(NamedTuple):
    coordinator: HandoffCoordinatorCore
    configuration: Configuration
    watch: Watch
    stalls: int


class _Sent(NamedTuple):
    """A call made on a coordinator: what it answered, before any monitor judged it."""

    call: Call
    edge: TraceStep
    twin: HandoffCoordinatorCore
    """The coordinator after the call (never changed again: the nodes reaching it share it)."""
    configuration: Configuration | None
    """The coordinator's configuration after the call; None: the call crashed."""
    issued: tuple[IssuedHandoffAction, ...]
    error: HandoffError | None


class ChartWorld(WorldBase):
    """The chart alone: from every configuration the environment makes every call it may make,
    and the monitors judge each call from what the environment saw."""

    kind = WorldKind.CHART

    def __init__(
        self,
        chart: CompiledChart,
        env: Environment,
        rules: Rules,
        *,
        root: tuple[HandoffCoordinatorCore, Watch] | None = None,
        source: HandoffOrder | type[HandoffChart] | None = None,
    ) -> None:
        self.chart = chart
        self.env = env
        self.rules = rules
        self.state_index = {state: index for index, state in enumerate(chart.states)}
        coordinator, watch = root or (
            probe.for_table(env.handoff_id, chart, rules.fallback_transfer_delay_ms),
            Watch(),
        )
        self._root = _ChartNode(coordinator, probe.configuration(coordinator), watch, 0)
        self.covered_states = {self.state_index[coordinator.chart_state]}
        self.covered_steps: set[tuple[int, int]] = set()
        self.longest_run = 0
        self.deferred = 0
        self.source: HandoffOrder | type[HandoffChart] = chart.order if source is None else source
        self._sent: dict[tuple[Configuration, int], tuple[_Sent, ...]] = {}
        """Every call's answer from a coordinator configuration, by that configuration and
        the next action id the environment saw: configurations reached along several runs
        (with different watches) answer each call once (the coordinator is deterministic, and
        the configuration is everything that decides its future)."""

    def root(self) -> tuple[_ChartNode, Hashable]:
        return self._root, (self._root.configuration, self._root.watch)

    def moves(self, node: _ChartNode) -> Iterator[Move]:
        sent = self._sent.get((node.configuration, node.watch.next_id))
        if sent is None:
            calls = tuple(self.env.calls(node.watch.next_id))
            sent = tuple(self._send(node.coordinator, call) for call in calls)
            self._sent[node.configuration, node.watch.next_id] = sent
        for answer in sent:
            yield self._judge(node, answer)

    def reached(self, node: _ChartNode) -> None:
        self.covered_states.add(self.state_index[node.coordinator.chart_state])

    def _send(self, coordinator: HandoffCoordinatorCore, call: Call) -> _Sent:
        """Make `call` on a copy of `coordinator` (kept as it is)."""
        twin = coordinator.fork()
        step = self._step(coordinator, call)
        error: HandoffError | None = None
        try:
            issued = tuple(call.send(twin))
        except HandoffError as raised:
            issued, error = (), _without_frames(raised)
        except MemoryError:  # the review's own limit, not the chart's crash
            raise
        except Exception as raised:  # a crash is a finding, not a reason to stop reviewing
            edge = TraceStep(call, twin.chart_state, (), error_words(raised))
            return _Sent(call, edge, twin, None, (), None)
        edge = TraceStep(
            call, twin.chart_state, issued, None if error is None else error_words(error)
        )
        self._cover(step, refused=error is not None)
        return _Sent(call, edge, twin, probe.configuration(twin), issued, error)

    def _judge(self, node: _ChartNode, sent: _Sent) -> Move:
        """The move `sent` makes from `node`, judged from what the environment saw there."""
        edge, call = sent.edge, sent.call
        if sent.configuration is None:  # crashed
            return Move(edge, ((Key.ERRORS, edge.error),), None)
        watch = node.watch
        verdict = judge_edge(
            self.rules,
            watch,
            node.stalls,
            call,
            node.configuration,
            sent.twin,
            sent.issued,
            sent.error,
            after_configuration=sent.configuration,
        )
        self.deferred += verdict.observation.deferred
        checks = ((Key.ERRORS, None), *verdict.findings)
        tags = tag(call, watch, accepted=sent.error is None)
        if verdict.still:
            return Move(edge, checks, node, tags=tags, stays=True)
        after = verdict.observation.watch
        self.longest_run = max(self.longest_run, len(after.issued))
        cut = None if verdict.overrun is None else f"cut off: {verdict.overrun}"
        following = _ChartNode(sent.twin, verdict.configuration, after, verdict.stalls)
        return Move(edge, checks, following, (verdict.configuration, after), tags, cut=cut)

    def _cover(self, step: Step | None, *, refused: bool) -> None:
        """Count the table cell a call took (a refusal covers a refusing cell only)."""
        if step is not None and (step.kind is StepKind.REFUSED) == refused:
            self.covered_steps.add((step.source, step.event.index))

    def _step(self, coordinator: HandoffCoordinatorCore, call: Call) -> Step | None:
        """The table step the call will take, for coverage (None: refused before the chart)."""
        event = probe.classify(coordinator, call.fact, call.action_id, call.outcome)
        if event is None:
            return None
        return self.chart.step(self.state_index[coordinator.chart_state], event)

    # -- judging over the graph --

    def judges(self, explored: Explored) -> dict[AnyKey, Judge]:
        graph = self.graph(explored)
        return {
            Key.PROGRESS: lambda: progress(prop(Key.PROGRESS), graph),
            Key.CANCELLATION: lambda: cancellation(prop(Key.CANCELLATION), graph),
            Key.COVERAGE: self._coverage,
            Key.EQUIVALENCE: self._equivalence,
            Key.BOUND: lambda: self._bound(explored),
            Key.PAYLOADS: lambda: self._payloads(explored),
        }

    def _coverage(self) -> Verdict:
        found = coverage(prop(Key.COVERAGE), self.chart, self.covered_states, self.covered_steps)
        if not isinstance(self.source, type):
            return found
        # A renamed state that lost its group's rules shows only as the properties it
        # breaks; the note says why, beside the states and transitions no run reaches.
        return attrs.evolve(found, notes=(*found.notes, *lost_group_rules(self.source)))

    @staticmethod
    def graph(explored: Explored) -> Graph:
        """The explored configurations, as the environment saw them, and the moves between."""
        watches = [node.watch for node in explored.nodes]
        return Graph(watches, explored.edges, explored.parents)

    def _bound(self, explored: Explored) -> Verdict:
        count = len(explored.nodes)
        summary = (
            f"{count:,} configurations, every run to its end; "
            f"the longest issued {self.longest_run} of at most {MAX_ACTIONS} actions"
        )
        if explored.cut:
            summary = f"{count:,} configurations; some runs were cut off"
        tally = explored.tallies[Key.BOUND]
        return tally.verdict(prop(Key.BOUND), checked=count, summary=summary)

    def _payloads(self, explored: Explored) -> Verdict:
        notes: tuple[str, ...] = ()
        if self.deferred:
            notes = (
                f"the documented exception, taken in {_configurations(self.deferred)}: a "
                "DESTINATION_FIRST reservation whose delay overflows arrives before any timing, "
                "so it is judged, and refused, only at SourceHeld",
            )
        return explored.tallies[Key.PAYLOADS].verdict(prop(Key.PAYLOADS), notes=notes)

    def _equivalence(self) -> Verdict:
        judged = prop(Key.EQUIVALENCE)
        try:
            comparison = compare(self.source, self.chart, _payloads(self.env))
        except MemoryError:  # the review's own limit, not the chart's crash
            raise
        except Exception as error:  # Errors names the crash; this verdict fails
            return Verdict(judged, 0, 1, notes=(f"the comparison raised {error_words(error)}",))
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


def _without_frames(error: HandoffError) -> HandoffError:
    """`error` without the traceback of the call it refused, nor of the error it replaced.

    The world keeps each refusal (`_Sent.error`) to judge it, and a traceback would keep every
    frame of that call alive in a cycle through the frame that caught it: a review then leaves
    its graph for the cyclic collector, over a million objects for a large one, and the next
    review in the process pays seconds to collect them."""
    link: BaseException | None = error
    while link is not None:
        link.__traceback__ = None
        link = link.__context__
    return error


def _configurations(count: int) -> str:
    return "1 configuration" if count == 1 else f"{count:,} configurations"

"""Model review: explore every configuration a world can reach from a coordinator; check it.

One explorer serves every world (`handoff._review.world`): the chart alone, where a
nondeterministic environment makes every call it may make, and the chart with its workers
(`handoff._review.system`), where a runtime carries messages between the coordinator and two
workers.  A world says which moves a configuration has and what each move breaks; the explorer
walks them breadth first, so each counterexample is a shortest one, counts every check, keeps
each property's first violation, and cuts a run off (Bound) when the world says it never ends
or the world's last guard on configurations is reached.  What only the whole graph shows
(liveness, coverage, the Table comparison) the world judges at the end.

The space is finite for the real charts: alone, a run issues at most eight actions (five
steps, `Complete`, a reopened `CancelDestination` and its `Complete`).  A broken chart's may
not be, which is what the cut is for.
"""

from __future__ import annotations

import functools
import gc
import math
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from handoff._chart.base import HandoffChart
from handoff._compile.lookup import NamedChart, spelling
from handoff._compile.table import CompiledChart, compiled
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.environment import HANDOFF_ID, Rules, environment
from handoff._review.graph import Edge, Graph, Tag
from handoff._review.ordinary import with_ordinary_payloads
from handoff._review.verdict import Tally, TraceStep, Verdict
from handoff._review.watch import Watch
from handoff._review.world import ChartWorld, Explored, Move, World
from handoff._system.properties import AnyKey, Family, Judged, Key, Property, WorldKind
from handoff._values.values import HandoffId, HandoffOrder

if TYPE_CHECKING:
    from handoff._system.config import System

__all__ = [
    "Progress",
    "Review",
    "explore_ahead",
    "explore_from",
    "review",
    "review_chart",
    "review_order",
]


@attrs.frozen
class Review:
    """The review of one chart in one world: how much was explored and each verdict."""

    order: HandoffOrder
    chart: CompiledChart
    handoff_id: HandoffId
    fallback_transfer_delay_ms: float
    configurations: int
    transitions: int
    """Moves explored: calls, and with workers, deliveries and faults too."""
    verdicts: tuple[Verdict, ...]
    seconds: float
    origin: str | None = None
    """How the chart was named, `MODULE:NAME`, when it is not an order's shipped chart."""
    phases: tuple[tuple[str, float], ...] = ()
    """Where the time went, in seconds: the exploration, the Table check, the liveness walks."""
    system: System | None = None
    """The system the chart was reviewed in (None: the chart alone)."""
    cut_short: str = ""
    """Why the exploration stopped before every run's end, when its guard on configurations
    stopped it ("": it did not): the verdict is then CUT SHORT, not OK."""
    alone: Review | None = None
    """With workers: the review of the same chart alone, whose properties (S1-S7, L1, L2, …)
    the system's do not restate; its verdicts are this review's too."""

    @property
    def name(self) -> str:
        """The chart's name (its title), which reports use; `order` is its lifecycle."""
        return self.chart.name

    @property
    def world(self) -> WorldKind:
        """The world the chart was reviewed in."""
        return WorldKind.CHART if self.system is None else WorldKind.SYSTEM

    @property
    def properties(self) -> tuple[Property, ...]:
        """The properties judged, in report order."""
        return tuple(verdict.prop for verdict in self.verdicts)

    @property
    def holds(self) -> bool:
        """Whether every property holds (judged, and never broken), alone too."""
        alone = self.alone is None or self.alone.holds
        return alone and all(verdict.holds for verdict in self.verdicts)

    def verdict(self, key: AnyKey | str) -> Verdict:
        """The verdict of property `key` (a key, or its short name: "S1", "W1", …, or the
        name of a property of one's own)."""
        for verdict in self.verdicts:
            found = verdict.prop.key
            if found == key or found.value == key:
                return verdict
        raise KeyError(f"no property {key!r} in this review")

    @property
    def safe(self) -> bool:
        """Whether every safety property holds (conformance to the reference aside), alone too:
        False when one fails or was not judged."""
        alone = self.alone is None or self.alone.safe
        return alone and all(v.holds for v in self.verdicts if v.prop.family is _SAFETY)

    @property
    def unsafe(self) -> bool:
        """Whether a safety property fails, alone or here: found broken, whatever was left
        unexplored."""
        alone = self.alone is not None and self.alone.unsafe
        return alone or any(v.fails for v in self.verdicts if v.prop.family is _SAFETY)

    def failures(self) -> tuple[Verdict, ...]:
        """The verdicts of the properties found broken, root cause first.

        The root cause is where the chart first departs from what the SPEC answers: the
        failure whose shortest counterexample is shortest (ties in the order of the
        properties; a failure without a counterexample, a judgment over the whole chart, last).
        """
        failing = [verdict for verdict in self.verdicts if verdict.fails]
        return tuple(sorted(failing, key=_departure))

    def unjudged(self) -> tuple[Verdict, ...]:
        """The verdicts of the properties the review could not judge (it was cut short)."""
        return tuple(verdict for verdict in self.verdicts if verdict.unjudged)


_SAFETY = Family.SAFETY
_PHASES: dict[AnyKey, str] = {
    Key.EQUIVALENCE: "Table",
    Key.PROGRESS: "liveness",
    Key.CANCELLATION: "liveness",
    Key.DELIVERIES_COMPLETE: "liveness",
    Key.TERMINAL_CANCELS: "liveness",
}
"""The judgments whose time the report shows apart from the exploration's."""


def _departure(verdict: Verdict) -> float:
    """How many moves it takes to show `verdict`'s failure (a whole-chart one: infinitely)."""
    example = verdict.counterexample
    return math.inf if example is None else len(example.steps)


def review_order(
    order: HandoffOrder,
    fallback_transfer_delay_ms: float = 0.0,
    *,
    system: System | None = None,
    guard: int | None = None,
    progress: Progress | None = None,
) -> Review:
    """Review the real chart of `order`, alone or in `system`."""
    return review(
        compiled(order),
        fallback_transfer_delay_ms=fallback_transfer_delay_ms,
        system=system,
        guard=guard,
        progress=progress,
    )


def review_chart(
    chart: type[HandoffChart] | NamedChart,
    fallback_transfer_delay_ms: float = 0.0,
    *,
    system: System | None = None,
    guard: int | None = None,
    progress: Progress | None = None,
) -> Review:
    """Review any chart class (or named table): its table, judged also against the class."""
    named = chart if isinstance(chart, NamedChart) else NamedChart(spelling(chart), chart)
    source = named.rules if isinstance(named.rules, type) else None
    found = review(
        named.table,
        fallback_transfer_delay_ms=fallback_transfer_delay_ms,
        source=source,
        system=system,
        guard=guard,
        progress=progress,
    )
    alone = found.alone
    if alone is not None:
        alone = attrs.evolve(alone, origin=named.spec)
    return attrs.evolve(found, origin=named.spec, alone=alone)


def review(
    chart: CompiledChart,
    *,
    fallback_transfer_delay_ms: float = 0.0,
    handoff_id: HandoffId = HANDOFF_ID,
    source: type[HandoffChart] | None = None,
    system: System | None = None,
    guard: int | None = None,
    progress: Progress | None = None,
) -> Review:
    """Explore every configuration a coordinator driven by `chart` reaches; check it.

    Alone (`system` None) or with its workers; with workers the chart is reviewed alone
    first (`Review.alone`), since the system's properties do not restate the chart's own.
    `source` is the chart class the table claims to be (default: the shipped chart of its
    order): the Table property compares the two on every reachable cell.  `guard`: the most
    configurations explored (default: the world's, `GUARDS`); past it the review is cut
    short.  `progress` is told how far the exploration got, now and then.
    """
    alone = None
    if system is not None:
        alone = _alone(
            chart,
            fallback_transfer_delay_ms=fallback_transfer_delay_ms,
            handoff_id=handoff_id,
            source=source,
            guard=guard,
        )
    began = time.perf_counter()
    rules = Rules(chart.order, handoff_id, fallback_transfer_delay_ms)
    world: World
    if system is None:
        world = ChartWorld(chart, environment(handoff_id), rules, source=source)
    else:
        from handoff._review.system import SystemWorld  # the second world, when asked for

        world = SystemWorld(chart, system, rules)
    explorer = _Explorer(world, guard, progress)
    with _uncollected():
        explorer.explore()
        explored = time.perf_counter() - began
        verdicts = explorer.verdicts()
        if isinstance(world, ChartWorld):
            verdicts = with_ordinary_payloads(world, verdicts)
    return Review(
        order=chart.order,
        chart=chart,
        handoff_id=handoff_id,
        fallback_transfer_delay_ms=fallback_transfer_delay_ms,
        configurations=len(explorer.nodes),
        transitions=explorer.transitions,
        verdicts=verdicts,
        seconds=time.perf_counter() - began,
        phases=(("exploration", explored), *explorer.spent.items()),
        system=system,
        cut_short=explorer.guarded,
        alone=alone,
    )


# The review of a chart alone, for a review with workers: made once for every system a process
# reviews the chart in (a table of worlds reviews the same chart forty times).
_alone = functools.lru_cache(maxsize=8)(review)


def explore_from(coordinator: HandoffCoordinatorCore, watch: Watch, rules: Rules) -> Graph:
    """Every configuration reachable from `coordinator` (a copy is explored), which the
    environment saw as `watch`: for judging L1 and L2 from the end of a recorded run."""
    return explore_ahead(coordinator, watch, rules)[0]


def explore_ahead(
    coordinator: HandoffCoordinatorCore, watch: Watch, rules: Rules, guard: int | None = None
) -> tuple[Graph, str]:
    """`explore_from`, with the guard on configurations given (None: the world's), and why
    the guard stopped it before every run's end ("": it did not), as a review says it.  A
    run cut off because it never ends (Bound) is no reason: what L1 and L2 find there is
    true of the chart."""
    root = (coordinator.fork(), watch)
    world = ChartWorld(probe.table(coordinator), environment(rules.handoff_id), rules, root=root)
    explorer = _Explorer(world, guard)
    with _uncollected():
        explorer.explore()
    return world.graph(explorer.explored()), explorer._unexplored() if explorer.guarded else ""


_new: Any = tuple.__new__
"""A named tuple made with every field given, without its Python-level `__new__`."""

Progress = Callable[[int, int], None]
"""Told, now and then, how many configurations an exploration has found and explored."""

_TICK = (1 << 12) - 1
"""The progress is told once every 4,096 configurations explored: a few times a second."""


@contextmanager
def _uncollected() -> Iterator[None]:
    """The cyclic garbage collector paused: an exploration allocates millions of tuples that
    live to its end and form no cycles, and each full collection would walk every one of them
    again (a quarter of a large review's time).  What an exploration leaves is collected
    once, afterwards, as usual."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# -- the exploration -----------------------------------------------------------------------


def _between(
    reached: tuple[int, ...] | None, stored: tuple[int, ...] | None
) -> tuple[int, ...] | None:
    """For a move that reached a configuration stored numbered otherwise: the number in the
    configuration reached of each handoff of the stored one (None: the same numbers)."""
    if reached == stored:
        return None
    count = len(reached or stored or ())
    into_key = stored or tuple(range(count))
    from_key = [0] * count
    for mine, keyed in enumerate(reached or range(count)):
        from_key[keyed] = mine
    return tuple(from_key[into_key[n]] for n in range(count))


class _Explorer:
    """Breadth-first exploration of one world, keeping what the verdicts need."""

    def __init__(
        self, world: World, guard: int | None = None, progress: Progress | None = None
    ) -> None:
        self.world = world
        self.progress = progress
        node, key = world.root()
        self.nodes: list[Any] = [node]
        self.index: dict[Hashable, int] = {key: 0}
        self.parents: list[tuple[int, TraceStep] | None] = [None]
        self.renamings: list[tuple[int, ...] | None] = [None]
        """How each stored configuration's key renumbers its handoffs (None: it does not)."""
        self.edges: list[list[Edge]] = []
        self.tallies = {entry.key: Tally() for entry in world.properties}
        self.guard = world.guard if guard is None else guard
        self.transitions = 0
        self.cut = False
        """Whether some run was cut off: by its world (one that never ends) or the guard."""
        self.guarded = ""
        """Why the guard cut runs off ("": it did not)."""
        self.spent: dict[str, float] = {}
        """Seconds spent judging, by phase (see `_PHASES`)."""

    def explore(self) -> None:
        node = 0
        progress = self.progress
        while node < len(self.nodes):
            for key, finding in self.world.checks(self.nodes[node]):
                self.tallies[key].note(finding, self.parents, node)
            self.edges.append(
                [self._follow(node, move) for move in self.world.moves(self.nodes[node])]
            )
            node += 1
            if progress is not None and not node & _TICK:
                progress(len(self.nodes), node)

    def _follow(self, node: int, move: Move) -> Edge:
        self.transitions += 1
        tallies = self.tallies
        for key, finding in move.checks:
            if finding is None:
                tallies[key].checked += 1  # `Tally.note` of a check that held, inlined
            else:
                tallies[key].note(finding, self.parents, node, move.step)
        if move.node is None:
            return Edge(move.step, -1, move.tags)
        if move.stays:
            return Edge(move.step, node, move.tags)
        found = None
        if move.cut is None:
            found = self.index.get(move.key)  # `_reach` of a configuration seen, inlined
        target = self._reach(node, move) if found is None else found
        if target < 0:
            return Edge(move.step, target, move.tags | Tag.CUT)
        stored = self.renamings[target]
        if move.renamed is None and stored is None:
            return _new(Edge, (move.step, target, move.tags, None))  # type: ignore[no-any-return]
        return Edge(move.step, target, move.tags, _between(move.renamed, stored))

    def _reach(self, node: int, move: Move) -> int:
        """The index of the configuration `move` leads to, added when new; -1 when the run is
        cut off there: by its world (Bound fails), or by the guard (the review is cut short:
        a configuration not explored says nothing of the chart)."""
        why = move.cut
        if why is not None:
            self.cut = True
            self.tallies[Key.BOUND].note(why, self.parents, node, move.step)
            return -1
        found = self.index.get(move.key)
        if found is not None:
            return found
        if len(self.nodes) >= self.guard:
            self.cut = True
            self.guarded = f"the exploration stopped at its guard of {self.guard:,} configurations"
            return -1
        self.index[move.key] = len(self.nodes)
        self.nodes.append(move.node)
        self.parents.append((node, move.step))
        self.renamings.append(move.renamed)
        self.world.reached(move.node)
        return len(self.nodes) - 1

    # -- judging --

    def explored(self) -> Explored:
        """What the exploration found, for the world's judgments over the graph."""
        return Explored(self.nodes, self.edges, self.parents, self.tallies, self.cut)

    def verdicts(self) -> tuple[Verdict, ...]:
        """Each property's verdict, in the world's order: a property judged at each move has
        the tally of its checks; one judged over the graph or the chart, its world's judge."""
        judges = self.world.judges(self.explored())
        found = []
        for entry in self.world.properties:
            began = time.perf_counter()
            if self.cut and entry.judged is Judged.GRAPH:
                found.append(Verdict(entry, 0, 0, unjudged=self._unexplored()))
                continue
            judge = judges.get(entry.key)
            verdict = judge() if judge is not None else self.tallies[entry.key].verdict(entry)
            found.append(self._earned(verdict))
            phase = _PHASES.get(entry.key)
            if phase is not None:
                self.spent[phase] = self.spent.get(phase, 0.0) + time.perf_counter() - began
        return tuple(found)

    def _unexplored(self) -> str:
        """Why a judgment over every run cannot be made: some were cut off."""
        endless = self.tallies[Key.BOUND].violations > 0
        why = [self.guarded] if self.guarded else []
        why += ["some runs never end (see Bound)"] if endless else []
        return f"{' and '.join(why)}, so not every run was explored to its end"

    def _earned(self, verdict: Verdict) -> Verdict:
        """`verdict` as far as an exploration cut short can tell (as it is, when every run was
        explored): Bound is not judged when the guard alone cut runs off; a pass of Table (the
        cells reached) and a failure of Coverage (cells no run reached) are not earned."""
        if not self.cut:
            return verdict
        key = verdict.prop.key
        unearned = (
            (key is Key.BOUND and not verdict.fails)
            or (key is Key.EQUIVALENCE and not verdict.fails)
            or (key is Key.COVERAGE and verdict.fails)
        )
        if not unearned:
            return verdict
        # Nothing said of what the cut left unseen: no dead cells, no counterexample, no notes.
        return Verdict(verdict.prop, verdict.checked, 0, unjudged=self._unexplored())

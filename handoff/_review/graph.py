"""Judgments over the whole explored graph: the liveness properties (L1 and L2 of the chart
alone, W4 and W5 with workers), and Coverage.

The explorer records, for every configuration, every call the environment may make from it
and where the call led; L1 and L2 walk that graph backwards from the completions, Coverage
compares the table cells some call took with the transitions the chart declares.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence
from typing import Any, NamedTuple

import attrs

from handoff._chart.vocabulary import EventKind
from handoff._compile.table import CompiledChart, Step, StepKind
from handoff._review.environment import Call, CallKind
from handoff._review.verdict import DeadCell, Parents, Tally, TraceStep, Verdict, path
from handoff._review.watch import Mode, Seen, Watch, fits
from handoff._system.properties import Key, Property, prop

__all__ = [
    "Edge",
    "End",
    "Graph",
    "Liveness",
    "Tag",
    "cancellation",
    "coverage",
    "no_cancel",
    "progress",
    "stuck",
    "tag",
]


class Tag(enum.IntFlag):
    """What kind of environment move an edge is, for the liveness properties."""

    NONE = 0
    COOPERATIVE = enum.auto()
    ACKNOWLEDGEMENT = enum.auto()
    TERMINAL = enum.auto()
    UNUSABLE = enum.auto()
    """An unusable payload the coordinator accepted."""
    CUT = enum.auto()
    """The exploration cut the run off here (Bound): where it led was not explored."""


class Edge(NamedTuple):
    """One move of the explored graph: what a call did, where it led, what kind of move it is."""

    step: TraceStep
    target: int
    """The configuration the call led to (-1: the run was cut off, or the call crashed)."""
    tags: Tag
    renamed: tuple[int, ...] | None = None
    """Where the handoffs are interchangeable: the number in the configuration the move
    reached of each handoff as `target` numbers it (None: the same)."""


def tag(call: Call, watch: Watch, *, accepted: bool) -> Tag:
    """The kind of move `call` is from a configuration the environment saw as `watch`."""
    if call.kind is CallKind.OUTCOME:
        assert call.outcome is not None
        assert call.action_id is not None
        if fits(watch.action(call.action_id.value), call.outcome):
            return Tag.COOPERATIVE | Tag.ACKNOWLEDGEMENT
        return Tag.NONE
    if call.terminal and call.usable:
        return Tag.TERMINAL
    if not call.usable:
        return Tag.UNUSABLE if accepted and call.fact is not None else Tag.NONE
    return Tag.COOPERATIVE


@attrs.frozen
class Graph:
    """Every explored configuration (by what the environment saw) and the moves between them."""

    watches: Sequence[Watch]
    edges: Sequence[Sequence[Edge]]
    """`edges[node]`: every call the environment may make from configuration `node`."""
    parents: Parents


def progress(prop: Property, graph: Graph) -> Verdict:
    """L1: cooperation completes from every configuration reached with usable payloads."""
    done = [watch.mode is Mode.COMPLETE for watch in graph.watches]
    can_complete = _backward(graph, done, Tag.COOPERATIVE)
    cut_short = int(Tag.CUT | Tag.COOPERATIVE)  # plain ints: `IntFlag.__and__` is Python's
    cut = [
        any(int(tags) & cut_short == cut_short for _step, _target, tags, _renamed in edges)
        for edges in graph.edges
    ]
    meets_cut = _backward(graph, cut, Tag.COOPERATIVE)
    order, parents = _usable_reach(graph)
    tally = Tally()
    for node in order:
        finding = None
        if not can_complete[node]:
            finding = (
                _CUT
                if meets_cut[node]
                else "from here no cooperative continuation reaches a completion"
            )
        tally.note(finding, parents, node)
    summary = f"{prop.unit}: {len(order):,} of {len(graph.watches):,}"
    notes: tuple[str, ...] = ()
    apart = len(graph.watches) - len(order)
    if apart:
        notes = (
            f"{apart} configurations are reachable only through an unusable payload the contract "
            "takes (see P1); they wait for a terminal fact, and L2 judges them",
        )
    return tally.verdict(prop, summary=summary, notes=notes)


_CUT = (
    "from here every cooperative run reaches the exploration's cut (see Bound) before it "
    "completes: the cut, not a deadlock, is what stops it"
)


def _completed_canceled(watch: Watch) -> bool:
    return watch.mode is Mode.COMPLETE and Seen.SUCCEEDED not in watch.seen


def cancellation(prop: Property, graph: Graph) -> Verdict:
    """L2: a terminal fact, then acknowledgements alone, reach a CANCELED completion."""
    canceled = [_completed_canceled(watch) for watch in graph.watches]
    can_cancel = _backward(graph, canceled, Tag.ACKNOWLEDGEMENT)
    tally = Tally()
    terminal = int(Tag.TERMINAL)
    for node, edges in enumerate(graph.edges):
        if canceled[node]:
            continue
        stuck = [
            edge
            for edge, target, tags, _renamed in edges
            if int(tags) & terminal and not (target >= 0 and can_cancel[target])
        ]
        if stuck:
            finding = f"after {stuck[0].call} no acknowledgements lead to a CANCELED completion"
            tally.note(finding, graph.parents, node, stuck[0])
        else:
            tally.note(None, graph.parents, node)
    return tally.verdict(prop)


def _backward(graph: Graph, targets: list[bool], tag: Tag) -> list[bool]:
    """Which configurations reach a target along edges carrying `tag`."""
    incoming: list[list[int]] = [[] for _ in graph.watches]
    mask = int(tag)  # a plain int: `IntFlag.__and__` is Python's, and runs on every edge
    for source, edges in enumerate(graph.edges):
        for _edge, target, tags, _renamed in edges:
            if int(tags) & mask and target >= 0 and target != source:
                incoming[target].append(source)
    reached = list(targets)
    queue = deque(node for node, hit in enumerate(targets) if hit)
    while queue:
        for source in incoming[queue.popleft()]:
            if not reached[source]:
                reached[source] = True
                queue.append(source)
    return reached


def _usable_reach(graph: Graph) -> tuple[list[int], list[tuple[int, TraceStep] | None]]:
    """Configurations reachable without accepted unusable payloads, breadth-first."""
    parents: list[tuple[int, TraceStep] | None] = [None] * len(graph.watches)
    order = [0]
    visited = {0}
    unusable = int(Tag.UNUSABLE)
    for node in order:  # grows while it is walked: breadth-first
        for edge, target, tags, _renamed in graph.edges[node]:
            if target >= 0 and target not in visited and not int(tags) & unusable:
                visited.add(target)
                parents[target] = (node, edge)
                order.append(target)
    return order, parents


# -- coverage ------------------------------------------------------------------------------


def coverage(
    prop: Property,
    chart: CompiledChart,
    covered_states: set[int],
    covered_steps: set[tuple[int, int]],
) -> Verdict:
    """Coverage: every state was reached and every declared transition taken.

    `covered_steps` holds the (state, event index) cells some accepted or refused call took.
    """
    states = range(len(chart.states))
    dead = [f"state {chart.states[s]}" for s in states if s not in covered_states]
    cells_dead = [DeadCell(chart.states[s]) for s in states if s not in covered_states]
    transitions = _transitions(chart).values()
    unused: list[str] = []
    for cells in transitions:
        missed = [cell for cell in cells if (cell.source, cell.event.index) not in covered_steps]
        if len(missed) == len(cells):
            dead.append(_describe(chart, cells))
            cells_dead.append(_dead_cell(chart, cells))
        else:
            unused += [f"{chart.states[cell.source]} {cell.event.value}" for cell in missed]
    covered = len(transitions) - len(dead) + len(states) - len(covered_states)
    summary = (
        f"{len(covered_states)}/{len(states)} states, {covered}/{len(transitions)} transitions"
    )
    notes = []
    if dead:
        notes.append("dead: " + ", ".join(dead))
    if unused:
        # Said as what it is, a fact about the chart and not a gap: beside "Coverage PASS" a
        # bare list of unreachable cells read like a failure.
        notes.append(
            f"every transition runs (not a gap); no run can reach these {_cells(len(unused))} "
            "of them, as expected (an action failing where every issued action was already "
            "acknowledged): " + ", ".join(unused)
        )
    checked = len(states) + len(transitions)
    return Verdict(prop, checked, len(dead), None, summary, tuple(notes), tuple(cells_dead))


def _cells(count: int) -> str:
    return f"{count} table cell" if count == 1 else f"{count} table cells"


def _transitions(chart: CompiledChart) -> dict[tuple[object, ...], list[Step]]:
    """The transitions the chart declares, each with the table cells it fills.

    One declared transition may carry several events (`terminated = action_failed = …`):
    it fills one cell per event, all with the same behaviour, and is taken when any is.
    """
    transitions: dict[tuple[object, ...], list[Step]] = {}
    for step in chart.steps():
        if _declared(step):
            behaviour = (step.source, step.target, step.refusal, step.checks, step.effects)
            transitions.setdefault(behaviour, []).append(step)
    return transitions


def _declared(step: Step) -> bool:
    """A step the chart states itself, as opposed to its event kind's default."""
    if step.kind is StepKind.REFUSED:
        return step.event.kind is EventKind.FACT
    # Not `step.kind is StepKind.MOVES`: a hand-written ignored step that moves, issues or checks is
    # of kind "ignored", yet the chart declared it.
    return step.target != step.source or bool(step.effects) or bool(step.checks)


def _dead_cell(chart: CompiledChart, cells: Sequence[Step]) -> DeadCell:
    step = cells[0]
    events = "|".join(cell.event.value for cell in cells)
    refuses = "refuses " if step.kind is StepKind.REFUSED else ""
    return DeadCell(chart.states[step.source], chart.states[step.target], refuses + events)


def _describe(chart: CompiledChart, cells: Sequence[Step]) -> str:
    step = cells[0]
    source, target = chart.states[step.source], chart.states[step.target]
    events = "|".join(cell.event.value for cell in cells)
    if step.kind is StepKind.REFUSED:
        return f"{source} refuses {events}"
    return f"{source} --{events}--> {target}"


# -- with workers: how every fault-free run ends (W4, W5) ---------------------------------


class End(enum.IntFlag):
    """How the fault-free runs from a configuration may end."""

    SUCCESS = 1
    CANCELED = 2
    STUCK = 4
    """Nothing more can be delivered and the handoff is not complete."""


class Liveness:
    """W4, W5 and W7 over the graph of a world with workers: how every fault-free run from each
    configuration ends, once every message in flight is delivered.  A node says how a run that
    ends there ended (`end()`: for every handoff; `end(terminated=True)`: for those a
    terminal fact was reported for, `terminated` saying whether there is one) and why it is
    stuck (`stuck()`)."""

    def __init__(
        self, nodes: Sequence[Any], edges: Sequence[Sequence[Edge]], parents: Parents
    ) -> None:
        self.nodes = nodes
        self.parents = parents
        cooperative = int(Tag.COOPERATIVE)  # a plain int: `IntFlag.__and__` is Python's
        self.deliveries: list[list[Edge]] = [
            [edge for edge in edges if int(edge.tags) & cooperative and edge.target >= 0]
            for edges in edges
        ]
        """Each configuration's fault-free moves (refused early facts left out)."""
        self.cycles: set[int] = set()
        self._found: dict[bool, list[End]] = {}

    def ends(self, terminated: bool = False) -> list[End]:
        """For each configuration, how its fault-free runs may end for every handoff
        (`terminated`: for those a terminal fact was reported for)."""
        found = self._found.get(terminated)
        if found is None:
            found = self._found[terminated] = self._ends(terminated)
        return found

    def _ended(self, node: int) -> bool:
        return not self.deliveries[node] or node in self.cycles

    def deliveries_complete(self) -> Verdict:
        ends = self.ends()
        tally = Tally()
        stuck_ = int(End.STUCK)
        for node in range(len(self.nodes)):
            stuck = int(ends[node]) & stuck_ and self._ended(node)
            tally.note(self.nodes[node].stuck() if stuck else None, self.parents, node)
        return tally.verdict(prop(Key.DELIVERIES_COMPLETE))

    def terminal_cancels(self) -> Verdict:
        """W5 at every configuration where a fault-free run ends: each handoff a terminal fact
        was reported for is complete CANCELED there (so, from each terminal fact, every run
        that delivers what is in flight ends CANCELED)."""
        self.ends()  # finds the cycles
        tally = Tally()
        for node, found in enumerate(self.nodes):
            if not self._ended(node) or not found.terminated:
                continue
            end = found.end(terminated=True)
            tally.note(no_cancel(end) if end is not End.CANCELED else None, self.parents, node)
        return tally.verdict(prop(Key.TERMINAL_CANCELS))

    def every_handoff_succeeds(self) -> Verdict:
        """W7: from the first configuration, every run with no fault at all ends with every
        handoff complete SUCCESS."""
        ends = self.ends()
        tally = Tally()
        if ends[0] & ~End.SUCCESS:
            tail, end = self._to_a_wrong_end(0, ends, End.SUCCESS)
            tally.note(not_every_success(self.nodes[end].end()), self.parents, 0, None, tail)
        else:
            tally.note(None, self.parents, 0)
        return tally.verdict(prop(Key.EVERY_HANDOFF_SUCCEEDS), summary="runs with no fault")

    def _to_a_wrong_end(
        self, start: int, ends: Sequence[End], right: End
    ) -> tuple[list[TraceStep], int]:
        """The deliveries from `start` to the nearest end that is not `right`, and that end."""
        came: dict[int, tuple[int, Edge] | None] = {start: None}
        queue = [start]
        for node in queue:
            if self._ended(node) and ends[node] & ~right:
                return _steps(came, node), node
            for edge in self.deliveries[node]:
                if edge.target not in came:
                    came[edge.target] = (node, edge)
                    queue.append(edge.target)
        return [], start

    def _ends(self, terminated: bool) -> list[End]:
        """For each configuration, how its fault-free runs may end (a cycle counts as stuck).

        The ends are worked out as plain ints (`End`'s operators are Python's), as `End`
        once found."""
        stuck_ = int(End.STUCK)
        ends: list[int | None] = [None] * len(self.nodes)
        following = [[edge.target for edge in edges] for edges in self.deliveries]
        for root in range(len(self.nodes)):
            if ends[root] is not None:
                continue
            stack = [(root, 0)]
            on_path = {root}
            while stack:
                node, position = stack[-1]
                if position < len(following[node]):
                    stack[-1] = (node, position + 1)
                    nxt = following[node][position]
                    if nxt in on_path:
                        ends[nxt] = stuck_  # a livelock: the run never ends
                        self.cycles.add(nxt)
                    elif ends[nxt] is None:
                        stack.append((nxt, 0))
                        on_path.add(nxt)
                    continue
                stack.pop()
                on_path.discard(node)
                known = ends[node]
                end = known if known is not None else 0
                if following[node]:
                    for n in following[node]:
                        found = ends[n]
                        end |= found if found is not None else stuck_
                else:
                    end |= int(self.nodes[node].end(terminated))
                ends[node] = end
        values = {value: End(value) for value in range(int(End.STUCK) * 2)}
        return [values[end] if end is not None else End.STUCK for end in ends]


def _steps(came: dict[int, tuple[int, Edge] | None], node: int) -> list[TraceStep]:
    """The moves to `node`, each numbering the handoffs as the run's first configuration
    does (a configuration stored for interchangeable handoffs may number them otherwise)."""
    steps: list[TraceStep] = []
    names: list[int] | None = None
    """Each handoff's number in the run, by its number in the configuration reached."""
    for edge in path(came, node):
        step = edge.step
        steps.append(step if names is None else step.renumbered(names))
        if edge.renamed is not None:
            current = names or list(range(len(edge.renamed)))
            names = [current[edge.renamed[n]] for n in range(len(edge.renamed))]
    return steps


def not_every_success(end: End) -> str:
    """W7's words for a run with no fault that ended `end`, not every handoff SUCCESS."""
    if end & End.STUCK:
        return "with no fault at all, a run ends with a handoff incomplete"
    return "with no fault at all, a run ends with a handoff CANCELED"


def stuck(where: str, what: str, *, several: bool = False) -> str:
    """W4's words for a run that ends with the handoff (or, `several`, handoffs) incomplete
    `where`, with `what` in flight."""
    if several:
        return f"the run ends with handoffs incomplete ({where}): {what}"
    return f"the run ends with the handoff incomplete, in {where}: {what}"


def no_cancel(end: End) -> str:
    """W5's words for a run after a terminal fact that ends as `end`, not CANCELED."""
    if end & End.SUCCESS:
        return "after the terminal fact a run still ends with a SUCCESS"
    return "after the terminal fact a run ends with the handoff incomplete"

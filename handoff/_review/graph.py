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
from handoff._review.properties import Key, Property, prop
from handoff._review.verdict import DeadCell, Parents, Tally, TraceStep, Verdict, path
from handoff._review.watch import Mode, Seen, Watch, fits
from handoff._values.values import HandoffCompletion

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
    cut = [
        any(tags & Tag.CUT and tags & Tag.COOPERATIVE for _step, _target, tags in edges)
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
            f"{apart} configurations are reachable only through an unusable payload the SPEC "
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
    for node, edges in enumerate(graph.edges):
        if canceled[node]:
            continue
        stuck = [
            edge
            for edge, target, tags in edges
            if tags & Tag.TERMINAL and not (target >= 0 and can_cancel[target])
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
    for source, edges in enumerate(graph.edges):
        for _edge, target, tags in edges:
            if tags & tag and target >= 0 and target != source:
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
    for node in order:  # grows while it is walked: breadth-first
        for edge, target, tags in graph.edges[node]:
            if target >= 0 and target not in visited and not tags & Tag.UNUSABLE:
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
        notes.append(
            "cells no run can reach, of transitions that other events take (an action "
            "failing where every issued action was already acknowledged): " + ", ".join(unused)
        )
    checked = len(states) + len(transitions)
    return Verdict(prop, checked, len(dead), None, summary, tuple(notes), tuple(cells_dead))


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
    """W4 and W5 over the graph of a world with workers: how every fault-free run from each
    configuration ends, once every message in flight is delivered.  A node is read as a
    coordinator and a system state (its `flight` of messages)."""

    def __init__(
        self, nodes: Sequence[Any], edges: Sequence[Sequence[Edge]], parents: Parents
    ) -> None:
        self.nodes = nodes
        self.parents = parents
        self.deliveries: list[list[Edge]] = [
            [edge for edge in edges if edge.tags & Tag.COOPERATIVE and edge.target >= 0]
            for edges in edges
        ]
        """Each configuration's fault-free moves (refused early facts left out)."""
        self.terminal = [
            edge.target
            for edges in edges
            for edge in edges
            if edge.tags & Tag.TERMINAL and edge.target >= 0
        ]
        """The configurations a terminal fact led to."""
        self.cycles: set[int] = set()
        self._found: list[End] | None = None

    def ends(self) -> list[End]:
        if self._found is None:
            self._found = self._ends()
        return self._found

    def _ended(self, node: int) -> bool:
        return not self.deliveries[node] or node in self.cycles

    def deliveries_complete(self) -> Verdict:
        ends = self.ends()
        tally = Tally()
        for node in range(len(self.nodes)):
            stuck = ends[node] & End.STUCK and self._ended(node)
            tally.note(self._stuck(node) if stuck else None, self.parents, node)
        return tally.verdict(prop(Key.DELIVERIES_COMPLETE))

    def terminal_cancels(self) -> Verdict:
        ends = self.ends()
        tally = Tally()
        for node in self.terminal:
            if ends[node] & ~End.CANCELED:
                words = self._no_cancel(ends[node])
                tail = self._to_a_wrong_end(node, ends)
                tally.note(words, self.parents, node, None, tail)
            else:
                tally.note(None, self.parents, node)
        return tally.verdict(prop(Key.TERMINAL_CANCELS))

    def _to_a_wrong_end(self, start: int, ends: Sequence[End]) -> list[TraceStep]:
        """The deliveries from `start` to the nearest end that is not CANCELED."""
        came: dict[int, tuple[int, TraceStep] | None] = {start: None}
        queue = [start]
        for node in queue:
            if self._ended(node) and ends[node] & ~End.CANCELED:
                return path(came, node)
            for edge in self.deliveries[node]:
                if edge.target not in came:
                    came[edge.target] = (node, edge.step)
                    queue.append(edge.target)
        return []

    def _ends(self) -> list[End]:
        """For each configuration, how its fault-free runs may end (a cycle counts as stuck)."""
        ends: list[End | None] = [None] * len(self.nodes)
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
                        ends[nxt] = End.STUCK  # a livelock: the run never ends
                        self.cycles.add(nxt)
                    elif ends[nxt] is None:
                        stack.append((nxt, 0))
                        on_path.add(nxt)
                    continue
                stack.pop()
                on_path.discard(node)
                ends[node] = self._end_of(node, [ends[n] for n in following[node]], ends[node])
        return [end if end is not None else End.STUCK for end in ends]

    def _end_of(self, node: int, following: Sequence[End | None], own: End | None) -> End:
        end = own if own is not None else End(0)
        if following:
            for found in following:
                end |= found if found is not None else End.STUCK
            return end
        coordinator = self.nodes[node].coordinator
        if not coordinator.is_complete:
            return end | End.STUCK
        if coordinator.completion is HandoffCompletion.SUCCESS:
            return end | End.SUCCESS
        return end | End.CANCELED

    def _stuck(self, node: int) -> str:
        return stuck(self.nodes[node])

    @staticmethod
    def _no_cancel(end: End) -> str:
        return no_cancel(end)


def stuck(node: Any) -> str:
    """W4's words for a run that ends at `node` (a coordinator and its system state)."""
    coordinator, state = node
    waiting = [message.describe() for channel in state.flight for message in channel]
    what = f"only {', '.join(waiting)} in flight, refused" if waiting else "nothing in flight"
    return f"the run ends with the handoff incomplete, in {coordinator.chart_state}: {what}"


def no_cancel(end: End) -> str:
    """W5's words for a run after a terminal fact that ends as `end`, not CANCELED."""
    if end & End.SUCCESS:
        return "after the terminal fact a run still ends with a SUCCESS"
    return "after the terminal fact a run ends with the handoff incomplete"

"""A chart's states and moves with some of them marked: the one shape every overlay drawing has.

A scenario's path, a counterexample run and the dead code the coverage review found are all
the whole chart (every transition that changes state) with a few states and moves marked.
The builders here read the chart and the run into a `HighlightedGraph`; the renderers
(`handoff._docs.dot.dot_highlighted`, `handoff._docs.mermaid.mermaid_highlighted`) are the
only code that turns one into DOT or Mermaid text.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

import attrs

from handoff._compile.table import CompiledChart
from handoff._docs.diagram import changes_state

__all__ = [
    "CallMark",
    "HighlightedGraph",
    "Look",
    "MarkedMove",
    "MarkedState",
    "RunMove",
    "dead_code_graph",
    "run_graph",
    "transitions",
]


class Look(enum.Enum):
    """How a state or a move is drawn; the value is its Mermaid class name."""

    VISITED = "visited"
    """A state the run passes through."""
    LAST = "violating"
    """The state where the run broke a property."""
    UNVISITED = "unvisited"
    """A state the run never enters (grey)."""
    DEAD = "dead"
    """A state or move no run reaches (red, dashed)."""
    LIVE = "live"
    """A state or move drawn only as context (plain)."""
    TAKEN = "taken"
    """A move the run makes."""
    BREAKING = "breaking"
    """The move whose call broke the property."""
    UNTAKEN = "untaken"
    """A move the run never makes (grey, dashed)."""


@attrs.frozen
class MarkedState:
    """One state as drawn over."""

    id: str
    name: str
    look: Look


@attrs.frozen
class CallMark:
    """One numbered call on a move: its words, and for the breaking call what it issued."""

    number: int
    text: str
    breaking: bool = False
    detail: str = ""
    """What the breaking call issued (or why it was refused); the DOT drawing shows it."""


@attrs.frozen
class MarkedMove:
    """One arrow: from and to which state, drawn how, with the calls made along it (a run's
    moves) or a note (a dead move's events)."""

    source: str
    target: str
    look: Look
    calls: tuple[CallMark, ...] = ()
    note: str = ""


@attrs.frozen
class HighlightedGraph:
    """A chart with its marks: what the renderers draw."""

    name: str
    """The chart's name: the DOT graph's name."""
    title: str
    """The drawing's title, the same in every format."""
    subtitle: str
    """A second line under the title (DOT only: a Mermaid title is one line)."""
    states: tuple[MarkedState, ...]
    moves: tuple[MarkedMove, ...]
    """Unmarked moves first (in table order), then the marked ones."""


@attrs.frozen
class RunMove:
    """One call of a run: the state before and after it, its words, whether it broke a
    property and what it issued."""

    source: str
    target: str
    label: str
    breaking: bool = False
    detail: str = ""


def transitions(chart: CompiledChart) -> list[tuple[str, str]]:
    """Every (source, target) pair of states some step of the chart moves between."""
    pairs = {
        (chart.states[s.source], chart.states[s.target]) for s in chart.steps() if changes_state(s)
    }
    return sorted(pairs, key=lambda pair: (chart.index(pair[0]), chart.index(pair[1])))


def run_graph(
    chart: CompiledChart, run: Sequence[RunMove], title: str, subtitle: str = ""
) -> HighlightedGraph:
    """The chart with `run` drawn over it: visited states filled, each call a numbered arrow
    (one arrow per move, its calls in order), a breaking call and its state in red."""
    visited = {chart.states[0], *(move.target for move in run)}
    broke = any(move.breaking for move in run)
    last = run[-1].target if run else chart.states[0]
    states = []
    for state, name in zip(chart.states, chart.names, strict=True):
        look = Look.VISITED if state in visited else Look.UNVISITED
        if broke and state == last:
            look = Look.LAST
        states.append(MarkedState(state, name, look))
    taken = {(move.source, move.target) for move in run}
    moves = [
        MarkedMove(source, target, Look.UNTAKEN)
        for source, target in transitions(chart)
        if (source, target) not in taken
    ]
    grouped: dict[tuple[str, str], list[CallMark]] = {}
    for number, move in enumerate(run, start=1):
        mark = CallMark(number, move.label, move.breaking, move.detail)
        grouped.setdefault((move.source, move.target), []).append(mark)
    for (source, target), calls in grouped.items():
        look = Look.BREAKING if any(call.breaking for call in calls) else Look.TAKEN
        moves.append(MarkedMove(source, target, look, tuple(calls)))
    return HighlightedGraph(chart.name, title, subtitle, tuple(states), tuple(moves))


def dead_code_graph(
    chart: CompiledChart,
    dead_states: Iterable[str],
    dead_moves: Iterable[tuple[str, str, str]],
    title: str,
    subtitle: str,
) -> HighlightedGraph:
    """The chart with the states no run reaches and the moves no run takes (source, target,
    events) in red."""
    dead = set(dead_states)
    states = tuple(
        MarkedState(state, name, Look.DEAD if state in dead else Look.LIVE)
        for state, name in zip(chart.states, chart.names, strict=True)
    )
    marked = [MarkedMove(s, t, Look.DEAD, note=f"dead: {events}") for s, t, events in dead_moves]
    drawn = {(move.source, move.target) for move in marked}
    moves = [MarkedMove(s, t, Look.LIVE) for s, t in transitions(chart) if (s, t) not in drawn]
    return HighlightedGraph(chart.name, title, subtitle, states, (*moves, *marked))

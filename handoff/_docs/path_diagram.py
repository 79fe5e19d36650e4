"""A counterexample drawn: over the chart's state diagram, and as a sequence of messages.

The state diagram is the whole chart in grey (every transition that changes state), with the
run drawn over it: the states it visits filled, each call a numbered arrow (a loop when the
call leaves the state as it was), the violating call in red.  The sequence diagram shows the
same calls between the Runtime, the Coordinator and the two workers, the violating call in a
red box with the property's sentence beside it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence, Set

import attrs

from handoff._docs.diagram import SPINE_COLOUR, changes_state
from handoff._docs.sequence import (
    _ACTION_LANES,
    _FACT_LANES,
    COORDINATOR,
    DESTINATION,
    RUNTIME,
    SOURCE,
)
from handoff._messages import HandoffAction
from handoff._review.properties import Property
from handoff._review.verdict import Counterexample, TraceStep
from handoff._runs.call import CallKind
from handoff._table import CompiledChart

__all__ = [
    "PathStep",
    "dot_path",
    "dot_text",
    "mermaid_frame",
    "mermaid_path",
    "mermaid_sequence_of",
    "mermaid_text",
    "path_steps",
    "transitions",
]

VISITED = "#dbe8f5"
TAKEN = SPINE_COLOUR
VIOLATING = "#c0392b"
IDLE = "#9a9a9a"


@attrs.frozen
class PathStep:
    """One call of the run as an arrow: from and to which state, its number and label."""

    number: int
    source: str
    target: str
    label: str
    violating: bool


def path_steps(chart: CompiledChart, example: Counterexample) -> list[PathStep]:
    """The run's calls as arrows over the chart's states (the last one broke the property)."""
    steps, state = [], chart.states[0]
    last = len(example.steps)
    for number, step in enumerate(example.steps, start=1):
        steps.append(PathStep(number, state, step.state, step.call.label, number == last))
        state = step.state
    return steps


def dot_path(chart: CompiledChart, prop: Property, example: Counterexample) -> str:
    """DOT text of the chart with the run drawn over it."""
    path = path_steps(chart, example)
    visited = {chart.states[0], *(step.target for step in path)}
    lines = [
        f'digraph "{chart.name}" {{',
        "  rankdir=TB; nodesep=0.3; ranksep=0.35;",
        f'  label="{dot_text(chart.name)}: {prop.key.value} fails in {len(path)} calls\\n'
        f'{dot_text(prop.title)}"; labelloc=t; fontname="Helvetica";',
        '  node [shape=box style="rounded,filled" fontname="Helvetica" fontsize=11];',
        '  edge [fontname="Helvetica" fontsize=10];',
    ]
    for state, name in zip(chart.states, chart.names, strict=True):
        fill = VISITED if state in visited else "white"
        colour = TAKEN if state in visited else IDLE
        if state == _last(chart, path):
            colour = VIOLATING
        width = 2 if state in visited else 1
        lines.append(
            f'  "{state}" [label="{dot_text(name)}" fillcolor="{fill}" color="{colour}" '
            f'fontcolor="{colour}" penwidth={width}];'
        )
    # A transition the run takes is drawn once, in the run's colour, never beside its grey twin.
    taken = {(step.source, step.target) for step in path}
    for source, target in transitions(chart):
        if (source, target) not in taken:
            lines.append(f'  "{source}" -> "{target}" [color="{IDLE}" style=dashed arrowsize=0.6];')
    for (source, target), steps in _by_move(path).items():
        violating = any(step.violating for step in steps)
        colour = VIOLATING if violating else TAKEN
        # One arrow per move, its calls a line each: repeated loops on one state would stack
        # their labels over each other.  The spaces keep a label off its arrow.
        label = "\\n".join(f"  {_dot_call(step, example)}" for step in steps)
        lines.append(
            f'  "{source}" -> "{target}" [label="{label}" '
            f'color="{colour}" fontcolor="{colour}" penwidth=2.2];'
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def mermaid_path(chart: CompiledChart, prop: Property, example: Counterexample) -> str:
    """Mermaid `stateDiagram-v2` text of the chart with the run drawn over it."""
    path = path_steps(chart, example)
    visited = {chart.states[0], *(step.target for step in path)}
    classes = [
        f"visited fill:{VISITED},stroke:{TAKEN},stroke-width:2px",
        f"violating fill:#f6d5d1,stroke:{VIOLATING},stroke-width:3px",
        f"unvisited fill:white,stroke:{IDLE},color:{IDLE}",
    ]
    title = f"{chart.name}, {prop.key.value} fails in {len(path)} calls"
    lines = mermaid_frame(chart, title, classes, {(step.source, step.target) for step in path})
    for (source, target), steps in _by_move(path).items():
        # A non-breaking space keeps each number with its call when Mermaid wraps the label.
        calls = ", ".join(
            f"{step.number}.\u00a0{mermaid_text(step.label)}{' ✗' if step.violating else ''}"
            for step in steps
        )
        lines.append(f"    {source} --> {target} : {calls}")
    lines += [f"    class {state} visited" for state in sorted(visited - {_last(chart, path)})]
    lines.append(f"    class {_last(chart, path)} violating")
    lines += [f"    class {state} unvisited" for state in chart.states if state not in visited]
    return "\n".join(lines) + "\n"


def mermaid_sequence_of(prop: Property, example: Counterexample) -> str:
    """Mermaid `sequenceDiagram` text of the run, the violating call boxed in red."""
    lines = [
        "sequenceDiagram",
        f"    title {prop.key.value} fails: {mermaid_text(prop.title)}",
        f"    participant {RUNTIME}",
        f"    participant {SOURCE}",
        f"    participant {COORDINATOR}",
        f"    participant {DESTINATION}",
    ]
    lanes: dict[int, str] = {}
    last = len(example.steps)
    for number, step in enumerate(example.steps, start=1):
        body = list(_messages(number, step, lanes))
        if number == last:
            lines.append("    rect rgb(246, 213, 209)")
            lines += [f"    {line}" for line in body]
            lines.append(f"    Note over {SOURCE},{DESTINATION}: {_note(f'✗ {example.finding}')}")
            lines.append("    end")
        else:
            lines += body
    lines.append(
        f"    Note over {RUNTIME},{DESTINATION}: {_note(f'{prop.key.value}: {prop.words}')}"
    )
    return "\n".join(lines) + "\n"


def _messages(number: int, step: TraceStep, lanes: dict[int, str]) -> Iterator[str]:
    call = step.call
    if call.kind is CallKind.START:
        lane = RUNTIME
    elif call.fact is not None:
        lane = _FACT_LANES.get(type(call.fact), RUNTIME)
    else:
        lane = lanes.get(call.action_id.value if call.action_id else -1, RUNTIME)
    arrow = "-->>" if call.kind is CallKind.OUTCOME else "->>"
    yield f"    {lane}{arrow}{COORDINATOR}: {number}. {mermaid_text(call.label)}"
    if step.error is not None:
        yield f"    {COORDINATOR}--x{lane}: refused: {mermaid_text(step.error)}"
    for item in step.issued:
        name = type(item.action).__name__
        target = _ACTION_LANES.get(type(item.action))
        lanes[item.id.value] = target or RUNTIME
        if target is None or isinstance(item.action, HandoffAction.Complete):
            yield f"    Note over {SOURCE},{DESTINATION}: {name} [{item.id.value}]"
        else:
            yield f"    {COORDINATOR}->>{target}: {name} [{item.id.value}]"


def _by_move(path: list[PathStep]) -> dict[tuple[str, str], list[PathStep]]:
    """The run's calls grouped by the move they make, in the order each move is first made."""
    moves: dict[tuple[str, str], list[PathStep]] = {}
    for step in path:
        moves.setdefault((step.source, step.target), []).append(step)
    return moves


def _dot_call(step: PathStep, example: Counterexample) -> str:
    text = dot_text(f"{step.number}. {step.label}")
    if step.violating:
        return f"✗ {text}\\n  {dot_text(_issued(example.steps[-1]))}"
    return text


def _last(chart: CompiledChart, path: list[PathStep]) -> str:
    """The state the run ends in: where the property broke (the initial one for no call)."""
    return path[-1].target if path else chart.states[0]


def _issued(step: TraceStep) -> str:
    if step.error is not None:
        return f"refused: {step.error}"
    names = ", ".join(f"{type(item.action).__name__} [{item.id.value}]" for item in step.issued)
    return f"issued {names}" if names else "issued nothing"


def transitions(chart: CompiledChart) -> list[tuple[str, str]]:
    """Every (source, target) pair of states some step of the chart moves between."""
    pairs = {
        (chart.states[s.source], chart.states[s.target]) for s in chart.steps() if changes_state(s)
    }
    return sorted(pairs, key=lambda pair: (chart.index(pair[0]), chart.index(pair[1])))


def dot_text(text: str) -> str:
    """`text` as it may stand inside a quoted DOT string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def mermaid_frame(
    chart: CompiledChart, title: str, classes: Sequence[str], drawn: Set[tuple[str, str | None]]
) -> list[str]:
    """The start of a Mermaid state diagram of `chart`: its title, the `classes` defined, every
    state, and every state-changing transition but the moves in `drawn`, which the caller draws
    in its own way."""
    lines = ["---", f"title: {title}", "---", "stateDiagram-v2"]
    lines += [f"    classDef {definition}" for definition in classes]
    lines.append(f"    [*] --> {chart.states[0]}")
    lines += [
        f"    {state} : {name}" for state, name in zip(chart.states, chart.names, strict=True)
    ]
    lines += [f"    {s} --> {t}" for s, t in transitions(chart) if (s, t) not in drawn]
    return lines


def _note(text: str) -> str:
    """`text` for a note, broken into lines a docs column holds (Mermaid never wraps notes:
    one long line widens the whole diagram and shrinks every label in it)."""
    return "<br/>".join(textwrap.wrap(mermaid_text(text), _NOTE_WIDTH))


_NOTE_WIDTH = 90
"""Characters per line of a note: about the column's width at Mermaid's note font."""


def mermaid_text(text: str) -> str:
    """`text` as it may stand in a Mermaid label or message."""
    # Mermaid ends a message at ';' and reads '#' as an entity: keep both out of the text.
    # Backticks are Markdown in the prose, noise in a drawing.
    text = text.replace("`", "")
    return text.replace(";", ",").replace("#", "no. ").replace("\n", " ")

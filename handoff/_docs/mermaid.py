"""The state diagrams as Mermaid `stateDiagram-v2` text, laid out like the SVG.

The success path runs top to bottom, long labels and names break over lines, and a run of
spine states that clean up alike is one box with one arrow leaving it, so a code host draws
the diagram about as narrow as the SVG instead of shrinking a wide one.
"""

from __future__ import annotations

from handoff._docs.diagram import (
    CLEANUP,
    CLEANUP_COLOUR,
    HEADER,
    SPINE,
    SPINE_COLOUR,
    Edge,
    StateGraph,
)

__all__ = ["mermaid_state_diagram"]

_BAND = "states that clean up alike"


def mermaid_state_diagram(graph: StateGraph) -> str:
    """The Mermaid `stateDiagram-v2` text of `graph`."""
    lines = [
        f"%% {HEADER}",
        "stateDiagram-v2",
        "    direction TB",
        f"    classDef spine stroke:{SPINE_COLOUR},stroke-width:2px",
        f"    classDef cleanup stroke:{CLEANUP_COLOUR},stroke-dasharray:4 3",
    ]
    lines += [f'    state "{"<br/>".join(node.lines)}" as {node.id}' for node in graph.nodes]
    lines.append(f"    [*] --> {graph.nodes[0].id}")
    runs = [edge for edge in graph.edges if len(edge.sources) > 1]
    inside = {source: run for run in runs for source in run.sources}
    for run in runs:
        lines.append(f'    state "{_BAND}" as {_band(run)} {{')
        lines += [
            f"    {_arrow(edge.sources[0], edge)}"
            for edge in graph.edges
            if _band_of(edge, inside) is run
        ]
        lines.append("    }")
    for edge in graph.edges:
        if len(edge.sources) > 1:
            lines.append(_arrow(_band(edge), edge))
        elif _band_of(edge, inside) is None:
            lines.append(_arrow(edge.sources[0], edge))
    for group in (SPINE, CLEANUP):
        members = ",".join(node.id for node in graph.nodes if node.group == group)
        lines.append(f"    class {members} {group}")
    return "\n".join(lines) + "\n"


def _band_of(edge: Edge, inside: dict[str, Edge]) -> Edge | None:
    """The run whose box holds both ends of spine `edge`, if there is one."""
    band = inside.get(edge.sources[0])
    return band if edge.spine and band is not None and inside.get(edge.target) is band else None


def _band(run: Edge) -> str:
    return f"band_{run.sources[0]}"


def _arrow(source: str, edge: Edge) -> str:
    return f"    {source} --> {edge.target}: {'<br/>'.join(edge.short_lines())}"

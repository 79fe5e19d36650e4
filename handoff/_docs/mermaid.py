"""The state diagrams as Mermaid `stateDiagram-v2` text, laid out like the SVG.

The success path runs top to bottom and long labels and names break over lines, so a code
host draws the diagram about as narrow as the SVG instead of shrinking a wide one.
"""

from __future__ import annotations

from handoff._docs.diagram import CLEANUP, CLEANUP_COLOUR, HEADER, SPINE, SPINE_COLOUR, StateGraph

__all__ = ["mermaid_state_diagram"]


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
    lines += [
        f"    {source} --> {edge.target}: {'<br/>'.join(edge.short_lines())}"
        for edge in graph.edges
        for source in edge.sources
    ]
    for group in (SPINE, CLEANUP):
        members = ",".join(node.id for node in graph.nodes if node.group == group)
        lines.append(f"    class {members} {group}")
    return "\n".join(lines) + "\n"

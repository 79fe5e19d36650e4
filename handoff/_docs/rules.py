"""A chart's ordering rules as one table: HTML that fits a docs column, or Markdown.

The HTML table has three columns of fixed share (state, event and checks, what follows) and
lets long identifiers break after an underscore, so it is as wide as its column and never
wider (the six-column Markdown table of `docs/ordering-rules.md` is about 1,100 px wide).
It names no colour: it takes the page's text and background, light or dark.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from handoff._docs.sections import lifecycle_of, transitions, transitions_table
from handoff._table import CompiledChart, Step

__all__ = ["rules_html", "rules_markdown"]

_TABLE = (
    'class="handoff-rules" style="table-layout:fixed;width:100%;max-width:880px;'
    'border-collapse:collapse;font-size:0.9em;line-height:1.35"'
)
_CELL = (
    "border-top:1px solid rgba(128,128,128,0.45);padding:0.3em 0.45em;vertical-align:top;"
    "text-align:left"
)
_CODE = "overflow-wrap:anywhere;white-space:normal"


def rules_markdown(chart: CompiledChart) -> str:
    """The Markdown transition table, as in `docs/ordering-rules.md`."""
    return transitions_table(chart) + "\n"


def rules_html(chart: CompiledChart) -> str:
    """Every step that moves or issues an action, grouped by state, as an HTML table."""
    steps = list(transitions(chart))
    rows = []
    for position, step in enumerate(steps):
        first = position == 0 or steps[position - 1].source != step.source
        state = ""
        if first:
            span = sum(1 for other in steps if other.source == step.source)
            state = (
                f'<td rowspan="{span}" style="{_CELL}"><strong>'
                f"{html.escape(chart.names[step.source])}</strong></td>"
            )
        rows.append(
            f'<tr>{state}<td style="{_CELL}">{_event(step)}</td>'
            f'<td style="{_CELL}">{_follows(chart, step)}</td></tr>'
        )
    caption = html.escape(f"{chart.name}: every step that moves or issues an action")
    head = "".join(
        f'<th style="{_CELL};width:{width}">{name}</th>'
        for name, width in (("State", "22%"), ("Event [checks]", "36%"), ("Then", "42%"))
    )
    return (
        f'<table {_TABLE}>\n<caption style="caption-side:top;text-align:left">{caption}'
        f"</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>\n"
    )


def _code(words: Iterable[str]) -> str:
    # A word break after each underscore lets `cancel_destination` wrap in a narrow cell.
    return ", ".join(
        f'<code style="{_CODE}">{html.escape(word).replace("_", "_<wbr>")}</code>' for word in words
    )


def _event(step: Step) -> str:
    text = _code([step.event.value])
    if step.checks:
        text += f" [{_code(check.value for check in step.checks)}]"
    return text


def _follows(chart: CompiledChart, step: Step) -> str:
    parts = []
    if step.target != step.source:
        parts.append(f"→ {html.escape(chart.names[step.target])}")
    if step.effects:
        parts.append("issues " + _code(effect.value for effect in step.effects))
    recorded = lifecycle_of(step)
    if recorded:
        parts.append("records " + _code(event.value for event in recorded))
    return "<br>".join(parts) or "stays"

"""A chart's ordering rules as one table: HTML that fits a docs column, or Markdown.

The HTML table has three columns of fixed share (state, event and checks, what follows) and
lets long identifiers break after an underscore, so it is as wide as its column and never
wider (the six-column Markdown table of `docs/ordering-rules.md` is about 1,100 px wide).
It names no colour: it takes the page's text and background, light or dark.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import attrs

from handoff._compile.table import CompiledChart, Step
from handoff._docs.sections import lifecycle_of, transitions, transitions_table

__all__ = ["RULE_COLUMNS", "Piece", "RuleRow", "rule_rows", "rules_html", "rules_markdown"]

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
    rows = []
    for row in rule_rows(chart):
        state = ""
        if row.state:
            state = (
                f'<td rowspan="{row.span}" style="{_CELL}"><strong>'
                f"{html.escape(row.state)}</strong></td>"
            )
        follows = "<br>".join(_html(line) for line in row.follows)
        rows.append(
            f'<tr>{state}<td style="{_CELL}">{_html(row.event)}</td>'
            f'<td style="{_CELL}">{follows}</td></tr>'
        )
    caption = html.escape(f"{chart.name}: every step that moves or issues an action")
    head = "".join(
        f'<th style="{_CELL};width:{width}">{name}</th>'
        for name, width in zip(RULE_COLUMNS, ("22%", "36%", "42%"), strict=True)
    )
    return (
        f'<table {_TABLE}>\n<caption style="caption-side:top;text-align:left">{caption}'
        f"</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>\n"
    )


RULE_COLUMNS = ("State", "Event [checks]", "Then")
"""The rules table's columns."""

Piece = tuple[str, str]
"""A run of a cell's text: plain words, then an identifier shown as code (either empty)."""


@attrs.frozen
class RuleRow:
    """One step of the rules table."""

    state: str
    """The state's name on its first step, empty on the others (the cell spans them)."""
    span: int
    """How many steps the state has."""
    event: tuple[Piece, ...]
    follows: tuple[tuple[Piece, ...], ...]
    """What follows, a line each: the next state, the actions issued, the events recorded."""


def rule_rows(chart: CompiledChart) -> list[RuleRow]:
    """The rows of the rules table, in table order."""
    steps = list(transitions(chart))
    rows = []
    for position, step in enumerate(steps):
        first = position == 0 or steps[position - 1].source != step.source
        span = sum(1 for other in steps if other.source == step.source)
        state = chart.names[step.source] if first else ""
        rows.append(RuleRow(state, span, _event(step), _follows(chart, step)))
    return rows


def _code(words: Iterable[str]) -> tuple[Piece, ...]:
    return tuple((", " if position else "", word) for position, word in enumerate(words))


def _html(pieces: Iterable[Piece]) -> str:
    # A word break after each underscore lets `cancel_destination` wrap in a narrow cell.
    return "".join(
        html.escape(plain)
        + (
            f'<code style="{_CODE}">{html.escape(code).replace("_", "_<wbr>")}</code>'
            if code
            else ""
        )
        for plain, code in pieces
    )


def _event(step: Step) -> tuple[Piece, ...]:
    pieces = _code([step.event.value])
    if step.checks:
        pieces += ((" [", ""), *_code(check.value for check in step.checks), ("]", ""))
    return pieces


def _follows(chart: CompiledChart, step: Step) -> tuple[tuple[Piece, ...], ...]:
    lines: list[tuple[Piece, ...]] = []
    if step.target != step.source:
        lines.append(((f"→ {chart.names[step.target]}", ""),))
    if step.effects:
        lines.append((("issues ", ""), *_code(effect.value for effect in step.effects)))
    recorded = lifecycle_of(step)
    if recorded:
        lines.append((("records ", ""), *_code(event.value for event in recorded)))
    return tuple(lines) or ((("stays", ""),),)

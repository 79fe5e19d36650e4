"""A sequence of messages drawn as SVG in Python: no browser, no network, no Graphviz.

Each lane is a name over a dashed lifeline; a message is an arrow between two lanes with its
label above it, a note a box over one lane or a span of them, and the messages of the call
that broke a property sit in a red band.  Labels break at spaces only, never inside a word,
and the lanes are spaced so that every label fits between the lanes it joins.  Text is
measured with Helvetica's advance widths (`handoff._docs.metrics`), with room to spare for a
wider sans-serif.  Sizes are in points, as in the Graphviz drawings, and the
colours and dark palette are theirs (`handoff._docs.dot`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from handoff._docs.diagram import HEADER, SPINE_COLOUR
from handoff._docs.dot import BROKEN_FILL, IDLE, PLAIN, SVG_CLASS, VIOLATING, dark_style
from handoff._docs.metrics import helvetica_width
from handoff._docs.sequence import DESTINATION, SOURCE, Arrow, SequenceLine

__all__ = ["svg_sequence", "text_width", "wrap"]

_FONT = "Helvetica, Arial, 'Liberation Sans', sans-serif"
_SIZE = 10.0
"""Points of a label: 13.3 px drawn at its own size, 12 px shrunk to 90 %."""
_TITLE_SIZE = 11.0
_LINE = _SIZE * 1.3
_LABEL_WIDTH = 170.0
"""Points a message's label may take before it breaks onto another line."""
_NOTE_WIDTH = 330.0
"""Points a note over one lane may take: a note across lanes takes their span or this."""
_LANE_GAP = 110.0
_PAD = 6.0
_MARGIN = 12.0
_SLACK = 1.1
"""Measured widths are stretched this much: a reader's sans-serif may be wider than Arial."""
_NOTE_FILL = "#eef3f9"


def text_width(text: str, size: float = _SIZE) -> float:
    """Points `text` takes at `size`, with room for a wider font than Helvetica."""
    return helvetica_width(text.replace("`", ""), size) * _SLACK


def wrap(text: str, width: float, size: float = _SIZE) -> list[str]:
    """`text`'s lines broken at spaces to fit `width` points; a word longer than that
    stands alone on its line, whole.  A newline in `text` always breaks."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            longer = f"{line} {word}" if line else word
            if line and text_width(longer, size) > width:
                lines.append(line)
                line = word
            else:
                line = longer
        lines.append(line)
    return lines


@attrs.frozen
class _Row:
    """One message placed: its lines, and the lanes it joins (or spans, for a note)."""

    message: SequenceLine
    lines: tuple[str, ...]
    start: int
    end: int

    @property
    def note(self) -> bool:
        return self.message.arrow is Arrow.NOTE

    @property
    def height(self) -> float:
        text = len(self.lines) * _LINE
        return text + 2 * _PAD + 6 if self.note else text + 12

    def box(self, xs: Sequence[float]) -> tuple[float, float]:
        """A note's left edge and width."""
        inner = _longest(self.lines) + 2 * _PAD
        if self.start == self.end:
            return xs[self.start] - inner / 2, inner
        left = xs[self.start] - 2 * _PAD
        return left, max(xs[self.end] + 2 * _PAD - left, inner)


def svg_sequence(
    messages: Sequence[SequenceLine],
    title: str,
    participants: Sequence[str],
    header: str | None = HEADER,
) -> str:
    """The SVG of `messages` between `participants`, left to right; boxed messages sit in a
    red band.  A note's lane is one lane, two joined by a comma, or empty for both workers."""
    lanes = {name: index for index, name in enumerate(participants)}
    rows = [_row(message, lanes) for message in messages]
    xs = _lane_xs(participants, rows)
    width = xs[-1] + _right_margin(participants, rows, xs)
    rows = [_fitted(row, xs) for row in rows]
    titles = wrap(title, width - 2 * _MARGIN, _TITLE_SIZE)
    body: list[str] = []
    y = _MARGIN + len(titles) * _TITLE_SIZE * 1.35 + _PAD
    body += _title(titles, width)
    heads = [_head(name, x, y) for name, x in zip(participants, xs, strict=True)]
    y += _HEAD_HEIGHT + _PAD
    top = y
    band: list[float] = []
    drawn: list[str] = []
    for row in rows:
        if row.message.boxed:
            band += [y, y + row.height]
        drawn += _draw(row, xs, lanes, y)
        y += row.height
    y += _PAD
    lifelines = [
        f'<line x1="{x:.1f}" y1="{top - _PAD:.1f}" x2="{x:.1f}" y2="{y:.1f}" stroke="{IDLE}" '
        'stroke-dasharray="3 3"/>'
        for x in xs
    ]
    if band:
        body.append(
            f'<rect x="{_MARGIN / 2:.1f}" y="{band[0] - 2:.1f}" width="{width - _MARGIN:.1f}" '
            f'height="{band[-1] - band[0] + 4:.1f}" rx="4" fill="{BROKEN_FILL}" '
            f'stroke="{VIOLATING}" stroke-dasharray="4 3"/>'
        )
    body += lifelines + heads + drawn
    return _document(body, width, y + _MARGIN, header)


_HEAD_HEIGHT = 24.0


def _row(message: SequenceLine, lanes: dict[str, int]) -> _Row:
    if message.arrow is Arrow.NOTE:
        names = (message.lane or f"{SOURCE},{DESTINATION}").split(",")
        ends = [lanes[name.strip()] for name in names if name.strip() in lanes]
        start, end = (min(ends), max(ends)) if ends else (0, len(lanes) - 1)
        return _Row(message, tuple(wrap(message.text, _NOTE_WIDTH)), start, end)
    ends = sorted((lanes[message.lane], lanes[message.peer]))
    return _Row(message, tuple(wrap(message.text, _LABEL_WIDTH)), ends[0], ends[1])


def _longest(lines: Sequence[str], size: float = _SIZE) -> float:
    return max((text_width(line, size) for line in lines), default=0.0)


def _lane_xs(participants: Sequence[str], rows: Sequence[_Row]) -> list[float]:
    """Each lane's x: far enough from its neighbours for every label between them."""
    heads = [text_width(name, _SIZE) + 2 * _PAD for name in participants]
    gaps = [max(_LANE_GAP, (heads[i] + heads[i + 1]) / 2 + _PAD) for i in range(len(heads) - 1)]
    arrows = sorted((row for row in rows if not row.note), key=lambda row: row.end - row.start)
    for row in arrows:
        wanted = _longest(row.lines) + 4 * _PAD
        spanned = gaps[row.start : row.end]
        short = wanted - sum(spanned)
        for index in range(row.start, row.end) if short > 0 else ():
            gaps[index] += short / len(spanned)
    first = max([heads[0] / 2, *(_half_note(row) for row in rows if row.start == 0)])
    xs = [_MARGIN + first]
    for gap in gaps:
        xs.append(xs[-1] + gap)
    return xs


def _half_note(row: _Row) -> float:
    """How far a note over one lane reaches either side of it (0 for anything else)."""
    if not row.note or row.start != row.end:
        return 0.0
    return _longest(row.lines) / 2 + _PAD


def _right_margin(participants: Sequence[str], rows: Sequence[_Row], xs: Sequence[float]) -> float:
    last = len(participants) - 1
    reach = [_half_note(row) for row in rows if row.end == last]
    for row in rows:
        if row.note:
            left, width = _fitted(row, xs).box(xs)
            reach.append(left + width - xs[last])
    return max([text_width(participants[-1]) / 2 + _PAD, *reach]) + _MARGIN


def _fitted(row: _Row, xs: Sequence[float]) -> _Row:
    """A note across lanes broken to the width of its span (at least `_NOTE_WIDTH`)."""
    if not row.note or row.start == row.end:
        return row
    span = max(xs[row.end] - xs[row.start] + 2 * _PAD, _NOTE_WIDTH)
    return attrs.evolve(row, lines=tuple(wrap(row.message.text, span - 2 * _PAD)))


def _title(lines: Sequence[str], width: float) -> list[str]:
    return [
        f'<text x="{width / 2:.1f}" y="{_MARGIN + (i + 0.8) * _TITLE_SIZE * 1.35:.1f}" '
        f'text-anchor="middle" font-size="{_TITLE_SIZE}" font-weight="bold">{_xml(line)}</text>'
        for i, line in enumerate(lines)
    ]


def _head(name: str, x: float, y: float) -> str:
    width = text_width(name) + 2 * _PAD
    return (
        f'<rect x="{x - width / 2:.1f}" y="{y:.1f}" width="{width:.1f}" height="{_HEAD_HEIGHT}" '
        f'rx="3" fill="white" stroke="{SPINE_COLOUR}" stroke-width="1.5"/>'
        f'<text x="{x:.1f}" y="{y + _HEAD_HEIGHT / 2 + _SIZE * 0.35:.1f}" text-anchor="middle" '
        f'font-weight="bold">{_xml(name)}</text>'
    )


def _draw(row: _Row, xs: Sequence[float], lanes: dict[str, int], y: float) -> list[str]:
    if row.note:
        left, width = row.box(xs)
        height = row.height - 6
        parts = [
            f'<rect x="{left:.1f}" y="{y + 3:.1f}" width="{width:.1f}" height="{height:.1f}" '
            f'fill="{_NOTE_FILL}" stroke="{IDLE}"/>'
        ]
        centre, first = left + width / 2, y + 3 + _PAD + _SIZE * 0.9
        return parts + _lines(row.lines, centre, first)
    message = row.message
    source, target = xs[lanes[message.lane]], xs[lanes[message.peer]]
    if message.arrow in (Arrow.ACTION, Arrow.REFUSAL):
        source, target = target, source
    arrow_y = y + len(row.lines) * _LINE + 6
    colour = VIOLATING if message.arrow is Arrow.REFUSAL else PLAIN
    dashed = message.arrow in (Arrow.OUTCOME, Arrow.REFUSAL)
    dash = ' stroke-dasharray="5 3"' if dashed else ""
    parts = [
        f'<line x1="{source:.1f}" y1="{arrow_y:.1f}" x2="{target:.1f}" y2="{arrow_y:.1f}" '
        f'stroke="{colour}" stroke-width="1.2"{dash}/>',
        _head_of(message.arrow, target, arrow_y, 1.0 if target > source else -1.0, colour),
    ]
    fill = f' fill="{VIOLATING}"' if message.arrow is Arrow.REFUSAL else ""
    return parts + _lines(row.lines, (source + target) / 2, y + _SIZE, fill)


def _head_of(arrow: Arrow, x: float, y: float, direction: float, colour: str) -> str:
    back = x - 8 * direction
    if arrow is Arrow.REFUSAL:
        return (
            f'<path d="M{back - 4:.1f},{y - 4:.1f} l8,8 M{back - 4:.1f},{y + 4:.1f} l8,-8" '
            f'stroke="{colour}" stroke-width="1.5"/>'
        )
    points = f"{back:.1f},{y - 4:.1f} {x:.1f},{y:.1f} {back:.1f},{y + 4:.1f}"
    if arrow is Arrow.OUTCOME:
        return f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.2"/>'
    return f'<polygon points="{points}" fill="{colour}" stroke="{colour}"/>'


def _lines(lines: Sequence[str], x: float, y: float, fill: str = "") -> list[str]:
    return [
        f'<text x="{x:.1f}" y="{y + i * _LINE:.1f}" text-anchor="middle"{fill}>{_xml(line)}</text>'
        for i, line in enumerate(lines)
    ]


def _xml(text: str) -> str:
    # Backticks mark code in the prose the text comes from: in a drawing they are noise.
    text = text.replace("`", "")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _document(body: Sequence[str], width: float, height: float, header: str | None) -> str:
    comment = f"<!-- {header.replace('--', '- -')} -->\n" if header else ""
    return (
        f'{comment}<svg class="{SVG_CLASS}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width:.0f}pt" height="{height:.0f}pt" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{_FONT}" font-size="{_SIZE}">\n'
        f"{dark_style()}" + "\n".join(body) + "\n</svg>\n"
    )

"""docs/writing-a-chart.md runs as written.

A `<!-- example -->` block defines a chart that must load, run and pass the model review; so
does each chart of a `<!-- natural -->` block; a `<!-- refused: TEXT -->` block defines one that
`InvalidDefinition` must refuse with TEXT in its message.  The page's list of what definition
refuses is checked against the code's messages.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from statemachine.exceptions import InvalidDefinition

from handoff import (
    Effect,
    HandoffAction,
    HandoffCoordinatorCore,
    HandoffId,
    HandoffOrder,
    SourceFirstChart,
)
from handoff._review.explore import review_chart

PAGE = Path(__file__).resolve().parent.parent / "docs" / "writing-a-chart.md"
_BLOCK = re.compile(
    r"<!-- (?:example|refused: (?P<says>[^>]*?)) -->\n```python\n(?P<body>.*?)```", re.S
)
_NATURAL = re.compile(r"<!-- natural -->\n```python\n(?P<body>.*?)```", re.S)


def _blocks() -> list[tuple[str | None, str]]:
    return [(m["says"], m["body"]) for m in _BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def _natural() -> list[str]:
    return [m["body"] for m in _NATURAL.finditer(PAGE.read_text(encoding="utf-8"))]


def _run(body: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "writing_a_chart_example"}
    exec(compile(body, str(PAGE), "exec"), namespace)
    return namespace


def test_the_page_has_an_example_and_refusals() -> None:
    says = [said for said, _ in _blocks()]
    assert None in says
    assert len([said for said in says if said]) >= 3


@pytest.mark.parametrize(
    ("says", "body"),
    [block for block in _blocks() if block[0] is not None],
    ids=lambda value: str(value)[:30],
)
def test_each_refused_example_is_refused_with_its_words(says: str, body: str) -> None:
    with pytest.raises(InvalidDefinition, match=re.escape(says)):
        _run(body)


def test_the_example_chart_runs_and_passes_the_review() -> None:
    [body] = [body for said, body in _blocks() if said is None]
    chart = _run(body)["PatientEngine"]
    assert chart.title == "PatientEngine"
    coordinator = HandoffCoordinatorCore(HandoffId.new(), chart=chart)
    [submit] = coordinator.start()
    assert isinstance(submit.action, HandoffAction.SubmitPrefill)
    review = review_chart(chart)
    assert review.holds, [verdict.prop.key for verdict in review.verdicts if not verdict.holds]
    assert "draining" in review.chart.states


@pytest.mark.parametrize("body", _natural(), ids=lambda body: body.split("class ")[1][:20])
def test_each_natural_chart_is_accepted_and_passes_the_review(body: str) -> None:
    charts = [
        value
        for value in _run(body).values()
        if isinstance(value, type) and issubclass(value, SourceFirstChart)
        and value is not SourceFirstChart
    ]  # fmt: skip
    assert charts
    for chart in charts:
        review = review_chart(chart)
        assert review.holds, [verdict.prop.key for verdict in review.verdicts if not verdict.holds]


def test_the_words_table_names_every_effect_and_each_names_an_action() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for effect in Effect:
        assert f"| `{effect.value}` |" in text
    assert "issues `SubmitPrefill`" in text
    assert hasattr(HandoffAction, "SubmitPrefill")


def test_the_page_is_linked_from_the_index_and_the_readme() -> None:
    root = PAGE.parent.parent
    assert "(writing-a-chart.md)" in (root / "docs" / "index.md").read_text()
    assert "(docs/writing-a-chart.md)" in (root / "README.md").read_text()


def test_the_shipped_chart_is_untouched_by_the_example() -> None:
    [body] = [body for said, body in _blocks() if said is None]
    _run(body)
    assert "draining" not in {state.id for state in SourceFirstChart.states}
    assert SourceFirstChart.order is HandoffOrder.SOURCE_FIRST

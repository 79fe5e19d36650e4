"""The pytest file of an explained counterexample: the run, judged through the public API.

The file names its trace (next to it), the chart it was explained for (`CHART`, as
`MODULE:CLASS`; None for an order's shipped chart) and the property, and asserts that
`handoff.check_trace` finds the property holding along the run.  On the broken chart it fails
with the property's sentence and what broke it; once the chart is fixed in place it passes,
whatever else the fixed chart does differently from the shipped one.  It names nothing
private, so it can be copied into a user's own suite.
"""

from __future__ import annotations

import textwrap

from handoff._system.properties import Property

__all__ = ["pytest_source"]

_TEMPLATE = '''\
"""{key} ({title}) along a counterexample, kept as a test.

{words}

Replays {trace} on the chart CHART names, with handoff.check_trace, and asserts {key}:
it fails while the chart breaks {key} along this run and passes once the chart is fixed.
"""

import pathlib

import handoff

TRACE = pathlib.Path(__file__).with_name({trace!r})
CHART = {chart!r}
"""The chart the run was explained for, MODULE:CLASS (None: the shipped {order} chart)."""
PROPERTY = {key!r}
FOUND = {finding!r}
"""What the review found along this run."""


def test_{name}():
    verdict = handoff.check_trace(TRACE, chart=CHART{trusted}).verdict(PROPERTY)
    assert verdict.holds, str(verdict)
'''


def pytest_source(
    name: str,
    prop: Property,
    finding: str,
    chart: str | None,
    order: str,
    workers: tuple[str, tuple[str, ...]] | None = None,
) -> str:
    """The text of `test_<name>.py`, which judges `<name>.jsonl` on `chart` (MODULE:CLASS);
    a run with workers hands `check_trace` the contract and properties its trace names
    (`workers`), which it would not import from the trace."""
    trusted = ""
    if workers is not None:
        contract, properties = workers
        trusted = f", workers=[{contract!r}], properties={list(properties)!r}"
    return _TEMPLATE.format(
        trusted=trusted,
        key=prop.key.value,
        title=prop.title,
        words=textwrap.fill(f"{prop.key.value}: {prop.words}", 88),
        trace=f"{name}.jsonl",
        chart=chart,
        order=order,
        finding=finding,
        name=name,
    )

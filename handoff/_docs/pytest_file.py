"""The pytest file of an explained counterexample: the run, replayed through the public API.

The file reads its trace (next to it) with a few lines of its own and `handoff.wire`, drives a
`handoff.HandoffCoordinatorCore` call by call, and compares each answer (the actions issued
or the error's class; the chart state and the lifecycle's length after) with the answer the
shipped chart gives, which is what the SPEC asks along this run.  On the broken chart the
first difference fails the test with the property's sentence and what the review found; on a
fixed chart it passes.  It names nothing private, so it can be copied into a user's own
suite.  `HANDOFF_CHART=MODULE:CLASS` replays against that chart instead of the shipped one.
"""

from __future__ import annotations

from collections.abc import Sequence

from handoff._coordinator import HandoffCoordinatorCore
from handoff._review.properties import Property
from handoff._runs.call import Call

__all__ = ["expected_answers", "pytest_source"]


def expected_answers(
    calls: Sequence[Call], coordinator: HandoffCoordinatorCore, refusal: type[Exception]
) -> list[str]:
    """Each call's answer on `coordinator`, spelled as the emitted test spells it."""
    answers = []
    for call in calls:
        try:
            issued = call.send(coordinator)
        except refusal as error:
            said = f"refused with {type(error).__name__}"
        else:
            said = ", ".join(f"{type(i.action).__name__} [{i.id.value}]" for i in issued)
            said = said or "nothing"
        answers.append(
            f"{said}; then {coordinator.chart_state}, {len(coordinator.lifecycle)} events"
        )
    return answers


_TEMPLATE = '''\
"""{key} ({title}) along the run in {trace}: the review's counterexample, kept as a test.

{key}: {words}

Replays {trace} through handoff's public API and compares each call's answer with the one
the shipped {order} chart gives.  HANDOFF_CHART=MODULE:CLASS replays against that chart.
"""

import importlib
import json
import os
import pathlib

import handoff
from handoff import wire

TRACE = pathlib.Path(__file__).with_name({trace!r})
PROPERTY = {key!r}
SENTENCE = {words!r}
FOUND = {finding!r}
EXPECTED = {expected}


def chart():
    spec = os.environ.get("HANDOFF_CHART", "")
    if not spec:
        return None
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def read(path):
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\\n") if line]
    header, calls, end = lines[0], lines[1:-1], lines[-1]
    assert end == {{"end": {{"calls": len(calls)}}}}, f"{{path}} is cut short"
    return header, calls


def answer(coordinator, line):
    try:
        if line["call"] == "start":
            issued = coordinator.start()
        elif line["call"] == "fact":
            fact = wire.loads(json.dumps(line["fact"]), handoff.HandoffFact)
            issued = coordinator.on_fact(fact)
        else:
            outcome = wire.loads(json.dumps(line["outcome"]), handoff.HandoffActionOutcome)
            issued = coordinator.on_action_outcome(handoff.HandoffActionId(line["id"]), outcome)
    except handoff.HandoffError as error:
        said = f"refused with {{type(error).__name__}}"
    else:
        said = ", ".join(f"{{type(i.action).__name__}} [{{i.id.value}}]" for i in issued)
        said = said or "nothing"
    return f"{{said}}; then {{coordinator.chart_state}}, {{len(coordinator.lifecycle)}} events"


def test_{name}():
    header, calls = read(TRACE)
    coordinator = handoff.HandoffCoordinatorCore(
        wire.loads(json.dumps(header["handoff_id"]), handoff.HandoffId),
        wire.loads(json.dumps(header["order"]), handoff.HandoffOrder),
        header["fallback_transfer_delay_ms"],
        chart=chart(),
    )
    for number, (line, expected) in enumerate(zip(calls, EXPECTED, strict=True), start=1):
        actual = answer(coordinator, line)
        assert actual == expected, (
            f"{{PROPERTY}} violated at call {{number}} of {{TRACE.name}}: {{FOUND}}\\n"
            f"  {{PROPERTY}}: {{SENTENCE}}\\n"
            f"  answered: {{actual}}\\n  the SPEC: {{expected}}"
        )
'''


def pytest_source(
    name: str, prop: Property, finding: str, expected: Sequence[str], order: str
) -> str:
    """The text of `test_<name>.py`, which replays `<name>.jsonl`."""
    return _TEMPLATE.format(
        key=prop.key.value,
        title=prop.title,
        words=prop.words,
        trace=f"{name}.jsonl",
        order=order,
        finding=finding,
        expected="[\n" + "".join(f"    {answer!r},\n" for answer in expected) + "]",
        name=name,
    )

"""What runs of a chart can reach: the configuration shapes a snapshot is checked against.

A shape is what decides a coordinator's future, payload values aside: chart state, next id,
the journal's action kinds and outcome kinds, which payloads are kept, the lifecycle and the
completion.  `prefixes(rules)` explores every shape a run reaches, with payloads that pass
every check (a refused call changes nothing, so other payloads reach no other shape), once per
chart, and keeps each field-by-field prefix so that a refusal can name the first field at fault.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from handoff._compile.codec_table import FAMILIES, sample
from handoff._coordinator import probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffFact
from handoff._values.values import (
    ONE_OF_EACH_OUTCOME,
    HandoffActionId,
    HandoffId,
    HandoffOrder,
)

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "BLANK_ID",
    "MAX_CONFIGURATIONS",
    "Rules",
    "Shape",
    "TooManyConfigurations",
    "prefixes",
    "shape",
]

Rules = HandoffOrder | type["HandoffChart"]
Shape = tuple[object, ...]

MAX_CONFIGURATIONS = 50_000
"""A chart with more reachable configurations than this cannot have its snapshots validated."""


class TooManyConfigurations(Exception):
    """The chart reaches more configurations than `MAX_CONFIGURATIONS`."""


def shape(c: HandoffCoordinatorCore) -> Shape:
    """What decides a configuration's future, payload values aside, field by field.

    Enum members are given by their values: a str hashes in C, an Enum member does not.
    """
    now = probe.progress(c)
    completion = now.completion
    return (
        now.state,
        now.next_id,
        tuple([(key, type(action)) for key, action in now.issued.items()]),
        tuple(sorted([(key, outcome.kind._value_) for key, outcome in now.outcomes.items()])),
        now.timing is not None,
        now.tokens is not None,
        tuple([event._value_ for event in now.lifecycle]),
        None if completion is None else completion._value_,
    )


@functools.cache
def prefixes(rules: Rules) -> tuple[frozenset[Shape], ...]:
    shapes = _explore(rules)
    return tuple(frozenset(shape[: depth + 1] for shape in shapes) for depth in range(8))


BLANK_ID = HandoffId.parse("00000000-0000-0000-0000-000000000000")
_FACTS: tuple[HandoffFact, ...] = tuple(
    sample(kind, handoff_id=BLANK_ID) for kind in FAMILIES[HandoffFact]
)
"""One fact of each kind, each with the least payload that passes the checks."""
_OUTCOMES = ONE_OF_EACH_OUTCOME


def _explore(rules: Rules) -> set[Shape]:
    """Every configuration shape a run of the chart reaches, with payloads that pass checks."""
    if isinstance(rules, HandoffOrder):
        first = HandoffCoordinatorCore(BLANK_ID, rules)
    else:
        first = HandoffCoordinatorCore(BLANK_ID, chart=rules)
    seen = {shape(first)}
    frontier = [first]
    while frontier:
        coordinator = frontier.pop()
        for call in _calls(coordinator):
            twin = probe.replica(coordinator)
            try:
                call(twin)
            except HandoffError:
                continue
            found = shape(twin)
            if found not in seen:
                if len(seen) >= MAX_CONFIGURATIONS:
                    raise TooManyConfigurations(
                        f"the chart reaches more than {MAX_CONFIGURATIONS:,} configurations: "
                        "its snapshots cannot be validated"
                    )
                seen.add(found)
                frontier.append(twin)
    return seen


def _calls(coordinator: HandoffCoordinatorCore) -> Iterator[Any]:
    yield HandoffCoordinatorCore.start
    for fact in _FACTS:
        yield lambda c, fact=fact: c.on_fact(fact)
    for key in probe.progress(coordinator).issued:
        for outcome in _OUTCOMES:
            yield lambda c, key=key, outcome=outcome: c.on_action_outcome(
                HandoffActionId(key), outcome
            )

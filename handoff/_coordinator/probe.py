"""The tools' view into a coordinator: what the model review, traces and diagrams read.

None of this is part of the contract, nor needed to run a handoff, so it is kept off
`HandoffCoordinatorCore`: the review builds a coordinator around any compiled table (mutants
included), compares configurations, asks which chart event a call would make, and runs a
step's payload checks on their own.  This module alone reads the coordinator's slots for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from handoff._chart.vocabulary import ChartEvent, Check
from handoff._compile.table import CompiledChart
from handoff._coordinator.binding import FACT_EVENTS, plans
from handoff._coordinator.core import HandoffCoordinatorCore, Progress, Witness
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import HandoffAction, HandoffFact
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
)

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "Configuration",
    "classify",
    "configuration",
    "for_table",
    "identity",
    "interpret",
    "interpreted",
    "progress",
    "replica",
    "restored",
    "rules",
    "run_checks",
    "set_witness",
    "table",
    "witness",
]

_EVENTS = tuple(ChartEvent)


class Configuration(NamedTuple):
    """Everything that decides a coordinator's future behaviour, as a hashable value."""

    state: int
    """The chart state's index."""
    next_id: int
    issued: tuple[tuple[int, HandoffAction], ...]
    """The journal's issued actions, by id."""
    outcomes: tuple[tuple[int, HandoffActionOutcome], ...]
    """The journal's recorded outcomes, by id."""
    timing: HandoffTransferTiming | None
    tokens: int | None
    lifecycle: tuple[NormalizedHandoffEvent, ...]
    completion: HandoffCompletion | None


def for_table(
    handoff_id: HandoffId, chart: CompiledChart, fallback_transfer_delay_ms: float = 0.0
) -> HandoffCoordinatorCore:
    """A coordinator driven by a compiled table as it is (the review runs mutants so)."""
    coordinator = HandoffCoordinatorCore(handoff_id, chart.order, fallback_transfer_delay_ms)
    coordinator._chart = chart
    coordinator._plans = plans(chart)
    return coordinator


def table(coordinator: HandoffCoordinatorCore) -> CompiledChart:
    """The compiled table `coordinator` runs (also when it is interpreted)."""
    return coordinator._chart


def rules(coordinator: HandoffCoordinatorCore) -> HandoffOrder | type[HandoffChart]:
    """The order or chart class `coordinator` was made for."""
    return coordinator._rules


def identity(coordinator: HandoffCoordinatorCore) -> tuple[HandoffId, float]:
    """The handoff `coordinator` coordinates, and its fallback transfer delay."""
    return coordinator._handoff_id, coordinator._fallback


def progress(coordinator: HandoffCoordinatorCore) -> Progress:
    """What `coordinator`'s calls so far decided, committed whole: read it, never change it
    (a coordinator no one else holds is given a new one by `restored`)."""
    return coordinator._now


def restored(
    like: HandoffCoordinatorCore, handoff_id: HandoffId, fallback: float, at: Progress
) -> HandoffCoordinatorCore:
    """A coordinator running `like`'s chart (its tables shared) for `handoff_id`, as the
    calls that led to `at` left it: what a snapshot describes."""
    made = object.__new__(HandoffCoordinatorCore)
    made._rules, made._chart, made._plans = like._rules, like._chart, like._plans
    made._handoff_id, made._fallback = handoff_id, fallback
    made._now, made._interpreter, made._witness = at, None, None
    return made


def replica(coordinator: HandoffCoordinatorCore) -> HandoffCoordinatorCore:
    """A copy sharing nothing mutable with `coordinator`, interpreted ones too (their
    interpreter shared: the reachability walk drives it through whole states only)."""
    return coordinator._replica()


def witness(coordinator: HandoffCoordinatorCore) -> Witness | None:
    """Who is told each of `coordinator`'s calls before it is committed (a recorder)."""
    return coordinator._witness


def set_witness(coordinator: HandoffCoordinatorCore, told: Witness | None) -> None:
    """Tell `told` each of `coordinator`'s calls from now on (None: nobody)."""
    coordinator._witness = told


def interpreted(coordinator: HandoffCoordinatorCore) -> bool:
    """Whether `coordinator` runs through python-statemachine's own interpreter."""
    return coordinator._interpreter is not None


def interpret(coordinator: HandoffCoordinatorCore) -> None:
    """Run `coordinator` through python-statemachine's own interpreter from where it is."""
    from handoff._compile.interpreted import InterpretedChart

    chart = coordinator._chart
    coordinator._interpreter = InterpretedChart(
        coordinator._rules, chart.states[coordinator._now.state]
    )


def configuration(coordinator: HandoffCoordinatorCore) -> Configuration:
    """Everything that decides `coordinator`'s future behaviour."""
    now = coordinator._now  # one object, committed whole
    return Configuration(
        now.state,
        now.next_id,
        tuple(sorted(now.issued.items())),
        tuple(sorted(now.outcomes.items(), key=lambda item: item[0])),
        now.timing,
        now.tokens,
        tuple(now.lifecycle),
        now.completion,
    )


def classify(
    coordinator: HandoffCoordinatorCore,
    fact: HandoffFact | None = None,
    action_id: HandoffActionId | None = None,
    outcome: HandoffActionOutcome | None = None,
) -> ChartEvent | None:
    """The chart event a call would make now: `start()` when given nothing, else the fact,
    else the outcome for `action_id` (None: a foreign fact, refused before the chart)."""
    if fact is not None:
        event = FACT_EVENTS[type(fact)]
        return event if fact.handoff_id == coordinator.handoff_id else None
    if action_id is None or outcome is None:
        return ChartEvent.START
    return _EVENTS[coordinator._outcome_event(action_id, outcome)]


def run_checks(
    coordinator: HandoffCoordinatorCore, checks: tuple[Check, ...], fact: HandoffFact | None
) -> float | None:
    """Run a step's payload checks on a call's fact; returns the delay when one is checked."""
    return coordinator._checked_delay(checks, fact)

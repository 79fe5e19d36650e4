"""The names a generated Promela model speaks in, read off the chart, journal and environment.

Everything numbered here is numbered from the Python definitions (a chart's states, the
chart events, the action classes, the environment's calls and payloads), so a changed chart
or environment changes the model, never the other way round.  Zero always means "none".
"""

from __future__ import annotations

import math
import typing
from collections.abc import Iterable, Sequence
from typing import TypeVar

import attrs

from handoff._chart.vocabulary import ChartEvent, Refusal
from handoff._coordinator.binding import ACKNOWLEDGEMENTS, FACT_EVENTS
from handoff._review.environment import Call, CallKind, Environment
from handoff._values.errors import AdapterRefusal, HandoffError
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import AnyHandoffAction, HandoffAction, HandoffFact
from handoff._values.timing import HandoffTransferTiming, validate_transfer_delay_ms
from handoff._values.timing import validate_transfer_timing as _validate_timing
from handoff._values.values import HandoffActionOutcome, HandoffCompletion, OutcomeKind

__all__ = [
    "ACTIONS",
    "FACTS",
    "LIFECYCLE_EVENTS",
    "OUTCOME_KINDS",
    "REFUSALS",
    "Calls",
    "Payloads",
    "action_name",
    "calls",
    "event_name",
    "payloads",
    "refusal_name",
    "refused_as",
]

ACTIONS: tuple[type[HandoffAction], ...] = typing.get_args(AnyHandoffAction)
"""Action kinds, numbered from 1 in this order (`A_<class name>`)."""

FACTS: tuple[type[HandoffFact], ...] = tuple(FACT_EVENTS)
"""Fact kinds, numbered from 1 (`F_<class name>`): the environment's own view of a call."""

OUTCOME_KINDS: tuple[OutcomeKind, ...] = tuple(OutcomeKind)
"""Outcome kinds, numbered from 1 (`O_<kind value>`)."""

LIFECYCLE_EVENTS: tuple[NormalizedHandoffEvent, ...] = tuple(NormalizedHandoffEvent)
"""Normalized lifecycle events, numbered from 1 (`L_<value>`)."""

_T = TypeVar("_T")
_FOREIGN = (AdapterRefusal.FOREIGN_FACT,)
_PAYLOAD = tuple(refusal for refusal in AdapterRefusal if refusal not in _FOREIGN)

REFUSALS: tuple[tuple[str, type[HandoffError], str], ...] = (
    *((refusal.name, refusal.error, refusal.phrase) for refusal in _FOREIGN),
    *((refusal.name, refusal.error, refusal.phrase) for refusal in Refusal),
    *((refusal.name, refusal.error, refusal.phrase) for refusal in _PAYLOAD),
    ("UNPLANNED_TRANSFER", HandoffError, "the transfer was planned before"),
)
"""Every way the model's coordinator refuses a call (name, error class, phrase), numbered
from 1 (`R_<name>`): the adapter's foreign-fact check, the chart's refusals (`Refusal`),
the payload checks (`AdapterRefusal`), and the bare `HandoffError` of a delay checked too early."""


def refused_as(error: HandoffError) -> str:
    """The name of the refusal `error` is (its class and phrase); raises on any other."""
    for name, kind, phrase in REFUSALS:
        if type(error) is kind and phrase.split("{")[0] in str(error):
            return name
    raise ValueError(f"no refusal of the model is {type(error).__name__}: {error}")


COMPLETIONS: tuple[HandoffCompletion, ...] = tuple(HandoffCompletion)
"""Completions, numbered from 1 (`C_<name>`)."""


def action_name(action: type[HandoffAction]) -> str:
    """The Promela name of an action kind."""
    return f"A_{action.__name__}"


def refusal_name(refusal: Refusal) -> str:
    """The Promela name of a chart's refusal."""
    return f"R_{refusal.name}"


def event_name(event: ChartEvent) -> str:
    """The Promela name of a chart event."""
    return f"E_{event.value}"


@attrs.frozen
class Payloads:
    """The payload classes the environment offers, and what the adapter's checks make of them.

    Timings and token counts are numbered from 1 in the order the environment first offers
    them; `delays` numbers the distinct transfer delays a valid pair produces.
    """

    timings: tuple[HandoffTransferTiming, ...]
    tokens: tuple[int, ...]
    timing_valid: tuple[bool, ...]
    delay: dict[tuple[int, int], int]
    """(timing class, tokens class) → delay class; absent: the delay check refuses."""
    delays: tuple[float, ...]


def payloads(env: Environment, fallback_transfer_delay_ms: float) -> Payloads:
    """Classify the environment's payloads by running the adapter's own payload checks."""
    timings = _distinct(
        f.transfer_timing for f in _facts(env) if isinstance(f, HandoffFact.SourceHeld)
    )
    tokens = _distinct(
        f.transferable_prompt_tokens
        for f in _facts(env)
        if isinstance(f, HandoffFact.DestinationReserved)
    )
    delays: list[float] = []
    delay: dict[tuple[int, int], int] = {}
    for t, timing in enumerate(timings, start=1):
        for n, count in enumerate(tokens, start=1):
            value = timing.delay_ms(count)
            value = fallback_transfer_delay_ms if value is None else value
            if _valid_delay(value):
                if value not in delays:
                    delays.append(value)
                delay[t, n] = delays.index(value) + 1
    return Payloads(
        timings=timings,
        tokens=tokens,
        timing_valid=tuple(_valid_timing(timing) for timing in timings),
        delay=delay,
        delays=tuple(delays),
    )


def _facts(env: Environment) -> list[HandoffFact]:
    return [call.fact for call in env.facts if call.fact is not None]


def _distinct(values: Iterable[_T]) -> tuple[_T, ...]:
    found: list[_T] = []
    for value in values:
        if value not in found:
            found.append(value)
    return tuple(found)


def _valid_timing(timing: HandoffTransferTiming) -> bool:
    try:
        _validate_timing(timing)
    except HandoffError:
        return False
    return True


def _valid_delay(value: float) -> bool:
    try:
        validate_transfer_delay_ms(value)
    except HandoffError:
        return False
    return math.isfinite(value)


@attrs.frozen
class Calls:
    """The environment's calls, numbered as the model numbers them (its `CALL n` lines)."""

    all: tuple[Call, ...]
    first_outcome: int
    """The number of the first outcome call; outcomes follow by id, then by kind."""
    outcomes: tuple[HandoffActionOutcome, ...]
    """The outcomes offered for each id, numbered from 1 (`O_…` by their kind)."""
    max_id: int


def calls(env: Environment) -> Calls:
    """Number every call the environment may make."""
    outcomes = tuple(call.outcome for call in env.outcomes[0] if call.outcome is not None)
    flat = [call for by_id in env.outcomes for call in by_id]
    return Calls(
        all=(env.start, *env.facts, *flat),
        first_outcome=1 + len(env.facts),
        outcomes=outcomes,
        max_id=len(env.outcomes) - 1,
    )


def acknowledgement_event(action: type[HandoffAction], kind: OutcomeKind) -> ChartEvent:
    """The chart event a first outcome of `kind` for `action` makes (the journal's rule)."""
    return ACKNOWLEDGEMENTS.get((action, kind), ChartEvent.MISMATCHED_OUTCOME)


def fact_kind(call: Call) -> int:
    """The number of a fact call's kind (0 for a call that is not a fact)."""
    return FACTS.index(type(call.fact)) + 1 if call.kind is CallKind.FACT else 0


def numbered(names: Sequence[str], prefix: str) -> list[str]:
    """`#define` lines numbering `names` from 1."""
    return [f"#define {prefix}{name} {number}" for number, name in enumerate(names, start=1)]

"""How the chart's words bind to the protocol: calls to events, steps to journal entries.

The chart decides *what happens* (see `handoff._chart.shipped`); this module says how a call is
named as a chart event, and what a taken step writes down: the outcome it journals, the
payload it keeps, the lifecycle event it records and the actions it issues.  `plans()`
folds all of that into one table per chart, so the coordinator's hot path is a lookup.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import NamedTuple

import attrs

from handoff._chart.vocabulary import ChartEvent, Check, Effect, EventKind, Refusal
from handoff._compile.table import CompiledChart, Step
from handoff._values.errors import ConcurrentCallError, HandoffError
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import AnyHandoffAction, HandoffAction, HandoffFact
from handoff._values.timing import HandoffTransferTiming, validate_transfer_delay_ms
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    OutcomeKind,
)

__all__ = [
    "ACKNOWLEDGEMENTS",
    "EVENT_INDEX",
    "FACTS",
    "FACT_EVENTS",
    "FITTING",
    "FITTING_OUTCOME",
    "LIFECYCLE",
    "Bound",
    "Keep",
    "Plan",
    "Reporter",
    "concurrent_call",
    "described",
    "plan_for",
    "planned_delay",
    "plans",
    "refusal_error",
]

_E = ChartEvent


class Reporter(enum.Enum):
    """Who reports a kind of fact to the coordinator; the value is its lane in the drawings."""

    SOURCE = "Source"
    DESTINATION = "Destination"
    RUNTIME = "Runtime"
    """The runtime around the coordinator: a client's cancel, a failure, a deadline."""


class Bound(NamedTuple):
    """How a kind of fact binds to the chart: the event it makes, and who reports it."""

    event: ChartEvent
    reporter: Reporter


_R = Reporter

FACTS: dict[type[HandoffFact], Bound] = {
    HandoffFact.SourceHeld: Bound(_E.SOURCE_HELD, _R.SOURCE),
    HandoffFact.DestinationReserved: Bound(_E.DESTINATION_RESERVED, _R.DESTINATION),
    HandoffFact.TransferCompleted: Bound(_E.TRANSFER_COMPLETED, _R.DESTINATION),
    HandoffFact.Failed: Bound(_E.TERMINATED, _R.RUNTIME),
    HandoffFact.TimedOut: Bound(_E.TERMINATED, _R.RUNTIME),
    HandoffFact.Canceled: Bound(_E.TERMINATED, _R.RUNTIME),
}
"""Every kind of fact, in the union's order: the one place a new kind is bound (a fact making
`TERMINATED` is terminal: `handoff._system.call.TERMINAL_FACTS`)."""

FACT_EVENTS: dict[type, ChartEvent] = {fact: bound.event for fact, bound in FACTS.items()}
"""The event each kind of fact makes."""

_DONE = (OutcomeKind.APPLIED, OutcomeKind.NOOP)
_CANCELS = (HandoffAction.CancelSource, HandoffAction.CancelDestination)
_FAILABLE = (
    HandoffAction.SubmitPrefill,
    HandoffAction.ReserveDestination,
    HandoffAction.StartTransfer,
    HandoffAction.ActivateDestination,
    HandoffAction.ReleaseSource,
)

ACKNOWLEDGEMENTS: dict[tuple[type, OutcomeKind], ChartEvent] = {
    (HandoffAction.SubmitPrefill, OutcomeKind.SUBMITTED): _E.PREFILL_SUBMITTED,
    (HandoffAction.ReserveDestination, OutcomeKind.ACCEPTED): _E.OWNERSHIP_ACCEPTED,
    (HandoffAction.StartTransfer, OutcomeKind.SCHEDULED): _E.TRANSFER_SCHEDULED,
    (HandoffAction.ActivateDestination, OutcomeKind.APPLIED): _E.DESTINATION_ACTIVATED,
    **{(HandoffAction.ReleaseSource, kind): _E.SOURCE_RELEASED for kind in _DONE},
    **{(HandoffAction.CancelSource, kind): _E.SOURCE_CANCELED for kind in _DONE},
    **{(HandoffAction.CancelDestination, kind): _E.DESTINATION_CANCELED for kind in _DONE},
    **{(action, OutcomeKind.FAILED): _E.CLEANUP_ACTION_FAILED for action in _CANCELS},
    **{(action, OutcomeKind.FAILED): _E.ACTION_FAILED for action in _FAILABLE},
}
"""The event each (kind of action, kind of outcome) makes; any other pair is mismatched."""

FITTING: dict[type, tuple[OutcomeKind, ...]] = {
    action: tuple(
        kind
        for (other, kind) in ACKNOWLEDGEMENTS
        if other is action and kind is not OutcomeKind.FAILED
    )
    for action, _ in ACKNOWLEDGEMENTS
}
"""The outcome kinds that acknowledge each kind of action (failure aside)."""

FITTING_OUTCOME: dict[type, HandoffActionOutcome] = {
    action: HandoffActionOutcome(kinds[0]) for action, kinds in FITTING.items()
}
"""The outcome a cooperating runtime acknowledges each kind of action with."""

EVENT_INDEX: dict[tuple[type, str], int] = {
    (action, kind._value_): event.index for (action, kind), event in ACKNOWLEDGEMENTS.items()
}
"""`ACKNOWLEDGEMENTS` for the coordinator's hot path: keyed by the outcome kind's value (a str
hashes in C, an Enum member does not) and giving the event's index; a missing pair is mismatched."""


LIFECYCLE: dict[ChartEvent, NormalizedHandoffEvent] = {
    _E.SOURCE_HELD: NormalizedHandoffEvent.SOURCE_HELD,
    _E.OWNERSHIP_ACCEPTED: NormalizedHandoffEvent.DESTINATION_ACCEPTED,
    _E.DESTINATION_RESERVED: NormalizedHandoffEvent.DESTINATION_RESERVED,
    _E.DESTINATION_ACTIVATED: NormalizedHandoffEvent.DESTINATION_ACTIVATED,
    _E.SOURCE_RELEASED: NormalizedHandoffEvent.SOURCE_RELEASED,
}
"""The normalized lifecycle event an accepted chart event records (COMPLETED: on success)."""

_ISSUES: dict[Effect, Callable[..., AnyHandoffAction]] = {
    Effect.SUBMIT_PREFILL: HandoffAction.SubmitPrefill,
    Effect.RESERVE_DESTINATION: HandoffAction.ReserveDestination,
    Effect.START_TRANSFER: HandoffAction.StartTransfer,
    Effect.ACTIVATE_DESTINATION: HandoffAction.ActivateDestination,
    Effect.RELEASE_SOURCE: HandoffAction.ReleaseSource,
    Effect.CANCEL_SOURCE: HandoffAction.CancelSource,
    Effect.CANCEL_DESTINATION: HandoffAction.CancelDestination,
    Effect.COMPLETE_SUCCESS: HandoffAction.Complete,
    Effect.COMPLETE_CANCELED: HandoffAction.Complete,
}


class Keep:
    """What a taken step writes into the journal, besides the lifecycle."""

    NOTHING = 0
    OUTCOME = 1
    TIMING = 2
    TOKENS = 3


_KEEPS = {
    _E.SOURCE_HELD: Keep.TIMING,
    _E.DESTINATION_RESERVED: Keep.TOKENS,
    # An outcome the reference refuses, once a chart takes it, is journaled like any
    # acknowledgement: the same report again is then a duplicate, another one a conflict,
    # instead of being taken anew (a chart retrying a failed cancel would retry per report).
    _E.CLEANUP_ACTION_FAILED: Keep.OUTCOME,
    _E.MISMATCHED_OUTCOME: Keep.OUTCOME,
}

Issue = tuple[Callable[..., AnyHandoffAction], HandoffCompletion | None]


@attrs.frozen
class Plan:
    """A step of the chart, spelled out as what the coordinator writes down and issues."""

    target: int
    refusal: Refusal | None
    ignored: bool
    checks: tuple[Check, ...]
    keep: int
    """A `Keep` value."""
    lifecycle: NormalizedHandoffEvent | None
    issues: tuple[Issue, ...]
    """(action constructor, completion it records) per issued action, in order."""


def plan_for(step: Step) -> Plan:
    """Spell out `step` for the journal."""
    event = step.event
    keep = (
        Keep.OUTCOME if event.kind is EventKind.ACKNOWLEDGEMENT else _KEEPS.get(event, Keep.NOTHING)
    )
    return Plan(
        target=step.target,
        refusal=step.refusal,
        ignored=step.ignored,
        checks=step.checks,
        keep=keep,
        lifecycle=LIFECYCLE.get(event),
        issues=tuple((_ISSUES[effect], effect.completion) for effect in step.effects),
    )


def plans(chart: CompiledChart) -> tuple[tuple[Plan, ...], ...]:
    """Every step of `chart` spelled out, indexed like its rows."""
    return tuple(tuple(plan_for(step) for step in row) for row in chart.rows)


def refusal_error(
    refusal: Refusal,
    state: str,
    issued: dict[int, HandoffAction],
    outcomes: dict[int, HandoffActionOutcome],
    action_id: HandoffActionId | None,
    outcome: object,
) -> HandoffError:
    """The error a refused call raises: the spec's phrase, then what the journal shows."""
    message = refusal.phrase.format(
        action_id=action_id.value if action_id is not None else "", outcome=outcome
    )

    def shown() -> str:
        if refusal is Refusal.UNKNOWN_ACTION:
            return f"the journal holds {sorted(issued) or 'no action'}"
        if action_id is None:
            return f"the handoff is at {state!r}"
        action = issued[action_id.value]
        name = type(action).__name__
        if refusal is Refusal.CONFLICTING_OUTCOME:
            return f"{name} was already acknowledged {outcomes[action_id.value]}"
        if refusal is Refusal.MISMATCHED_OUTCOME:
            expected = " or ".join(kind.value for kind in FITTING[type(action)])
            return f"{name} expects {expected}, got {outcome}"
        return f"{name} reported {outcome}"

    return refusal.error(f"{message} ({shown()})")


def planned_delay(
    fact: HandoffFact | None,
    timing: HandoffTransferTiming | None,
    tokens: int | None,
    fallback: float,
) -> float:
    """The delay a `StartTransfer` is issued with: from the fact's timing or tokens when it
    carries them, else from those kept; `fallback` when the timing models none."""
    if isinstance(fact, HandoffFact.SourceHeld):
        timing = fact.transfer_timing
    elif isinstance(fact, HandoffFact.DestinationReserved):
        tokens = fact.transferable_prompt_tokens
    if timing is None or tokens is None:
        raise HandoffError("the transfer was planned before the source and destination were")
    delay = timing.delay_ms(tokens)
    if delay is None:
        delay = fallback
    validate_transfer_delay_ms(delay)
    return delay


def concurrent_call() -> ConcurrentCallError:
    """The error of a call made while another call on the same coordinator runs."""
    return ConcurrentCallError(
        "the coordinator is already running a call: one caller at a time (one thread or one "
        "asyncio task per coordinator), and this call changed nothing"
    )


def described(
    error: HandoffError,
    state: str,
    issued: dict[int, HandoffAction],
    outcomes: dict[int, HandoffActionOutcome],
    call: tuple[HandoffFact | None, HandoffActionId | None, HandoffActionOutcome | None],
) -> HandoffError:
    """`error`, raised by a call (its fact, action id and outcome), with the fields that say
    what it is about filled in; `state`, `issued` and `outcomes` are the coordinator's, as they
    were (and still are) before the call."""
    fact, action_id, outcome = call
    error.chart_state = state
    error.fact = fact
    error.action_id = action_id
    error.outcome = outcome
    action = issued.get(action_id.value) if action_id is not None else None
    if action is not None and outcome is not None:
        recorded = outcomes.get(action_id.value)  # type: ignore[union-attr]
        if recorded is not None:
            error.expected = (recorded,) if recorded != outcome else ()
        elif not outcome.is_failed and (type(action), outcome.kind) not in ACKNOWLEDGEMENTS:
            error.expected = tuple(HandoffActionOutcome(kind) for kind in FITTING[type(action)])
    return error

"""The step: one call taken, or refused with nothing changed, while the caller holds the gate.

`take` is the coordinator's hot path.  The chart's plan for (state, event) says what happens;
payload checks run before anything changes; only then is the step committed in one go
(journal, payloads kept, lifecycle, chart state, issued actions).  A refusal raises before
the commit; every `HandoffError` leaves with the fields that say what it was about.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from handoff._binding import Keep, concurrent_call, described, plan_for
from handoff._errors import HandoffError
from handoff._messages import HandoffFact, IssuedHandoffAction
from handoff._values import HandoffActionId, HandoffActionOutcome
from handoff._vocabulary import ChartEvent

if TYPE_CHECKING:
    from collections.abc import Callable

    from handoff._binding import Plan
    from handoff._interpreted import InterpretedChart
    from handoff._lifecycle import NormalizedHandoffEvent
    from handoff._messages import AnyHandoffAction, HandoffAction
    from handoff._timing import HandoffTransferTiming
    from handoff._values import HandoffCompletion
    from handoff._vocabulary import Check, Refusal

__all__ = ["OUTCOME", "take"]

OUTCOME = -1
"""The event of an outcome, read off the journal once the call holds the gate."""

_EVENTS = tuple(ChartEvent)
Call = tuple[HandoffFact | None, HandoffActionId | None, HandoffActionOutcome | None]


class CoreState(Protocol):
    """What the step reads and writes of a `HandoffCoordinatorCore` (which imports this)."""

    _gate: list[None]
    _state: int
    _plans: tuple[tuple[Plan, ...], ...]
    _interpreter: InterpretedChart | None
    _issued: dict[int, HandoffAction]
    _outcomes: dict[int, HandoffActionOutcome]
    _timing: HandoffTransferTiming | None
    _tokens: int | None
    _lifecycle: list[NormalizedHandoffEvent]

    @property
    def chart_state(self) -> str: ...
    def _outcome_event(self, action_id: HandoffActionId, outcome: HandoffActionOutcome) -> int: ...
    def _checked_delay(
        self, checks: tuple[Check, ...], fact: HandoffFact | None
    ) -> float | None: ...
    def _refusal(
        self, refusal: Refusal, action_id: HandoffActionId | None, outcome: object
    ) -> HandoffError: ...
    def _issue(
        self,
        make: Callable[..., AnyHandoffAction],
        completion: HandoffCompletion | None,
        delay: float | None,
    ) -> IssuedHandoffAction: ...


def _described(error: HandoffError, coordinator: CoreState, call: Call) -> HandoffError:
    state = coordinator.chart_state
    return described(error, state, coordinator._issued, coordinator._outcomes, call)


_KEEP_OUTCOME, _KEEP_TIMING, _KEEP_TOKENS = Keep.OUTCOME, Keep.TIMING, Keep.TOKENS


def take(
    coordinator: CoreState,
    event: int,
    fact: HandoffFact | None,
    action_id: HandoffActionId | None,
    outcome: HandoffActionOutcome | None,
) -> list[IssuedHandoffAction]:
    # The gate holds one token; taking it is one atomic list operation, so a second caller
    # finds it gone instead of racing the first through the journal.
    gate = coordinator._gate
    try:
        gate.pop()
    except IndexError:
        raise _described(concurrent_call(), coordinator, (fact, action_id, outcome)) from None
    try:
        if event == OUTCOME:
            event = coordinator._outcome_event(action_id, outcome)  # type: ignore[arg-type]
        if coordinator._interpreter is None:
            move = coordinator._plans[coordinator._state][event]
            if move.ignored:
                return []
            if move.refusal is not None:
                raise coordinator._refusal(move.refusal, action_id, outcome)
            delay = coordinator._checked_delay(move.checks, fact) if move.checks else None
        else:
            decide = coordinator._interpreter.decide
            step, delay = decide(
                coordinator._state, _EVENTS[event], coordinator._checked_delay, fact
            )
            if step.refusal is not None:
                raise coordinator._refusal(step.refusal, action_id, outcome)
            move = plan_for(step)
            if move.ignored:
                return []
        # Everything is valid: commit the step in one go.
        keep = move.keep
        if keep:  # Keep.NOTHING is 0
            if keep == _KEEP_OUTCOME:
                coordinator._outcomes[action_id.value] = outcome  # type: ignore[union-attr,assignment]
            elif keep == _KEEP_TIMING:
                coordinator._timing = fact.transfer_timing  # type: ignore[union-attr]
            elif keep == _KEEP_TOKENS:
                coordinator._tokens = fact.transferable_prompt_tokens  # type: ignore[union-attr]
        if move.lifecycle is not None:
            coordinator._lifecycle.append(move.lifecycle)
        coordinator._state = move.target
        # A loop, not a comprehension: most steps issue one action or none, and a
        # comprehension costs a frame of its own.
        issued = []
        for make, completion in move.issues:
            issued.append(coordinator._issue(make, completion, delay))
        return issued
    except HandoffError as error:
        raise _described(error, coordinator, (fact, action_id, outcome))  # noqa: B904 (itself)
    finally:
        gate.append(None)

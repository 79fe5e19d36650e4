"""The adapter: turns calls into chart events, keeps the journal, issues the actions.

It holds no ordering logic.  Each call becomes exactly one `ChartEvent`; the chart (as a
compiled table, or interpreted by python-statemachine) decides the step; the adapter then
checks the payloads the step needs and, only when everything is valid, commits the step
in one go: journal, lifecycle, issued actions, chart state.  A call that raises has
changed nothing.  Tools reach the coordinator through its labelled block, never its slots.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from handoff._binding import EVENT_INDEX, FACT_EVENTS, Keep, Plan, plan_for, plans, refusal_error
from handoff._errors import ForeignFactError, HandoffError
from handoff._lifecycle import NormalizedHandoffEvent
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._table import CompiledChart, chart_rules, compiled, startup_table
from handoff._timing import (
    HandoffTransferTiming,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)
from handoff._validators import require_delay_ms
from handoff._values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
)
from handoff._vocabulary import ChartEvent, Check, Refusal

if TYPE_CHECKING:
    from handoff._chart_base import HandoffChart
    from handoff._interpreted import InterpretedChart

__all__ = ["HandoffCoordinatorCore"]

_START = ChartEvent.START.index
_UNKNOWN = ChartEvent.UNKNOWN_ACTION.index
_DUPLICATE = ChartEvent.DUPLICATE_OUTCOME.index
_CONFLICTING = ChartEvent.CONFLICTING_OUTCOME.index
_MISMATCHED = ChartEvent.MISMATCHED_OUTCOME.index
_FACT_INDEX = {fact: event.index for fact, event in FACT_EVENTS.items()}
_START_TRANSFER = HandoffAction.StartTransfer
_SUCCESS = HandoffCompletion.SUCCESS
_COMPLETED = NormalizedHandoffEvent.COMPLETED
_EVENTS = tuple(ChartEvent)
_KEEP_OUTCOME, _KEEP_TIMING, _KEEP_TOKENS = Keep.OUTCOME, Keep.TIMING, Keep.TOKENS


def _table(rules: HandoffOrder | type[HandoffChart]) -> CompiledChart:
    return startup_table(rules) if isinstance(rules, HandoffOrder) else compiled(rules)


@functools.cache
def _plans(chart: HandoffOrder | type[HandoffChart]) -> tuple[tuple[Plan, ...], ...]:
    return plans(_table(chart))


class HandoffCoordinatorCore:
    """Coordinates one prefill-to-decode handoff: facts and outcomes in, actions out.

    Every call returns the actions to perform (possibly none) or raises `HandoffError`,
    in which case the coordinator is exactly as it was before the call.

    The ordering rules are the shipped chart of `order`, or any `HandoffChart` given as
    `chart=` (then `order` may be left out: it is the chart's; given, it must agree).  With
    `interpreted=True` the chart is run by python-statemachine itself instead of the
    compiled table: same behaviour, much slower, useful for debugging a chart.
    """

    __slots__ = (
        "_chart",
        "_completion",
        "_fallback",
        "_handoff_id",
        "_interpreter",
        "_issued",
        "_lifecycle",
        "_next_id",
        "_outcomes",
        "_plans",
        "_state",
        "_timing",
        "_tokens",
    )

    def __init__(
        self,
        handoff_id: HandoffId,
        order: HandoffOrder | None = None,
        fallback_transfer_delay_ms: float = 0.0,
        *,
        chart: type[HandoffChart] | None = None,
        interpreted: bool = False,
    ) -> None:
        if not isinstance(handoff_id, HandoffId):
            raise TypeError(f"handoff_id must be a HandoffId, got {handoff_id!r}")
        # A shipped order skips the chart checks: construction is on every handoff's path.
        shipped = chart is None and type(order) is HandoffOrder
        rules = cast("HandoffOrder", order) if shipped else chart_rules(order, chart)
        self._fallback = require_delay_ms("fallback_transfer_delay_ms", fallback_transfer_delay_ms)
        self._handoff_id = handoff_id
        self._chart: CompiledChart = _table(rules)
        self._plans = _plans(rules)
        self._state = 0
        self._next_id = 0
        self._issued: dict[int, HandoffAction] = {}
        self._outcomes: dict[int, HandoffActionOutcome] = {}
        self._timing: HandoffTransferTiming | None = None
        self._tokens: int | None = None
        self._lifecycle: list[NormalizedHandoffEvent] = []
        self._completion: HandoffCompletion | None = None
        self._interpreter: InterpretedChart | None = None
        if interpreted:
            from handoff._interpreted import InterpretedChart

            self._interpreter = InterpretedChart(rules)

    @classmethod
    def new(cls, handoff_id: HandoffId, order: HandoffOrder) -> HandoffCoordinatorCore:
        """A coordinator whose transfer delay falls back to 0 ms when timing is unmodelled."""
        return cls(handoff_id, order)

    @classmethod
    def new_with_fallback(
        cls, handoff_id: HandoffId, order: HandoffOrder, fallback_transfer_delay_ms: float
    ) -> HandoffCoordinatorCore:
        """A coordinator with an explicit fallback transfer delay (finite, non-negative)."""
        return cls(handoff_id, order, fallback_transfer_delay_ms)

    # -- for tools (model review, traces, diagrams): not needed to run a handoff ----------

    @classmethod
    def for_table(
        cls, handoff_id: HandoffId, table: CompiledChart, fallback_transfer_delay_ms: float = 0.0
    ) -> HandoffCoordinatorCore:
        """A coordinator driven by a compiled table as it is (the review runs mutants so)."""
        coordinator = cls(handoff_id, table.order, fallback_transfer_delay_ms)
        coordinator._chart = table
        coordinator._plans = plans(table)
        return coordinator

    @property
    def table(self) -> CompiledChart:
        """The compiled table this coordinator runs (also when it is interpreted)."""
        return self._chart

    def fork(self) -> HandoffCoordinatorCore:
        """An independent copy, for exploring alternatives from this point (compiled only)."""
        if self._interpreter is not None:
            raise TypeError("an interpreted coordinator cannot be forked")
        twin = object.__new__(HandoffCoordinatorCore)
        for name in self.__slots__:
            setattr(twin, name, getattr(self, name))
        twin._issued = dict(self._issued)
        twin._outcomes = dict(self._outcomes)
        twin._lifecycle = list(self._lifecycle)
        return twin

    def configuration(self) -> tuple[object, ...]:
        """Everything that decides future behaviour, as a hashable value."""
        return (
            self._state,
            self._next_id,
            tuple(sorted(self._issued.items())),
            tuple(sorted(self._outcomes.items(), key=lambda item: item[0])),
            self._timing,
            self._tokens,
            tuple(self._lifecycle),
            self._completion,
        )

    def issued_actions(self) -> tuple[tuple[HandoffActionId, HandoffAction], ...]:
        """The journal's issued actions, acknowledged or not, in issue order."""
        return tuple((HandoffActionId(key), action) for key, action in self._issued.items())

    def classify(
        self,
        fact: HandoffFact | None = None,
        action_id: HandoffActionId | None = None,
        outcome: HandoffActionOutcome | None = None,
    ) -> ChartEvent | None:
        """The chart event a call would make now: `start()` when given nothing, else the fact,
        else the outcome for `action_id` (None: a foreign fact, refused before the chart)."""
        if fact is not None:
            event = FACT_EVENTS[type(fact)]
            return event if fact.handoff_id == self._handoff_id else None
        if action_id is None or outcome is None:
            return ChartEvent.START
        return _EVENTS[self._outcome_event(action_id, outcome)]

    def run_checks(self, checks: tuple[Check, ...], fact: HandoffFact | None) -> float | None:
        """Run a step's payload checks on a call's fact; returns the delay when one is checked."""
        return self._checked_delay(checks, fact)

    # -- state -------------------------------------------------------------------------

    @property
    def handoff_id(self) -> HandoffId:
        """The handoff this coordinator moves."""
        return self._handoff_id

    @property
    def order(self) -> HandoffOrder:
        """The backend family's ordering of the steps."""
        return self._chart.order

    @property
    def is_complete(self) -> bool:
        """Whether the handoff has completed (a reopened cleanup makes it incomplete again)."""
        return self._state in self._chart.complete

    @property
    def completion(self) -> HandoffCompletion | None:
        """The latest completion, or None before the first; it stays set during a reopen."""
        return self._completion

    @property
    def lifecycle(self) -> tuple[NormalizedHandoffEvent, ...]:
        """The normalized lifecycle events recorded so far, in order."""
        return tuple(self._lifecycle)

    @property
    def chart_name(self) -> str:
        """The title of the chart whose rules this coordinator follows."""
        return self._chart.name

    @property
    def chart_state(self) -> str:
        """The id of the chart state the handoff is in, e.g. `"prefill_running"`."""
        return self._chart.states[self._state]

    def __repr__(self) -> str:
        completion = self._completion.name if self._completion is not None else None
        return (
            f"<HandoffCoordinatorCore {self._chart.name} at {self.chart_state!r}, completion="
            f"{completion}, complete={self.is_complete}, handoff_id={self._handoff_id}>"
        )

    # -- calls -------------------------------------------------------------------------

    def start(self) -> list[IssuedHandoffAction]:
        """Issue the first action of the order; a no-op once started or no longer active."""
        return self._take(_START, None, None, None)

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        """Take a fact reported by the runtime."""
        event = _FACT_INDEX.get(type(fact))
        if event is None:
            raise TypeError(f"fact must be a HandoffFact, got {fact!r}")
        if fact.handoff_id is not self._handoff_id and fact.handoff_id != self._handoff_id:
            raise ForeignFactError(
                f"fact belongs to a different handoff: expected {self._handoff_id}, "
                f"got {fact.handoff_id}"
            )
        return self._take(event, fact, None, None)

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        """Take the runtime's acknowledgement of an issued action."""
        if type(action_id) is not HandoffActionId:
            raise TypeError(f"action_id must be a HandoffActionId, got {action_id!r}")
        if type(outcome) is not HandoffActionOutcome:
            raise TypeError(f"outcome must be a HandoffActionOutcome, got {outcome!r}")
        return self._take(self._outcome_event(action_id, outcome), None, action_id, outcome)

    def _outcome_event(self, action_id: HandoffActionId, outcome: HandoffActionOutcome) -> int:
        """The index of the chart event an outcome makes against the journal (changes nothing)."""
        key = action_id.value
        action = self._issued.get(key)
        if action is None:
            return _UNKNOWN
        previous = self._outcomes.get(key)
        if previous is None:
            return EVENT_INDEX.get((type(action), outcome.kind._value_), _MISMATCHED)
        return _DUPLICATE if previous == outcome else _CONFLICTING

    # -- the step ------------------------------------------------------------------------

    def _take(
        self,
        event: int,
        fact: HandoffFact | None,
        action_id: HandoffActionId | None,
        outcome: HandoffActionOutcome | None,
    ) -> list[IssuedHandoffAction]:
        if self._interpreter is None:
            move = self._plans[self._state][event]
            if move.ignored:
                return []
            if move.refusal is not None:
                raise self._refusal(move.refusal, action_id, outcome)
            delay = self._checked_delay(move.checks, fact) if move.checks else None
        else:
            move, delay = self._interpret(event, fact, action_id, outcome)
            if move.ignored:
                return []
        # Everything is valid: commit the step in one go.
        keep = move.keep
        if keep:  # Keep.NOTHING is 0
            if keep == _KEEP_OUTCOME:
                self._outcomes[action_id.value] = outcome  # type: ignore[union-attr,assignment]
            elif keep == _KEEP_TIMING:
                self._timing = fact.transfer_timing  # type: ignore[union-attr]
            elif keep == _KEEP_TOKENS:
                self._tokens = fact.transferable_prompt_tokens  # type: ignore[union-attr]
        if move.lifecycle is not None:
            self._lifecycle.append(move.lifecycle)
        self._state = move.target
        # A loop, not a comprehension: most steps issue one action or none, and a comprehension
        # costs a frame of its own.
        issued = []
        for make, completion in move.issues:
            issued.append(self._issue(make, completion, delay))
        return issued

    def _interpret(
        self,
        event: int,
        fact: HandoffFact | None,
        action_id: HandoffActionId | None,
        outcome: HandoffActionOutcome | None,
    ) -> tuple[Plan, float | None]:
        assert self._interpreter is not None
        decide = self._interpreter.decide
        step, delay = decide(self._state, _EVENTS[event], self._checked_delay, fact)
        if step.refusal is not None:
            raise self._refusal(step.refusal, action_id, outcome)
        return plan_for(step), delay

    def _checked_delay(self, checks: tuple[Check, ...], fact: HandoffFact | None) -> float | None:
        """Run a step's payload checks; returns the transfer delay when one is checked."""
        delay = None
        for check in checks:
            if check is Check.TRANSFER_TIMING_IS_VALID:
                assert isinstance(fact, HandoffFact.SourceHeld)
                validate_transfer_timing(fact.transfer_timing)
            else:
                delay = self._transfer_delay(fact)
        return delay

    def _transfer_delay(self, fact: HandoffFact | None) -> float:
        timing = fact.transfer_timing if isinstance(fact, HandoffFact.SourceHeld) else self._timing
        tokens = (
            fact.transferable_prompt_tokens
            if isinstance(fact, HandoffFact.DestinationReserved)
            else self._tokens
        )
        if timing is None or tokens is None:
            raise HandoffError("the transfer was planned before the source and destination were")
        delay = timing.delay_ms(tokens)
        if delay is None:
            delay = self._fallback
        validate_transfer_delay_ms(delay)
        return delay

    def _issue(
        self,
        make: Callable[..., HandoffAction],
        completion: HandoffCompletion | None,
        delay: float | None,
    ) -> IssuedHandoffAction:
        action: HandoffAction
        if make is _START_TRANSFER:
            assert delay is not None, "a transfer is issued only after its delay was checked"
            action = make(self._handoff_id, delay)
        else:
            action = make(self._handoff_id)
        action_id = self._next_id
        self._next_id = action_id + 1
        if completion is None:
            self._issued[action_id] = action
        else:
            self._completion = completion
            if completion is _SUCCESS:
                self._lifecycle.append(_COMPLETED)
            self._issued.clear()
            self._outcomes.clear()
        return IssuedHandoffAction(HandoffActionId(action_id), action)

    def _refusal(
        self,
        refusal: Refusal,
        action_id: HandoffActionId | None,
        outcome: HandoffActionOutcome | None,
    ) -> HandoffError:
        return refusal_error(
            refusal,
            self._chart.names[self._state],
            self._issued,
            self._outcomes,
            action_id,
            outcome,
        )

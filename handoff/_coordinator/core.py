"""The adapter: turns calls into chart events, keeps the journal, issues the actions.

It holds no ordering logic.  Each call becomes exactly one `ChartEvent`; the chart (as a
compiled table, or interpreted by python-statemachine) decides the step; the adapter then
checks the payloads the step needs and, only when everything is valid, commits the step
in one go: journal, lifecycle, issued actions, chart state.  A call that raises has
changed nothing.  Tools read it through `handoff._coordinator.probe`, never through this class.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, cast, overload

from handoff._chart.vocabulary import ChartEvent, Check, Refusal
from handoff._compile.table import CompiledChart, chart_rules, runtime_table
from handoff._coordinator.binding import (
    EVENT_INDEX,
    FACT_EVENTS,
    Keep,
    Plan,
    concurrent_call,
    described,
    plan_for,
    planned_delay,
    plans,
    refusal_error,
)
from handoff._values.errors import AdapterRefusal, ForeignFactError, HandoffError
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import (
    AnyHandoffAction,
    HandoffAction,
    HandoffFact,
    IssuedHandoffAction,
)
from handoff._values.timing import HandoffTransferTiming, validate_transfer_timing
from handoff._values.validators import require_delay_ms
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
)

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart
    from handoff._compile.interpreted import InterpretedChart

__all__ = ["HandoffCoordinatorCore"]

_START = ChartEvent.START.index
_UNKNOWN = ChartEvent.UNKNOWN_ACTION.index
_DUPLICATE = ChartEvent.DUPLICATE_OUTCOME.index
_CONFLICTING = ChartEvent.CONFLICTING_OUTCOME.index
_MISMATCHED = ChartEvent.MISMATCHED_OUTCOME.index
_FACT_INDEX = {fact: event.index for fact, event in FACT_EVENTS.items()}
_TRANSFER = HandoffAction.StartTransfer
_SUCCESS = HandoffCompletion.SUCCESS
_IDS = tuple(HandoffActionId(value) for value in range(32))
_COMPLETED = NormalizedHandoffEvent.COMPLETED
_EVENTS = tuple(ChartEvent)
_FOREIGN_FACT = AdapterRefusal.FOREIGN_FACT.phrase
_KEEP_OUTCOME, _KEEP_TIMING, _KEEP_TOKENS = Keep.OUTCOME, Keep.TIMING, Keep.TOKENS
_OUTCOME = -1
"""The event of an outcome, read off the journal once the call holds the gate."""
_Call = tuple[HandoffFact | None, HandoffActionId | None, HandoffActionOutcome | None]


@functools.cache
def _plans(chart: HandoffOrder | type[HandoffChart]) -> tuple[tuple[Plan, ...], ...]:
    return plans(runtime_table(chart))


class HandoffCoordinatorCore:
    """Coordinates one prefill-to-decode handoff: facts and outcomes in, actions out.

    `HandoffCoordinatorCore(handoff_id=HandoffId.new(), order=HandoffOrder.SOURCE_FIRST)`.
    Every call returns the actions to perform (possibly none) or raises `HandoffError`,
    in which case the coordinator is exactly as it was before the call (contract, "The
    coordinator"; the error's fields say what it was about).

    The ordering rules are the shipped chart of `order`, or any `HandoffChart` given as
    `chart=` (then `order` may be left out: it is the chart's; given, it must agree).  With
    `interpreted=True` the chart is run by python-statemachine itself instead of the
    compiled table: same behaviour, much slower, useful for debugging a chart.

    One caller at a time: a call made while another call on the same coordinator is running
    (from another thread) raises `ConcurrentCallError` and changes nothing.  `copy.copy`,
    `copy.deepcopy` and `pickle` give an independent coordinator that shares nothing with
    this one but the immutable rule table; `handoff.wire.dumps(coordinator)` writes it as a
    snapshot that `handoff.wire.loads(text, HandoffCoordinatorCore)` restores.
    """

    __slots__ = (
        "_chart",
        "_completion",
        "_fallback",
        "_gate",
        "_handoff_id",
        "_interpreter",
        "_issued",
        "_lifecycle",
        "_next_id",
        "_outcomes",
        "_plans",
        "_rules",
        "_state",
        "_timing",
        "_tokens",
    )

    @overload
    def __init__(
        self,
        handoff_id: HandoffId,
        order: HandoffOrder,
        fallback_transfer_delay_ms: float = 0.0,
        *,
        chart: type[HandoffChart] | None = None,
        interpreted: bool = False,
    ) -> None: ...
    @overload
    def __init__(
        self,
        handoff_id: HandoffId,
        order: HandoffOrder | None = None,
        fallback_transfer_delay_ms: float = 0.0,
        *,
        chart: type[HandoffChart],
        interpreted: bool = False,
    ) -> None: ...
    def __init__(
        self,
        handoff_id: HandoffId,
        order: HandoffOrder | None = None,
        fallback_transfer_delay_ms: float = 0.0,
        *,
        chart: type[HandoffChart] | None = None,
        interpreted: bool = False,
    ) -> None:
        if type(handoff_id) is not HandoffId:
            raise TypeError(f"handoff_id must be a HandoffId, got {handoff_id!r}")
        # A shipped order skips the chart checks: construction is on every handoff's path.
        shipped = chart is None and type(order) is HandoffOrder
        rules = cast("HandoffOrder", order) if shipped else chart_rules(order, chart)
        self._fallback = require_delay_ms("fallback_transfer_delay_ms", fallback_transfer_delay_ms)
        self._handoff_id = handoff_id
        self._rules = rules
        self._chart: CompiledChart = runtime_table(rules)
        self._plans = _plans(rules)
        self._gate = [None]
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
            from handoff._compile.interpreted import InterpretedChart

            self._interpreter = InterpretedChart(rules)

    @classmethod
    def new(cls, handoff_id: HandoffId, order: HandoffOrder) -> HandoffCoordinatorCore:
        """A coordinator whose transfer delay falls back to 0 ms when timing is unmodelled.

        `HandoffCoordinatorCore.new(HandoffId.new(), HandoffOrder.SOURCE_FIRST)` is
        `HandoffCoordinatorCore(handoff_id=…, order=…)`.
        """
        return cls(handoff_id, order)

    @classmethod
    def new_with_fallback(
        cls, handoff_id: HandoffId, order: HandoffOrder, fallback_transfer_delay_ms: float
    ) -> HandoffCoordinatorCore:
        """A coordinator with an explicit fallback transfer delay (finite, non-negative).

        The fallback is the `StartTransfer` delay when the timing models none (contract §3);
        a negative or non-finite one is a `ValueError`.
        """
        return cls(handoff_id, order, fallback_transfer_delay_ms)

    # -- copies and the journal ----------------------------------------------------------

    def fork(self) -> HandoffCoordinatorCore:
        """An independent copy, for exploring alternatives from this point (compiled only)."""
        if self._interpreter is not None:
            raise TypeError("an interpreted coordinator cannot be forked")
        return self._replica()

    def _replica(self) -> HandoffCoordinatorCore:
        """A copy sharing nothing mutable with this one (an interpreted one's interpreter
        aside, which only the reachability walk, driving it through whole states, may share)."""
        twin = object.__new__(HandoffCoordinatorCore)
        for name in self.__slots__:
            setattr(twin, name, getattr(self, name))
        twin._issued = dict(self._issued)
        twin._outcomes = dict(self._outcomes)
        twin._lifecycle = list(self._lifecycle)
        twin._gate = [None]
        return twin

    def issued_actions(self) -> tuple[tuple[HandoffActionId, HandoffAction], ...]:
        """The journal's issued actions, acknowledged or not, in issue order."""
        return tuple((HandoffActionId(key), action) for key, action in self._issued.items())

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
    def fallback_transfer_delay_ms(self) -> float:
        """The transfer delay used when the timing models none (finite, non-negative)."""
        return self._fallback

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
        """Issue the first action of the order; a no-op once started or no longer active.

        `[submit] = coordinator.start()` gives `SubmitPrefill` (SOURCE_FIRST) or
        `ReserveDestination` (DESTINATION_FIRST); afterwards it returns `[]` (contract §4).
        """
        return self._take(_START, None, None, None)

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        """Take a fact reported by the runtime; returns the actions it makes due.

        `coordinator.on_fact(HandoffFact.SourceHeld(handoff_id=hid, transfer_timing=timing))`.
        A fact of another handoff is a `ForeignFactError`, one that comes before the
        acknowledgement it depends on an `OutOfOrderFactError`; a refused fact changes nothing
        (contract §4, `on_fact`). Anything but a fact variant is a `TypeError`.
        """
        event = _FACT_INDEX.get(type(fact))
        if event is None:
            raise TypeError(f"fact must be a HandoffFact, got {fact!r}")
        if fact.handoff_id is not self._handoff_id and fact.handoff_id != self._handoff_id:
            foreign = ForeignFactError(
                f"{_FOREIGN_FACT}: expected {self._handoff_id}, got {fact.handoff_id}"
            )
            state = self._chart.states[self._state]
            raise described(foreign, state, self._issued, self._outcomes, (fact, None, None))
        return self._take(event, fact, None, None)

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        """Take the runtime's acknowledgement of an issued action; returns the actions it makes due.

        `coordinator.on_action_outcome(action_id=issued.id, outcome=HandoffActionOutcome.APPLIED)`.
        The same outcome twice is harmless; an unknown id, a conflicting or an unfitting outcome
        is refused and changes nothing (contract §4, `on_action_outcome`).
        """
        if type(action_id) is not HandoffActionId:
            raise TypeError(f"action_id must be a HandoffActionId, got {action_id!r}")
        if type(outcome) is not HandoffActionOutcome:
            raise TypeError(f"outcome must be a HandoffActionOutcome, got {outcome!r}")
        return self._take(_OUTCOME, None, action_id, outcome)

    def _take(
        self,
        event: int,
        fact: HandoffFact | None,
        action_id: HandoffActionId | None,
        outcome: HandoffActionOutcome | None,
    ) -> list[IssuedHandoffAction]:
        """The step: one call taken, or refused with nothing changed, by one caller at a time.

        The chart's plan for (state, event) says what happens; payload checks run before
        anything changes; only then is the step committed in one go.  Every `HandoffError`
        leaves with the fields that say what it was about.
        """
        # The gate holds one token; taking it is one atomic list operation, so a second caller
        # finds it gone instead of racing the first through the journal.
        gate = self._gate
        try:
            gate.pop()
        except IndexError:
            raise self._described(concurrent_call(), (fact, action_id, outcome)) from None
        try:
            if event == _OUTCOME:
                event = self._outcome_event(action_id, outcome)  # type: ignore[arg-type]
            if self._interpreter is None:
                move = self._plans[self._state][event]
                if move.ignored:
                    return []
                if move.refusal is not None:
                    raise self._refusal(move.refusal, action_id, outcome)
                delay = self._checked_delay(move.checks, fact) if move.checks else None
            else:
                decide = self._interpreter.decide
                step, delay = decide(self._state, _EVENTS[event], self._checked_delay, fact)
                if step.refusal is not None:
                    raise self._refusal(step.refusal, action_id, outcome)
                move = plan_for(step)
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
            # A loop, not a comprehension: most steps issue one action or none, and a
            # comprehension costs a frame of its own.
            issued = []
            for make, completion in move.issues:
                issued.append(self._issue(make, completion, delay))
            return issued
        except HandoffError as error:
            raise self._described(error, (fact, action_id, outcome))  # noqa: B904 (itself)
        finally:
            gate.append(None)

    def _described(self, error: HandoffError, call: _Call) -> HandoffError:
        """`error` with the fields that say what it was about (the call, the chart state)."""
        return described(error, self.chart_state, self._issued, self._outcomes, call)

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

    def _checked_delay(self, checks: tuple[Check, ...], fact: HandoffFact | None) -> float | None:
        """Run a step's payload checks; returns the transfer delay when one is checked."""
        delay = None
        for check in checks:
            if check is Check.TRANSFER_TIMING_IS_VALID:
                assert isinstance(fact, HandoffFact.SourceHeld)
                validate_transfer_timing(fact.transfer_timing)
            else:
                delay = planned_delay(fact, self._timing, self._tokens, self._fallback)
        return delay

    def _issue(
        self,
        make: Callable[..., AnyHandoffAction],
        completion: HandoffCompletion | None,
        delay: float | None,
    ) -> IssuedHandoffAction:
        action: AnyHandoffAction
        if make is _TRANSFER:
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
        ids = _IDS  # ids are immutable values: the first ones are built once and shared
        key = ids[action_id] if action_id < len(ids) else HandoffActionId(action_id)
        return IssuedHandoffAction(key, action)

    def _refusal(
        self, refusal: Refusal, action_id: HandoffActionId | None, outcome: object
    ) -> HandoffError:
        names, state = self._chart.names, self._state
        return refusal_error(
            refusal, names[state], self._issued, self._outcomes, action_id, outcome
        )

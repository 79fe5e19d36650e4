"""The adapter: turns calls into chart events, keeps the journal, issues the actions.

It holds no ordering logic.  Each call becomes exactly one `ChartEvent`; the chart (as a
compiled table, or interpreted by python-statemachine) decides the step; the adapter then
checks the payloads the step needs and, only when everything is valid, builds what the step
changes (journal, lifecycle, issued actions, chart state) as a new `Progress` beside the old
one and commits it with one store.  A call that raises, wherever it is interrupted, has
changed nothing, or (interrupted after that store) has completed.  Tools read it through
`handoff._coordinator.probe`, never through this class.
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

__all__ = ["Call", "HandoffCoordinatorCore", "Progress", "Witness", "hold", "release"]


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
Call = tuple[HandoffFact | None, HandoffActionId | None, HandoffActionOutcome | None]
"""A call as the fact, or the action id and outcome, it was made with (start: neither)."""


Witness = Callable[[Call, "list[IssuedHandoffAction] | HandoffError", "Progress | None"], None]
"""Told each call, its answer (or its error) and the progress it makes (None: none) before
the step is committed: a recorder."""

_HELD: dict[HandoffCoordinatorCore, object] = {}
"""The coordinators a call is running on, each with the object that owns its gate.

`setdefault` takes a gate in one atomic operation, so a second caller finds it taken instead
of racing the first; one table for all keeps a coordinator's memory to its own fields."""


def hold(coordinator: HandoffCoordinatorCore, me: object) -> None:
    """Take `coordinator`'s gate for `me`, or raise `ConcurrentCallError` (changing nothing).

    A tool reading a coordinator whole (a snapshot) holds it so, between `try:` and a
    `finally:` that calls `release` (twice over, as `_take` does)."""
    if _HELD.setdefault(coordinator, me) is not me:
        raise concurrent_call()


def release(coordinator: HandoffCoordinatorCore, me: object) -> None:
    """Free `coordinator`'s gate if `me` holds it (a no-op otherwise, so it may run twice)."""
    if _HELD.get(coordinator) is me:
        del _HELD[coordinator]


class Progress:
    """What a step changes: the chart state, the journal, the kept payloads, the lifecycle.

    A coordinator holds one; a step builds the next apart (its `successor`, given new
    containers for what the step changes), so that committing the step is the one store
    `coordinator._now = after`: an interrupt before it leaves the old progress whole.  A
    committed one is never changed again, except by tools building a coordinator no one else
    holds; `copy` gives one to change.
    """

    __slots__ = ("completion", "issued", "lifecycle", "next_id", "outcomes", "state", "timing",
                 "tokens")  # fmt: skip

    def __init__(self) -> None:
        self.state = 0
        self.next_id = 0
        self.issued: dict[int, HandoffAction] = {}
        self.outcomes: dict[int, HandoffActionOutcome] = {}
        self.timing: HandoffTransferTiming | None = None
        self.tokens: int | None = None
        self.lifecycle: list[NormalizedHandoffEvent] = []
        self.completion: HandoffCompletion | None = None

    def copy(self) -> Progress:
        """A copy sharing no container with this one."""
        twin = self.successor()
        twin.issued, twin.outcomes = dict(self.issued), dict(self.outcomes)
        twin.lifecycle = list(self.lifecycle)
        return twin

    def successor(self) -> Progress:
        """A copy sharing this one's containers: a step replaces, never changes, those it
        changes (most steps change one container or none, and copying costs)."""
        twin = object.__new__(Progress)
        twin.state, twin.next_id, twin.completion = self.state, self.next_id, self.completion
        twin.timing, twin.tokens = self.timing, self.tokens
        twin.issued, twin.outcomes, twin.lifecycle = self.issued, self.outcomes, self.lifecycle
        return twin


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
    (from another thread) raises `ConcurrentCallError` and changes nothing; so does a
    snapshot or copy asked for then.  An interrupt (Ctrl-C) inside a call leaves the
    coordinator as before the call, or as the completed call left it.  `copy.copy`,
    `copy.deepcopy` and `pickle` give an independent coordinator that shares nothing with
    this one but the immutable rule table; `handoff.wire.dumps(coordinator)` writes it as a
    snapshot that `handoff.wire.loads(text, HandoffCoordinatorCore)` restores.
    """

    __slots__ = (
        "_chart",
        "_fallback",
        "_handoff_id",
        "_interpreter",
        "_now",
        "_plans",
        "_rules",
        "_witness",
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
        self._now = Progress()
        self._interpreter: InterpretedChart | None = None
        self._witness: Witness | None = None
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
        twin._now = self._now.copy()
        twin._witness = None
        return twin

    def issued_actions(self) -> tuple[tuple[HandoffActionId, HandoffAction], ...]:
        """The journal's issued actions, acknowledged or not, in issue order."""
        return tuple((HandoffActionId(key), action) for key, action in self._now.issued.items())

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
        return self._now.state in self._chart.complete

    @property
    def completion(self) -> HandoffCompletion | None:
        """The latest completion, or None before the first; it stays set during a reopen."""
        return self._now.completion

    @property
    def lifecycle(self) -> tuple[NormalizedHandoffEvent, ...]:
        """The normalized lifecycle events recorded so far, in order."""
        return tuple(self._now.lifecycle)

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
        return self._chart.states[self._now.state]

    def __repr__(self) -> str:
        completion = self.completion.name if self.completion is not None else None
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

        The chart's plan for (state, event) says what happens; payload checks run before the
        step's new `Progress` is built beside the committed one; a recorder writes the call
        down; only then is the step committed, by the one store `self._now = after`.  An
        interrupt anywhere leaves the coordinator as before the call or as the completed call
        left it, and the gate free.  Every `HandoffError` leaves with the fields that say what
        it was about.
        """
        # A fresh object per call owns the gate, and only its owner frees it.  The release is
        # written twice: an interrupt (a Ctrl-C is one exception, anywhere) that lands on the
        # first one before it has run leaves the gate to the second.  No `try:` line runs once
        # the gate is taken: CPython 3.11 leaves such a line's instruction out of the enclosing
        # handlers, so an interrupt landing on it would skip the releases.
        me: list[None] | None = []
        try:
            try:
                if _HELD.setdefault(self, me) is not me:
                    me = None  # another caller's gate: neither released nor written down
                    raise concurrent_call()
                now = self._now
                # Refused here, not before the gate, so that a recorder writes it down.
                if fact is not None and fact.handoff_id is not self._handoff_id:
                    self._check_own(fact)
                if event == _OUTCOME:
                    event = self._outcome_event(action_id, outcome)  # type: ignore[arg-type]
                if self._interpreter is None:
                    move = self._plans[now.state][event]
                    if not move.ignored:
                        if move.refusal is not None:
                            raise self._refusal(move.refusal, action_id, outcome)
                        delay = self._checked_delay(move.checks, fact) if move.checks else None
                else:
                    decide = self._interpreter.decide
                    step, delay = decide(now.state, _EVENTS[event], self._checked_delay, fact)
                    if step.refusal is not None:
                        raise self._refusal(step.refusal, action_id, outcome)
                    move = plan_for(step)
                if move.ignored:
                    if self._witness is not None:
                        self._witness((fact, action_id, outcome), [], None)
                    return []
                # Everything is valid: the step's progress, built beside the committed one.
                after = now.successor()
                after.state = move.target
                keep = move.keep
                if keep:  # Keep.NOTHING is 0
                    if keep == _KEEP_OUTCOME:
                        after.outcomes = {**now.outcomes, action_id.value: outcome}  # type: ignore[union-attr,dict-item]
                    elif keep == _KEEP_TIMING:
                        after.timing = fact.transfer_timing  # type: ignore[union-attr]
                    elif keep == _KEEP_TOKENS:
                        after.tokens = fact.transferable_prompt_tokens  # type: ignore[union-attr]
                if move.lifecycle is not None:
                    after.lifecycle = [*now.lifecycle, move.lifecycle]
                issued = []  # a loop, not a comprehension, which costs a frame of its own
                for make, completion in move.issues:
                    issued.append(self._issue(after, make, completion, delay))
                if self._witness is not None:
                    self._witness((fact, action_id, outcome), issued, after)
                self._now = after
                return issued
            except HandoffError as error:
                if me is None:
                    raise self._described(error, (fact, action_id, outcome)) from None
                # Kept in `error`, which Python unbinds as the error leaves: a local of its
                # own would tie the error to this frame, a cycle only the collector breaks.
                error = self._described(error, (fact, action_id, outcome))
                if self._witness is not None:
                    self._witness((fact, action_id, outcome), error, None)
                raise error
            finally:
                if me is not None and _HELD.get(self) is me:
                    del _HELD[self]
                    me = None  # released: the second release need not look
        finally:
            if me is not None and _HELD.get(self) is me:
                del _HELD[self]

    def _described(self, error: HandoffError, call: Call) -> HandoffError:
        """`error` with the fields that say what it was about (the call, the chart state)."""
        now = self._now
        return described(error, self.chart_state, now.issued, now.outcomes, call)

    def _check_own(self, fact: HandoffFact) -> None:
        if fact.handoff_id != self._handoff_id:
            raise ForeignFactError(
                f"{_FOREIGN_FACT}: expected {self._handoff_id}, got {fact.handoff_id}"
            )

    def _outcome_event(self, action_id: HandoffActionId, outcome: HandoffActionOutcome) -> int:
        """The index of the chart event an outcome makes against the journal (changes nothing)."""
        key, now = action_id.value, self._now
        action = now.issued.get(key)
        if action is None:
            return _UNKNOWN
        previous = now.outcomes.get(key)
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
                now = self._now
                delay = planned_delay(fact, now.timing, now.tokens, self._fallback)
        return delay

    def _issue(
        self,
        after: Progress,
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
        action_id = after.next_id
        after.next_id = action_id + 1
        if completion is None:
            after.issued = {**after.issued, action_id: action}
        else:
            after.completion = completion
            if completion is _SUCCESS:
                after.lifecycle = [*after.lifecycle, _COMPLETED]
            after.issued, after.outcomes = {}, {}
        ids = _IDS  # ids are immutable values: the first ones are built once and shared
        key = ids[action_id] if action_id < len(ids) else HandoffActionId(action_id)
        return IssuedHandoffAction(key, action)

    def _refusal(
        self, refusal: Refusal, action_id: HandoffActionId | None, outcome: object
    ) -> HandoffError:
        names, now = self._chart.names, self._now
        return refusal_error(
            refusal, names[now.state], now.issued, now.outcomes, action_id, outcome
        )

"""A chart run by python-statemachine itself: the reference the compiled table must match.

`handoff._review.equivalence.compare` proves the two equal on every reachable (state, event) cell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from statemachine.exceptions import TransitionNotAllowed
from statemachine.orderedset import OrderedSet

from handoff._chart.base import HandoffChart
from handoff._chart.vocabulary import IGNORE, ChartEvent, Check, Effect, Refusal
from handoff._compile.table import CompiledChart, Step, compiled, default_step
from handoff._values.messages import HandoffFact
from handoff._values.values import (
    HandoffOrder,
)

CheckRunner = Callable[[tuple[Check, ...], HandoffFact | None], float | None]
"""Runs a step's payload checks for the call being decided; returns the checked delay."""

__all__ = ["InterpretedChart"]


class _Refused(Exception):
    """Raised by a refusal validator to stop python-statemachine before it moves."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.phrase)
        self.refusal = refusal


class _Listener:
    """Answers every word of the chart vocabulary by recording what the chart did."""

    def __init__(self) -> None:
        self.reset(None, None)

    def reset(self, run_checks: CheckRunner | None, fact: HandoffFact | None) -> None:
        self.run_checks = run_checks
        self.fact = fact
        self.effects: list[Effect] = []
        self.checks: list[Check] = []
        self.delay: float | None = None
        self.ignored = False


def _effect(effect: Effect) -> Callable[[_Listener], None]:
    def record(self: _Listener) -> None:
        self.effects.append(effect)

    return record


def _check(check: Check) -> Callable[[_Listener], None]:
    def run(self: _Listener) -> None:
        assert self.run_checks is not None
        self.checks.append(check)
        delay = self.run_checks((check,), self.fact)
        if delay is not None:
            self.delay = delay

    return run


def _refusal(refusal: Refusal) -> Callable[[_Listener], None]:
    def refuse(self: _Listener) -> None:
        raise _Refused(refusal)

    return refuse


def _ignore(self: _Listener) -> None:
    self.ignored = True


for _effect_word in Effect:
    setattr(_Listener, _effect_word.value, _effect(_effect_word))
for _check_word in Check:
    setattr(_Listener, _check_word.value, _check(_check_word))
for _refusal_word in Refusal:
    setattr(_Listener, _refusal_word.callback, _refusal(_refusal_word))
setattr(_Listener, IGNORE, _ignore)


class InterpretedChart:
    """One python-statemachine instance of a chart (or an order's chart), event by event."""

    def __init__(self, chart: HandoffOrder | type[HandoffChart], state: str | None = None) -> None:
        if isinstance(chart, HandoffOrder):
            from handoff._chart.shipped import CHARTS

            chart = CHARTS[chart]
        self._chart = chart
        self._table = compiled(chart)
        self._listener = _Listener()
        self._machine: Any = chart(listeners=[self._listener], start_value=state)
        self._sound = True

    def move_to(self, state: str) -> None:
        """Put the machine in `state`, as if it had been started there."""
        if self._machine.is_terminated:  # a final state stops python-statemachine's engine
            self._machine = self._chart(listeners=[self._listener], start_value=state)
        else:
            # In a state inside groups, python-statemachine is in those groups too.
            inner = self._chart.states_map[state]
            around = [group.value for group in inner.ancestors()]
            self._machine.current_state_value = OrderedSet([*reversed(around), state])

    @property
    def table(self) -> CompiledChart:
        """The chart's own compiled table, whose state numbers `decide` speaks in."""
        return self._table

    @property
    def state(self) -> str:
        """The id of the machine's current state."""
        (state,) = (state for state in self._machine.configuration if not state.states)
        return str(state.id)

    def decide(
        self,
        state: int,
        event: ChartEvent,
        run_checks: CheckRunner,
        fact: HandoffFact | None,
    ) -> tuple[Step, float | None]:
        """Send `event`; return the step python-statemachine took and the checked delay.

        The machine is first put in `state` if it is elsewhere (the caller's state is the
        truth).  A refusal or a failed check leaves the machine where it was; a refusal comes back
        as a step carrying it, a failed check raises its `HandoffError`.  An event the state
        has no transition for takes its event kind's default, as in the compiled table.
        """
        # The coordinator's state is the truth: a step it did not commit (a recorder's write
        # failed) leaves the machine ahead of it, and an interrupt inside `send` may leave the
        # machine's engine half way, so an unsound or out-of-step machine is built afresh.
        name = self._table.states[state]
        if not self._sound:
            self._machine = self._chart(listeners=[self._listener], start_value=name)
        elif self.state != name:
            self.move_to(name)
        listener = self._listener
        listener.reset(run_checks, fact)
        self._sound = False
        try:
            self._machine.send(event.value)
        except _Refused as refused:
            self._sound = True
            return Step(state, event, state, refusal=refused.refusal), None
        except TransitionNotAllowed:
            self._sound = True
            return default_step(state, event, complete=state in self._table.complete), None
        self._sound = True
        target = self._table.index(self.state)
        step = Step(
            source=state,
            event=event,
            target=target,
            ignored=listener.ignored,
            checks=tuple(listener.checks),
            effects=tuple(listener.effects),
        )
        return step, listener.delay

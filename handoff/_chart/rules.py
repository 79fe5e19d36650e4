"""What the contract forbids in a chart's text, refused when the chart class is defined.

These rules hold whatever runs would show: a refusal speaks of one event and does nothing
else; a rule that drops its event checks nothing; checks run in the SPEC's order (the timing,
then the delay), only on the facts whose payload they judge; and a transition issuing
`StartTransfer` checks the delay it sends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from handoff._chart.vocabulary import IGNORE, JOURNAL_REFUSALS, ChartEvent, Check, Effect, Refusal

__all__ = ["text_problem"]

_REFUSAL_EVENTS = {
    Refusal.PREFILL_NOT_SUBMITTED: ChartEvent.SOURCE_HELD,
    Refusal.OWNERSHIP_NOT_ACCEPTED: ChartEvent.DESTINATION_RESERVED,
    Refusal.TRANSFER_NOT_SCHEDULED: ChartEvent.TRANSFER_COMPLETED,
    **{refusal: event for event, refusal in JOURNAL_REFUSALS.items()},
}
"""The one event each refusal's phrase speaks of."""

_CHECK_EVENTS = {
    Check.TRANSFER_TIMING_IS_VALID: frozenset({ChartEvent.SOURCE_HELD.value}),
    Check.TRANSFER_DELAY_IS_VALID: frozenset(
        {ChartEvent.SOURCE_HELD.value, ChartEvent.DESTINATION_RESERVED.value}
    ),
}
"""The events whose payload each check judges (the contract checks nothing else)."""


def text_problem(transition: Any, named: Callable[[Iterable[Any]], Iterator[str]]) -> str | None:
    """What is wrong with `transition` as text, or None; `named` lists a group's words."""
    validators = list(named(transition.validators))
    effects = list(named(transition.on))
    events = {event.id for event in transition.events}
    refusals = [refusal for refusal in Refusal if refusal.callback in validators]
    if refusals:
        owner = _REFUSAL_EVENTS[refusals[0]].value
        if len(refusals) > 1 or len(validators) > 1 or effects:
            return (
                "a refusal refuses and does nothing else: write refused(...) as a rule of its "
                "own, and the other words on another"
            )
        wrong = sorted(events - {owner})
        if wrong:
            return (
                f"{refusals[0].name} belongs to {owner!r}, not {wrong}: refuse with it under "
                f"{owner!r} only, or with the refusal the event's phrase speaks of"
            )
        return None
    checks = [Check(name) for name in validators if name in Check._value2member_map_]
    if checks != sorted(set(checks), key=list(Check).index):
        return (
            f"checks {[check.value for check in checks]} run out of the contract's order: write "
            "transfer_timing_is_valid before transfer_delay_is_valid"
        )
    if checks and IGNORE in effects:
        return (
            f"a rule that drops its event judges no payload: python-statemachine would run "
            f"{checks[0].value} before dropping the call, the compiled table drops it unjudged; "
            'drop validators= to drop every such call, or drop on="ignore" to take it'
        )
    for check in checks:
        if not events <= _CHECK_EVENTS[check]:
            return f"{check.value} judges no payload of {sorted(events)}: drop it from this rule"
    if Effect.START_TRANSFER.value in effects and Check.TRANSFER_DELAY_IS_VALID not in checks:
        return (
            "StartTransfer is issued without transfer_delay_is_valid: add "
            'validators="transfer_delay_is_valid" to this rule'
        )
    return None

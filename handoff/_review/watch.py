"""What the environment has seen of a run, and what the contract says must happen next.

A `Watch` is built only from the environment's own calls, the actions it received and
whether each call raised: never from a coordinator's records, so a broken chart cannot
vouch for itself.  It follows contract §4 as the environment can tell it: a call the SPEC
takes updates the watch, a call the SPEC drops or refuses leaves it as it was.  `expected`
says how the SPEC answers a call; `advance` and `cleanup_step` say which actions are due.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import attrs

from handoff._chart.vocabulary import Refusal
from handoff._review.environment import Call, CallKind, Rules
from handoff._review.payload import timing_refusal, transfer_delay, usable_delay
from handoff._values.errors import (
    AdapterRefusal,
    CleanupActionFailedError,
    ConflictingOutcomeError,
    HandoffError,
    InvalidOutcomeError,
    UnknownActionError,
)
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import HandoffAction, HandoffFact
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import HandoffActionOutcome, HandoffOrder, OutcomeKind

__all__ = [
    "ACK_SIGNS",
    "CANCELS",
    "FACTS",
    "FACT_LIFECYCLE",
    "NEWS",
    "ORDERED",
    "Head",
    "Mode",
    "Ordered",
    "Refuse",
    "Seen",
    "SpecAnswer",
    "Unordered",
    "Watch",
    "advance",
    "advance_rules",
    "cleanup_step",
    "expected",
    "fits",
    "head",
    "receive",
    "take",
]

_A = HandoffAction
_E = NormalizedHandoffEvent
_DONE = (OutcomeKind.APPLIED, OutcomeKind.NOOP)
CANCELS = (_A.CancelSource, _A.CancelDestination)


class Mode(enum.Enum):
    """Contract §4's modes, as the environment tells them from what it saw."""

    ACTIVE = "active"
    CLEANING_UP = "cleaning up"
    COMPLETE = "complete"


class Seen(enum.Flag):
    """What the environment has established by calls the SPEC takes."""

    NOTHING = 0
    STARTED = enum.auto()
    SUBMITTED = enum.auto()
    SOURCE_HELD = enum.auto()
    ACCEPTED = enum.auto()
    RESERVED = enum.auto()
    SCHEDULED = enum.auto()
    TRANSFERRED = enum.auto()
    ACTIVATED = enum.auto()
    SOURCE_FREED = enum.auto()
    """`ReleaseSource` or `CancelSource` acknowledged `APPLIED` or `NOOP`."""
    DESTINATION_FREED = enum.auto()
    """`CancelDestination` acknowledged `APPLIED` or `NOOP`."""
    SUCCEEDED = enum.auto()
    """The latest completion was a SUCCESS."""


@attrs.frozen(cache_hash=True)
class Watch:
    """The environment's own record of a run: enough to judge every call and issued action."""

    mode: Mode = Mode.ACTIVE
    seen: Seen = Seen.NOTHING
    issued: tuple[tuple[int, type[HandoffAction]], ...] = ()
    """Every action received, as (id, kind), in the order received."""
    journal: tuple[int, ...] = ()
    """Ids issued since the last completion (`Complete` aside): those the SPEC journals."""
    recorded: tuple[tuple[int, HandoffActionOutcome], ...] = ()
    """Outcomes the SPEC recorded since the last completion."""
    timing: HandoffTransferTiming | None = None
    tokens: int | None = None
    lifecycle: tuple[NormalizedHandoffEvent, ...] = ()
    """The lifecycle the SPEC records for the calls taken so far."""

    @property
    def next_id(self) -> int:
        """The id the next issued action must carry."""
        return self.issued[-1][0] + 1 if self.issued else 0

    def ever(self, kind: type[HandoffAction]) -> bool:
        """Whether an action of `kind` was received in this run."""
        return any(action is kind for _, action in self.issued)

    def action(self, action_id: int) -> type[HandoffAction] | None:
        """The kind of action received under `action_id`, if any."""
        return next((kind for known, kind in self.issued if known == action_id), None)

    def outcome(self, action_id: int) -> HandoffActionOutcome | None:
        """The outcome recorded for `action_id`, if any."""
        return next((outcome for known, outcome in self.recorded if known == action_id), None)

    def engaged(self) -> list[str]:
        """The owners engaged and not yet freed: SPEC's cleanup still owes them a cancel."""
        owners = []
        if self.ever(_A.SubmitPrefill) and Seen.SOURCE_FREED not in self.seen:
            owners.append("source")
        if self.ever(_A.ReserveDestination) and Seen.DESTINATION_FREED not in self.seen:
            owners.append("destination")
        return owners


@attrs.frozen
class Refuse:
    """The SPEC refuses the call with an error of class `error` whose message has `phrase`."""

    error: type[HandoffError]
    phrase: str
    payload: bool = False
    """The refusal judges the payload (payload discipline) rather than the order of calls."""


class SpecAnswer(enum.Enum):
    """How the SPEC answers a call it does not refuse."""

    TAKE = "take"
    DROP = "drop"
    """Returns `[]` and changes nothing."""


def expected(rules: Rules, watch: Watch, call: Call) -> SpecAnswer | Refuse:
    """How contract §4 answers `call` in the configuration the environment saw as `watch`."""
    if call.kind is CallKind.START:
        started = Seen.STARTED in watch.seen
        return SpecAnswer.TAKE if watch.mode is Mode.ACTIVE and not started else SpecAnswer.DROP
    if call.fact is not None:
        return _fact_answer(rules, watch, call.fact)
    assert call.action_id is not None
    assert call.outcome is not None
    return _outcome_answer(watch, call.action_id.value, call.outcome)


class Ordered(NamedTuple):
    """A fact contract §4 takes only once an acknowledgement came first."""

    establishes: Seen
    """What taking the fact establishes (a second one is dropped)."""
    needs: Seen
    """The acknowledgement that must come first."""
    refusal: Refusal
    """The refusal of the fact when it comes before `needs`."""


class Unordered(enum.Enum):
    """How contract §4 takes a fact that needs no acknowledgement first."""

    TERMINAL = "terminal"
    """Taken in active mode: cleanup begins (or, once complete after a success, reopens)."""
    NEWS = "news"
    """Dropped in every mode: it informs, and changes nothing."""


FACTS: dict[type[HandoffFact], Ordered | Unordered] = {
    HandoffFact.SourceHeld: Ordered(
        Seen.SOURCE_HELD, Seen.SUBMITTED, Refusal.PREFILL_NOT_SUBMITTED
    ),
    HandoffFact.DestinationReserved: Ordered(
        Seen.RESERVED, Seen.ACCEPTED, Refusal.OWNERSHIP_NOT_ACCEPTED
    ),
    HandoffFact.TransferCompleted: Ordered(
        Seen.TRANSFERRED, Seen.SCHEDULED, Refusal.TRANSFER_NOT_SCHEDULED
    ),
    HandoffFact.Failed: Unordered.TERMINAL,
    HandoffFact.TimedOut: Unordered.TERMINAL,
    HandoffFact.Canceled: Unordered.TERMINAL,
}
"""How contract §4 takes each kind of fact, every kind named (an unknown one is an error,
never taken for terminal): the one table both the review's judge and the Promela judge
(`handoff._review.spin.watch`) read."""

ORDERED: dict[type[HandoffFact], Ordered] = {
    fact: rule for fact, rule in FACTS.items() if isinstance(rule, Ordered)
}
"""The contract's ordering rules for facts (`FACTS`' ordered ones)."""
NEWS: tuple[type[HandoffFact], ...] = tuple(
    fact for fact, rule in FACTS.items() if rule is Unordered.NEWS
)
"""The facts that only inform (`FACTS`' news)."""


def _fact_answer(rules: Rules, watch: Watch, fact: HandoffFact) -> SpecAnswer | Refuse:
    if fact.handoff_id != rules.handoff_id:
        return _adapter(AdapterRefusal.FOREIGN_FACT)
    rule = FACTS[type(fact)]
    if rule is Unordered.NEWS:
        return SpecAnswer.DROP
    terminal = rule is Unordered.TERMINAL
    if watch.mode is Mode.COMPLETE:
        reopens = terminal and Seen.SUCCEEDED in watch.seen
        return SpecAnswer.TAKE if reopens else SpecAnswer.DROP
    if watch.mode is Mode.CLEANING_UP:
        return SpecAnswer.DROP
    if not isinstance(rule, Ordered):
        return SpecAnswer.TAKE
    if rule.establishes in watch.seen:
        return SpecAnswer.DROP
    if rule.needs not in watch.seen:
        return Refuse(rule.refusal.error, rule.refusal.phrase)
    return _payload_answer(rules, watch, fact)


def _payload_answer(rules: Rules, watch: Watch, fact: HandoffFact) -> SpecAnswer | Refuse:
    """SPEC: `validate_transfer_timing`, then the delay of a transfer this fact makes due."""
    timing, tokens = watch.timing, watch.tokens
    if isinstance(fact, HandoffFact.SourceHeld):
        timing = fact.transfer_timing
        refused = timing_refusal(timing)
        if refused is not None:
            return _adapter(refused)
    elif isinstance(fact, HandoffFact.DestinationReserved):
        tokens = fact.transferable_prompt_tokens
    if timing is None or tokens is None:
        return SpecAnswer.TAKE
    if not usable_delay(transfer_delay(timing, tokens, rules.fallback_transfer_delay_ms)):
        return _adapter(AdapterRefusal.INVALID_DELAY)
    return SpecAnswer.TAKE


def _adapter(refusal: AdapterRefusal) -> Refuse:
    """The adapter's own refusal; all but the foreign fact judge the payload."""
    return Refuse(refusal.error, refusal.phrase, refusal is not AdapterRefusal.FOREIGN_FACT)


_FITTING: dict[type[HandoffAction], tuple[OutcomeKind, ...]] = {
    _A.SubmitPrefill: (OutcomeKind.SUBMITTED,),
    _A.ReserveDestination: (OutcomeKind.ACCEPTED,),
    _A.StartTransfer: (OutcomeKind.SCHEDULED,),
    _A.ActivateDestination: (OutcomeKind.APPLIED,),
    _A.ReleaseSource: _DONE,
    _A.CancelSource: _DONE,
    _A.CancelDestination: _DONE,
}
"""Contract §4 on_action_outcome step 5: the outcomes that fit each action."""


def fits(action: type[HandoffAction] | None, outcome: HandoffActionOutcome) -> bool:
    """Whether a cooperating environment would acknowledge `action` with `outcome`."""
    return action is not None and outcome.kind in _FITTING.get(action, ())


def _outcome_answer(
    watch: Watch, action_id: int, outcome: HandoffActionOutcome
) -> SpecAnswer | Refuse:
    if watch.mode is Mode.COMPLETE:
        return SpecAnswer.DROP
    if action_id not in watch.journal:
        return Refuse(UnknownActionError, f"unknown handoff action {action_id}")
    previous = watch.outcome(action_id)
    if previous is not None:
        if previous == outcome:
            return SpecAnswer.DROP
        return Refuse(
            ConflictingOutcomeError, f"conflicting outcome for handoff action {action_id}"
        )
    action = watch.action(action_id)
    if outcome.kind is OutcomeKind.FAILED:
        if action in CANCELS:
            return Refuse(CleanupActionFailedError, f"handoff cleanup action {action_id} failed")
        return SpecAnswer.TAKE
    if not fits(action, outcome):
        return Refuse(InvalidOutcomeError, f"invalid handoff action outcome {outcome}")
    return SpecAnswer.TAKE


# -- taking a call -------------------------------------------------------------------------

FACT_LIFECYCLE = {
    HandoffFact.SourceHeld: _E.SOURCE_HELD,
    HandoffFact.DestinationReserved: _E.DESTINATION_RESERVED,
}
"""The lifecycle event the SPEC records on taking an ordered fact, where it records one."""
ACK_SIGNS: dict[type[HandoffAction], tuple[Seen, NormalizedHandoffEvent | None]] = {
    _A.SubmitPrefill: (Seen.SUBMITTED, None),
    _A.ReserveDestination: (Seen.ACCEPTED, _E.DESTINATION_ACCEPTED),
    _A.StartTransfer: (Seen.SCHEDULED, None),
    _A.ActivateDestination: (Seen.ACTIVATED, _E.DESTINATION_ACTIVATED),
    _A.ReleaseSource: (Seen.SOURCE_FREED, _E.SOURCE_RELEASED),
    _A.CancelSource: (Seen.SOURCE_FREED, None),
    _A.CancelDestination: (Seen.DESTINATION_FREED, None),
}
"""What a fitting acknowledgement establishes, and the lifecycle event the SPEC records: read
by both judges, as `ORDERED` is."""


def take(watch: Watch, call: Call) -> Watch:
    """The watch after the SPEC takes `call` (before the actions it issued are received)."""
    if call.fact is not None:
        return _take_fact(watch, call.fact)
    if call.kind is CallKind.START:
        return attrs.evolve(watch, seen=watch.seen | Seen.STARTED)
    assert call.action_id is not None
    assert call.outcome is not None
    action_id, outcome = call.action_id.value, call.outcome
    watch = attrs.evolve(watch, recorded=(*watch.recorded, (action_id, outcome)))
    if outcome.kind is OutcomeKind.FAILED:
        return attrs.evolve(watch, mode=_cleanup_mode(watch))
    action = watch.action(action_id)
    assert action is not None
    sign, event = ACK_SIGNS[action]
    lifecycle = watch.lifecycle if event is None else (*watch.lifecycle, event)
    return attrs.evolve(watch, seen=watch.seen | sign, lifecycle=lifecycle)


def _take_fact(watch: Watch, fact: HandoffFact) -> Watch:
    rule = FACTS[type(fact)]
    if rule is Unordered.NEWS:
        return watch
    if not isinstance(rule, Ordered):  # a terminal fact: cleanup begins, or reopens a success
        if watch.mode is Mode.COMPLETE:
            return attrs.evolve(watch, mode=Mode.CLEANING_UP, journal=(), recorded=())
        return attrs.evolve(watch, mode=_cleanup_mode(watch))
    if isinstance(fact, HandoffFact.SourceHeld):
        watch = attrs.evolve(watch, timing=fact.transfer_timing)
    elif isinstance(fact, HandoffFact.DestinationReserved):
        watch = attrs.evolve(watch, tokens=fact.transferable_prompt_tokens)
    sign = rule.establishes
    event = FACT_LIFECYCLE.get(type(fact))
    lifecycle = watch.lifecycle if event is None else (*watch.lifecycle, event)
    return attrs.evolve(watch, seen=watch.seen | sign, lifecycle=lifecycle)


def _cleanup_mode(watch: Watch) -> Mode:
    return Mode.CLEANING_UP if watch.mode is Mode.ACTIVE else watch.mode


def receive(watch: Watch, action_id: int, action: HandoffAction) -> Watch:
    """The watch after receiving `action` under `action_id`."""
    issued = (*watch.issued, (action_id, type(action)))
    if not isinstance(action, _A.Complete):
        return attrs.evolve(watch, issued=issued, journal=(*watch.journal, action_id))
    success = watch.mode is Mode.ACTIVE
    seen = watch.seen | Seen.SUCCEEDED if success else watch.seen & ~Seen.SUCCEEDED
    lifecycle = (*watch.lifecycle, _E.COMPLETED) if success else watch.lifecycle
    return attrs.evolve(
        watch,
        mode=Mode.COMPLETE,
        seen=seen,
        issued=issued,
        journal=(),
        recorded=(),
        lifecycle=lifecycle,
    )


# -- what is due ---------------------------------------------------------------------------


class Head(NamedTuple):
    """Which owner an order engages first, which second, and what lets the second go out."""

    first: type[HandoffAction]
    second: type[HandoffAction]
    ready: Seen
    """The first owner's fact was taken."""


def head(order: HandoffOrder) -> Head:
    """The head of `order`: `start()` issues `first`, and `second` goes out once `ready`."""
    if order is HandoffOrder.SOURCE_FIRST:
        return Head(_A.SubmitPrefill, _A.ReserveDestination, Seen.SOURCE_HELD)
    return Head(_A.ReserveDestination, _A.SubmitPrefill, Seen.RESERVED)


def advance_rules(order: HandoffOrder) -> tuple[tuple[Seen, type[HandoffAction]], ...]:
    """Contract §4 `advance` (with `start()`'s first action) as a table: the first rule whose
    signs were all seen and whose action was never received names the action due; then
    `Complete` once the source is freed.  Both judges read it."""
    first, second, ready = head(order)
    return (
        (Seen.STARTED, first),
        (ready, second),
        (Seen.SOURCE_HELD | Seen.RESERVED, _A.StartTransfer),
        (Seen.TRANSFERRED, _A.ActivateDestination),
        (Seen.ACTIVATED, _A.ReleaseSource),
    )


def advance(order: HandoffOrder, watch: Watch) -> type[HandoffAction] | None:
    """Contract §4 `advance` (with `start()`'s first action): the action due in active mode."""
    for signs, action in advance_rules(order):
        if signs in watch.seen and not watch.ever(action):
            return action
    return _A.Complete if Seen.SOURCE_FREED in watch.seen else None


def cleanup_step(watch: Watch) -> tuple[type[HandoffAction], ...]:
    """Contract §4 cleanup step: the cancels still owed, in order, else `Complete` when done."""
    owed: list[type[HandoffAction]] = []
    engaged = watch.engaged()
    if "source" in engaged and not watch.ever(_A.CancelSource):
        owed.append(_A.CancelSource)
    if "destination" in engaged and not _cancel_destination_issued(watch):
        owed.append(_A.CancelDestination)
    if not owed and not engaged:
        return (_A.Complete,)
    return tuple(owed)


def _cancel_destination_issued(watch: Watch) -> bool:
    """A `CancelDestination` is out for the current engagement (a reopen engages anew)."""
    return any(watch.action(action_id) is _A.CancelDestination for action_id in watch.journal)

"""The review's environment: every call it may make, and the monitors that judge what it saw.

The environment is nondeterministic.  From every configuration it may call `start()`, report
any fact (with a usable payload, with an unusable one, or for another handoff) and acknowledge
every action id issued so far, and one never issued, with every kind of outcome.  A `Watch` is
what the environment itself has seen.  The safety monitors read only the watch, the call and
the actions it issued, never the coordinator's records, so a broken chart cannot vouch for
itself.
"""

from __future__ import annotations

import enum
import math
import uuid
from collections.abc import Iterator, Sequence

import attrs

from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._runs.call import TERMINAL_FACTS, Call, CallKind
from handoff._runs.runtime import CANCELS, HANDOFF_ID
from handoff._timing import HandoffTransferTiming
from handoff._values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffId,
    KvTransferTimingMode,
    OutcomeKind,
)

__all__ = [
    "HANDOFF_ID",
    "MAX_ACTIONS",
    "Call",
    "CallKind",
    "Environment",
    "Finding",
    "Phase",
    "Seen",
    "Watch",
    "environment",
    "fits",
    "observe",
]

MAX_ACTIONS = 16
"""Runs issuing more actions than this are cut off (the real charts issue at most eight)."""

_OTHER_HANDOFF_ID = HandoffId(uuid.UUID(int=2))

# DESTINATION_MISSING mode with a vanishing bandwidth: one missing token is modelled at 1e298 ms
# (finite, so usable), while 2**64 - 1 missing tokens overflow the delay to inf.
_TIMING = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 1, 1, 1e-304)
_BAD_BANDWIDTH = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 1, 1, -1.0)
_TOKENS = 1
_OVERFLOWING_TOKENS = 2**64 - 1

_A = HandoffAction
_O = HandoffActionOutcome
_OUTCOMES = (_O.SUBMITTED, _O.ACCEPTED, _O.SCHEDULED, _O.APPLIED, _O.NOOP, _O.failed("x"))
_TERMINAL = TERMINAL_FACTS
_CANCELS = CANCELS


# -- the environment -----------------------------------------------------------------------


@attrs.frozen
class Environment:
    """Every call the environment may make, for one handoff id."""

    handoff_id: HandoffId
    start: Call
    facts: tuple[Call, ...]
    outcomes: tuple[tuple[Call, ...], ...]
    """`outcomes[action_id]`: that id acknowledged with each kind of outcome."""

    def calls(self, next_id: int) -> Iterator[Call]:
        """The calls from a configuration whose next action id is `next_id`."""
        yield self.start
        yield from self.facts
        for action_id in range(min(next_id, MAX_ACTIONS) + 1):
            yield from self.outcomes[action_id]


def environment(handoff_id: HandoffId = HANDOFF_ID) -> Environment:
    """The nondeterministic environment of one handoff."""
    facts = (
        _fact(HandoffFact.SourceHeld(handoff_id, _TIMING), "SourceHeld(valid timing)"),
        _fact(
            HandoffFact.SourceHeld(handoff_id, _BAD_BANDWIDTH),
            "SourceHeld(bandwidth -1.0 GB/s)",
            usable=False,
        ),
        _fact(
            HandoffFact.DestinationReserved(handoff_id, _TOKENS), f"DestinationReserved({_TOKENS})"
        ),
        _fact(
            HandoffFact.DestinationReserved(handoff_id, _OVERFLOWING_TOKENS),
            f"DestinationReserved({_OVERFLOWING_TOKENS}: the delay overflows)",
            usable=False,
        ),
        _fact(HandoffFact.TransferCompleted(handoff_id), "TransferCompleted"),
        *(_fact(kind(handoff_id), kind.__name__, terminal=True) for kind in _TERMINAL),
        _fact(HandoffFact.Failed(_OTHER_HANDOFF_ID), "Failed(another handoff)", usable=False),
    )
    outcomes = tuple(
        tuple(Call.of_outcome(HandoffActionId(action_id), outcome) for outcome in _OUTCOMES)
        for action_id in range(MAX_ACTIONS + 1)
    )
    return Environment(handoff_id, Call.start(), facts, outcomes)


def _fact(fact: HandoffFact, label: str, *, usable: bool = True, terminal: bool = False) -> Call:
    # A terminal fact is one a cooperating runtime reports: `Call.terminal` derives it.
    call = Call.of_fact(fact, f"on_fact({label})", usable=usable)
    assert call.terminal is terminal
    return call


# -- what the environment has seen, and the safety monitors ---------------------------------


class Seen(enum.Flag):
    """What the environment has established by its own calls."""

    NOTHING = 0
    SUBMITTED = enum.auto()
    SOURCE_HELD = enum.auto()
    ACCEPTED = enum.auto()
    RESERVED = enum.auto()
    SCHEDULED = enum.auto()
    TRANSFERRED = enum.auto()
    ACTIVATED = enum.auto()
    SOURCE_FREED = enum.auto()
    DESTINATION_FREED = enum.auto()
    CANCELING = enum.auto()
    """A terminal fact or a failure was accepted: the next completion must be CANCELED."""


class Phase(enum.Enum):
    """Where the handoff is, judged by the `Complete` actions the environment received."""

    LIVE = "live"
    DONE = "done"
    REOPENED = "reopened"
    DONE_AGAIN = "done again"


@attrs.frozen
class Watch:
    """The environment's own record of a run: enough to judge every issued action."""

    issued: tuple[tuple[int, type[HandoffAction]], ...] = ()
    seen: Seen = Seen.NOTHING
    phase: Phase = Phase.LIVE
    succeeded: bool = False
    """The first completion was a success (nothing had been canceled)."""
    reopened: int | None = None
    """The id of the `CancelDestination` that reopened a successful handoff."""

    @property
    def next_id(self) -> int:
        """The id the next issued action must carry."""
        return self.issued[-1][0] + 1 if self.issued else 0

    def action(self, action_id: HandoffActionId | None) -> type[HandoffAction] | None:
        """The kind of action the environment received under `action_id`, if any."""
        for known, action in self.issued:
            if action_id is not None and known == action_id.value:
                return action
        return None

    @property
    def completed_canceled(self) -> bool:
        """The latest completion the environment received was CANCELED."""
        return self.phase is Phase.DONE_AGAIN or (self.phase is Phase.DONE and not self.succeeded)


_DONE = (OutcomeKind.APPLIED, OutcomeKind.NOOP)
_ACKNOWLEDGED: dict[tuple[type[HandoffAction], OutcomeKind], Seen] = {
    (_A.SubmitPrefill, OutcomeKind.SUBMITTED): Seen.SUBMITTED,
    (_A.ReserveDestination, OutcomeKind.ACCEPTED): Seen.ACCEPTED,
    (_A.StartTransfer, OutcomeKind.SCHEDULED): Seen.SCHEDULED,
    (_A.ActivateDestination, OutcomeKind.APPLIED): Seen.ACTIVATED,
    **{(_A.ReleaseSource, kind): Seen.SOURCE_FREED for kind in _DONE},
    **{(_A.CancelSource, kind): Seen.SOURCE_FREED for kind in _DONE},
    **{(_A.CancelDestination, kind): Seen.DESTINATION_FREED for kind in _DONE},
}
"""What a fitting acknowledgement establishes; these pairs are exactly the fitting ones."""

_REPORTED: dict[type[HandoffFact], tuple[Seen, Seen]] = {
    HandoffFact.SourceHeld: (Seen.SUBMITTED, Seen.SOURCE_HELD),
    HandoffFact.DestinationReserved: (Seen.ACCEPTED, Seen.RESERVED),
    HandoffFact.TransferCompleted: (Seen.SCHEDULED, Seen.TRANSFERRED),
}
"""A fact establishes the second sign when reported after the first was established."""

_NEEDS: dict[type[HandoffAction], tuple[str, tuple[tuple[Seen, str], ...]]] = {
    _A.ActivateDestination: ("S1", ((Seen.TRANSFERRED, "a scheduled transfer was reported done"),)),
    _A.ReleaseSource: ("S2", ((Seen.ACTIVATED, "ActivateDestination was acknowledged APPLIED"),)),
    _A.StartTransfer: (
        "S3",
        (
            (Seen.SOURCE_HELD, "the source was held"),
            (Seen.RESERVED, "the destination was reserved"),
        ),
    ),
}
"""The property guarding an action, and what the environment must have established first."""

Finding = tuple[str, str | None]
"""A property key and what broke it, or None when the property was checked and held."""


def fits(action: type[HandoffAction] | None, outcome: HandoffActionOutcome) -> bool:
    """Whether a cooperating environment would acknowledge `action` with `outcome`."""
    return action is not None and (action, outcome.kind) in _ACKNOWLEDGED


def observe(
    watch: Watch, call: Call, issued: Sequence[IssuedHandoffAction]
) -> tuple[Watch, list[Finding]]:
    """Judge what an accepted `call` issued; returns the new watch and every check made."""
    watch = attrs.evolve(watch, seen=_learn(watch, call))
    findings: list[Finding] = []
    if watch.phase is not Phase.LIVE:
        findings.append(("S4", None))
    for item in issued:
        findings += _judge(watch, call, item)
        watch = _record(watch, call, item)
    return watch, findings


def _learn(watch: Watch, call: Call) -> Seen:
    seen = watch.seen
    if call.terminal:
        if watch.phase is Phase.LIVE or (watch.phase is Phase.DONE and watch.succeeded):
            seen |= Seen.CANCELING
        return seen
    if watch.phase in (Phase.DONE, Phase.DONE_AGAIN):
        return seen
    if call.fact is not None:
        needed, gained = _REPORTED.get(type(call.fact), (Seen.NOTHING, Seen.NOTHING))
        return seen | gained if needed and needed in seen else seen
    action = watch.action(call.action_id)
    if call.outcome is None or action is None:
        return seen
    kind = call.outcome.kind
    seen |= _ACKNOWLEDGED.get((action, kind), Seen.NOTHING)
    if kind is OutcomeKind.FAILED and action not in _CANCELS and watch.phase is Phase.LIVE:
        seen |= Seen.CANCELING
    return seen


def _next_phase(watch: Watch, call: Call, action: HandoffAction) -> Phase | None:
    """The phase after `action` is issued, or None when S4 forbids issuing it."""
    completes = isinstance(action, _A.Complete)
    if watch.phase is Phase.LIVE:
        return Phase.DONE if completes else Phase.LIVE
    if watch.phase is Phase.DONE:
        reopens = isinstance(action, _A.CancelDestination) and watch.succeeded and call.terminal
        return Phase.REOPENED if reopens else None
    if watch.phase is Phase.REOPENED and completes:
        acknowledged = call.action_id is not None and call.action_id.value == watch.reopened
        if acknowledged and call.outcome is not None and call.outcome.kind in _DONE:
            return Phase.DONE_AGAIN
    return None


def _judge(watch: Watch, call: Call, item: IssuedHandoffAction) -> Iterator[Finding]:
    action = item.action
    name = type(action).__name__
    ok = item.id.value == watch.next_id
    yield "S7", None if ok else f"{name} got id {item.id.value}, expected {watch.next_id}"
    if isinstance(action, _A.Complete):
        yield "S4", None
    if _next_phase(watch, call, action) is None:
        yield "S4", f"{name} issued after the handoff completed"
    if type(action) in _NEEDS:
        yield _prerequisite(watch, action)
    if isinstance(action, _A.Complete) and Seen.CANCELING in watch.seen:
        yield "S5", _leak(watch)


def _prerequisite(watch: Watch, action: HandoffAction) -> Finding:
    key, needs = _NEEDS[type(action)]
    absent = [words for sign, words in needs if sign not in watch.seen]
    if absent:
        return key, f"{type(action).__name__} issued before {' and '.join(absent)}"
    if isinstance(action, _A.StartTransfer) and not 0 <= action.delay_ms < math.inf:
        return key, f"StartTransfer issued with a delay of {action.delay_ms} ms"
    return key, None


def _leak(watch: Watch) -> str | None:
    leaks = []
    for action_id, action in watch.issued:
        if action is _A.SubmitPrefill and Seen.SOURCE_FREED not in watch.seen:
            leaks.append(f"SubmitPrefill #{action_id} was never released or canceled (KV leaked)")
        if action is _A.ReserveDestination and Seen.DESTINATION_FREED not in watch.seen:
            leaks.append(f"ReserveDestination #{action_id} was never canceled (slot leaked)")
    return "; ".join(leaks) or None


def _record(watch: Watch, call: Call, item: IssuedHandoffAction) -> Watch:
    issued = (*watch.issued, (item.id.value, type(item.action)))
    phase = _next_phase(watch, call, item.action)
    if phase is None or phase is watch.phase:
        return attrs.evolve(watch, issued=issued)
    if phase is Phase.DONE:
        succeeded = Seen.CANCELING not in watch.seen
        return attrs.evolve(watch, issued=issued, phase=phase, succeeded=succeeded)
    reopened = item.id.value if phase is Phase.REOPENED else watch.reopened
    return attrs.evolve(watch, issued=issued, phase=phase, reopened=reopened)

"""The safety monitors: they judge each call from what the environment saw, and nothing else.

`observe` judges one call: the SPEC's answer to it (taken, dropped or refused, and with which
error), the actions due in that call, and every action it issued.  `judge_edge` judges one
move of a run from one configuration to the next: `observe`, then S6 from the coordinator's
configuration before and after a call the SPEC refuses or drops, and the growth that Bound
cuts.  Both are pure: the explorer calls `judge_edge` on every edge of the graph, replay on
every call of a run, Spin's trail confirmation on every step it searches.  Only C2 reads a
coordinator record, the lifecycle, and only to compare it with what the environment saw.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import attrs

from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._coordinator.probe import Configuration
from handoff._review.environment import Call, CallKind, Rules
from handoff._review.progress import changed, first_of_kind, overrun, progressed
from handoff._review.watch import (
    CANCELS,
    Mode,
    Refuse,
    Seen,
    SpecAnswer,
    Watch,
    advance,
    cleanup_step,
    expected,
    head,
    receive,
    take,
)
from handoff._system.properties import AnyKey, Key
from handoff._values.errors import HandoffError
from handoff._values.lifecycle import NormalizedHandoffEvent, expected_normalized_handoff
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffOrder

__all__ = ["Checked", "EdgeVerdict", "Observation", "error_words", "judge_edge", "observe"]

_A = HandoffAction
Checked = tuple[AnyKey, str | None]
"""A property checked at a call, and what broke it (None: it held)."""


@attrs.frozen
class Observation:
    """What the monitors made of one call."""

    watch: Watch
    """What the environment has seen after the call."""
    findings: tuple[Checked, ...]
    answer: SpecAnswer | Refuse
    """How the contract answers the call."""
    deferred: bool = False
    """An unusable payload taken because it cannot be judged yet (the documented exception)."""


def observe(
    rules: Rules,
    watch: Watch,
    call: Call,
    issued: Sequence[IssuedHandoffAction] = (),
    error: BaseException | None = None,
    lifecycle: Sequence[NormalizedHandoffEvent] | None = None,
) -> Observation:
    """Judge `call`, which issued `issued` or raised `error`; `lifecycle` is the recorded one."""
    answer = expected(rules, watch, call)
    findings = list(_answer(call, watch, answer, issued, error))
    if error is not None:
        return Observation(watch, tuple(findings), answer)
    if watch.mode is Mode.COMPLETE:
        findings.append((Key.ONE_COMPLETE, None))
    after = take(watch, call) if answer is SpecAnswer.TAKE else watch
    if answer is SpecAnswer.TAKE:
        findings.append(_prompt(rules.order, after, call, issued))
    for item in issued:
        findings += _action(rules.order, after, call, item)
        if isinstance(item.action, _A.Complete):
            findings += _completion(rules.order, after, lifecycle)
        after = receive(after, item.id.value, item.action)
    deferred = answer is SpecAnswer.TAKE and not call.usable and call.fact is not None
    return Observation(after, tuple(findings), answer, deferred)


@attrs.frozen
class EdgeVerdict:
    """What the monitors made of one move from a configuration to the next."""

    observation: Observation
    configuration: Configuration
    """The coordinator's configuration after the call."""
    findings: tuple[Checked, ...]
    """The observation's, then S6's when the contract refuses or drops the call."""
    still: bool
    """A call the contract refuses or drops left the configuration as it was: a self-loop, which
    neither grows a run nor counts towards Bound."""
    stalls: int
    """Growths without progress along the run, this move included."""
    overrun: str | None
    """Why the run is one that never ends (Bound), or None."""


def judge_edge(
    rules: Rules,
    watch: Watch,
    stalls: int,
    call: Call,
    before: Configuration,
    after: HandoffCoordinatorCore,
    issued: Sequence[IssuedHandoffAction],
    error: HandoffError | None,
    *,
    after_configuration: Configuration | None = None,
) -> EdgeVerdict:
    """Judge `call`, made on a coordinator in configuration `before`, now `after`.

    `watch` is what the environment saw before the call, `stalls` the run's growths without
    progress so far; the call issued `issued` or raised `error`.  `after_configuration` is
    `after`'s configuration when the caller has it already.
    """
    completes = any(isinstance(item.action, _A.Complete) for item in issued)
    lifecycle = after.lifecycle if completes else None
    seen = observe(rules, watch, call, issued, error, lifecycle)
    findings = list(seen.findings)
    configuration = after_configuration
    if configuration is None:
        configuration = probe.configuration(after)
    if error is not None or (seen.answer is SpecAnswer.DROP and not issued):
        moved = configuration != before
        findings.append((Key.NO_EFFECT, changed(call, error) if moved else None))
        if not moved:
            return EdgeVerdict(seen, configuration, tuple(findings), True, stalls, None)
    fresh = any(first_of_kind(watch, item.action) for item in issued)
    stalls += not progressed(before, configuration, fresh)
    why = overrun(len(seen.watch.issued), stalls)
    return EdgeVerdict(seen, configuration, tuple(findings), False, stalls, why)


# -- the SPEC's answer (R1, R2, P1) --------------------------------------------------------

_PAYLOAD_FACTS = (HandoffFact.SourceHeld, HandoffFact.DestinationReserved)


def _answer(
    call: Call,
    watch: Watch,
    answer: SpecAnswer | Refuse,
    issued: Sequence[IssuedHandoffAction],
    error: BaseException | None,
) -> Iterator[Checked]:
    key = Key.OUTCOMES if call.kind is CallKind.OUTCOME else Key.FACTS
    if isinstance(answer, Refuse):
        if answer.payload:
            yield key, None
            key = Key.PAYLOADS
        yield key, _refusal(call, answer, issued, error)
        return
    judged = isinstance(call.fact, _PAYLOAD_FACTS) and watch.mode is Mode.ACTIVE
    if answer is SpecAnswer.TAKE and judged:
        yield Key.PAYLOADS, None
    if error is not None:
        yield key, f"{call} was refused ({error_words(error)}); the contract {answer.value}s it"
    elif answer is SpecAnswer.DROP and issued:
        yield key, f"{call} issued {_kinds(issued)}; the contract drops it"
    elif answer is SpecAnswer.TAKE and call.fact is not None and not issued:
        yield key, f"{call} was silently dropped; the contract takes it and issues an action"
    else:
        yield key, None


def _refusal(
    call: Call, answer: Refuse, issued: Sequence[IssuedHandoffAction], error: BaseException | None
) -> str | None:
    wanted = f"{answer.error.__name__} '{answer.phrase}'"
    if error is None:
        did = "was taken" if issued else "was silently dropped"
        return f"{call} {did}; the contract refuses it with {wanted}"
    if not isinstance(error, answer.error) or answer.phrase not in str(error):
        return (
            f"{call} was refused with {error_words(error)}; the contract refuses it with {wanted}"
        )
    return None


# -- promptness (Q1) -----------------------------------------------------------------------


def _prompt(
    order: HandoffOrder, after: Watch, call: Call, issued: Sequence[IssuedHandoffAction]
) -> Checked:
    kinds = [type(item.action) for item in issued]
    if after.mode is Mode.CLEANING_UP:
        due = list(cleanup_step(after))
        got = [kind for kind in kinds if kind in CANCELS or kind is _A.Complete]
        if got != due:
            return Key.PROMPT, (
                f"after {call} the contract's cleanup step issues {_names(due)} in that call; "
                f"the chart issued {_names(kinds)}"
            )
    elif after.mode is Mode.ACTIVE:
        action = advance(order, after)
        if action is not None and action not in kinds:
            return Key.PROMPT, (
                f"after {call} the contract issues {action.__name__} in that call; "
                f"the chart issued {_names(kinds)}"
            )
    return Key.PROMPT, None


# -- each issued action (S1, S2, S3, S4, S7, C1) -------------------------------------------

_NEEDS: dict[type[HandoffAction], tuple[Key, tuple[tuple[Seen, str], ...]]] = {
    _A.ActivateDestination: (
        Key.ACTIVATE_AFTER_TRANSFER,
        ((Seen.TRANSFERRED, "a scheduled transfer was reported done"),),
    ),
    _A.ReleaseSource: (
        Key.RELEASE_AFTER_ACTIVATION,
        ((Seen.ACTIVATED, "ActivateDestination was acknowledged APPLIED"),),
    ),
    _A.StartTransfer: (
        Key.TRANSFER_WHEN_READY,
        (
            (Seen.SOURCE_HELD, "the source was held"),
            (Seen.RESERVED, "the destination was reserved"),
        ),
    ),
}
"""The property guarding an action, and what the environment must have established first."""

_FORWARD = (
    _A.SubmitPrefill,
    _A.ReserveDestination,
    _A.StartTransfer,
    _A.ActivateDestination,
    _A.ReleaseSource,
)


def _action(
    order: HandoffOrder, watch: Watch, call: Call, item: IssuedHandoffAction
) -> Iterator[Checked]:
    action = item.action
    name = type(action).__name__
    ok = item.id.value == watch.next_id
    yield Key.IDS, None if ok else f"{name} got id {item.id.value}, expected {watch.next_id}"
    if isinstance(action, _A.Complete):
        yield Key.ONE_COMPLETE, None
    if watch.mode is Mode.COMPLETE:
        yield Key.ONE_COMPLETE, f"{name} issued after the handoff completed"
    if type(action) in _NEEDS:
        yield _prerequisite(watch, action)
    if not isinstance(action, _A.Complete):
        yield Key.EACH_ACTION, _misplaced(order, watch, call, type(action))


def _prerequisite(watch: Watch, action: HandoffAction) -> Checked:
    key, needs = _NEEDS[type(action)]
    absent = [words for sign, words in needs if sign not in watch.seen]
    if absent:
        return key, f"{type(action).__name__} issued before {' and '.join(absent)}"
    if isinstance(action, _A.StartTransfer) and not 0 <= action.delay_ms < math.inf:
        return key, f"StartTransfer issued with a delay of {action.delay_ms} ms"
    return key, None


def _misplaced(
    order: HandoffOrder, watch: Watch, call: Call, kind: type[HandoffAction]
) -> str | None:
    """Why C1 forbids issuing `kind` now, or None."""
    name = kind.__name__
    if watch.ever(kind):
        return f"a second {name} was issued"
    if kind in _FORWARD and watch.mode is not Mode.ACTIVE:
        return f"{name} issued in {watch.mode.value} mode"
    first, second, ready = head(order)
    if kind is first and call.kind is not CallKind.START:
        return f"{name} issued by {call}; the order issues it from start()"
    if kind is second and ready not in watch.seen:
        fact = "SourceHeld" if ready is Seen.SOURCE_HELD else "DestinationReserved"
        return f"{name} issued before {fact} was taken"
    if kind in CANCELS:
        return _cancel(watch, kind)
    return None


def _cancel(watch: Watch, kind: type[HandoffAction]) -> str | None:
    name = kind.__name__
    if watch.mode is not Mode.CLEANING_UP:
        return f"{name} issued in {watch.mode.value} mode"
    owner = "source" if kind is _A.CancelSource else "destination"
    if owner not in watch.engaged():
        return f"{name} issued for a {owner} that is not engaged (never asked for, or freed)"
    return None


def _completion(
    order: HandoffOrder, watch: Watch, lifecycle: Sequence[NormalizedHandoffEvent] | None
) -> Iterator[Checked]:
    """S5 and C2 at a `Complete` received while the watch is `watch`."""
    if watch.mode is Mode.COMPLETE:
        return
    success = watch.mode is Mode.ACTIVE
    if success:
        missing = [
            words
            for sign, words in (
                (Seen.ACTIVATED, "ActivateDestination was never acknowledged APPLIED"),
                (Seen.SOURCE_FREED, "ReleaseSource was never acknowledged done"),
            )
            if sign not in watch.seen
        ]
        yield Key.OWNERS_FREED, f"SUCCESS completion, yet {'; '.join(missing)}" if missing else None
    else:
        leaked = watch.engaged()
        yield Key.OWNERS_FREED, _leak(leaked) if leaked else None
    if lifecycle is not None:
        yield Key.LIFECYCLE, _lifecycle(order, watch, tuple(lifecycle), success)


def _leak(owners: list[str]) -> str:
    words = {
        "source": "the SubmitPrefill was never released or canceled (KV leaked)",
        "destination": "the ReserveDestination was never canceled (slot leaked)",
    }
    return "CANCELED completion, yet " + "; ".join(words[owner] for owner in owners)


def _lifecycle(
    order: HandoffOrder,
    watch: Watch,
    recorded: tuple[NormalizedHandoffEvent, ...],
    success: bool,
) -> str | None:
    wanted = (*watch.lifecycle, NormalizedHandoffEvent.COMPLETED) if success else watch.lifecycle
    if recorded != wanted:
        return f"lifecycle {_events(recorded)}, the calls taken record {_events(wanted)}"
    if success and recorded != expected_normalized_handoff(order):
        normal = expected_normalized_handoff(order)
        return f"SUCCESS with lifecycle {_events(recorded)}, expected {_events(normal)}"
    return None


def error_words(error: BaseException) -> str:
    """An exception as a report shows it: `Class: message`."""
    return f"{type(error).__name__}: {error}"


def _kinds(issued: Sequence[IssuedHandoffAction]) -> str:
    return _names([type(item.action) for item in issued])


def _names(kinds: Sequence[type[HandoffAction]]) -> str:
    return "[" + ", ".join(kind.__name__ for kind in kinds) + "]"


def _events(lifecycle: Sequence[NormalizedHandoffEvent]) -> str:
    return "[" + ", ".join(event.value for event in lifecycle) + "]"

"""Confirm a Spin trail on the real coordinator: replay its calls, judge them in Python.

A safety trail is confirmed when a call along it breaks the property under the review's
own monitors, with S6, Bound and Errors judged as the explorer judges them; a crash must
also be the adapter assertion the model named.  A liveness trail is confirmed when, from
the configuration where its environment changed mode, the real coordinator cannot reach the
wanted completion by the moves that mode allows, within the review's cut (searched
exhaustively, breadth first, on forks of the real coordinator).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import attrs

from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._messages import HandoffAction, IssuedHandoffAction
from handoff._review.environment import HANDOFF_ID, MAX_ACTIONS, Call, Rules, environment
from handoff._review.graph import Tag, tag
from handoff._review.monitors import RunMonitor, Violation, observe
from handoff._review.progress import MAX_STALLS, first_of_kind, progressed
from handoff._review.properties import Key, TraceStep
from handoff._review.spin import Trail
from handoff._review.watch import Answer, Mode, Seen, Watch, expected
from handoff._table import CompiledChart

__all__ = ["Confirmation", "confirm"]


@attrs.frozen
class Confirmation:
    """A Spin trail replayed through the real coordinator."""

    steps: tuple[TraceStep, ...]
    finding: str | None
    """What the review's monitors say broke; None: the replay does not confirm the trail."""


@attrs.frozen
class _Walker:
    """A coordinator and the environment's watch of it, advanced call by call."""

    coordinator: HandoffCoordinatorCore
    rules: Rules
    watch: Watch
    unusable: bool = False
    """An unusable payload was accepted on the way here."""
    stalls: int = 0
    """Changes of the configuration without progress on the way here (the review's cut)."""


def confirm(chart: CompiledChart, key: str, trail: Trail) -> Confirmation:
    """Replay `trail` on a fresh coordinator for `chart` and judge property `key`."""
    steps, finding = _replay(chart, Key(key), trail.calls)
    if key in ("L1", "L2"):
        return Confirmation(steps, _liveness(chart, key, trail))
    if key == "Errors" and not _same_crash(trail.crash, finding):
        return Confirmation(steps, None)
    if finding is not None and trail.calls and _replay(chart, Key(key), trail.calls[:-1])[1]:
        # Spin's trail ends at its first violation: a coordinator that breaks the property
        # earlier on the same calls does not confirm it.
        return Confirmation(steps, None)
    return Confirmation(steps, finding)


def _same_crash(crash: str | None, finding: str | None) -> bool:
    """Whether the adapter raised the assertion the model's crash names.

    An assertion without a message shows as a bare `AssertionError: `; the model then names
    what it asserts in its own words.
    """
    if crash is None or finding is None or not finding.startswith("AssertionError: "):
        return False
    said = finding.removeprefix("AssertionError: ")
    return said in ("", crash)


def _replay(
    chart: CompiledChart, key: Key, made: Sequence[Call]
) -> tuple[tuple[TraceStep, ...], str | None]:
    """The trail's calls on the real coordinator, and what the review's monitors say of `key`.

    The review's explorer judges S6, Bound and Errors itself; they are judged here the same
    way: the configuration before and after each call, the stalls counted along the run.
    """
    coordinator = _fresh(chart)
    monitor = RunMonitor(Rules(chart.order))
    steps: list[TraceStep] = []
    finding = None
    stalls = 0
    for call in made:
        before, watch = coordinator.configuration(), monitor.watch
        issued: tuple[IssuedHandoffAction, ...] = ()
        error: BaseException | None = None
        try:
            issued = tuple(call.send(coordinator))
        except Exception as raised:  # a refusal or a crash is what the monitors judge
            error = raised
        steps.append(TraceStep(call, coordinator.chart_state, issued, _words(error)))
        if error is not None and not isinstance(error, HandoffError):
            found = [Violation(len(steps) - 1, Key.ERRORS, _words(error) or "")]
            return tuple(steps), finding or _first(found, key)
        completes = any(isinstance(item.action, HandoffAction.Complete) for item in issued)
        found = monitor.observe(call, issued, error, coordinator.lifecycle if completes else None)
        after = coordinator.configuration()
        silent = error is not None or (expected(monitor.rules, watch, call) is Answer.DROP)
        if after != before and silent and not issued:
            found.append(
                Violation(len(steps) - 1, Key.NO_EFFECT, f"{call} changed the coordinator")
            )
        fresh = any(first_of_kind(watch, item.action) for item in issued)
        stalls += not progressed(before, after, fresh)
        if len(monitor.watch.issued) > MAX_ACTIONS or stalls > MAX_STALLS:
            found.append(Violation(len(steps) - 1, Key.BOUND, _cut(monitor.watch, stalls)))
        finding = finding or _first(found, key)
    return tuple(steps), finding


def _first(found: Sequence[Violation], key: Key) -> str | None:
    return next((violation.finding for violation in found if violation.key is key), None)


def _cut(watch: Watch, stalls: int) -> str:
    if stalls > MAX_STALLS:
        return f"cut off: the configuration grew {stalls} times in one run without progress"
    return f"cut off: {len(watch.issued)} actions issued in one run (at most {MAX_ACTIONS})"


def _words(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


def _liveness(chart: CompiledChart, key: str, trail: Trail) -> str | None:
    switch = trail.switch
    if switch is None or (key == "L2" and switch >= len(trail.calls)):
        return None  # not a liveness counterexample: the environment never changed mode
    walker: _Walker | None = _Walker(_fresh(chart), Rules(chart.order), Watch())
    for call in trail.calls[: switch + (1 if key == "L2" else 0)]:
        assert walker is not None
        walker = _step(walker, call) or walker
    assert walker is not None
    if key == "L1":
        if walker.unusable or _reaches(walker, Tag.COOPERATIVE, _completed):
            return None
        return "from here no cooperative continuation reaches a completion"
    if _reaches(walker, Tag.ACKNOWLEDGEMENT, _completed_canceled):
        return None
    return f"after {trail.calls[switch]} no acknowledgements lead to a CANCELED completion"


def _reaches(start: _Walker, allowed: Tag, goal: Callable[[Watch], bool]) -> bool:
    """Whether moves tagged `allowed` lead from `start` to a walker satisfying `goal`."""
    seen = {_key(start)}
    frontier = [start]
    while frontier:
        walker = frontier.pop(0)
        if goal(walker.watch):
            return True
        for nxt in _moves(walker, allowed):
            if _key(nxt) not in seen:
                seen.add(_key(nxt))
                frontier.append(nxt)
    return False


def _moves(walker: _Walker, allowed: Tag) -> Iterator[_Walker]:
    for call in environment().calls(walker.watch.next_id):
        if tag(call, walker.watch, accepted=True) & allowed:
            nxt = _step(walker, call)
            if nxt is not None and not _cut_off(nxt):
                yield nxt


def _cut_off(walker: _Walker) -> bool:
    return len(walker.watch.issued) > MAX_ACTIONS or walker.stalls > MAX_STALLS


def _step(walker: _Walker, call: Call) -> _Walker | None:
    twin = walker.coordinator.fork()
    try:
        issued = call.send(twin)
    except Exception:  # refused (nothing changed) or crashed (a dead end)
        return None
    watch = observe(walker.rules, walker.watch, call, issued).watch
    unusable = walker.unusable or bool(tag(call, walker.watch, accepted=True) & Tag.UNUSABLE)
    fresh = any(first_of_kind(walker.watch, item.action) for item in issued)
    grew = progressed(walker.coordinator.configuration(), twin.configuration(), fresh)
    return _Walker(twin, walker.rules, watch, unusable, walker.stalls + (not grew))


def _key(walker: _Walker) -> tuple[object, ...]:
    return (walker.coordinator.configuration(), walker.watch, walker.stalls)


def _completed(watch: Watch) -> bool:
    return watch.mode is Mode.COMPLETE


def _completed_canceled(watch: Watch) -> bool:
    return watch.mode is Mode.COMPLETE and Seen.SUCCEEDED not in watch.seen


def _fresh(chart: CompiledChart) -> HandoffCoordinatorCore:
    return HandoffCoordinatorCore.for_table(HANDOFF_ID, chart, 0.0)

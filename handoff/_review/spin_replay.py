"""Confirm a Spin trail on the real coordinator: replay its calls, judge them in Python.

A safety trail is confirmed when its last call breaks the property under the review's own
monitors.  A liveness trail is confirmed when, from the configuration where its environment
changed mode, the real coordinator cannot reach the wanted completion by the moves that
mode allows (searched exhaustively, breadth first, on forks of the real coordinator).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import attrs

from handoff._conformance import expected_normalized_handoff
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._messages import HandoffAction
from handoff._review.environment import (
    HANDOFF_ID,
    MAX_ACTIONS,
    Call,
    Phase,
    Watch,
    environment,
    observe,
)
from handoff._review.explore import replay
from handoff._review.properties import Tag, TraceStep, tag
from handoff._review.spin import Trail
from handoff._table import CompiledChart
from handoff._values import HandoffCompletion

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
    watch: Watch
    unusable: bool = False
    """An unusable payload was accepted on the way here."""


def confirm(chart: CompiledChart, key: str, trail: Trail) -> Confirmation:
    """Replay `trail` on a fresh coordinator for `chart` and judge property `key`."""
    steps = replay(chart, trail.calls)
    if key in ("L1", "L2"):
        return Confirmation(steps, _liveness(chart, key, trail))
    return Confirmation(steps, _safety(chart, key, trail.calls))


def _safety(chart: CompiledChart, key: str, made: Sequence[Call]) -> str | None:
    walker = _Walker(_fresh(chart), Watch())
    for number, call in enumerate(made):
        last = number == len(made) - 1
        before = walker.watch
        twin = walker.coordinator._fork()
        try:
            issued = call.send(twin)
        except HandoffError:
            continue
        except Exception as error:  # the Errors property: anything but HandoffError
            return f"{type(error).__name__}: {error}" if last and key == "Errors" else None
        watch, findings = observe(before, call, issued)
        if last:
            return _judged(chart, key, findings, twin, before, watch)
        walker = _Walker(twin, watch)
    return None


def _judged(
    chart: CompiledChart,
    key: str,
    findings: list[tuple[str, str | None]],
    twin: HandoffCoordinatorCore,
    before: Watch,
    after: Watch,
) -> str | None:
    if key == "Bound":
        return f"{len(after.issued)} actions issued" if len(after.issued) > MAX_ACTIONS else None
    if key == "L3":
        return _lifecycle(chart, twin, before, after)
    return next((finding for found, finding in findings if found == key and finding), None)


def _lifecycle(
    chart: CompiledChart, twin: HandoffCoordinatorCore, before: Watch, after: Watch
) -> str | None:
    completes = len(after.issued) > len(before.issued) and any(
        action is HandoffAction.Complete for _, action in after.issued[len(before.issued) :]
    )
    success = before.phase is Phase.LIVE and after.phase is not Phase.LIVE and after.succeeded
    if not completes or not (success or twin.completion is HandoffCompletion.SUCCESS):
        return None
    expected = expected_normalized_handoff(chart.order)
    if twin.lifecycle == expected:
        return None
    return f"lifecycle {[e.value for e in twin.lifecycle]}, expected {[e.value for e in expected]}"


def _liveness(chart: CompiledChart, key: str, trail: Trail) -> str | None:
    switch = trail.switch
    if switch is None or (key == "L2" and switch >= len(trail.calls)):
        return None  # not a liveness counterexample: the environment never changed mode
    walker: _Walker | None = _Walker(_fresh(chart), Watch())
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
            if nxt is not None and len(nxt.watch.issued) <= MAX_ACTIONS:
                yield nxt


def _step(walker: _Walker, call: Call) -> _Walker | None:
    twin = walker.coordinator._fork()
    try:
        issued = call.send(twin)
    except Exception:  # refused (nothing changed) or crashed (a dead end)
        return None
    watch, _ = observe(walker.watch, call, issued)
    unusable = walker.unusable or bool(tag(call, walker.watch, accepted=True) & Tag.UNUSABLE)
    return _Walker(twin, watch, unusable)


def _key(walker: _Walker) -> tuple[object, ...]:
    return (walker.coordinator._configuration(), walker.watch)


def _completed(watch: Watch) -> bool:
    return watch.phase in (Phase.DONE, Phase.DONE_AGAIN)


def _completed_canceled(watch: Watch) -> bool:
    return watch.completed_canceled


def _fresh(chart: CompiledChart) -> HandoffCoordinatorCore:
    return HandoffCoordinatorCore._for_chart(HANDOFF_ID, chart)

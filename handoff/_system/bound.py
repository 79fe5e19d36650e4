"""The cut: when a run of one handoff is one that never ends (the review's property Bound).

Under the contract a handoff issues at most `MAX_ACTIONS` actions, and a run that changes the
coordinator without progress is cut after `MAX_STALLS` such calls.  The review cuts its
explored runs here; every driver (the simulation, the demo) stops a handoff here too, so a
chart whose cleanup loops ends as a failure naming the loop instead of running forever.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from handoff._system.call import Call
from handoff._values.messages import HandoffAction, IssuedHandoffAction

__all__ = [
    "MAX_ACTIONS",
    "MAX_RETRIES",
    "MAX_STALLS",
    "Runaway",
    "cut",
    "loop",
    "overrun",
    "retried_too_often",
]

MAX_ACTIONS = 9
"""The most actions a run can issue under the contract: seven kinds once each, and two `Complete`s.

The review cuts off runs issuing more (the real charts issue at most eight).
"""

MAX_STALLS = 2
"""Calls one run may make that change the configuration without progress (see `progressed`)."""

MAX_RETRIES = 32
"""Failed cleanups the runtime may retry in one run before a driver cuts it.  A worker that
fails every cancel makes the contract's retry endless: the review finds that run's cycle
(W4); a driver, which cannot see a cycle, cuts the run here as one that never ends."""


def overrun(issued: int, stalls: int = 0) -> str | None:
    """Why a run that issued `issued` actions and grew `stalls` times without progress is
    one that never ends (property Bound), or None."""
    if issued > MAX_ACTIONS:
        return f"{issued} actions issued in one run (at most {MAX_ACTIONS})"
    if stalls > MAX_STALLS:
        return (
            f"the configuration grew {stalls} times in one run without progress "
            "(no new kind of action issued, no state change, no new outcome journaled)"
        )
    return None


def retried_too_often(retries: int) -> str | None:
    """Why a run whose runtime retried failed cleanups `retries` times is one that never ends
    (property Bound), or None."""
    if retries > MAX_RETRIES:
        return (
            f"the runtime retried a failed cleanup {retries} times in one run (at most "
            f"{MAX_RETRIES}): its worker fails the cancel every time"
        )
    return None


class Runaway(Exception):
    """A handoff a driver cut as one that never ends; the message names the chart and loop."""


def cut(
    chart: str, before: Sequence[HandoffAction], call: Call, issued: Sequence[IssuedHandoffAction]
) -> None:
    """Raise `Runaway` if `call`, issuing `issued` after `before`, makes a run that never ends."""
    why = overrun(len(before) + len(issued))
    if why is not None:
        raise Runaway(f"chart {chart} never ends: {why}; the loop: {loop(call, issued, before)}")


def loop(call: Call, issued: Sequence[IssuedHandoffAction], before: Iterable[HandoffAction]) -> str:
    """The loop a cut run was caught in, in words: what it issued again and again (the contract
    issues each kind once), and what the last call issued."""
    counts = Counter(type(action).__name__ for action in before)
    counts.update(type(item.action).__name__ for item in issued)
    again = [f"{name} {count} times" for name, count in counts.items() if count > 1]
    last = ", ".join(type(item.action).__name__ for item in issued) or "nothing"
    return f"{', '.join(again) or 'no action twice'}; {call.describe()} issued {last}"

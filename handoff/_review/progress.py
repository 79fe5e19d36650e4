"""When a run makes progress, and when it is one that never ends (property Bound).

The cut itself is the drivers' too, so it is defined in `handoff._system.bound`.  The explorer
cuts off a run that issues more than `MAX_ACTIONS` actions or grows the
configuration more than `MAX_STALLS` times without progress; a replayed run is judged by the
same words.
"""

from __future__ import annotations

from handoff._coordinator.probe import Configuration
from handoff._review.environment import Call
from handoff._review.watch import Watch
from handoff._system.bound import MAX_STALLS, overrun
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffAction

__all__ = ["MAX_STALLS", "changed", "first_of_kind", "overrun", "progressed"]


def first_of_kind(watch: Watch, action: HandoffAction) -> bool:
    """An action the contract lets a run issue: a kind not issued before, or a `Complete`."""
    return isinstance(action, HandoffAction.Complete) or not watch.ever(type(action))


def progressed(before: Configuration, after: Configuration, fresh: bool) -> bool:
    """Whether a call that changed the configuration made progress.

    Progress is an action of a kind the run had not issued (C1 allows no repeat), a new chart
    state or a new outcome in the journal.  A run can grow without bound only by the other
    changes (re-recording the lifecycle, re-issuing an action, say), so those are counted
    and cut.
    """
    if before == after:
        return True
    return fresh or before.state != after.state or before.outcomes != after.outcomes


def changed(call: Call, error: HandoffError | None) -> str:
    """S6's finding: a call the contract refuses or drops changed the coordinator."""
    answer = "drops" if error is None else "refuses"
    return f"{call} changed the coordinator, yet the contract {answer} it"

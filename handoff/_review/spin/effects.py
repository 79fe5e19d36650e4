"""What a call changed, in a generated Promela model: S6, and the cut of runaway runs (Bound).

Each call snapshots the coordinator's configuration first; afterwards a refused call, or one
the SPEC drops (the answer of the watch of the SPEC, `handoff._review.spin.watch`, judged
from what the environment saw) that issued nothing, must have left it as it was (S6).  The
same comparison tells progress from growth: a call that changes the configuration without a
new kind of action, a state change or a new outcome in the journal is a stall, and a run
with more than `MAX_STALLS` of them is cut off and breaks Bound, as the review cuts it
(`handoff._review.progress`).
"""

from __future__ import annotations

from handoff._review.progress import MAX_STALLS
from handoff._review.spin.text import filled, fixed

__all__ = ["effects", "effects_variables"]


def effects_variables() -> str:
    """The stall count and the snapshot's scratch."""
    return filled("effects_variables", max_stalls=MAX_STALLS)


def effects() -> str:
    """The inlines that snapshot the configuration and judge what a call changed."""
    return fixed("effects")

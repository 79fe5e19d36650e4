"""Fixture charts, in one place: written with the public API only, as a user writes them.

`natural`: charts SPEC-equal to the shipped ones, or one rule away, written the way a
statechart author would; `broken` and `discipline`: the mutant suite, one broken rule each,
derived from the shipped charts as plain subclasses; `families`: charts that differ from the
reference yet can be argued safe, and one that leaks; `checked_drops`: charts that drop a
repeat yet check it, refused when defined.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

SF_ALONE = ("prefill_submitting", "prefill_running")
"""Where SOURCE_FIRST's cleanup cancels the source alone: no destination asked yet."""
DF_ALONE = ("destination_reserving", "destination_accepted")
"""Where DESTINATION_FIRST's cleanup cancels the destination alone: no prefill asked yet."""
TAIL = ("transfer_starting", "transferring", "activating", "releasing")
SF_BOTH = (*DF_ALONE, *TAIL)
"""Where SOURCE_FIRST's cleanup cancels both owners."""
DF_BOTH = (*SF_ALONE, *TAIL)
"""Where DESTINATION_FIRST's cleanup cancels both owners."""


def without(states: Iterable[str], *left_out: str) -> tuple[str, ...]:
    """`states` but `left_out`."""
    return tuple(state for state in states if state not in left_out)


def states(chart: Any, names: Iterable[str]) -> tuple[Any, ...]:
    """The states of `chart` called `names`, in that order: the sources of a rule written
    over one of the groups above, as `*states(S, SF_BOTH)`."""
    return tuple(getattr(chart, name) for name in names)

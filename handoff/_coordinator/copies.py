"""Copies and pickles of a coordinator go through its snapshot: never a shared journal.

`import handoff` imports this module, which registers the coordinator with `copyreg`, so
`pickle`, `copy.copy` and `copy.deepcopy` rebuild a coordinator from its snapshot text (and
whether it is interpreted), sharing nothing with the original but the immutable rule table.
The snapshot module itself, and the codecs it writes with, load on the first copy.

A chart of one's own travels beside the text as the class itself: a copy hands it to the
reader, as any caller restoring a snapshot does, and `pickle` stores it by reference, as it
stores any class (unpickling trusts its data to name what it imports; a snapshot's text does
not).
"""

from __future__ import annotations

import copyreg
from collections.abc import Callable
from typing import Any

from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._values.values import HandoffOrder

__all__ = ["reduce"]


def reduce(
    coordinator: HandoffCoordinatorCore,
) -> tuple[Callable[..., HandoffCoordinatorCore], tuple[Any, ...]]:
    """What `pickle` and `copy` rebuild `coordinator` from: its snapshot, whether it is
    interpreted, and its chart class unless it runs a shipped order; `TypeError` for a
    coordinator that has no snapshot."""
    from handoff._coordinator import probe
    from handoff._coordinator.snapshot import write

    text, interpreted = write(coordinator), probe.interpreted(coordinator)
    rules = probe.rules(coordinator)
    if isinstance(rules, HandoffOrder):
        return (_restore, (text, interpreted))
    return (_restore, (text, interpreted, rules))


def _restore(text: str, interpreted: bool, chart: type | None = None) -> HandoffCoordinatorCore:
    from handoff._coordinator.snapshot import given_charts, read

    charts = given_charts(() if chart is None else (chart,))
    return read(text, interpreted=interpreted, charts=charts)


copyreg.pickle(HandoffCoordinatorCore, reduce)

"""Copies and pickles of a coordinator go through its snapshot: never a shared journal.

`import handoff` imports this module, which registers the coordinator with `copyreg`, so
`pickle`, `copy.copy` and `copy.deepcopy` rebuild a coordinator from its snapshot text (and
whether it is interpreted), sharing nothing with the original but the immutable rule table.
The snapshot module itself, and the codecs it writes with, load on the first copy.
"""

from __future__ import annotations

import copyreg
from collections.abc import Callable

from handoff._coordinator.core import HandoffCoordinatorCore

__all__ = ["reduce"]


def reduce(
    coordinator: HandoffCoordinatorCore,
) -> tuple[Callable[[str, bool], HandoffCoordinatorCore], tuple[str, bool]]:
    """What `pickle` and `copy` rebuild `coordinator` from: its snapshot, and whether it is
    interpreted; `TypeError` for a coordinator that has no snapshot."""
    from handoff._coordinator.snapshot import write

    return (_restore, (write(coordinator), coordinator._interpreter is not None))


def _restore(text: str, interpreted: bool) -> HandoffCoordinatorCore:
    from handoff._coordinator.snapshot import read

    return read(text, interpreted=interpreted)


copyreg.pickle(HandoffCoordinatorCore, reduce)

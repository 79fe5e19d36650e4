"""What a simulation reports: its totals, and each handoff that violated a check."""

from __future__ import annotations

from collections import Counter

import attrs

from handoff._runs.trace import Entry, Trace
from handoff._system.faults import Fault
from handoff._system.properties import Finding, PropertyName
from handoff._values.values import HandoffId, HandoffOrder

__all__ = ["HandoffRecord", "SimulationReport"]


@attrs.define
class HandoffRecord:
    """A finished handoff that violated a check, with the calls that led there."""

    handoff_id: HandoffId
    order: HandoffOrder
    fallback_transfer_delay_ms: float
    findings: list[Finding]
    """What it broke, by the review's property keys."""
    calls: list[Entry]
    """Every call in order, each with what it answered (the actions, or the error's message)."""

    @property
    def trace(self) -> Trace:
        """The handoff as a replayable trace."""
        return Trace(
            self.handoff_id, self.order, self.fallback_transfer_delay_ms, tuple(self.calls)
        )


@attrs.define
class SimulationReport:
    """Totals of one simulation run."""

    handoffs: int = 0
    completions: Counter[str] = attrs.Factory(Counter)
    """Handoffs by final completion."""
    reopened: int = 0
    """Handoffs that succeeded, were canceled after success and cleaned up again."""
    faults: Counter[Fault] = attrs.Factory(Counter)
    broken: Counter[PropertyName] = attrs.Factory(Counter)
    """Handoffs by each property their run broke (a handoff counts once per property)."""
    leaks: int = 0
    """Handoffs that broke a property of `LEAKS`: KV or a slot nobody will free."""
    worker_slots: int = 0
    """Slots the workers held for a handoff once nothing of it was in flight, that its
    completion says are free (every slot, for a handoff that never completed)."""
    still_held: int = 0
    """Of those, the slots the workers still hold at the end (a restart frees the rest)."""
    lost: int = 0
    """Handoffs that completed SUCCESS with no destination slot for their request: KV lost."""
    incomplete: int = 0
    abandoned: int = 0
    """Handoffs whose session ended outside the chart before they completed (`--runtime
    live`): no completion is asked of them."""
    calls: int = 0
    refusals: Counter[str] = attrs.Factory(Counter)
    """Refused calls by error class: the runtime's late or conflicting reports."""
    virtual_ms: float = 0.0
    violations: list[HandoffRecord] = attrs.Factory(list)
    """The failed handoffs, unless `simulate` handed each to its `failed` as it failed."""
    endless: int = 0
    """Handoffs cut as ones that never end."""
    runaway: str | None = None
    """How the first of them looped, in words."""

    @property
    def ok(self) -> bool:
        """Every handoff completed, no owner leaked, no KV was lost and no property broke."""
        return (
            not self.broken
            and self.leaks == 0
            and self.incomplete == 0
            and self.endless == 0
            and self.worker_slots == 0
            and self.lost == 0
        )

"""The cooperative runtime: what a well-behaved runtime answers to each action, written once.

A cooperative runtime performs every action it is given and acknowledges it with the one
outcome that fits (`acknowledgement`); performing `SubmitPrefill`, `ReserveDestination` or
`StartTransfer` then leads to a fact it reports (`Workload.fact_after`).  `CooperativeRuntime`
drives one coordinator that way, first issued first; the simulation reuses the same answers
with its own clock and faults, and the sequence diagrams draw them.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable

import attrs

from handoff._coordinator.binding import FITTING_OUTCOME
from handoff._runs.call import Call
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import HandoffActionOutcome, HandoffId, KvTransferTimingMode

__all__ = [
    "CANCELS",
    "DEMO_WORKLOAD",
    "DONE_OUTCOMES",
    "HANDOFF_ID",
    "CooperativeRuntime",
    "Workload",
    "acknowledgement",
]

HANDOFF_ID = HandoffId(uuid.UUID(int=1))
"""The handoff the demo, the diagrams and the review drive: easy to read in any output."""

CANCELS: tuple[type[HandoffAction], ...] = (
    HandoffAction.CancelSource,
    HandoffAction.CancelDestination,
)
"""The cleanup actions: a failed outcome for one of them is refused, and retried later."""

DONE_OUTCOMES = (HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP)
"""The outcomes that acknowledge a release or a cancel as done."""


def acknowledgement(action: HandoffAction) -> HandoffActionOutcome:
    """The outcome a cooperative runtime acknowledges `action` with."""
    return FITTING_OUTCOME[type(action)]


@attrs.frozen
class Workload:
    """The request a runtime serves: what its facts report."""

    timing: HandoffTransferTiming
    """Reported by `SourceHeld`, once prefill is done."""
    transferable_prompt_tokens: int
    """Reported by `DestinationReserved`: the prompt tokens the destination still lacks."""

    def fact_after(self, action: HandoffAction) -> HandoffFact | None:
        """The fact a runtime reports once it has performed (and acknowledged) `action`."""
        hid = action.handoff_id
        if isinstance(action, HandoffAction.SubmitPrefill):
            return HandoffFact.SourceHeld(hid, self.timing)
        if isinstance(action, HandoffAction.ReserveDestination):
            return HandoffFact.DestinationReserved(hid, self.transferable_prompt_tokens)
        if isinstance(action, HandoffAction.StartTransfer):
            return HandoffFact.TransferCompleted(hid)
        return None


DEMO_WORKLOAD = Workload(
    HandoffTransferTiming(
        mode=KvTransferTimingMode.DESTINATION_MISSING,
        full_prompt_tokens=4096,
        kv_bytes_per_token=131_072,
        bandwidth_gb_s=50.0,
    ),
    transferable_prompt_tokens=4000,
)
"""A 4096-token prompt of which the destination lacks 4000, moved at 50 GB/s."""


class CooperativeRuntime:
    """Drives a coordinator cooperatively, one call at a time.

    The caller asks for `next_call()`, sends it, and hands what it issued to `answered()`.
    The first call is `start()`; then each issued action, first issued first, is acknowledged
    with its fitting outcome and followed by the fact it leads to.  `report(fact)` puts a fact
    ahead of everything still to do, as a runtime does when a request is canceled.
    """

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self._calls: deque[Call] = deque([Call.start()])
        self._pending: deque[IssuedHandoffAction] = deque()

    def next_call(self) -> Call | None:
        """The next call to make, or None when nothing is left to do."""
        if self._calls:
            return self._calls.popleft()
        if not self._pending:
            return None
        item = self._pending.popleft()
        fact = self.workload.fact_after(item.action)
        if fact is not None:
            self._calls.append(Call.of_fact(fact))
        return Call.of_outcome(item.id, acknowledgement(item.action))

    def answered(self, issued: Iterable[IssuedHandoffAction]) -> None:
        """Take on the actions the last call issued (`Complete` needs no acknowledgement)."""
        self._pending.extend(
            item for item in issued if not isinstance(item.action, HandoffAction.Complete)
        )

    def report(self, fact: HandoffFact) -> None:
        """Report `fact` next, before anything still to do."""
        self._calls.appendleft(Call.of_fact(fact))

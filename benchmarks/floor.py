"""A plain hand-written coordinator: the speed floor the compiled chart is measured against.

Flag-based like the reference implementation, no chart, no table, no checks beyond what
the success and cancel paths need, but it returns the same action objects as the library,
so the comparison measures the coordinator and not the value types.  Benchmark use only.
"""

from __future__ import annotations

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffError,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    IssuedHandoffAction,
)

_SOURCE_FIRST = HandoffOrder.SOURCE_FIRST
_CANCELS = (HandoffAction.CancelSource, HandoffAction.CancelDestination)


class FloorCoordinator:
    """Hand-written SPEC §4 coordinator without journal validation niceties."""

    __slots__ = (
        "accepted",
        "activated",
        "activation_issued",
        "cleaning",
        "completion",
        "destination_cancel_issued",
        "destination_clean",
        "fallback",
        "held",
        "hid",
        "issued",
        "next_id",
        "order",
        "outcomes",
        "release_issued",
        "reserve_issued",
        "reserved",
        "scheduled",
        "source_cancel_issued",
        "source_clean",
        "started",
        "submit_issued",
        "submitted",
        "timing",
        "tokens",
        "transfer_completed",
        "transfer_issued",
    )

    def __init__(self, hid: HandoffId, order: HandoffOrder, fallback: float = 0.0) -> None:
        self.hid, self.order, self.fallback = hid, order, fallback
        self.next_id = 0
        self.issued: dict[int, HandoffAction] = {}
        self.outcomes: dict[int, HandoffActionOutcome] = {}
        self.started = self.cleaning = False
        self.completion: HandoffCompletion | None = None
        self.submit_issued = self.submitted = self.held = False
        self.reserve_issued = self.accepted = self.reserved = False
        self.transfer_issued = self.scheduled = self.transfer_completed = False
        self.activation_issued = self.activated = self.release_issued = False
        self.source_clean = self.destination_clean = False
        self.source_cancel_issued = self.destination_cancel_issued = False
        self.timing = None
        self.tokens = 0

    def _issue(self, action: HandoffAction) -> IssuedHandoffAction:
        action_id = self.next_id
        self.next_id += 1
        self.issued[action_id] = action
        return IssuedHandoffAction(HandoffActionId(action_id), action)

    def start(self) -> list[IssuedHandoffAction]:
        if self.started or self.completion is not None:
            return []
        self.started = True
        if self.order is _SOURCE_FIRST:
            self.submit_issued = True
            return [self._issue(HandoffAction.SubmitPrefill(self.hid))]
        self.reserve_issued = True
        return [self._issue(HandoffAction.ReserveDestination(self.hid))]

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        if fact.handoff_id != self.hid:
            raise HandoffError("fact belongs to a different handoff")
        if self.completion is not None or self.cleaning:
            return []
        if isinstance(fact, HandoffFact.SourceHeld):
            if self.held:
                return []
            if not self.submitted:
                raise HandoffError("source held before prefill submission was acknowledged")
            self.held, self.timing = True, fact.transfer_timing
        elif isinstance(fact, HandoffFact.DestinationReserved):
            if self.reserved:
                return []
            if not self.accepted:
                raise HandoffError("destination reserved before ownership was accepted")
            self.reserved, self.tokens = True, fact.transferable_prompt_tokens
        elif isinstance(fact, HandoffFact.TransferCompleted):
            if self.transfer_completed:
                return []
            if not self.scheduled:
                raise HandoffError("transfer completed before it was scheduled")
            self.transfer_completed = True
        else:
            self.cleaning = True
            return self._cleanup()
        return self._advance()

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        if self.completion is not None:
            return []
        key = action_id.value
        action = self.issued.get(key)
        if action is None:
            raise HandoffError(f"unknown handoff action {key}")
        if key in self.outcomes:
            if self.outcomes[key] != outcome:
                raise HandoffError(f"conflicting outcome for handoff action {key}")
            return []
        if outcome.is_failed:
            if isinstance(action, _CANCELS):
                raise HandoffError(f"handoff cleanup action {key} failed")
            self.outcomes[key] = outcome
            self.cleaning = True
            return self._cleanup()
        self.outcomes[key] = outcome
        if isinstance(action, HandoffAction.SubmitPrefill):
            self.submitted = True
        elif isinstance(action, HandoffAction.ReserveDestination):
            self.accepted = True
        elif isinstance(action, HandoffAction.StartTransfer):
            self.scheduled = True
        elif isinstance(action, HandoffAction.ActivateDestination):
            self.activated = True
        elif isinstance(action, HandoffAction.CancelDestination):
            self.destination_clean = True
        else:
            self.source_clean = True
        return self._cleanup() if self.cleaning else self._advance()

    def _advance(self) -> list[IssuedHandoffAction]:
        hid = self.hid
        if self.order is _SOURCE_FIRST and self.held and not self.reserve_issued:
            self.reserve_issued = True
            return [self._issue(HandoffAction.ReserveDestination(hid))]
        if self.order is not _SOURCE_FIRST and self.reserved and not self.submit_issued:
            self.submit_issued = True
            return [self._issue(HandoffAction.SubmitPrefill(hid))]
        if self.held and self.reserved and not self.transfer_issued:
            assert self.timing is not None
            delay = self.timing.delay_ms(self.tokens)
            self.transfer_issued = True
            delay_ms = self.fallback if delay is None else delay
            return [self._issue(HandoffAction.StartTransfer(hid, delay_ms))]
        if self.transfer_completed and not self.activation_issued:
            self.activation_issued = True
            return [self._issue(HandoffAction.ActivateDestination(hid))]
        if self.activated and not self.release_issued:
            self.release_issued = True
            return [self._issue(HandoffAction.ReleaseSource(hid))]
        if self.source_clean:
            return [self._complete(HandoffCompletion.SUCCESS)]
        return []

    def _cleanup(self) -> list[IssuedHandoffAction]:
        issued = []
        if self.submit_issued and not self.source_cancel_issued and not self.source_clean:
            self.source_cancel_issued = True
            issued.append(self._issue(HandoffAction.CancelSource(self.hid)))
        if (
            self.reserve_issued
            and not self.destination_cancel_issued
            and not self.destination_clean
        ):
            self.destination_cancel_issued = True
            issued.append(self._issue(HandoffAction.CancelDestination(self.hid)))
        source_done = not self.submit_issued or self.source_clean
        destination_done = not self.reserve_issued or self.destination_clean
        if not issued and source_done and destination_done:
            issued.append(self._complete(HandoffCompletion.CANCELED))
        return issued

    def _complete(self, completion: HandoffCompletion) -> IssuedHandoffAction:
        self.completion = completion
        issued = self._issue(HandoffAction.Complete(self.hid))
        self.issued.clear()
        self.outcomes.clear()
        return issued

    @property
    def is_complete(self) -> bool:
        return self.completion is not None

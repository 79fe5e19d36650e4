"""Random calls against the real coordinator, with the safety rules checked after every step.

The monitor sees only what a runtime sees (calls, returned actions, raised errors), so the
rules hold of the coordinator's behaviour, not of its internals.  An interpreted twin takes
every call too and must answer identically: the compiled table and python-statemachine's
interpreter of the same chart may never disagree.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from support import HID, ORDERS, OTHER_HID, slow_property

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffError,
    HandoffFact,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    KvTransferTimingMode,
)

TIMINGS = st.sampled_from(
    [
        HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 1.5),
        HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 10, 1024, None),
        HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, math.nan),
        HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 0, 2**64 - 1, 1e-300),
    ]
)
TOKENS = st.sampled_from([0, 12, 2**64 - 1])
HANDOFF_IDS = st.sampled_from([HID, HID, HID, OTHER_HID])
OUTCOMES = st.sampled_from(
    [
        HandoffActionOutcome.SUBMITTED,
        HandoffActionOutcome.ACCEPTED,
        HandoffActionOutcome.SCHEDULED,
        HandoffActionOutcome.APPLIED,
        HandoffActionOutcome.NOOP,
        HandoffActionOutcome.failed("lost"),
    ]
)
FACTS = st.one_of(
    st.builds(HandoffFact.SourceHeld, HANDOFF_IDS, TIMINGS),
    st.builds(HandoffFact.DestinationReserved, HANDOFF_IDS, TOKENS),
    st.builds(HandoffFact.TransferCompleted, HANDOFF_IDS),
    st.builds(HandoffFact.Failed, HANDOFF_IDS),
    st.builds(HandoffFact.TimedOut, HANDOFF_IDS),
    st.builds(HandoffFact.Canceled, HANDOFF_IDS),
)

DONE = (HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP)
FITTING = {
    HandoffAction.SubmitPrefill: HandoffActionOutcome.SUBMITTED,
    HandoffAction.ReserveDestination: HandoffActionOutcome.ACCEPTED,
    HandoffAction.StartTransfer: HandoffActionOutcome.SCHEDULED,
    HandoffAction.ActivateDestination: HandoffActionOutcome.APPLIED,
    HandoffAction.ReleaseSource: HandoffActionOutcome.APPLIED,
    HandoffAction.CancelSource: HandoffActionOutcome.NOOP,
    HandoffAction.CancelDestination: HandoffActionOutcome.APPLIED,
}
FACT_AFTER: dict[type, HandoffFact] = {
    HandoffAction.SubmitPrefill: HandoffFact.SourceHeld(
        HID, HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 1.5)
    ),
    HandoffAction.ReserveDestination: HandoffFact.DestinationReserved(HID, 12),
    HandoffAction.StartTransfer: HandoffFact.TransferCompleted(HID),
}
Answer = tuple[str, object]


class HandoffProtocol(RuleBasedStateMachine):
    """A nondeterministic runtime and a monitor of SPEC §4's safety rules."""

    @initialize(order=st.sampled_from(ORDERS))
    def create(self, order: HandoffOrder) -> None:
        self.coordinator = HandoffCoordinatorCore(HID, order)
        self.twin = HandoffCoordinatorCore(HID, order, interpreted=True)
        self.issued: dict[int, HandoffAction] = {}
        self.accepted: list[tuple[int, HandoffActionOutcome]] = []
        self.accepted_facts: list[type] = []
        self.completes = 0
        self.last_id = -1

    # -- the environment ---------------------------------------------------------------

    @rule()
    def start(self) -> None:
        self._call(lambda c: c.start(), None)

    @rule(fact=FACTS)
    def report(self, fact: HandoffFact) -> None:
        self._call(lambda c: c.on_fact(fact), fact)

    @rule(data=st.data(), outcome=OUTCOMES)
    def acknowledge(self, data: st.DataObject, outcome: HandoffActionOutcome) -> None:
        known = sorted(self.issued) or [0]
        action_id = data.draw(st.sampled_from([*known, max(known) + 1]), label="action id")
        self._call(
            lambda c: c.on_action_outcome(HandoffActionId(action_id), outcome),
            (action_id, outcome),
        )

    @rule(data=st.data(), steps=st.integers(1, 4))
    def cooperate(self, data: st.DataObject, steps: int) -> None:
        """A few fitting acknowledgements or facts in a row: drives the handoff deep."""
        for _ in range(steps):
            self._cooperative_move(data)

    def _cooperative_move(self, data: st.DataObject) -> None:
        moves: list[tuple[Callable[[HandoffCoordinatorCore], list[IssuedHandoffAction]], object]]
        moves = []
        for action_id, action in self.issued.items():
            outcome = FITTING.get(type(action))
            if outcome is not None:
                acknowledge = functools.partial(
                    HandoffCoordinatorCore.on_action_outcome,
                    action_id=HandoffActionId(action_id),
                    outcome=outcome,
                )
                moves.append((acknowledge, (action_id, outcome)))
            fact = FACT_AFTER.get(type(action))
            if fact is not None:
                moves.append((functools.partial(HandoffCoordinatorCore.on_fact, fact=fact), fact))
        if not moves:
            self.start()
            return
        call, payload = data.draw(st.sampled_from(moves), label="cooperative move")
        self._call(call, payload)

    def _call(
        self, call: Callable[[HandoffCoordinatorCore], list[IssuedHandoffAction]], payload: object
    ) -> None:
        answer, twin_answer = _answer(call, self.coordinator), _answer(call, self.twin)
        assert answer == twin_answer, "compiled and interpreted charts disagree"
        assert self.coordinator.chart_state == self.twin.chart_state
        kind, value = answer
        if kind == "error":
            return
        assert isinstance(value, list)
        if isinstance(payload, HandoffFact):
            self.accepted_facts.append(type(payload))
        elif isinstance(payload, tuple):
            self.accepted.append(payload)
        for item in value:
            self._observe(item)

    # -- the monitor -------------------------------------------------------------------

    def _acknowledged(self, kind: type, outcomes: tuple[HandoffActionOutcome, ...]) -> bool:
        return any(
            isinstance(self.issued.get(action_id), kind) and outcome in outcomes
            for action_id, outcome in self.accepted
        )

    def _issued_kinds(self) -> list[type]:
        return [type(action) for action in self.issued.values()]

    def _observe(self, item: IssuedHandoffAction) -> None:
        assert item.id.value == self.last_id + 1, "action ids must increase one by one"
        self.last_id = item.id.value
        action = item.action
        assert action.handoff_id == HID
        if isinstance(action, HandoffAction.StartTransfer):
            assert self._acknowledged(
                HandoffAction.SubmitPrefill, (HandoffActionOutcome.SUBMITTED,)
            )
            assert self._acknowledged(
                HandoffAction.ReserveDestination, (HandoffActionOutcome.ACCEPTED,)
            )
            assert HandoffFact.SourceHeld in self.accepted_facts
            assert HandoffFact.DestinationReserved in self.accepted_facts
            assert math.isfinite(action.delay_ms)
            assert action.delay_ms >= 0
        if isinstance(action, HandoffAction.ActivateDestination):
            assert self._acknowledged(
                HandoffAction.StartTransfer, (HandoffActionOutcome.SCHEDULED,)
            )
            assert HandoffFact.TransferCompleted in self.accepted_facts
        if isinstance(action, HandoffAction.ReleaseSource):
            assert self._acknowledged(
                HandoffAction.ActivateDestination, (HandoffActionOutcome.APPLIED,)
            )
        if not isinstance(action, HandoffAction.Complete):
            kinds = self._issued_kinds()
            assert type(action) not in kinds, f"{type(action).__name__} issued twice"
        self.issued[item.id.value] = action
        if isinstance(action, HandoffAction.Complete):
            self._on_complete()

    def _on_complete(self) -> None:
        self.completes += 1
        assert self.coordinator.is_complete
        if self.completes == 2:
            assert self.coordinator.completion is HandoffCompletion.CANCELED
            assert HandoffAction.CancelDestination in self._issued_kinds()
        if self.coordinator.completion is HandoffCompletion.CANCELED:
            self._check_nothing_leaked()

    def _check_nothing_leaked(self) -> None:
        kinds = self._issued_kinds()
        if HandoffAction.SubmitPrefill in kinds:
            assert self._acknowledged(HandoffAction.ReleaseSource, DONE) or self._acknowledged(
                HandoffAction.CancelSource, DONE
            ), "the source's KV leaked"
        if HandoffAction.ReserveDestination in kinds:
            assert self._acknowledged(HandoffAction.CancelDestination, DONE), (
                "the destination's slot leaked"
            )

    @invariant()
    def one_complete_per_completion(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        assert self.completes <= 2
        if self.completes == 0:
            assert self.coordinator.completion is None


def _answer(
    call: Callable[[HandoffCoordinatorCore], list[IssuedHandoffAction]],
    coordinator: HandoffCoordinatorCore,
) -> Answer:
    try:
        return ("ok", call(coordinator))
    except HandoffError as error:
        return ("error", (type(error), str(error)))


# Each example runs up to 40 calls on the compiled coordinator and its interpreted twin:
# the slowest property of the suite (21 s for the 300 examples CI once gave it, here).
TestHandoffProtocol = HandoffProtocol.TestCase
TestHandoffProtocol.settings = slow_property(ci_examples=40)

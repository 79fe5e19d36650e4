"""What an integrator reaches for: snapshots, copies, one caller at a time, errors with fields,
values kept as the exact built-in types, and small conveniences of the ids and enums."""

from __future__ import annotations

import pickle
import sys
import threading
import uuid
from collections.abc import Iterator

import pytest
from walks import FACTS, HID, SF

from handoff import (
    AnyHandoffFact,
    ConcurrentCallError,
    ConflictingOutcomeError,
    ForeignFactError,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffError,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    InvalidOutcomeError,
    IssuedHandoffAction,
    KvTransferTimingMode,
    OutOfOrderFactError,
    UnknownActionError,
    WireError,
    wire,
)
from handoff._coordinator.core import hold, release

# -- one caller at a time --------------------------------------------------------------------


def _race(
    facts: tuple[AnyHandoffFact, AnyHandoffFact],
) -> Iterator[tuple[HandoffCoordinatorCore, list[tuple[AnyHandoffFact, object]]]]:
    """300 races of two threads, released together, each reporting one of `facts` to a
    coordinator whose prefill was just submitted; yields the coordinator and, per thread in
    the order they finished, what `on_fact` returned or the `ConcurrentCallError` it raised.
    A tiny switch interval makes the threads interleave inside a call, where a race would bite."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(300):
            coordinator = HandoffCoordinatorCore(HID, SF)
            [submit] = coordinator.start()
            coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
            answers: list[tuple[AnyHandoffFact, object]] = []
            barrier = threading.Barrier(2)

            def report(
                fact: AnyHandoffFact,
                out: list[tuple[AnyHandoffFact, object]] = answers,
                barrier: threading.Barrier = barrier,
                coordinator: HandoffCoordinatorCore = coordinator,
            ) -> None:
                barrier.wait()
                try:
                    out.append((fact, coordinator.on_fact(fact)))
                except ConcurrentCallError as error:
                    out.append((fact, error))

            threads = [threading.Thread(target=report, args=(fact,)) for fact in facts]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            yield coordinator, answers
    finally:
        sys.setswitchinterval(interval)


def test_two_threads_reporting_one_fact_never_issue_an_action_twice() -> None:
    refused = 0
    for coordinator, reports in _race((FACTS[0], FACTS[0])):
        answers = [answer for _, answer in reports]
        issued = [answer for answer in answers if isinstance(answer, list) and answer]
        assert len(issued) == 1, answers  # one ReserveDestination, never two
        refused += sum(isinstance(answer, ConcurrentCallError) for answer in answers)
        assert coordinator.lifecycle.count(coordinator.lifecycle[0]) == 1
        assert [key for key, _ in coordinator.issued_actions()] == [
            HandoffActionId(0),
            HandoffActionId(1),
        ]
    assert refused >= 0  # how often the race was caught varies; it is never silent


def test_a_racing_fact_is_refused_out_loud_never_lost() -> None:
    for coordinator, reports in _race((FACTS[0], FACTS[4])):
        taken = [fact for fact, answer in reports if not isinstance(answer, ConcurrentCallError)]
        # Every fact the coordinator said it took shows in its state.
        if FACTS[4] in taken:
            assert coordinator.chart_state.startswith("cancelling")
        if taken == [FACTS[0]]:
            assert coordinator.chart_state == "destination_reserving"


def test_a_call_during_a_call_is_a_concurrent_call_error_and_changes_nothing() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    coordinator.start()
    before = wire.dumps(coordinator)
    hold(coordinator, "another thread")  # as if another thread were inside a call
    with pytest.raises(ConcurrentCallError, match="one caller at a time") as caught:
        coordinator.on_fact(FACTS[5])
    release(coordinator, "another thread")
    assert caught.value.fact == FACTS[5]
    assert wire.dumps(coordinator) == before


# -- errors with fields --------------------------------------------------------------------


def test_every_refusal_says_what_it_is_about() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    [submit] = coordinator.start()
    with pytest.raises(UnknownActionError) as unknown:
        coordinator.on_action_outcome(HandoffActionId(9), HandoffActionOutcome.APPLIED)
    assert unknown.value.action_id == HandoffActionId(9)
    assert unknown.value.outcome == HandoffActionOutcome.APPLIED
    assert unknown.value.chart_state == "prefill_submitting"
    assert unknown.value.expected == ()
    assert str(unknown.value) == "unknown handoff action 9 (the journal holds [0])"
    with pytest.raises(InvalidOutcomeError) as invalid:
        coordinator.on_action_outcome(submit.id, HandoffActionOutcome.APPLIED)
    assert invalid.value.expected == (HandoffActionOutcome.SUBMITTED,)
    with pytest.raises(OutOfOrderFactError) as early:
        coordinator.on_fact(FACTS[0])
    assert (early.value.fact, early.value.action_id) == (FACTS[0], None)
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    with pytest.raises(ConflictingOutcomeError) as conflicting:
        coordinator.on_action_outcome(submit.id, HandoffActionOutcome.failed(reason="x"))
    assert conflicting.value.expected == (HandoffActionOutcome.SUBMITTED,)
    foreign = HandoffFact.Canceled(handoff_id=HandoffId.new())
    with pytest.raises(ForeignFactError) as other:
        coordinator.on_fact(foreign)
    assert (other.value.fact, other.value.chart_state) == (foreign, "prefill_running")
    assert vars(HandoffError("plain")) == {
        "chart_state": None,
        "fact": None,
        "action_id": None,
        "outcome": None,
        "expected": (),
    }


def test_an_error_pickles_with_its_fields() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    coordinator.start()
    with pytest.raises(UnknownActionError) as unknown:
        coordinator.on_action_outcome(HandoffActionId(3), HandoffActionOutcome.NOOP)
    again = pickle.loads(pickle.dumps(unknown.value))
    assert (str(again), again.action_id, again.chart_state) == (
        str(unknown.value),
        HandoffActionId(3),
        "prefill_submitting",
    )


# -- values are what they say ----------------------------------------------------------------


class _SneakyInt(int):
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("an override ran")

    def __hash__(self) -> int:
        raise RuntimeError("an override ran")

    def __lt__(self, other: object) -> bool:
        raise RuntimeError("an override ran")

    __le__ = __gt__ = __ge__ = __lt__

    def __int__(self) -> int:
        return 99


class _SneakyStr(str):
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __str__(self) -> str:
        return "something else"


class _ClaimingUuid(uuid.UUID):
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __ne__(self, other: object) -> bool:
        return False


class _SneakyFloat(float):
    def __float__(self) -> float:
        raise RuntimeError("an override ran")


def test_an_int_subclass_is_kept_as_the_plain_int() -> None:
    action_id = HandoffActionId(value=_SneakyInt(0))
    assert type(action_id.value) is int
    assert action_id.value == 0
    tokens = HandoffFact.DestinationReserved(HID, _SneakyInt(12)).transferable_prompt_tokens
    assert type(tokens) is int
    assert tokens == 12
    coordinator = HandoffCoordinatorCore(HID, SF)
    [submit] = coordinator.start()
    assert coordinator.on_action_outcome(action_id, HandoffActionOutcome.SUBMITTED) == []
    timing = HandoffTransferTiming(
        mode=KvTransferTimingMode.FULL_PROMPT,
        full_prompt_tokens=_SneakyInt(10),
        kv_bytes_per_token=_SneakyInt(2),
        bandwidth_gb_s=_SneakyFloat(1.0),
        kv_bytes_per_request=_SneakyInt(3),
    )
    assert [type(value) for value in (timing.full_prompt_tokens, timing.bandwidth_gb_s)] == [
        int,
        float,
    ]
    assert type(timing.kv_bytes_per_token) is int
    assert type(timing.kv_bytes_per_request) is int
    assert submit.id == action_id


def test_a_str_subclass_reason_is_kept_as_the_plain_str() -> None:
    outcome = HandoffActionOutcome.failed(reason=_SneakyStr("disk full"))
    assert type(outcome.reason) is str
    assert outcome.reason == "disk full"
    assert outcome != HandoffActionOutcome.failed(reason="anything")
    assert str(outcome) == 'Failed("disk full")'


def test_a_uuid_subclass_claiming_equality_lets_no_other_handoff_in() -> None:
    claiming = HandoffId(_ClaimingUuid(int=8))
    assert type(claiming.uuid) is uuid.UUID
    assert claiming != HID
    coordinator = HandoffCoordinatorCore(HID, SF)
    coordinator.start()
    with pytest.raises(ForeignFactError):
        coordinator.on_fact(HandoffFact.Canceled(handoff_id=claiming))


def test_subclasses_of_the_handoff_values_are_refused() -> None:
    class MyId(HandoffId):
        pass

    class MyTiming(HandoffTransferTiming):
        pass

    with pytest.raises(TypeError, match="handoff_id must be a HandoffId"):
        HandoffFact.Canceled(handoff_id=MyId(uuid.UUID(int=7)))
    with pytest.raises(TypeError, match="handoff_id must be a HandoffId"):
        HandoffCoordinatorCore(MyId(uuid.UUID(int=7)), SF)
    timing = MyTiming(KvTransferTimingMode.FULL_PROMPT, 1, 1, 1.0)
    with pytest.raises(TypeError, match="transfer_timing must be a HandoffTransferTiming"):
        HandoffFact.SourceHeld(handoff_id=HID, transfer_timing=timing)
    with pytest.raises(TypeError, match="action must be a HandoffAction variant"):
        IssuedHandoffAction(id=HandoffActionId(0), action=object())  # type: ignore[arg-type]


def test_a_float_subclass_fallback_is_read_without_its_overrides() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF, _SneakyFloat(2.5))
    assert type(coordinator.fallback_transfer_delay_ms) is float
    assert coordinator.fallback_transfer_delay_ms == 2.5


# -- small conveniences ----------------------------------------------------------------------


def test_ids_format_and_parse() -> None:
    assert f"{HandoffActionId(3):>4}" == "   3"
    assert f"{HandoffActionId(3):03d}" == "003"
    assert f"{HID:.8}" == "00000000"
    assert HandoffId.parse(str(HID)) == HID
    assert HandoffId.parse("00000000-0000-0000-0000-00000000000A") == HandoffId(uuid.UUID(int=10))
    for text in ("{00000000-0000-0000-0000-000000000007}", "7", "", "urn:uuid:" + str(HID)):
        with pytest.raises(ValueError, match="must be a hyphenated UUID"):
            HandoffId.parse(text)
    with pytest.raises(TypeError, match="text must be a str"):
        HandoffId.parse(7)  # type: ignore[arg-type]


def test_enums_print_as_their_wire_values() -> None:
    assert str(HandoffOrder.DESTINATION_FIRST) == wire.dumps(HandoffOrder.DESTINATION_FIRST)[1:-1]
    assert f"{SF}" == "SourceFirst"


def test_wire_writes_and_reads_lists() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    issued = coordinator.start() + coordinator.on_fact(FACTS[5])
    text = wire.dumps(issued)
    assert text.startswith('[{"id":0,')
    assert wire.loads(text, list[IssuedHandoffAction]) == issued
    assert wire.dumps([]) == "[]"
    with pytest.raises(WireError) as refused:
        wire.loads('[{"id":0}]', list[IssuedHandoffAction])
    assert refused.value.path == "$[0].action"
    facts = list(FACTS)
    assert wire.loads(wire.dumps(facts), list[AnyHandoffFact]) == facts
    assert wire.loads(wire.dumps(FACTS[2]), AnyHandoffFact) == FACTS[2]

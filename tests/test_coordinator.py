"""Every rule and error phrase of SPEC §4, for both orders, compiled and interpreted."""

from __future__ import annotations

import math
import typing
from collections.abc import Callable

import pytest
from support import (
    ACTIVATE,
    CANCEL_DESTINATION,
    CANCEL_SOURCE,
    COMPLETE,
    DF,
    HID,
    ORDERS,
    OTHER_HID,
    RELEASE,
    RESERVE,
    SF,
    SUBMIT,
    SUCCESS_PATH,
    TERMINAL_FACTS,
    TIMING,
    TIMING_DELAY_MS,
    TRANSFER,
    Runtime,
    kinds,
)

from handoff import (
    ChartEvent,
    CleanupActionFailedError,
    ConflictingOutcomeError,
    ForeignFactError,
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffError,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    InvalidOutcomeError,
    InvalidTransferTimingError,
    KvTransferTimingMode,
    NormalizedHandoffEvent,
    OutOfOrderFactError,
    UnknownActionError,
    expected_normalized_handoff,
)
from handoff._coordinator import probe as probe

OUTCOMES = (
    HandoffActionOutcome.SUBMITTED,
    HandoffActionOutcome.ACCEPTED,
    HandoffActionOutcome.SCHEDULED,
    HandoffActionOutcome.APPLIED,
    HandoffActionOutcome.NOOP,
)


@pytest.fixture(params=[False, True], ids=["compiled", "interpreted"])
def interpreted(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def transfer_delay(runtime: Runtime) -> float:
    action = runtime.issued[TRANSFER].action
    assert isinstance(action, HandoffAction.StartTransfer)
    return action.delay_ms


@pytest.fixture(params=ORDERS, ids=lambda order: order.name)
def order(request: pytest.FixtureRequest) -> HandoffOrder:
    return typing.cast(HandoffOrder, request.param)


# -- construction ----------------------------------------------------------------------


def test_constructors_agree() -> None:
    assert HandoffCoordinatorCore.new(HID, SF).start() == HandoffCoordinatorCore(HID, SF).start()
    fallback = HandoffCoordinatorCore.new_with_fallback(HID, SF, 2.5)
    assert fallback.handoff_id == HID
    assert fallback.order is SF
    assert not fallback.is_complete
    assert fallback.completion is None
    assert fallback.lifecycle == ()


@pytest.mark.parametrize("bad", [-1.0, -0.001, math.nan, math.inf, -math.inf])
def test_a_negative_or_non_finite_fallback_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="fallback_transfer_delay_ms"):
        HandoffCoordinatorCore.new_with_fallback(HID, SF, bad)


@pytest.mark.parametrize("bad", [True, "1.0", None])
def test_a_fallback_that_is_not_a_number_is_refused(bad: object) -> None:
    with pytest.raises(TypeError, match="fallback_transfer_delay_ms"):
        HandoffCoordinatorCore(HID, SF, bad)  # type: ignore[call-overload]


def test_wrong_argument_types_are_refused() -> None:
    with pytest.raises(TypeError, match="handoff_id"):
        HandoffCoordinatorCore("not an id", SF)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="order"):
        HandoffCoordinatorCore(HID, "SourceFirst")  # type: ignore[call-overload]


# -- start() ---------------------------------------------------------------------------


def test_start_issues_the_orders_first_action(order: HandoffOrder, interpreted: bool) -> None:
    issued = Runtime(order, interpreted=interpreted).start()
    assert kinds(issued) == [SUBMIT if order is SF else RESERVE]
    assert issued[0].id == HandoffActionId(0)
    assert issued[0].action.handoff_id == HID


def test_start_twice_issues_nothing_more(order: HandoffOrder, interpreted: bool) -> None:
    runtime = Runtime(order, interpreted=interpreted)
    runtime.start()
    assert runtime.start() == []
    runtime.advance_to("transferring")
    assert runtime.start() == []


@pytest.mark.parametrize("terminal", TERMINAL_FACTS)
def test_a_terminal_fact_before_start_completes_at_once(
    order: HandoffOrder, terminal: Callable[[HandoffId], HandoffFact], interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted)
    issued = runtime.fact(terminal(HID))
    assert kinds(issued) == [COMPLETE]
    assert issued[0].id == HandoffActionId(0)
    assert runtime.coordinator.is_complete
    assert runtime.coordinator.completion is HandoffCompletion.CANCELED
    # No longer active: a late start() must not issue an owner nobody would ever clean up.
    assert runtime.start() == []


# -- on_fact ---------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["idle", "prefill_running", "transferring", "succeeded"])
def test_a_fact_of_another_handoff_is_refused_in_every_mode(
    order: HandoffOrder, state: str
) -> None:
    runtime = Runtime(order).advance_to(state)
    with pytest.raises(ForeignFactError, match="fact belongs to a different handoff"):
        runtime.fact(HandoffFact.Canceled(OTHER_HID))
    runtime = Runtime(order).advance_to(state)
    runtime.fact(HandoffFact.Canceled(HID))  # cleaning up (or complete, from idle)
    with pytest.raises(ForeignFactError, match="fact belongs to a different handoff"):
        runtime.fact(HandoffFact.TransferCompleted(OTHER_HID))


def _refused_until_acknowledged(
    runtime: Runtime,
    report: Callable[[], object],
    asking: str,
    phrase: str,
) -> None:
    """`report` is refused with `phrase` from idle, and still once the chart is `asking` for
    the action whose acknowledgement must come first."""
    with pytest.raises(OutOfOrderFactError, match=phrase):
        report()
    runtime.advance_to(asking)
    with pytest.raises(OutOfOrderFactError, match=phrase):
        report()


def test_source_held_before_the_prefill_submission_was_acknowledged(
    order: HandoffOrder, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted)
    phrase = "source held before prefill submission was acknowledged"
    _refused_until_acknowledged(runtime, runtime.source_held, "prefill_submitting", phrase)
    runtime.ack(SUBMIT)
    assert runtime.source_held() != []


def test_a_duplicate_source_held_is_dropped_with_its_payload(
    order: HandoffOrder, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted).advance_to("transfer_starting")
    broken = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, math.nan)
    assert runtime.fact(HandoffFact.SourceHeld(HID, broken)) == []
    assert runtime.coordinator.chart_state == "transfer_starting"


@pytest.mark.parametrize(
    ("bandwidth", "phrase"),
    [
        (math.nan, "invalid handoff transfer bandwidth nan"),
        (-1.0, "invalid handoff transfer bandwidth -1.0"),
        (math.inf, "invalid handoff transfer bandwidth inf"),
        (1e-320, "invalid handoff transfer delay inf"),
    ],
)
def test_source_held_with_invalid_timing_is_refused(
    order: HandoffOrder, bandwidth: float, phrase: str, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted).advance_to("prefill_running")
    timing = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 2**40, 2**40, bandwidth)
    with pytest.raises(InvalidTransferTimingError, match=phrase):
        runtime.fact(HandoffFact.SourceHeld(HID, timing))
    assert runtime.coordinator.chart_state == "prefill_running"
    assert runtime.source_held() != []


def test_a_bandwidth_of_zero_is_valid_and_takes_the_fallback(order: HandoffOrder) -> None:
    timing = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 0.0)
    runtime = Runtime(order, fallback=3.25, timing=timing).advance_to("transfer_starting")
    assert transfer_delay(runtime) == 3.25


def test_destination_reserved_before_ownership_was_accepted(
    order: HandoffOrder, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted)
    phrase = "destination reserved before ownership was accepted"
    _refused_until_acknowledged(
        runtime, runtime.destination_reserved, "destination_reserving", phrase
    )
    runtime.ack(RESERVE)
    assert runtime.destination_reserved() != []
    assert runtime.destination_reserved() == []  # a duplicate


def test_transfer_completed_before_it_was_scheduled(order: HandoffOrder, interpreted: bool) -> None:
    runtime = Runtime(order, interpreted=interpreted)
    phrase = "transfer completed before it was scheduled"
    for state in SUCCESS_PATH[order][:6]:  # idle … transfer_starting
        runtime.advance_to(state)
        with pytest.raises(OutOfOrderFactError, match=phrase):
            runtime.transfer_completed()
    runtime.ack(TRANSFER)
    assert kinds(runtime.transfer_completed()) == [ACTIVATE]
    assert runtime.transfer_completed() == []  # a duplicate


@pytest.mark.parametrize("terminal", TERMINAL_FACTS)
def test_a_terminal_fact_cancels_the_owners_engaged_so_far(
    order: HandoffOrder, terminal: Callable[[HandoffId], HandoffFact], interpreted: bool
) -> None:
    for position, state in enumerate(SUCCESS_PATH[order][1:-1], start=1):
        runtime = Runtime(order, interpreted=interpreted).advance_to(state)
        engaged = SUCCESS_PATH[order][: position + 1]
        source = "prefill_submitting" in engaged
        destination = "destination_reserving" in engaged
        expected = [CANCEL_SOURCE] * source + [CANCEL_DESTINATION] * destination
        assert kinds(runtime.fact(terminal(HID))) == expected, state
        assert not runtime.coordinator.is_complete


def test_cleaning_up_drops_every_fact(order: HandoffOrder, interpreted: bool) -> None:
    runtime = Runtime(order, interpreted=interpreted).advance_to("destination_reserving")
    runtime.fact(HandoffFact.Canceled(HID))
    # Each of these would be refused or would advance while active.
    assert runtime.source_held() == []
    assert runtime.destination_reserved() == []
    assert runtime.transfer_completed() == []
    for terminal in TERMINAL_FACTS:
        assert runtime.fact(terminal(HID)) == []


@pytest.mark.parametrize("terminal", TERMINAL_FACTS)
def test_a_terminal_fact_after_success_reopens_cleanup_of_the_destination(
    order: HandoffOrder, terminal: Callable[[HandoffId], HandoffFact], interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted).succeed()
    reopened = runtime.fact(terminal(HID))
    assert kinds(reopened) == [CANCEL_DESTINATION]
    assert reopened[0].id == HandoffActionId(6)
    assert not runtime.coordinator.is_complete
    # The reference keeps the first completion until the reopened cleanup finishes.
    assert runtime.coordinator.completion is HandoffCompletion.SUCCESS
    assert runtime.fact(terminal(HID)) == []
    done = runtime.ack(CANCEL_DESTINATION)
    assert kinds(done) == [COMPLETE]
    assert done[0].id == HandoffActionId(7)
    assert runtime.coordinator.is_complete
    assert runtime.coordinator.completion is HandoffCompletion.CANCELED
    assert runtime.fact(terminal(HID)) == []
    assert runtime.coordinator.lifecycle == expected_normalized_handoff(order)


def test_other_facts_after_success_are_dropped(order: HandoffOrder) -> None:
    runtime = Runtime(order).succeed()
    assert runtime.source_held() == []
    assert runtime.destination_reserved() == []
    assert runtime.transfer_completed() == []
    assert runtime.coordinator.completion is HandoffCompletion.SUCCESS


def test_terminal_facts_after_a_canceled_completion_are_dropped(order: HandoffOrder) -> None:
    runtime = Runtime(order).advance_to("prefill_running")
    runtime.fact(HandoffFact.Canceled(HID))
    assert kinds(runtime.ack(CANCEL_SOURCE)) == ([COMPLETE] if order is SF else [])
    if order is DF:
        assert kinds(runtime.ack(CANCEL_DESTINATION)) == [COMPLETE]
    for terminal in TERMINAL_FACTS:
        assert runtime.fact(terminal(HID)) == []
    assert runtime.coordinator.completion is HandoffCompletion.CANCELED


# -- on_action_outcome -----------------------------------------------------------------


def test_outcomes_after_completion_are_dropped_without_any_check(order: HandoffOrder) -> None:
    runtime = Runtime(order).succeed()
    coordinator = runtime.coordinator
    assert coordinator.on_action_outcome(HandoffActionId(99), HandoffActionOutcome.NOOP) == []
    assert coordinator.on_action_outcome(HandoffActionId(0), HandoffActionOutcome.failed("x")) == []
    assert coordinator.on_action_outcome(HandoffActionId(5), HandoffActionOutcome.SCHEDULED) == []


def test_an_unknown_action_is_refused(order: HandoffOrder, interpreted: bool) -> None:
    runtime = Runtime(order, interpreted=interpreted)
    with pytest.raises(UnknownActionError, match="unknown handoff action 0"):
        runtime.coordinator.on_action_outcome(HandoffActionId(0), HandoffActionOutcome.APPLIED)
    runtime.start()
    with pytest.raises(UnknownActionError, match="unknown handoff action 1"):
        runtime.coordinator.on_action_outcome(HandoffActionId(1), HandoffActionOutcome.APPLIED)


def test_the_journal_is_cleared_on_completion(order: HandoffOrder) -> None:
    runtime = Runtime(order).succeed()
    runtime.fact(HandoffFact.Canceled(HID))  # reopened: outcomes are checked again
    with pytest.raises(UnknownActionError, match="unknown handoff action 4"):
        runtime.ack(RELEASE)


def test_a_repeated_outcome_is_idempotent_and_a_different_one_conflicts(
    order: HandoffOrder, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted).advance_to("transfer_starting")
    runtime.ack(TRANSFER)
    assert runtime.ack(TRANSFER) == []
    with pytest.raises(ConflictingOutcomeError, match="conflicting outcome for handoff action 2"):
        runtime.ack(TRANSFER, HandoffActionOutcome.failed("late"))
    assert runtime.coordinator.chart_state == "transferring"


@pytest.mark.parametrize("cancel", [CANCEL_SOURCE, CANCEL_DESTINATION])
def test_a_failed_cleanup_action_is_refused_and_not_recorded(
    order: HandoffOrder, cancel: type, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted).advance_to("transferring")
    runtime.fact(HandoffFact.TimedOut(HID))
    cancel_id = runtime.id_of(cancel).value
    with pytest.raises(
        CleanupActionFailedError, match=f"handoff cleanup action {cancel_id} failed"
    ):
        runtime.ack(cancel, HandoffActionOutcome.failed("busy"))
    # Not recorded: the same id can still report success, which is not a conflict.
    runtime.ack(cancel, HandoffActionOutcome.NOOP)
    other = CANCEL_DESTINATION if cancel is CANCEL_SOURCE else CANCEL_SOURCE
    assert kinds(runtime.ack(other)) == [COMPLETE]
    assert runtime.coordinator.completion is HandoffCompletion.CANCELED


@pytest.mark.parametrize(
    "state",
    ["prefill_submitting", "destination_reserving", "transfer_starting", "activating", "releasing"],
)
def test_a_failed_action_begins_cleanup(order: HandoffOrder, state: str, interpreted: bool) -> None:
    runtime = Runtime(order, interpreted=interpreted).advance_to(state)
    pending = runtime.log[-1]
    failure = HandoffActionOutcome.failed("worker lost")
    cancels = runtime.coordinator.on_action_outcome(pending.id, failure)
    assert CANCEL_SOURCE in kinds(cancels) or CANCEL_DESTINATION in kinds(cancels)
    # Recorded: the same failure again is a duplicate, a different outcome conflicts.
    assert runtime.coordinator.on_action_outcome(pending.id, failure) == []
    with pytest.raises(ConflictingOutcomeError):
        runtime.coordinator.on_action_outcome(pending.id, FITTING_FOR[type(pending.action)])


FITTING_FOR = {
    SUBMIT: HandoffActionOutcome.SUBMITTED,
    RESERVE: HandoffActionOutcome.ACCEPTED,
    TRANSFER: HandoffActionOutcome.SCHEDULED,
    ACTIVATE: HandoffActionOutcome.APPLIED,
    RELEASE: HandoffActionOutcome.APPLIED,
}

# SPEC §4 on_action_outcome rule 5, written out independently of the implementation.
ACCEPTS = {
    SUBMIT: {HandoffActionOutcome.SUBMITTED},
    RESERVE: {HandoffActionOutcome.ACCEPTED},
    TRANSFER: {HandoffActionOutcome.SCHEDULED},
    ACTIVATE: {HandoffActionOutcome.APPLIED},
    RELEASE: {HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP},
}


@pytest.mark.parametrize(
    "state",
    ["prefill_submitting", "destination_reserving", "transfer_starting", "activating", "releasing"],
)
@pytest.mark.parametrize("outcome", OUTCOMES, ids=str)
def test_an_outcome_must_fit_its_action(
    order: HandoffOrder, state: str, outcome: HandoffActionOutcome
) -> None:
    runtime = Runtime(order).advance_to(state)
    pending = runtime.log[-1]
    if outcome in ACCEPTS[type(pending.action)]:
        runtime.coordinator.on_action_outcome(pending.id, outcome)
        assert runtime.coordinator.chart_state != state
        return
    with pytest.raises(InvalidOutcomeError, match=f"invalid handoff action outcome {outcome}"):
        runtime.coordinator.on_action_outcome(pending.id, outcome)
    # Not recorded: the fitting outcome is still taken (no "conflicting outcome").
    runtime.coordinator.on_action_outcome(pending.id, FITTING_FOR[type(pending.action)])
    assert runtime.coordinator.chart_state != state


@pytest.mark.parametrize("cancel", [CANCEL_SOURCE, CANCEL_DESTINATION])
@pytest.mark.parametrize("outcome", OUTCOMES, ids=str)
def test_a_cancel_takes_applied_or_noop_only(
    order: HandoffOrder, cancel: type, outcome: HandoffActionOutcome
) -> None:
    runtime = Runtime(order).advance_to("activating")
    runtime.fact(HandoffFact.Canceled(HID))
    if outcome in (HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP):
        runtime.ack(cancel, outcome)
        assert runtime.coordinator.chart_state != "cancelling_both"
    else:
        with pytest.raises(InvalidOutcomeError, match="invalid handoff action outcome"):
            runtime.ack(cancel, outcome)
        assert runtime.coordinator.chart_state == "cancelling_both"


def test_a_release_reported_noop_completes_successfully(order: HandoffOrder) -> None:
    runtime = Runtime(order).advance_to("releasing")
    assert kinds(runtime.ack(RELEASE, HandoffActionOutcome.NOOP)) == [COMPLETE]
    assert runtime.coordinator.completion is HandoffCompletion.SUCCESS


# -- advance ---------------------------------------------------------------------------


def test_the_success_path_issues_each_action_once_in_order(
    order: HandoffOrder, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted).succeed()
    head = [SUBMIT, RESERVE] if order is SF else [RESERVE, SUBMIT]
    assert kinds(runtime.log) == [*head, TRANSFER, ACTIVATE, RELEASE, COMPLETE]
    assert [item.id.value for item in runtime.log] == [0, 1, 2, 3, 4, 5]
    assert runtime.coordinator.is_complete
    assert runtime.coordinator.completion is HandoffCompletion.SUCCESS
    assert runtime.coordinator.lifecycle == expected_normalized_handoff(order)


def test_each_step_of_the_success_path_issues_what_the_spec_says(order: HandoffOrder) -> None:
    runtime = Runtime(order)
    issued = [kinds(runtime.step()) for _ in SUCCESS_PATH[order][:-1]]
    if order is SF:
        expected = [[SUBMIT], [], [RESERVE], [], [TRANSFER], [], [ACTIVATE], [RELEASE], [COMPLETE]]
    else:
        expected = [[RESERVE], [], [SUBMIT], [], [TRANSFER], [], [ACTIVATE], [RELEASE], [COMPLETE]]
    assert issued == expected


def test_the_transfer_delay_comes_from_the_timing(order: HandoffOrder) -> None:
    runtime = Runtime(order).advance_to("transfer_starting")
    assert transfer_delay(runtime) == TIMING_DELAY_MS


def test_destination_missing_timing_uses_the_transferable_tokens(order: HandoffOrder) -> None:
    # 3 missing tokens × 1000 bytes = 3000 bytes over 1 GB/s = 3 µs = 0.003 ms.
    timing = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 100, 1000, 1.0)
    runtime = Runtime(order, timing=timing, tokens=3).advance_to("transfer_starting")
    assert transfer_delay(runtime) == 3000.0 / 1e9 * 1000.0


@pytest.mark.parametrize("fallback", [0.0, 7.5])
def test_unmodelled_timing_takes_the_fallback(order: HandoffOrder, fallback: float) -> None:
    timing = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, None)
    runtime = Runtime(order, fallback=fallback, timing=timing).advance_to("transfer_starting")
    assert transfer_delay(runtime) == fallback


def test_a_transfer_delay_that_overflows_rejects_the_fact_that_triggered_it(
    order: HandoffOrder, interpreted: bool
) -> None:
    # The full-prompt delay (1 token) is tiny and valid; the missing-token count is not bounded
    # by it, and 2**64-1 tokens of 2**64-1 bytes over 1e-300 GB/s overflow to inf.
    timing = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 0, 2**64 - 1, 1e-300)
    runtime = Runtime(order, timing=timing, tokens=2**64 - 1, interpreted=interpreted)
    trigger = {SF: "destination_accepted", DF: "prefill_running"}[order]
    runtime.advance_to(trigger)
    with pytest.raises(InvalidTransferTimingError, match="invalid handoff transfer delay inf"):
        runtime.step()
    assert runtime.coordinator.chart_state == trigger
    assert TRANSFER not in runtime.issued
    # The same fact with a payload that fits is taken afterwards.
    if order is SF:
        runtime.tokens = 0
    else:
        runtime.timing = TIMING
    assert kinds(runtime.step()) == [TRANSFER]


# -- cleanup and completion ------------------------------------------------------------


def test_cleanup_completes_only_when_both_sides_are_clean(
    order: HandoffOrder, interpreted: bool
) -> None:
    runtime = Runtime(order, interpreted=interpreted).advance_to("releasing")
    assert kinds(runtime.fact(HandoffFact.Failed(HID))) == [CANCEL_SOURCE, CANCEL_DESTINATION]
    assert runtime.ack(RELEASE) == []  # the release still cleans the source
    assert runtime.coordinator.chart_state == "cancelling_destination"
    assert runtime.ack(CANCEL_SOURCE, HandoffActionOutcome.NOOP) == []
    assert kinds(runtime.ack(CANCEL_DESTINATION)) == [COMPLETE]
    assert runtime.coordinator.completion is HandoffCompletion.CANCELED
    assert NormalizedHandoffEvent.COMPLETED not in runtime.coordinator.lifecycle


def test_acknowledgements_during_cleanup_are_still_journaled(order: HandoffOrder) -> None:
    runtime = Runtime(order).advance_to("destination_reserving")
    runtime.fact(HandoffFact.Canceled(HID))
    assert runtime.ack(RESERVE) == []
    assert runtime.ack(RESERVE) == []  # now a duplicate
    with pytest.raises(ConflictingOutcomeError):
        runtime.ack(RESERVE, HandoffActionOutcome.failed("late"))
    assert runtime.coordinator.lifecycle[-1] is NormalizedHandoffEvent.DESTINATION_ACCEPTED


def test_a_canceled_handoff_records_a_partial_lifecycle(order: HandoffOrder) -> None:
    runtime = Runtime(order).advance_to("transfer_starting")
    runtime.fact(HandoffFact.Canceled(HID))
    runtime.ack(CANCEL_SOURCE)
    runtime.ack(CANCEL_DESTINATION)
    assert runtime.coordinator.lifecycle == expected_normalized_handoff(order)[:3]


def test_complete_is_issued_once_per_completion(order: HandoffOrder) -> None:
    runtime = Runtime(order).succeed()
    runtime.fact(HandoffFact.Canceled(HID))
    runtime.ack(CANCEL_DESTINATION)
    assert kinds(runtime.log).count(COMPLETE) == 2
    assert [item.id.value for item in runtime.log] == list(range(8))


def test_every_error_is_a_handoff_error() -> None:
    for error in (
        ForeignFactError,
        OutOfOrderFactError,
        UnknownActionError,
        ConflictingOutcomeError,
        InvalidOutcomeError,
        CleanupActionFailedError,
        InvalidTransferTimingError,
    ):
        assert issubclass(error, HandoffError)


def test_an_unknown_id_names_what_the_journal_holds() -> None:
    runtime = Runtime(SF)
    runtime.start()
    with pytest.raises(UnknownActionError, match=r"the journal holds \[0\]"):
        runtime.coordinator.on_action_outcome(HandoffActionId(5), HandoffActionOutcome.APPLIED)


def test_a_mismatched_outcome_says_what_was_expected() -> None:
    runtime = Runtime(SF).advance_to("releasing")
    with pytest.raises(
        InvalidOutcomeError, match="ReleaseSource expects Applied or Noop, got Accepted"
    ):
        runtime.ack(RELEASE, HandoffActionOutcome.ACCEPTED)


def test_the_timing_of_a_held_source_is_kept_for_the_transfer() -> None:
    # SOURCE_FIRST computes the delay when the destination is reserved, long after SourceHeld.
    runtime = Runtime(SF).advance_to("destination_accepted")
    assert runtime.timing is TIMING
    runtime.step()
    assert transfer_delay(runtime) == TIMING_DELAY_MS


def test_bad_argument_types_to_calls_are_type_errors() -> None:
    coordinator = HandoffCoordinatorCore(HID, DF)
    with pytest.raises(TypeError, match="fact"):
        coordinator.on_fact("Canceled")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="action_id"):
        coordinator.on_action_outcome(0, HandoffActionOutcome.APPLIED)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="outcome"):
        coordinator.on_action_outcome(HandoffActionId(0), "Applied")  # type: ignore[arg-type]
    assert coordinator.chart_state == "idle"


# -- a coordinator on any chart, and its face for tools -------------------------------------


def test_a_coordinator_takes_its_order_from_a_chart() -> None:
    import handoff

    coordinator = HandoffCoordinatorCore(HID, chart=handoff.DestinationFirstChart)
    assert (coordinator.order, coordinator.chart_name) == (DF, "DestinationFirst")
    assert [type(item.action) for item in coordinator.start()] == [RESERVE]


def test_a_chart_and_a_different_order_are_refused() -> None:
    import handoff

    with pytest.raises(ValueError, match="differs from the order of chart SourceFirst"):
        HandoffCoordinatorCore(HID, DF, chart=handoff.SourceFirstChart)
    with pytest.raises(TypeError, match="chart must be a HandoffChart subclass with states"):
        HandoffCoordinatorCore(HID, chart=handoff.HandoffChart)
    with pytest.raises(TypeError, match="order must be a HandoffOrder, got None"):
        HandoffCoordinatorCore(HID)  # type: ignore[call-overload]


def test_an_interpreted_coordinator_runs_a_chart_class() -> None:
    import handoff

    coordinator = HandoffCoordinatorCore(HID, chart=handoff.SourceFirstChart, interpreted=True)
    assert [type(item.action) for item in coordinator.start()] == [SUBMIT]
    with pytest.raises(TypeError, match="cannot be forked"):
        coordinator.fork()


def test_the_repr_says_chart_state_completion_and_handoff() -> None:
    runtime = Runtime(SF)
    assert repr(runtime.coordinator) == (
        "<HandoffCoordinatorCore SourceFirst at 'idle', completion=None, complete=False, "
        "handoff_id=00000000-0000-0000-0000-000000000007>"
    )
    runtime.succeed()
    assert "at 'succeeded', completion=SUCCESS, complete=True" in repr(runtime.coordinator)


def test_the_probe_classifies_the_event_a_call_would_make_and_changes_nothing() -> None:
    runtime = Runtime(SF)
    coordinator = runtime.coordinator
    assert probe.classify(coordinator) is ChartEvent.START
    (submit,) = runtime.start()
    before = probe.configuration(coordinator)
    assert probe.classify(coordinator, HandoffFact.Canceled(OTHER_HID)) is None
    assert probe.classify(coordinator, HandoffFact.Canceled(HID)) is ChartEvent.TERMINATED
    assert (
        probe.classify(coordinator, None, submit.id, HandoffActionOutcome.SUBMITTED)
        is ChartEvent.PREFILL_SUBMITTED
    )
    assert (
        probe.classify(coordinator, None, HandoffActionId(9), HandoffActionOutcome.SUBMITTED)
        is ChartEvent.UNKNOWN_ACTION
    )
    assert coordinator.issued_actions() == ((submit.id, submit.action),)
    assert probe.configuration(coordinator) == before
    assert probe.table(coordinator).name == "SourceFirst"

"""`handoff demo` prints a traced handoff per order, and can show a reopened cleanup."""

from __future__ import annotations

import pytest

from handoff import (
    HandoffAction,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffOrder,
)
from handoff.__main__ import main
from handoff._system.call import HANDOFF_ID
from handoff._system.runtime import DEMO_WORKLOAD, CooperativeRuntime


def test_the_demo_traces_both_orders_to_success(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    source_first, destination_first = out.split("DESTINATION_FIRST")
    assert "idle -> prefill_submitting" in source_first
    assert "#0 SubmitPrefill" in source_first
    assert "idle -> destination_reserving" in destination_first
    assert "#0 ReserveDestination" in destination_first
    # 4000 missing tokens × 131072 bytes over 50 GB/s: 524,288,000 B / 5e10 B/s = 10.486 ms.
    assert out.count("StartTransfer(delay_ms=10.486)") == 2
    assert out.count("completion: SUCCESS") == 2
    assert "lifecycle:  SOURCE_HELD, DESTINATION_ACCEPTED" in source_first
    assert (
        "lifecycle:  DESTINATION_ACCEPTED, DESTINATION_RESERVED, SOURCE_HELD" in destination_first
    )


def test_the_demo_can_reopen_after_success_and_clean_up_to_canceled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--reopen"]) == 0
    out = capsys.readouterr().out
    for run in out.split("DESTINATION_FIRST"):
        lines = [
            line.strip() for line in run.splitlines() if line[:5].strip().rstrip(".").isdigit()
        ]
        # Nine calls to success, then the cancel and the acknowledged CancelDestination.
        assert [line.split(".")[0] for line in lines] == [str(n) for n in range(1, 12)]
        assert lines[9].startswith("10. on_fact(Canceled)")
        assert lines[9].endswith("succeeded -> cancelling_destination #6 CancelDestination")
        assert lines[10].startswith("11. on_action_outcome(6, Applied)")
        assert lines[10].endswith("cancelling_destination -> canceled               #7 Complete")
        assert "completion: CANCELED" in run
    assert "completion: SUCCESS" not in out
    assert " 99." not in out


def _play_out(runtime: CooperativeRuntime, coordinator: HandoffCoordinatorCore) -> list[str]:
    """Send the coordinator every call the runtime has left, answering each; the calls made."""
    calls = []
    while (call := runtime.next_call()) is not None:
        runtime.answered(call.send(coordinator))
        calls.append(call.describe())
    return calls


def test_the_cooperative_runtime_acknowledges_then_reports_what_follows() -> None:
    coordinator = HandoffCoordinatorCore(HANDOFF_ID, HandoffOrder.DESTINATION_FIRST)
    runtime = CooperativeRuntime(DEMO_WORKLOAD)
    assert _play_out(runtime, coordinator) == [
        "start()",
        "on_action_outcome(0, Accepted)",
        "on_fact(DestinationReserved(4000))",
        "on_action_outcome(1, Submitted)",
        "on_fact(SourceHeld)",
        "on_action_outcome(2, Scheduled)",
        "on_fact(TransferCompleted)",
        "on_action_outcome(3, Applied)",
        "on_action_outcome(4, Applied)",
    ]
    assert coordinator.completion is HandoffCompletion.SUCCESS


def test_a_reported_fact_goes_ahead_of_what_is_still_to_do() -> None:
    coordinator = HandoffCoordinatorCore(HANDOFF_ID, HandoffOrder.SOURCE_FIRST)
    runtime = CooperativeRuntime(DEMO_WORKLOAD)
    first = runtime.next_call()
    assert first is not None
    runtime.answered(first.send(coordinator))
    runtime.report(HandoffFact.Canceled(HANDOFF_ID))
    # SubmitPrefill #0 is still acknowledged after the cancel; CancelSource #1 then completes.
    assert _play_out(runtime, coordinator) == [
        "on_fact(Canceled)",
        "on_action_outcome(0, Submitted)",
        "on_fact(SourceHeld)",
        "on_action_outcome(1, Applied)",
    ]
    assert coordinator.completion is HandoffCompletion.CANCELED


def test_the_fact_after_each_action() -> None:
    actions = [
        kind(HANDOFF_ID) for kind in (HandoffAction.SubmitPrefill, HandoffAction.ReserveDestination)
    ]
    assert [DEMO_WORKLOAD.fact_after(action) for action in actions] == [
        HandoffFact.SourceHeld(HANDOFF_ID, DEMO_WORKLOAD.timing),
        HandoffFact.DestinationReserved(HANDOFF_ID, 4000),
    ]
    transfer = HandoffAction.StartTransfer(HANDOFF_ID, 1.0)
    assert DEMO_WORKLOAD.fact_after(transfer) == HandoffFact.TransferCompleted(HANDOFF_ID)
    assert DEMO_WORKLOAD.fact_after(HandoffAction.ReleaseSource(HANDOFF_ID)) is None

"""`handoff demo` prints a traced handoff per order, and can show a reopened cleanup."""

from __future__ import annotations

import pytest

from handoff.__main__ import main


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


def test_the_demo_can_reopen_after_success(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--reopen"]) == 0
    out = capsys.readouterr().out
    assert out.count("succeeded -> cancelling_destination") == 2
    assert out.count("#6 CancelDestination") == 2

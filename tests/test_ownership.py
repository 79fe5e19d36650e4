"""Whose a destination slot is and what it is doing: W8 (a slot belongs to one request at a
time), W9 (KV moves only into a slot its own request holds), W10 (an activated destination
serves its request), judged by the review, its replay and the simulation alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import DF, HID, ORDERS, SF, STALE_TRANSFER, NeverDecodes, run_handoff

from handoff import HandoffOrder
from handoff._review.explore import Review, review_order
from handoff._review.verdict import Counterexample, MoveKind, TraceStep
from handoff._runs.simulation import SimulationConfig, simulate
from handoff._system.config import Acknowledge, System
from handoff._system.judgments import serving, transferred
from handoff._system.properties import Key
from handoff._system.workers import (
    FORGETFUL,
    TOMBSTONE,
    ContractTable,
    Message,
    MessageKind,
    RequestMemory,
    Role,
    Tombstone,
    WorkerContract,
)
from handoff._values.messages import HandoffAction

W8, W9, W10 = Key.SLOT_OWNED_ONCE, Key.KV_INTO_OWN_SLOT, Key.ACTIVATED_SERVES
ONE_SLOT_TWO_HANDOFFS = {"slots": 1, "concurrency": 2, "acknowledge": Acknowledge.ON_SEND}
"""The issue's run: one slot per worker, two handoffs sharing the workers."""


def _review(order: HandoffOrder, contract: WorkerContract, **options: Any) -> Review:
    return review_order(order, system=System(contract, **options))


def _failing(review: Review) -> set[object]:
    return {verdict.prop.key for verdict in review.failures()}


def _example(review: Review, key: Key) -> Counterexample:
    example = review.verdict(key).counterexample
    assert example is not None
    return example


def _at(steps: tuple[TraceStep, ...], role: Role, action: str, handoff: int | None) -> int:
    """Where in `steps` the worker of `role` performs `action` of `handoff`."""
    return next(
        n
        for n, step in enumerate(steps)
        if step.kind is MoveKind.TO_WORKER
        and step.message is not None
        and step.message.role is role
        and type(step.message.action).__name__ == action
        and step.message.handoff == handoff
    )


@pytest.fixture(scope="module")
def shared() -> dict[HandoffOrder, Review]:
    return {order: _review(order, TOMBSTONE, **ONE_SLOT_TWO_HANDOFFS) for order in ORDERS}


@pytest.mark.parametrize("order", ORDERS)
def test_a_transfer_behind_the_destinations_cancel_writes_into_another_requests_slot(
    shared: dict[HandoffOrder, Review], order: HandoffOrder
) -> None:
    review = shared[order]
    # W1-W6 hold: no slot leaks, none is held twice by one request.  W7 fails because one
    # slot cannot serve two handoffs at once (the second one's reservation fails).
    assert _failing(review) == {W8, W9, Key.EVERY_HANDOFF_SUCCEEDS}
    steps = _example(review, W8).steps
    # The run, checked by hand: cleanup cancels both owners of handoff h in one call; the
    # destination frees h's one slot; the other handoff reserves it (the only slot); the
    # source, still holding h's KV, then performs h's StartTransfer, issued before the cancels.
    last = steps[-1]
    assert last.message is not None
    h = last.message.handoff
    assert h is not None
    other = 1 - h
    assert _at(steps, Role.SOURCE, "StartTransfer", h) == len(steps) - 1
    canceled = _at(steps, Role.DESTINATION, "CancelDestination", h)
    reserved = max(
        n
        for n, step in enumerate(steps)
        if step.message is not None
        and step.kind is MoveKind.TO_WORKER
        and type(step.message.action).__name__ == "ReserveDestination"
        and step.message.handoff == other
    )
    assert canceled < reserved < len(steps) - 1
    # (The other handoff may suffer a terminal fact too: in SourceFirst it must, to free the
    # source's one slot for h.)
    fault = next(
        n for n, step in enumerate(steps) if step.kind is MoveKind.FAULT and step.handoff == h
    )
    assert fault < canceled
    assert [type(item.action).__name__ for item in steps[fault].issued] == [
        "CancelSource",
        "CancelDestination",
    ]
    assert _example(review, W8).finding == (
        f"h{h + 1} #2 StartTransfer wrote h{h + 1}'s KV into the destination slot h{other + 1} "
        "holds: one slot, two requests"
    )


@pytest.mark.parametrize("order", ORDERS)
def test_without_slot_reuse_the_same_race_writes_into_a_free_slot(order: HandoffOrder) -> None:
    # One handoff, unbounded slots: nobody else can hold the slot, so W8 holds; the KV still
    # goes into a slot the request no longer holds (W9).  Replayed, the run breaks W9 at its
    # last move, the transfer.
    review = _review(order, TOMBSTONE, acknowledge=Acknowledge.ON_REPLY)
    assert _failing(review) == STALE_TRANSFER
    example = _example(review, W9)
    steps = example.steps
    assert _at(steps, Role.SOURCE, "StartTransfer", None) == len(steps) - 1
    assert _at(steps, Role.DESTINATION, "CancelDestination", None) < len(steps) - 1
    assert example.finding == (
        "the source performed #2 StartTransfer: the request's KV went into a free slot: the "
        "destination holds no slot for it any more"
    )
    assert review.verdict(W8).holds
    assert review.verdict(W8).checked == review.verdict(W9).checked > 0


def test_two_handoffs_with_unbounded_slots_never_share_one() -> None:
    review = _review(SF, TOMBSTONE, concurrency=2, faults=1)
    assert _failing(review) == STALE_TRANSFER
    assert review.verdict(W8).checked > 0


def test_a_run_without_terminal_facts_moves_every_kv_into_its_own_slot() -> None:
    review = _review(SF, TOMBSTONE, **{**ONE_SLOT_TWO_HANDOFFS, "faults": 0})
    assert {W8, W9} & _failing(review) == set()
    assert review.verdict(W9).checked > 0


@pytest.mark.parametrize("order", ORDERS)
def test_a_destination_that_acknowledges_activation_and_never_decodes_breaks_w10(
    order: HandoffOrder,
) -> None:
    review = _review(order, NeverDecodes(), faults=0)
    assert _failing(review) == {W10}
    example = _example(review, W10)
    last = example.steps[-1]
    assert last.message is not None
    assert type(last.message.action).__name__ == "ActivateDestination"
    assert last.reaction is not None
    assert last.reaction.memory is RequestMemory.HELD
    assert example.finding == (
        f"the destination acknowledged #{last.message.action_id} ActivateDestination as "
        "applied and is not serving the request"
    )


@pytest.mark.parametrize("contract", [FORGETFUL, TOMBSTONE, Tombstone(remembers=1)])
def test_the_shipped_destinations_serve_what_they_activated(contract: WorkerContract) -> None:
    for order in ORDERS:
        verdict = _review(order, contract).verdict(W10)
        assert verdict.holds
        assert verdict.checked > 0


def test_serving_is_judged_at_activation_and_until_the_slot_is_freed() -> None:
    activate = Message(
        MessageKind.ACTION, 3, Role.DESTINATION, HandoffAction.ActivateDestination(HID)
    )
    cancel = Message(MessageKind.ACTION, 5, Role.DESTINATION, HandoffAction.CancelDestination(HID))
    assert serving(activate, True, False, True, 1) is None
    assert "acknowledged #3 ActivateDestination as applied" in str(
        serving(activate, True, False, False, 1)
    )
    assert serving(cancel, False, True, False, 0) is None  # freed: no longer its to serve
    assert "stopped serving the request at #5 CancelDestination while it still holds" in str(
        serving(cancel, False, True, False, 1)
    )


def test_where_a_transfer_lands_is_judged_by_whose_slot_it_is() -> None:
    transfer = Message(
        MessageKind.ACTION, 2, Role.SOURCE, HandoffAction.StartTransfer(HID, 1.0), handoff=0
    )
    assert list(transferred(transfer, 1, 0, told_apart=True)) == []
    assert list(transferred(transfer, 1, None, told_apart=False)) == []
    assert [key for key, _ in transferred(transfer, 0, 1, told_apart=True)] == [W8, W9]
    assert [key for key, _ in transferred(transfer, 0, None, told_apart=True)] == [W9]
    assert [key for key, _ in transferred(transfer, 0, None, told_apart=False)] == [W9]
    # Its own request re-took another slot: the transfer still aims at the first one.
    assert [key for key, _ in transferred(transfer, 1, None, told_apart=True)] == [W9]


class _Raising(Tombstone):
    name = "raising-serves"

    def serves(self, memory: Any) -> bool:
        raise RuntimeError("no decoder")


class _Vague(Tombstone):
    name = "vague-serves"

    def serves(self, memory: Any) -> bool:
        return "yes"  # type: ignore[return-value]


def test_a_contracts_serves_is_tabulated_once_and_checked() -> None:
    table = ContractTable(TOMBSTONE)
    assert table.serves(RequestMemory.SERVING)
    assert not table.serves(RequestMemory.HELD)
    with pytest.raises(ValueError, match=r"serves\(UNKNOWN\) raised RuntimeError: no decoder"):
        ContractTable(_Raising())
    with pytest.raises(ValueError, match=r"serves\(UNKNOWN\) returned 'yes'; expected True"):
        ContractTable(_Vague())


# -- the simulation, by the same keys ---------------------------------------------------------


def test_the_simulation_finds_kv_written_into_another_requests_slot() -> None:
    system = System(TOMBSTONE, slots=3, acknowledge=Acknowledge.ON_SEND)
    report = simulate(
        SimulationConfig(handoffs=3_000, concurrency=4, fault_rate=0.2, seed=0, system=system)
    )
    assert {W8, W9} <= set(report.broken)
    findings = [f for record in report.violations for f in record.findings if f.key is W8]
    assert findings
    assert all("KV into the destination slot h" in f.message for f in findings)
    assert report.leaks == 0


def test_the_simulation_finds_a_destination_that_never_decodes() -> None:
    report = simulate(SimulationConfig(handoffs=200, fault_rate=0.0, system=System(NeverDecodes())))
    assert report.completions["SUCCESS"] == 200
    assert set(report.broken) == {W10}
    calm = simulate(SimulationConfig(handoffs=200, fault_rate=0.0, system=System(TOMBSTONE)))
    assert calm.ok


# -- counterexamples drawn, replayed and kept --------------------------------------------------


def test_the_counterexamples_are_drawn_replayed_and_kept_as_pytest(tmp_path: Path) -> None:
    argv = ["--workers", "tombstone", "--slots", "1", "--concurrency", "2", "--order", str(DF)]
    reviewed = run_handoff("review", *argv, "--explain", "out", cwd=tmp_path)
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr
    out = tmp_path / "out"
    for key in ("w8", "w9"):
        stem = f"destination_first_tombstone_{key}"
        assert (out / f"{stem}.sequence.svg").is_file()
        replayed = run_handoff("replay", f"out/{stem}.jsonl", cwd=tmp_path)
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr
        assert f"VIOLATED out/{stem}.jsonl:" in replayed.stdout
        assert f": {key.upper()}\n" in replayed.stdout
    kept = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "W8 (a destination slot belongs to one request at a time) violated" in kept.stdout
    assert "W9 (KV moves only into a slot its own request holds) violated" in kept.stdout


def test_spin_says_it_does_not_check_ownership(tmp_path: Path) -> None:
    exported = run_handoff(
        "export", "promela", "--workers", "tombstone", "--out", "system.pml", cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    text = (tmp_path / "system.pml").read_text()
    assert "Not checked by this model: W8, W9, W10" in text


def test_telling_one_slot_apart_adds_no_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    # Which slot is whose is what shows W8; with one slot per worker it is a function of the
    # slot counts, so keeping it adds no configuration.  Without it the same review sees the
    # stale transfer only as KV in a slot its request no longer holds (W9).
    options = {**ONE_SLOT_TWO_HANDOFFS, "faults": 1}
    told_apart = _review(DF, TOMBSTONE, **options)
    from handoff._system import worker_state

    real = worker_state.Worker.__init__

    def counted_only(
        self: worker_state.Worker, table: Any, role: Role, slots: int | None, _identity: bool
    ) -> None:
        real(self, table, role, slots, False)

    monkeypatch.setattr(worker_state.Worker, "__init__", counted_only)
    counted = _review(DF, TOMBSTONE, **options)
    assert told_apart.configurations == counted.configurations
    assert told_apart.transitions == counted.transitions
    assert W8 in _failing(told_apart)
    assert W8 not in _failing(counted)
    assert W9 in _failing(counted)

"""Spin's second opinion on the system review: the generated system model, verified by Spin,
breaks exactly the system properties the explorer breaks.

Spin must be installed, as for tests/test_spin.py (skipped elsewhere, never under CI)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from handoff._review.spin.system_model import system_model
from handoff._review.spin.system_run import SystemAgreement, cross_check, run_system_spin
from handoff._review.system_state import SystemKey, SystemOptions
from support import spin_or_skip

from handoff import HandoffOrder, SourceFirstChart
from handoff._runs.workers import (
    FORGETFUL,
    TOMBSTONE,
    RequestMemory,
    WorkerContract,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
)
from handoff._table import CompiledChart, compiled

S = SourceFirstChart


class Leaking(SourceFirstChart):
    """A failure while the destination is reserved cancels only the source."""

    terminated = (
        S.cancelling_source.from_(
            S.prefill_submitting, S.prefill_running, S.destination_reserving, on="cancel_source"
        )
        | S.cancelling_both.from_(
            S.destination_accepted,
            S.transfer_starting,
            S.transferring,
            S.activating,
            S.releasing,
            on=["cancel_source", "cancel_destination"],
        )
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )


class SilentCancel(WorkerContract):
    """Never acknowledges a cancel: cleanup waits for ever."""

    name = "silent-cancel"

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        if task is WorkerTask.CANCEL:
            return WorkerReaction(RequestMemory.FREED, WorkerReply.SILENT)
        return TOMBSTONE.react(task, memory)


SF, DF = compiled(HandoffOrder.SOURCE_FIRST), compiled(HandoffOrder.DESTINATION_FIRST)
SYSTEMS: dict[str, tuple[CompiledChart, WorkerContract, set[SystemKey]]] = {
    "forgetful SourceFirst": (SF, FORGETFUL, {SystemKey("W1"), SystemKey("W2")}),
    "forgetful DestinationFirst": (DF, FORGETFUL, {SystemKey("W1"), SystemKey("W2")}),
    "tombstone SourceFirst": (SF, TOMBSTONE, set()),
    "tombstone DestinationFirst": (DF, TOMBSTONE, set()),
    "silent cancels": (SF, SilentCancel(), {SystemKey("W4"), SystemKey("W5")}),
    "a leaking chart": (compiled(Leaking), TOMBSTONE, {SystemKey("W1")}),
}


@pytest.fixture(scope="module")
def agreements() -> dict[str, SystemAgreement]:
    spin_or_skip()

    def check(name: str) -> SystemAgreement:
        chart, contract, _ = SYSTEMS[name]
        return cross_check(chart, SystemOptions(contract))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(SYSTEMS, pool.map(check, SYSTEMS), strict=True))


@pytest.mark.parametrize("name", SYSTEMS)
def test_spin_and_the_explorer_break_the_same_system_properties(
    agreements: dict[str, SystemAgreement], name: str
) -> None:
    agreement = agreements[name]
    expected = SYSTEMS[name][2]
    assert agreement.explorer_broken == expected
    assert agreement.spin.broken == expected
    assert agreement.agrees
    assert agreement.spin.states > 0
    assert set(agreement.spin.liveness_states) == {SystemKey("W4"), SystemKey("W5")}


def test_the_model_tabulates_the_contract_and_names_what_it_checks() -> None:
    text = system_model(SF, SystemOptions(TOMBSTONE))
    assert "the workers' contract, 'tombstone', tabulated" in text
    # A cancel (task 5) of an unknown request (memory 0) leaves a tombstone (memory 3).
    assert "(t == 5 && m == 0) -> 3" in text
    assert "ltl W4 {" in text
    assert "ltl W5 {" in text
    assert "assert(!W2_broken)" in text
    assert "#define EARLY_SubmitPrefill (state == S_idle || state == S_prefill_submitting)" in text
    forgetful = system_model(SF, SystemOptions(FORGETFUL))
    assert "(t == 5 && m == 0) -> 0" in forgetful


def test_spin_mirrors_any_order_delivery_only() -> None:
    with pytest.raises(ValueError, match="not FIFO"):
        run_system_spin(SF, SystemOptions(TOMBSTONE, fifo=True))


def test_review_workers_engine_spin_reports_the_agreement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spin_or_skip()
    from handoff.__main__ import main

    assert (
        main(["review", "--workers", "forgetful", "--engine", "spin", "--order", "SourceFirst"])
        == 1
    )
    out = capsys.readouterr().out
    assert "SourceFirst, forgetful workers, messages delivered in any order: Spin " in out
    assert "broken: W1, W2; agrees with the explorer" in out
    assert (
        main(["review", "--workers", "tombstone", "--engine", "spin", "--order", "SourceFirst"])
        == 0
    )
    assert "broken: none; agrees with the explorer" in capsys.readouterr().out

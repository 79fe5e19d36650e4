"""Worker contracts, and the simulation's workers that follow them and count their slots."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import SILENT_TAKE, STALE_TRANSFER, module_beside

from handoff import HandoffAction, HandoffActionOutcome, HandoffId, HandoffOrder
from handoff._runs.simulation import FAULTS, SimulationConfig, simulate
from handoff._system.config import System
from handoff._system.faults import Fault
from handoff._system.properties import Key
from handoff._system.workers import (
    CONTRACTS,
    DROPPED,
    FORGETFUL,
    TOMBSTONE,
    ContractTable,
    RequestMemory,
    Role,
    Slots,
    WorkerContract,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    find_contract,
    outcome_of,
    role_of,
    task_of,
)

M, T, Y = RequestMemory, WorkerTask, WorkerReply
HID = HandoffId.new()


def test_forgetful_takes_work_after_its_own_cancel() -> None:
    # The cancel of an unseen request is answered Noop and forgotten...
    assert FORGETFUL.react(T.CANCEL, M.UNKNOWN) == WorkerReaction(M.UNKNOWN, Y.NOOP)
    # ...so the late submission is taken, and its slot held.
    assert FORGETFUL.react(T.TAKE, M.UNKNOWN) == WorkerReaction(M.HELD, Y.DONE, Slots.TAKE)
    # It forgets a request once it frees it, so every copy of a submission takes a slot.
    assert FORGETFUL.react(T.TAKE, M.HELD) == WorkerReaction(M.HELD, Y.DONE, Slots.TAKE)
    assert FORGETFUL.react(T.CANCEL, M.HELD) == WorkerReaction(M.UNKNOWN, Y.DONE)
    assert FORGETFUL.react(T.RELEASE, M.HELD) == WorkerReaction(M.UNKNOWN, Y.DONE)
    assert FORGETFUL.react(T.RELEASE, M.FREED) == WorkerReaction(M.FREED, Y.NOOP)
    assert FORGETFUL.react(T.TRANSFER, M.HELD) == WorkerReaction(M.HELD, Y.DONE)
    assert FORGETFUL.react(T.ACTIVATE, M.FREED) == WorkerReaction(M.FREED, Y.FAILED)


def test_tombstone_remembers_the_cancel_and_drops_the_late_work() -> None:
    assert TOMBSTONE.react(T.CANCEL, M.UNKNOWN) == WorkerReaction(M.CANCELED, Y.NOOP)
    assert TOMBSTONE.react(T.TAKE, M.CANCELED) == WorkerReaction(M.CANCELED, Y.FAILED)
    assert TOMBSTONE.react(T.TAKE, M.FREED) == WorkerReaction(M.FREED, Y.FAILED)
    assert not TOMBSTONE.react(T.TAKE, M.CANCELED).holds
    # Everything else as the forgetful worker does.
    assert TOMBSTONE.react(T.TAKE, M.UNKNOWN) == WorkerReaction(M.HELD, Y.DONE, Slots.TAKE)
    # Unlike it, a tombstone worker remembers what it freed.
    assert TOMBSTONE.react(T.CANCEL, M.HELD) == WorkerReaction(M.FREED, Y.DONE)


def test_each_action_goes_to_the_worker_that_performs_it() -> None:
    assert role_of(HandoffAction.SubmitPrefill(HID)) is Role.SOURCE
    assert role_of(HandoffAction.StartTransfer(HID, 1.0)) is Role.SOURCE
    assert role_of(HandoffAction.ReserveDestination(HID)) is Role.DESTINATION
    assert role_of(HandoffAction.CancelDestination(HID)) is Role.DESTINATION
    assert role_of(HandoffAction.Complete(HID)) is None
    assert task_of(HandoffAction.ReserveDestination(HID)) is T.TAKE
    assert task_of(HandoffAction.ReleaseSource(HID)) is T.RELEASE


def test_a_reply_is_the_outcome_that_fits_the_action() -> None:
    submit, reserve = HandoffAction.SubmitPrefill(HID), HandoffAction.ReserveDestination(HID)
    assert outcome_of(submit, Y.DONE) == HandoffActionOutcome.SUBMITTED
    assert outcome_of(reserve, Y.DONE) == HandoffActionOutcome.ACCEPTED
    assert (
        outcome_of(HandoffAction.StartTransfer(HID, 0.0), Y.DONE) == HandoffActionOutcome.SCHEDULED
    )
    assert outcome_of(HandoffAction.CancelSource(HID), Y.DONE) == HandoffActionOutcome.APPLIED
    assert outcome_of(HandoffAction.CancelSource(HID), Y.NOOP) == HandoffActionOutcome.NOOP
    assert outcome_of(submit, Y.FAILED) == DROPPED
    assert outcome_of(submit, Y.SILENT) is None


class _Raising(WorkerContract):
    name = "raising"

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        if task is T.CANCEL:
            raise KeyError(memory)
        return WorkerReaction(memory, Y.DONE)


class _Lying(WorkerContract):
    name = "lying"

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        return "done"  # type: ignore[return-value]


def test_a_contract_is_tabulated_once_and_checked_cell_by_cell() -> None:
    table = ContractTable(TOMBSTONE)
    assert table.react(T.TAKE, M.CANCELED) == TOMBSTONE.react(T.TAKE, M.CANCELED)
    with pytest.raises(ValueError, match=r"'raising': react\(CANCEL, UNKNOWN\) raised KeyError"):
        ContractTable(_Raising())
    with pytest.raises(ValueError, match=r"returned 'done'; expected a WorkerReaction"):
        ContractTable(_Lying())
    with pytest.raises(NotImplementedError, match="must define react"):
        WorkerContract().react(T.TAKE, M.UNKNOWN)
    with pytest.raises(TypeError):
        WorkerReaction(M.HELD, "done")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        WorkerReaction([], Y.DONE)  # type: ignore[arg-type]  # a memory must be hashable
    assert repr(FORGETFUL) == "<handoff worker contract 'forgetful'>"
    assert "tombstone" in repr(table)


_CONTRACTS = """
from handoff._system.workers import Tombstone, WorkerContract

class Careful(Tombstone):
    name = "careful"

INSTANCE = Careful()
NOT_ONE = 3

class Broken(WorkerContract):
    def __init__(self):
        raise RuntimeError("no")
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from module_beside(tmp_path, monkeypatch, "my_workers", _CONTRACTS)


def test_a_contract_is_found_by_name_or_as_module_name(here: Path) -> None:
    assert find_contract("forgetful") is FORGETFUL
    assert find_contract(" Tombstone ") is TOMBSTONE
    assert set(CONTRACTS) == {"forgetful", "tombstone"}
    assert find_contract("my_workers:Careful").name == "careful"
    assert find_contract("my_workers:INSTANCE").name == "careful"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "sloppy",
            "unknown worker contract 'sloppy': expected forgetful, tombstone, tombstone:K, "
            "source=A,destination=B or MODULE:NAME",
        ),
        ("my_workers:Nothing", "module my_workers has no Nothing"),
        ("my_workers:NOT_ONE", "is not a worker contract"),
        ("my_workers:Broken", r"my_workers:Broken\(\) failed: RuntimeError: no"),
        ("no_such_module:X", "no module no_such_module"),
    ],
)
def test_a_contract_that_cannot_be_found_says_why(here: Path, text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        find_contract(text)


# -- the simulation's workers ----------------------------------------------------------------


def test_forgetful_workers_leak_slots_that_the_coordinator_calls_freed() -> None:
    report = simulate(SimulationConfig(handoffs=3_000, seed=7, system=System(FORGETFUL)))
    assert report.worker_slots > 0
    assert 0 < report.leaks <= report.worker_slots  # a handoff may leak both its slots
    assert not report.ok
    assert report.incomplete == 0
    assert report.faults[Fault.DELAYED_DELIVERY] > 0
    slots = {Key.SLOTS_AT_COMPLETION, Key.NO_SLOT_AFTER_FREED}
    leaked = [v for v in report.violations if any(f.key in slots for f in v.findings)]
    assert leaked
    # The coordinator's own bookkeeping sees nothing wrong: only the worker slot leaked (W1,
    # and W2 where the coordinator had been told it was freed).
    assert all(f.key in slots for v in leaked for f in v.findings)
    assert all(v.order in HandoffOrder for v in leaked)


def test_tombstone_workers_leak_nothing_over_thousands_of_faulty_handoffs() -> None:
    report = simulate(SimulationConfig(handoffs=3_000, seed=7, system=System(TOMBSTONE)))
    assert report.handoffs == 3_000
    assert sum(report.faults[fault] for fault in FAULTS) > 1_000
    assert report.worker_slots == 0
    assert set(report.broken) <= STALE_TRANSFER, report.broken
    assert report.leaks == 0


def test_without_workers_no_delivery_is_delayed() -> None:
    report = simulate(SimulationConfig(handoffs=500, seed=7))
    assert report.faults[Fault.DELAYED_DELIVERY] == 0
    assert report.worker_slots == 0
    assert report.ok


def test_a_worker_that_never_acknowledges_leaves_handoffs_incomplete() -> None:
    report = simulate(
        SimulationConfig(handoffs=200, seed=1, fault_rate=0.0, system=System(SILENT_TAKE))
    )
    assert report.incomplete == 200
    assert not report.ok

"""The simulation's workers are the review's: one source and one destination shared by every
live handoff, with bounded memory, slot bounds, restarts, FIFO delivery and the
acknowledgement policy behaving as `handoff review --workers` explores them.

Each verdict below is the review's (docs/model-review.md, "Which guarantees survive which
faults", and tests/test_shared_workers.py for bounded memory), reasoned from the contract; the
handoff counts are what the fixed seed needs to meet the leak several times over, so a
verdict of "clean" is measured on a run where the leaking contract leaks.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import SILENT_TAKE, STALE_TRANSFER, SecondSlot, run_handoff, run_side_by_side

from handoff._runs import simulation
from handoff._runs.simulated_workers import SimulatedWorkers
from handoff._runs.simulation import SimulationConfig, SimulationReport, simulate
from handoff._system.bound import MAX_RETRIES
from handoff._system.config import Acknowledge, System
from handoff._system.faults import Fault
from handoff._system.properties import Key
from handoff._system.worker_state import Remembered, Worker, WorkerBook, WorkerState
from handoff._system.workers import (
    FORGETFUL,
    TOMBSTONE,
    ContractTable,
    RequestMemory,
    Role,
    Tombstone,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
)

# -- the two headline runs, through the real command -------------------------------------------

# Seed 0, 8 handoffs at a time, the default fault rate: tombstone:1 first leaks at handoff 188
# and about once every 170 handoffs after, so 2,000 handoffs meet it a dozen times; the same
# run with unbounded tombstones is then "clean" on a world where the bounded one leaks.
# Both drain transfers (the cleanup's race, W9, is test_drain_transfers.py's): the tombstone
# bound is all that differs.
_HEADLINE = ("--concurrency", "8", "--handoffs", "2000", "--drain-transfers")
RUNS = {
    "bounded": ("simulate", "--workers", "tombstone:1", *_HEADLINE, "--record-failures", "out"),
    "unbounded": ("simulate", "--workers", "tombstone", *_HEADLINE),
}


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    return run_side_by_side(RUNS, tmp_path_factory.mktemp("shared"))


def _line(result: subprocess.CompletedProcess[str], starts: str) -> str:
    return next(line for line in result.stdout.splitlines() if line.startswith(starts))


def _count(result: subprocess.CompletedProcess[str], starts: str) -> int:
    return int(_line(result, starts).split()[len(starts.split())].replace(",", ""))


def test_one_tombstone_shared_by_eight_handoffs_leaks_and_unbounded_ones_do_not(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # tombstone:1 remembers one idle request per worker, of every handoff: a cancel that
    # overtook its submission leaves a tombstone, another handoff's request going idle
    # evicts it, and the late submission takes a slot held for ever (the review's W1 with
    # --concurrency 2).  Remembering every tombstone, nothing can evict it: no leak.
    bounded, unbounded = done["bounded"], done["unbounded"]
    assert bounded.returncode == 1, bounded.stdout
    leaks = _count(bounded, "  leaks")
    assert leaks > 1
    # No restart here: every slot left held as its handoff ended is still held at the end.
    assert _line(bounded, "  worker slots").endswith("still held")
    assert _line(bounded, "  world") == (
        "  world         tombstone:1 workers, messages delivered in any order, "
        "StartTransfer acknowledged on send, other work on the worker's reply, transfers "
        "drained before the destination's cancel, runtime offline"
    )
    assert _count(bounded, "  worker slots") >= leaks
    assert bounded.stdout.rstrip().endswith("FAILED")
    assert unbounded.returncode == 0, unbounded.stdout
    assert "  worker slots  0 still held\n" in unbounded.stdout
    assert "  lost KV       0 " in unbounded.stdout
    assert _count(unbounded, "  fault         delayed delivery") > 100  # the cancels overtook


def test_a_shared_worker_leak_is_recorded_as_a_trace_that_replays(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    bounded, here = done["bounded"], Path(done["here"].stdout)
    recorded = [line for line in bounded.stdout.splitlines() if line.startswith("recorded ")]
    traces = sorted((here / "out").iterdir())
    assert len(recorded) == len(traces) == _count(bounded, "  leaks")
    # The trace has the handoff's own calls: the eviction was another handoff's doing, and
    # the line says so.
    assert all("W1 (no slot held for a CANCELED handoff" in line for line in recorded)
    assert all("the workers are shared" in line for line in recorded)
    # The coordinator did nothing wrong: its calls replay on the shipped chart as recorded.
    replayed = run_handoff("replay", *(str(path) for path in traces[:3]), cwd=here, timeout=120)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.count("OK ") == min(3, len(traces))


# -- the other worlds, through the API -----------------------------------------------------------


def _run(
    handoffs: int, *, workers: Any, fault_rate: float = 0.05, **world: Any
) -> SimulationReport:
    # The world's options name a System (`faults` its injected ones), as the command line's do.
    if "faults" in world:
        world["injected"] = world.pop("faults")
    system = System(workers, **world)
    return simulate(
        SimulationConfig(handoffs=handoffs, concurrency=8, fault_rate=fault_rate, system=system)
    )


def _no_leak(report: SimulationReport) -> None:
    """Nothing leaked, and nothing broke but the shipped cleanup's own race (W9)."""
    assert report.leaks == report.worker_slots == 0, report.violations[:1]
    assert set(report.broken) <= STALE_TRANSFER, report.violations[:1]


def test_bounded_memory_leaks_only_once_handoffs_share_the_workers() -> None:
    # One handoff at a time, each worker's idle requests are finished ones and the live
    # request's own: a tombstone is evicted only once its handoff has nothing in flight.  With
    # eight at a time the same run leaks (rarely: for seed 0, once in 1,200 handoffs, where a
    # failed cancel is retried as the runtime must, not done at once).
    alone = simulate(SimulationConfig(handoffs=600, concurrency=1, system=System(Tombstone(1))))
    _no_leak(alone)
    shared = _run(1200, workers=Tombstone(1))
    assert shared.leaks > 0
    assert shared.worker_slots == shared.still_held > 0


def test_forgetful_workers_leak_in_any_order_and_not_in_fifo() -> None:
    # Any order: a cancel overtakes its submission, answered NOOP and forgotten; the late
    # submission's slot is held for ever (W1).  FIFO: the cancel comes behind the work.
    anyhow = _run(600, workers=FORGETFUL)
    assert anyhow.leaks > 0
    assert anyhow.worker_slots > 0
    fifo = _run(600, workers=FORGETFUL, fifo=True)
    _no_leak(fifo)


def test_a_duplicate_behind_a_cancel_leaks_on_forgetful_workers_in_fifo_only() -> None:
    # A copy of a submission is sent again as the original arrives, behind the cancel sent
    # meanwhile: a forgetful worker runs it after forgetting the request (the review: W1 fails
    # with --fifo --faults duplicate); a tombstone drops it (safe).  At fault rate 0.1 the
    # forgetful run leaks six times in 1,200 handoffs for seed 0.
    options: dict[str, Any] = {
        "fifo": True,
        "faults": frozenset({Fault.DUPLICATION}),
        "fault_rate": 0.1,
    }
    forgetful = _run(1200, workers=FORGETFUL, **options)
    assert forgetful.faults[Fault.DUPLICATION] > 100
    assert forgetful.leaks > 1
    tombstone = _run(600, workers=TOMBSTONE, **options)
    assert tombstone.faults[Fault.DUPLICATION] > 100
    _no_leak(tombstone)


def test_a_shared_restart_forgets_every_tombstone_and_frees_every_slot() -> None:
    # A restart between an early cancel and its late submission forgets the tombstone (the
    # review: tombstone --faults crash fails W1).  The worker is shared: the restart forgets
    # every handoff's tombstones at once, and frees every slot, leaked ones too, so the slots
    # still held at the end are at most those left held.  Fault rate 0.3: a leak needs a cancel
    # to overtake its submission and a restart between them, a couple in 1,500 handoffs.
    # A restart strikes each of the eight live handoffs, each living through at most one (the
    # budget): about one restart in fourteen handoffs, not one a handoff.
    crash = _run(1500, workers=TOMBSTONE, faults=frozenset({Fault.RESTART}), fault_rate=0.3)
    assert 50 < crash.faults[Fault.RESTART] < 250
    assert crash.leaks > 0
    assert crash.still_held <= crash.worker_slots
    keys = {f.key for v in crash.violations for f in v.findings}
    assert keys <= {Key.SLOTS_AT_COMPLETION, Key.NO_SLOT_AFTER_FREED, *STALE_TRANSFER}, keys
    # With FIFO delivery the cancel comes behind its work: nothing to forget (the review: safe).
    fifo = _run(
        300, workers=TOMBSTONE, faults=frozenset({Fault.RESTART}), fault_rate=0.3, fifo=True
    )
    _no_leak(fifo)


def test_the_acknowledgement_policy_keeps_its_verdicts_with_shared_workers() -> None:
    # On send, Submitted is reported before the worker saw the work: tombstones still drop
    # late work (safe), forgetful workers still run it (W1), as in the review.
    tombstone = _run(600, workers=TOMBSTONE, acknowledge=Acknowledge.ON_SEND)
    _no_leak(tombstone)
    forgetful = _run(600, workers=FORGETFUL, acknowledge=Acknowledge.ON_SEND)
    assert forgetful.leaks > 0


class _Drops(Tombstone):
    """Frees the destination's slot as it activates it: decode starts from nothing."""

    name = "drops-on-activate"

    def react(self, task: WorkerTask, memory: Any) -> WorkerReaction:
        if task is WorkerTask.ACTIVATE and memory is RequestMemory.HELD:
            return WorkerReaction(RequestMemory.FREED, WorkerReply.DONE)
        return super().react(task, memory)


def test_success_without_the_destinations_slot_is_lost_kv() -> None:
    # Without faults every handoff succeeds, and each destination frees the slot it was to
    # decode from: every one of them lost its KV, and none of them leaked.  It acknowledged
    # the activation without serving the request (W10), and completed without a slot (W1).
    report = _run(50, workers=_Drops(), fault_rate=0.0)
    assert report.completions["SUCCESS"] == 50
    assert report.lost == 50
    assert report.leaks == report.worker_slots == 0
    assert not report.ok
    assert all(
        [f.key for f in v.findings] == [Key.ACTIVATED_SERVES, Key.SLOTS_AT_COMPLETION]
        and "completed SUCCESS and the destination holds no KV slot" in v.findings[1].message
        for v in report.violations
    )
    # The shipped contract keeps the slot: decode owns it, and it is no leak.
    assert _run(50, workers=TOMBSTONE, fault_rate=0.0).ok


def test_decode_owns_one_slot_after_success_and_a_second_one_leaks() -> None:
    # Every handoff succeeds with two destination slots: decode takes one, the other is held
    # for ever, and the end of the run finds exactly those still held.
    report = _run(30, workers=SecondSlot(), fault_rate=0.0)
    assert report.completions["SUCCESS"] == 30
    assert report.leaks == report.worker_slots == report.still_held == 30
    assert report.lost == 0
    assert all(
        v.findings[0].key is Key.ONE_SLOT_PER_REQUEST
        and "holds 2 KV slots for one request after" in v.findings[0].message
        for v in report.violations
    )


def test_the_slots_of_handoffs_that_never_complete_are_counted_as_held() -> None:
    # A source that takes the slot and never answers: no handoff completes, each holds one
    # slot, and the end of the run finds every one of them still held.
    report = _run(40, workers=SILENT_TAKE, fault_rate=0.0)
    assert report.incomplete == 40
    assert report.worker_slots == report.still_held == 40
    assert all(
        "held by a handoff that never completed" in v.findings[-1].message
        for v in report.violations
    )


def test_a_slot_bound_is_the_shared_workers_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # With one slot per worker, eight live handoffs compete for it: the worker never holds
    # more than one (refusing the rest with FAILED, so those handoffs cancel), and tombstones
    # still leak nothing.
    most = {"held": 0}
    arrive = SimulatedWorkers.arrive

    def watched(self: SimulatedWorkers[Any], handoff: Any, delivery: Any) -> None:
        arrive(self, handoff, delivery)
        most["held"] = max(most["held"], *(book.held for book in self.books.values()))

    monkeypatch.setattr(SimulatedWorkers, "arrive", watched)
    bounded = _run(300, workers=TOMBSTONE, slots=1)
    assert most["held"] == 1
    assert bounded.ok, bounded.violations[:1]
    most["held"] = 0
    free = _run(300, workers=TOMBSTONE)
    assert most["held"] > 1  # without the bound the handoffs hold several slots at once
    assert bounded.completions["CANCELED"] > 2 * free.completions["CANCELED"]


def _arrivals(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, float]]:
    """Every message sent on a worker channel, in the order sent, with when it arrives."""
    sent: list[tuple[object, float]] = []
    at = simulation._World.at

    def recorded(self: Any, delay: float, handoff: Any, call: Any, channel: Any = None) -> float:
        when = at(self, delay, handoff, call, channel)
        if channel is not None:
            sent.append((channel, when))
        return when

    monkeypatch.setattr(simulation._World, "at", recorded)
    return sent


def _overtaken(sent: list[tuple[object, float]]) -> Iterator[object]:
    """The channels on which a later message arrives before an earlier one."""
    last: dict[object, float] = {}
    for channel, when in sent:
        if when < last.get(channel, 0.0):
            yield channel
        last[channel] = max(when, last.get(channel, 0.0))


def test_fifo_delivers_each_workers_messages_in_the_order_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Delayed deliveries, duplicate copies and reordered acknowledgements all go out at a high
    # fault rate; in any order some message overtakes an earlier one on its channel (so the
    # check can fail), with FIFO none does, in either direction of either worker.
    options: dict[str, Any] = {
        "workers": TOMBSTONE,
        "faults": frozenset({Fault.DUPLICATION}),
        "fault_rate": 0.3,
    }
    sent = _arrivals(monkeypatch)
    report = _run(100, **options)
    assert report.faults[Fault.DELAYED_DELIVERY]
    assert report.faults[Fault.DUPLICATION]
    assert set(_overtaken(sent)) == {channel for channel, _ in sent}
    sent.clear()
    _run(100, fifo=True, **options)
    assert len({channel for channel, _ in sent}) == 4
    assert not list(_overtaken(sent))


# -- one model, two stores -------------------------------------------------------------------------

_CONTRACTS = (FORGETFUL, TOMBSTONE, Tombstone(1), Tombstone(2))
_STEPS = st.lists(
    st.tuples(
        st.integers(0, 3),  # the request
        st.integers(0, 5),  # the action id
        st.sampled_from(WorkerTask) | st.none(),  # None: the worker fails the work
    ),
    max_size=40,
)


@given(
    contract=st.sampled_from(_CONTRACTS),
    slots=st.sampled_from((None, 1, 2)),
    steps=_STEPS,
)
def test_the_simulations_book_remembers_what_the_reviews_state_does(
    contract: Any, slots: int | None, steps: list[tuple[int, int, WorkerTask | None]]
) -> None:
    # The simulation keeps each worker's memory in a WorkerBook, changed in place, the review
    # in a WorkerState value; both go through the same Worker rules.  Any sequence of work,
    # on a few requests competing for a bounded memory and slots, leaves both remembering the
    # same entries in the same order, and the worker reacting the same way.
    worker = Worker(ContractTable(contract), Role.SOURCE, slots)
    state, book = WorkerState(), WorkerBook()
    ordered = worker.remembers is not None
    for request, action_id, task in steps:
        if task is None:
            state = worker.fail(state, request, action_id)
            worker.fail_in(book, request, action_id)
        else:
            ((state, expected),) = worker.react(state, request, action_id, task)
            assert worker.take(book, request, action_id, task, _first) == expected
        assert book.state(ordered) == state
        assert book.held == state.held
        assert [book.idle(n) for n in range(4)] == [state.idle(n) for n in range(4)]


def _first(ways: Sequence[tuple[Remembered, WorkerReaction]]) -> tuple[Remembered, WorkerReaction]:
    return ways[0]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (("--fifo",), "--fifo orders the workers' messages: give --workers too"),
        (("--slots", "2"), "--slots is about the workers: give --workers too"),
        (("--workers", "tombstone", "--slots", "0"), "--slots: must be at least 1, got 0"),
    ],
)
def test_the_workers_options_alone_are_one_line_and_exit_2(
    options: tuple[str, ...], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from handoff.__main__ import main

    assert main(["simulate", "--handoffs", "1", *options]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert says in err


def test_a_worker_failing_every_cancel_is_cut_as_a_run_that_never_ends() -> None:
    # At fault rate 1 every cancel fails, and the contract's retry sends it again: without a
    # cut the simulation never ends (each failure acknowledged twice is retried twice).  The
    # review sees that run's cycle (W4); the simulation cannot, so it cuts each handoff after
    # MAX_RETRIES retries and says why, as it cuts a chart whose cleanup loops (Bound).
    system = System(Tombstone(), injected=frozenset({Fault.DUPLICATION}))
    report = simulate(SimulationConfig(handoffs=6, concurrency=2, fault_rate=1.0, system=system))
    assert report.handoffs == report.endless == 6
    assert report.runaway is not None
    assert f"retried a failed cleanup {MAX_RETRIES + 1} times" in report.runaway
    # Below the fault rate that makes every cancel fail, no run is cut for its retries.
    calm = simulate(SimulationConfig(handoffs=300, fault_rate=0.05, seed=3, system=system))
    assert "retried a failed cleanup" not in (calm.runaway or "")

"""The runtime's duties in the world: the retry of a failed cancel, re-sending after a loss,
restarts as separate choices, a deadline per handoff.

Each duty is a setting of the `System`, scheduled by the review and the simulation alike,
named on the command line, in the report's first line and in a system trace's header.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs
import pytest
from support import SILENT_TAKE, CancelAlwaysFails, CancelFailsOnce, run_handoff

from handoff import HandoffOrder
from handoff._review.explore import Review, review_order
from handoff._review.spin.system import unmirrored
from handoff._review.verdict import MoveKind
from handoff._runs.simulation import SimulationConfig, simulate
from handoff._runs.trace import Workers
from handoff._system.config import Acknowledge, Resend, Restart, System
from handoff._system.faults import Fault
from handoff._system.properties import Key
from handoff._system.workers import FORGETFUL, TOMBSTONE, Role, Slots, WorkerContract
from handoff._values.values import HandoffActionOutcome, HandoffCompletion

ON_REPLY = Acknowledge.ON_REPLY
FAILING = frozenset({Fault.FAILED_CLEANUP})
CANCEL = {
    HandoffOrder.SOURCE_FIRST: "#1 CancelSource",
    HandoffOrder.DESTINATION_FIRST: "#1 CancelDestination",
}
"""The first action's failure cancels the one side that was asked: the cancel is action 1."""


# Every world here drains transfers (`drains_transfers=True`, `--drain-transfers`), the
# runtime's duty that removes the cleanup's transfer race (W9, shown in
# test_drain_transfers.py): each verdict then shows the duty under test alone.


def _review(order: HandoffOrder, contract: WorkerContract = TOMBSTONE, **world: Any) -> Review:
    return review_order(
        order, system=System(contract, acknowledge=ON_REPLY, drains_transfers=True, **world)
    )


def _failing(review: Review) -> set[str]:
    return {verdict.prop.key.value for verdict in review.verdicts if not verdict.holds}


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_a_cancel_that_fails_once_hangs_without_the_retry(order: HandoffOrder) -> None:
    # With FIFO delivery the shortest run to a failed cancel with nothing left in flight is
    # five moves: start; the worker fails the first work (one --failures); its Failed makes
    # the coordinator cancel that side; the cancel fails (cleanup-failure); the coordinator
    # refuses the failure.  A terminal fact right after start would be one move fewer, but
    # the cancel then queues behind the first work, whose acknowledgements queue before the
    # cancel's.  Nothing is left to deliver, and the handoff waits in cleanup for ever.
    review = _review(order, fifo=True, faults=1, injected=FAILING, retry=False)
    assert _failing(review) == {"W4", "W5"}
    example = review.verdict("W4").counterexample
    assert example is not None
    steps = example.steps
    assert [step.kind for step in steps] == [
        MoveKind.START,
        MoveKind.WORKER_FAILS,
        MoveKind.TO_COORDINATOR,
        MoveKind.WORKER_FAILS,
        MoveKind.TO_COORDINATOR,
    ]
    assert steps[3].message is not None
    assert steps[3].message.describe() == CANCEL[order]
    assert steps[4].error is not None
    assert "CleanupActionFailedError" in steps[4].error
    assert steps[4].sent == ()  # no retry
    assert "nothing in flight" in example.finding


@pytest.mark.parametrize("order", list(HandoffOrder))
@pytest.mark.parametrize("fifo", [False, True])
def test_with_the_retry_a_failed_cancel_is_safe_and_live(order: HandoffOrder, fifo: bool) -> None:
    retried = _review(order, fifo=fifo, faults=1, injected=FAILING)
    assert _failing(retried) == set()
    # The same world without the retry hangs, so the retry is what makes it live.
    assert {"W4", "W5"} <= _failing(
        _review(order, fifo=fifo, faults=1, injected=FAILING, retry=False)
    )


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_a_contract_whose_cancel_fails_once_is_retried_into_a_cancel(order: HandoffOrder) -> None:
    # No injected fault: the contract itself fails the first cancel of a held slot.  The
    # shortest hang without the retry: the slot is taken, a terminal fact cancels it, the
    # cancel fails, and the refused failure is the last message.
    given = _review(order, CancelFailsOnce(), fifo=True, retry=False)
    assert _failing(given) == {"W4", "W5"}
    example = given.verdict("W4").counterexample
    assert example is not None
    failed = [step for step in example.steps if step.error is not None]
    assert failed[-1] is example.steps[-1]
    refused = failed[-1].message
    assert refused is not None
    assert refused.outcome is not None
    assert refused.outcome.is_failed
    assert f"#{refused.action_id} {type(refused.action).__name__}" == CANCEL[order]
    assert "CleanupActionFailedError" in str(failed[-1].error)
    retried = _review(order, CancelFailsOnce(), fifo=True)
    assert _failing(retried) == set()


def test_the_retry_is_sent_again_as_the_runtime_says() -> None:
    # In the retried world, some move delivers the refused failure and puts the cancel back
    # in flight, under the same id, as a copy of the runtime's (W3 does not count it).
    from handoff._compile.table import compiled
    from handoff._review.environment import Rules
    from handoff._review.system import SystemWorld

    order = HandoffOrder.SOURCE_FIRST
    world = SystemWorld(
        compiled(order), System(CancelFailsOnce(), fifo=True, acknowledge=ON_REPLY), Rules(order)
    )
    queue, seen, retries = [world.root()[0]], 0, []
    while queue and seen < 2000:
        node = queue.pop()
        seen += 1
        for move in world.moves(node):
            if move.step.error is not None and move.step.sent:
                retries.append(move.step)
            if move.node is not None:
                queue.append(move.node)
    assert retries
    (again,) = retries[0].sent
    assert again.copy
    refused = retries[0].message
    assert refused is not None
    assert again.action_id == refused.action_id
    assert type(again.action).__name__ == "CancelSource"


def test_a_cancel_that_always_fails_is_retried_for_ever_and_never_called_safe() -> None:
    # The retry loops (fail, refuse, send again): the review assumes no fairness of the
    # worker, so a run that loops for ever never completes the handoff (W4).
    review = _review(HandoffOrder.SOURCE_FIRST, CancelAlwaysFails(), fifo=True)
    assert "W4" in _failing(review)
    assert review.verdict("Bound").holds


def test_retries_on_change_nothing_where_no_cancel_fails() -> None:
    order = HandoffOrder.SOURCE_FIRST
    on, off = (_review(order, fifo=True, retry=retry) for retry in (True, False))
    assert (on.configurations, on.transitions) == (off.configurations, off.transitions)


def test_the_report_names_a_runtime_that_does_not_retry() -> None:
    assert "failed cancels not retried" in System(TOMBSTONE, retry=False).describe()
    assert "retried" not in System(TOMBSTONE).describe()


def test_the_simulation_hangs_without_the_retry_and_not_with_it() -> None:
    # Cleanup failures strike at the fault rate: without the retry some handoff stays in
    # cleanup with nothing left in flight (W4); with it every handoff completes.
    def run(retry: bool) -> Any:
        system = System(TOMBSTONE, fifo=True, retry=retry, drains_transfers=True)
        config = SimulationConfig(
            handoffs=600, concurrency=8, fault_rate=0.1, seed=3, system=system
        )
        return simulate(config)

    given_up, retried = run(False), run(True)
    assert given_up.faults[Fault.CLEANUP_FAILURE] > 0
    assert given_up.incomplete > 0
    assert Key.DELIVERIES_COMPLETE in given_up.broken
    assert retried.faults[Fault.CLEANUP_FAILURE] > 0
    assert retried.incomplete == 0
    assert retried.ok


def test_a_system_trace_records_a_runtime_that_does_not_retry(tmp_path: Path) -> None:
    system = System(TOMBSTONE, retry=False)
    workers = Workers.of(system)
    assert not workers.retry
    assert workers.system().retry is False
    assert Workers.of(System(TOMBSTONE)).system().retry is True


def test_the_command_line_reviews_a_runtime_that_does_not_retry(tmp_path: Path) -> None:
    world = ("--workers", "tombstone", "--fifo", "--failures", "1", "--faults")
    argv = ("review", *world, "cleanup-failure", "--acknowledge", "on-reply", "--drain-transfers")
    given_up = run_handoff(*argv, "--no-retry", cwd=tmp_path)
    assert given_up.returncode == 1, given_up.stderr
    assert "failed cancels not retried" in given_up.stdout
    assert "W4 fails" in given_up.stdout
    retried = run_handoff(*argv, cwd=tmp_path)
    assert retried.returncode == 0, retried.stdout
    alone = run_handoff("review", "--no-retry", cwd=tmp_path)
    assert alone.returncode == 2
    assert alone.stderr.strip().endswith("--no-retry is about the workers: give --workers too")


def test_spin_mirrors_a_runtime_that_retries_only_where_no_cancel_fails() -> None:
    assert unmirrored(System(TOMBSTONE)) is None
    assert unmirrored(System(CancelAlwaysFails(), retry=False)) is None
    assert unmirrored(System(CancelAlwaysFails())) == (
        "a runtime that gives up on a failed cancel: give --no-retry"
    )
    assert unmirrored(System(TOMBSTONE, injected=FAILING)) == (
        "the faults it models only: drop cleanup-failure from --faults"
    )


# -- re-sending after a loss

LOSE = frozenset({Fault.LOSS})
FIRST = {
    HandoffOrder.SOURCE_FIRST: "SubmitPrefill",
    HandoffOrder.DESTINATION_FIRST: "ReserveDestination",
}


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_re_sending_everything_leaks_for_forgetful_workers_in_fifo(order: HandoffOrder) -> None:
    # The first work is lost and waits on the runtime's timer; a terminal fact cancels its
    # side; the cancel overtakes nothing on the wire (the work is not there) and is answered
    # Noop, which completes the handoff CANCELED; then the timer sends the work again, and
    # the forgetful worker takes a slot for a handoff that is over (W2), still held once its
    # acknowledgement and fact are delivered (W1): start, fact, lose, cancel, Noop, re-send,
    # work, its acknowledgement, its fact — nine moves.
    review = _review(order, FORGETFUL, fifo=True, faults=1, injected=LOSE, resend=Resend.EVERYTHING)
    assert _failing(review) == {"W1", "W2"}
    example = review.verdict("W1").counterexample
    assert example is not None
    kinds = [step.kind for step in example.steps]
    assert len(kinds) == 9
    lost, again = kinds.index(MoveKind.LOST), kinds.index(MoveKind.RESEND)
    assert lost < again
    for index in (lost, again):
        message = example.steps[index].message
        assert message is not None
        assert type(message.action).__name__ == FIRST[order]
    noop = next(step for step in example.steps if step.call is not None and step.call.outcome)
    assert noop.call is not None
    assert noop.call.outcome is HandoffActionOutcome.NOOP
    assert example.steps.index(noop) < again
    assert "completed CANCELED" in example.finding


@pytest.mark.parametrize("order", list(HandoffOrder))
@pytest.mark.parametrize(
    ("contract", "fifo"), [(FORGETFUL, True), (TOMBSTONE, False), (TOMBSTONE, True)]
)
def test_re_sending_lost_cleanups_is_safe_and_live(
    order: HandoffOrder, contract: WorkerContract, fifo: bool
) -> None:
    lossy = {"fifo": fifo, "faults": 1, "injected": LOSE}
    assert {"W4", "W5"} <= _failing(_review(order, contract, **lossy))
    assert _failing(_review(order, contract, resend=Resend.CLEANUPS, **lossy)) == set()


def test_re_sending_cleanups_adds_no_hang_to_forgetful_workers_in_any_order() -> None:
    # They leak in any order without any fault: re-sending removes only the loss's hang.
    order = HandoffOrder.SOURCE_FIRST
    lossy = {"faults": 1, "injected": LOSE}
    assert _failing(_review(order, FORGETFUL, resend=Resend.CLEANUPS, **lossy)) == {"W1", "W2"}


def test_the_simulation_re_sends_as_the_review_does() -> None:
    def run(contract: WorkerContract, resend: Resend) -> Any:
        system = System(
            contract,
            fifo=True,
            injected=LOSE,
            resend=resend,
            acknowledge=ON_REPLY,
            drains_transfers=True,
        )
        return simulate(
            SimulationConfig(handoffs=1500, concurrency=8, fault_rate=0.05, seed=1, system=system)
        )

    timed_out = run(TOMBSTONE, Resend.NONE)
    assert timed_out.incomplete > 0
    cleanups = run(TOMBSTONE, Resend.CLEANUPS)
    assert cleanups.faults[Fault.LOSS] > 0
    assert cleanups.ok
    everything = run(FORGETFUL, Resend.EVERYTHING)
    assert everything.incomplete == 0
    assert everything.leaks > 0
    assert {Key("W1"), Key("W2")} <= set(everything.broken)


def test_a_trace_header_names_the_re_send_policy() -> None:
    workers = Workers.of(System(TOMBSTONE, resend=Resend.CLEANUPS))
    assert workers.system().resend is Resend.CLEANUPS
    assert "lost cleanups re-sent" in workers.system().describe()


def test_the_command_line_re_sends_everything_and_shows_the_leak(tmp_path: Path) -> None:
    world = ("--workers", "forgetful", "--fifo", "--failures", "1", "--faults", "lose")
    done = run_handoff("review", *world, "--resend", "everything", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "lost messages re-sent" in done.stdout
    assert "the runtime's timer fires: it sends #0 SubmitPrefill again" in done.stdout
    wrong = run_handoff("review", *world, "--resend", "all", cwd=tmp_path)
    assert wrong.returncode == 2
    assert "invalid choice: 'all'" in wrong.stderr
    assert unmirrored(System(TOMBSTONE, resend=Resend.CLEANUPS)) == (
        "a runtime that re-sends nothing: drop --resend"
    )


# -- restarts as separate choices

CRASH = frozenset({Fault.RESTART})


RESTART_RACE = {"W9"}
"""What draining transfers does not remove: a destination's restart that frees its slots
frees the request's slot while its `StartTransfer` is on its way, and the source then
writes the KV into a free slot (W9).  No cancel is involved, so no hold helps; a restart
that keeps its slots avoids it but leaks, and a destination that refuses the write its
restart left unvouched (`refuses-unvouched`) removes it."""


def _restarted(order: HandoffOrder, contract: WorkerContract, fifo: bool, *words: str) -> Review:
    return _review(order, contract, fifo=fifo, faults=1, injected=CRASH, restart=Restart.of(words))


def _the_restarts_race(review: Review) -> None:
    """W9 fails as `RESTART_RACE` says: the destination restarts after the transfer was
    issued and before the source takes it, and no cancel reached the destination."""
    example = review.verdict("W9").counterexample
    assert example is not None
    *before, transfer = example.steps
    assert transfer.message is not None
    assert type(transfer.message.action).__name__ == "StartTransfer"
    issued = next(
        n
        for n, step in enumerate(before)
        if any(type(item.action).__name__ == "StartTransfer" for item in step.issued)
    )
    assert any(
        step.kind is MoveKind.RESTART and step.worker is Role.DESTINATION
        for step in before[issued:]
    )
    assert not any(
        step.message is not None
        and step.message.role is Role.DESTINATION
        and type(step.message.action).__name__ == "CancelDestination"
        for step in before
        if step.kind is MoveKind.TO_WORKER
    )


@pytest.mark.parametrize("order", list(HandoffOrder))
@pytest.mark.parametrize("fifo", [False, True])
def test_a_restart_that_keeps_its_slots_leaks_even_with_tombstones(
    order: HandoffOrder, fifo: bool
) -> None:
    # The worker takes the first work's slot, restarts knowing nothing of the request but
    # holding its slot, and answers the cancel Noop (it remembers no slot for it): the
    # coordinator is told the slot is free while it is held (W2), and completes CANCELED with
    # it held (W1).  FIFO changes nothing: nothing overtakes anything.
    review = _restarted(order, TOMBSTONE, fifo, "keeps-slots")
    assert _failing(review) == {"W1", "W2"}
    example = review.verdict("W2").counterexample
    assert example is not None
    restart = next(step for step in example.steps if step.kind is MoveKind.RESTART)
    assert restart.reaction is not None
    assert restart.reaction.slots is Slots.KEEP
    told = example.steps[-1]
    assert told.message is not None
    assert told.message.outcome is HandoffActionOutcome.NOOP
    assert type(told.message.action).__name__ == CANCEL[order].split()[1]
    assert told.message.role is restart.worker
    # A restart that frees its slots leaks nothing in FIFO, but has its own transfer race.
    freeing = _restarted(order, TOMBSTONE, fifo)
    assert _failing(freeing) == ({"W1", "W2"} if not fifo else set()) | RESTART_RACE
    _the_restarts_race(freeing)


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_fifo_with_a_restart_is_safe_only_while_the_inbox_survives(order: HandoffOrder) -> None:
    # The shortest hang: the first work is done and acknowledged, a terminal fact cancels it,
    # and the worker restarts with the cancel in its inbox, which is lost with it; the
    # runtime's timer reports TimedOut for it, which a cancelling coordinator already acts
    # on: nothing is in flight and the handoff waits in cleanup for ever.
    # (Safe and live but for the restart's own transfer race, `RESTART_RACE`.)
    assert _failing(_restarted(order, TOMBSTONE, True)) == RESTART_RACE
    review = _restarted(order, TOMBSTONE, True, "loses-inbox")
    assert _failing(review) == {"W4", "W5"} | RESTART_RACE
    example = review.verdict("W4").counterexample
    assert example is not None
    restart, timer = example.steps[-2:]
    assert restart.kind is MoveKind.RESTART
    assert [f"#{m.action_id} {type(m.action).__name__}" for m in restart.lost] == [CANCEL[order]]
    assert timer.kind is MoveKind.TIMER
    assert timer.message == restart.lost[0]
    assert timer.call is not None
    assert type(timer.call.fact).__name__ == "TimedOut"
    assert "nothing in flight" in example.finding
    # A runtime that re-sends lost cleanups sends it again: safe and live (but for the
    # restart's own transfer race).
    resending = _review(
        order,
        fifo=True,
        faults=1,
        injected=CRASH,
        restart=Restart.of(["loses-inbox"]),
        resend=Resend.CLEANUPS,
    )
    assert _failing(resending) == RESTART_RACE
    _the_restarts_race(resending)
    # With the destination refusing the write its restart left unvouched, nothing is left.
    fenced = _review(
        order,
        fifo=True,
        faults=1,
        injected=CRASH,
        restart=Restart.of(["loses-inbox", "refuses-unvouched"]),
        resend=Resend.CLEANUPS,
    )
    assert _failing(fenced) == set()


@pytest.mark.parametrize("order", list(HandoffOrder))
@pytest.mark.parametrize(
    ("remedy", "left"),
    [
        ("durable-tombstones", RESTART_RACE),
        ("refuses-unvouched", set()),
        ("durable-tombstones,refuses-unvouched", set()),
    ],
)
def test_both_remedies_for_a_restart_in_any_order_are_safe_and_live(
    order: HandoffOrder, remedy: str, left: set[str]
) -> None:
    # In any order, tombstone workers leak under a restart: the cancel leaves a tombstone,
    # the restart forgets it, and the late work is taken.  A tombstone that survives the
    # restart drops the late work; a restarted worker that refuses work sent before it fails
    # the late work instead.  Durable tombstones alone leave the restart's own transfer race
    # (`RESTART_RACE`): they say nothing of the slot the restart freed.  Refusing unvouched
    # work covers the transfer's write too (`runtime.fenced`), alone or with them.
    assert _failing(_restarted(order, TOMBSTONE, False)) == {"W1", "W2"} | RESTART_RACE
    remedied = _restarted(order, TOMBSTONE, False, *remedy.split(","))
    assert _failing(remedied) == left
    if left:
        _the_restarts_race(remedied)


def _walk(world: Any, node: Any, words: str) -> Any:
    """The move from `node` that `words` describe (there must be one), and where it leads."""
    from handoff._review.system_words import describe_step

    found = [move for move in world.moves(node) if describe_step(move.step) == words]
    assert found, f"no move {words!r} from here"
    return found[0]


@pytest.mark.parametrize("acknowledge", list(Acknowledge))
def test_the_destination_refuses_a_kv_write_its_restart_left_unvouched(
    acknowledge: Acknowledge,
) -> None:
    from handoff._compile.table import compiled
    from handoff._review.environment import Rules
    from handoff._review.system import SystemWorld
    from handoff._review.system_words import describe_step

    # Without the fence (durable tombstones, transfers drained) W9 fails in nine moves,
    # which a reader checks by hand: start; the source takes #0 SubmitPrefill; the
    # coordinator takes its acknowledgement and SourceHeld, and reserves (#1); the
    # destination takes #1 ReserveDestination; the coordinator takes its acknowledgement and
    # DestinationReserved, and issues #2 StartTransfer; the destination restarts, freeing the
    # slot #1 took; the source performs #2 StartTransfer into the freed slot.  No cancel was
    # issued: no hold of one helps.
    order = HandoffOrder.SOURCE_FIRST
    world_of: dict[str, Any] = {"faults": 1, "injected": CRASH, "drains_transfers": True}
    plain = review_order(
        order,
        system=System(
            TOMBSTONE,
            acknowledge=acknowledge,
            restart=Restart.of(["durable-tombstones"]),
            **world_of,
        ),
    )
    example = plain.verdict("W9").counterexample
    assert example is not None
    steps = example.steps
    assert [step.kind for step in steps] == [
        MoveKind.START,
        MoveKind.TO_WORKER,
        MoveKind.TO_COORDINATOR,
        MoveKind.TO_COORDINATOR,
        MoveKind.TO_WORKER,
        MoveKind.TO_COORDINATOR,
        MoveKind.TO_COORDINATOR,
        MoveKind.RESTART,
        MoveKind.TO_WORKER,
    ]
    assert steps[7].worker is Role.DESTINATION
    assert steps[8].message is not None
    assert steps[8].message.describe() == "#2 StartTransfer"
    assert "went into a free slot" in example.finding
    # With it, the same eight moves lead to the same place, and the source's transfer is
    # answered failed instead: its write was refused, its own slot is still held, and the
    # coordinator cleans up as after any failed transfer, to CANCELED, holding nothing.
    fenced = System(
        TOMBSTONE,
        acknowledge=acknowledge,
        restart=Restart.of(["durable-tombstones", "refuses-unvouched"]),
        **world_of,
    )
    world = SystemWorld(compiled(order), fenced, Rules(order))
    node = world.root()[0]
    for step in steps[:-1]:
        node = _walk(world, node, describe_step(step)).node
    # (The other move on it is the source failing the transfer, a fault of `--failures`.)
    (transfer,) = [
        move
        for move in world.moves(node)
        if move.step.kind is MoveKind.TO_WORKER  # the fence's doing, not a fault
        and move.step.message is not None
        and move.step.message.describe() == "#2 StartTransfer"
    ]
    assert not any(words for _key, words in transfer.checks)
    refused = "the destination refused the KV write: it restarted since the reservation"
    answer = f'#2 Failed("{refused}")' if acknowledge is ON_REPLY else "Failed"
    assert describe_step(transfer.step).endswith(f"holds a KV slot for it; sends {answer}")
    node = transfer.node
    while not node.coordinators[0].is_complete:
        move = next(m for m in world.moves(node) if m.step.kind in _DELIVERIES)
        assert not any(words for _key, words in move.checks), describe_step(move.step)
        node = move.node
    assert node.coordinators[0].completion is HandoffCompletion.CANCELED
    assert [node.memory(role).slots(0) for role in Role] == [0, 0]
    # And the whole space: safe and live.
    assert _failing(review_order(order, system=fenced)) == set()


_DELIVERIES = (MoveKind.TO_WORKER, MoveKind.TO_COORDINATOR)


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_the_fence_is_the_generations_and_leaves_the_cancels_race_to_the_drain(
    order: HandoffOrder,
) -> None:
    # A cancel frees the slot without a restart: the destination's generation is the one the
    # transfer carries, so its write lands in the freed slot (W9) unless the runtime holds
    # the cancel until the transfer reached the source (`--drain-transfers`).
    unvouched = Restart.of(["refuses-unvouched"])
    system = System(TOMBSTONE, acknowledge=ON_REPLY, faults=1, injected=CRASH, restart=unvouched)
    review = review_order(order, system=system)
    assert _failing(review) == {"W9"}
    example = review.verdict("W9").counterexample
    assert example is not None
    assert not any(step.kind is MoveKind.RESTART for step in example.steps)
    assert any(
        step.message is not None and type(step.message.action).__name__ == "CancelDestination"
        for step in example.steps
        if step.kind is MoveKind.TO_WORKER
    )
    assert _failing(_restarted(order, TOMBSTONE, False, "refuses-unvouched")) == set()


def test_the_fence_keeps_a_shared_slot_one_requests() -> None:
    # Two handoffs, one slot per worker: a restart frees h1's slot while its transfer is on
    # its way, h2 takes the slot, and the transfer would write h1's KV into h2's slot (W8).
    # Refused, it writes nowhere: W1-W6, W8-W10 hold; W7 fails as it does without any
    # fault, one slot being too few for two handoffs to both succeed.
    system = System(
        TOMBSTONE,
        acknowledge=ON_REPLY,
        faults=1,
        injected=CRASH,
        restart=Restart.of(["refuses-unvouched"]),
        drains_transfers=True,
        slots=1,
        concurrency=2,
    )
    review = review_order(HandoffOrder.SOURCE_FIRST, system=system)
    assert _failing(review) == {"W7"}
    assert review.verdict("W9").checked > 100  # transfers performed: the fence is not all


def test_a_restart_refusing_unvouched_work_says_so_in_its_move() -> None:
    from handoff._review.system_words import describe_step

    review = _restarted(HandoffOrder.SOURCE_FIRST, TOMBSTONE, False, "refuses-unvouched")
    from handoff._compile.table import compiled
    from handoff._review.environment import Rules
    from handoff._review.system import SystemWorld

    order = HandoffOrder.SOURCE_FIRST
    unvouched = Restart.of(["refuses-unvouched"])
    system = System(TOMBSTONE, faults=1, injected=CRASH, restart=unvouched, acknowledge=ON_REPLY)
    world = SystemWorld(compiled(order), system, Rules(order))
    assert review.verdict("W1").holds

    # Start, a terminal fact, the cancel reaches the source first (a tombstone): the source
    # restarts with #0 SubmitPrefill still in its inbox, and refuses it.
    def after(node: Any, kind: MoveKind) -> Any:
        move = next(m for m in world.moves(node) if m.step.kind is kind)
        assert move.node is not None
        return move.node

    node = after(after(world.root()[0], MoveKind.START), MoveKind.FAULT)
    cancel = next(m for m in world.moves(node) if m.step.message and m.step.message.action_id == 1)
    (restart,) = [m for m in world.moves(cancel.node) if m.step.kind is MoveKind.RESTART]
    words = describe_step(restart.step)
    assert words == (
        "the source restarts: it forgets the request and frees its slot; it refuses the work "
        'sent before it: sends #0 Failed("sent before the worker restarted")'
    )


def test_the_simulation_restarts_as_the_review_does() -> None:
    def run(contract: WorkerContract, fifo: bool, *words: str, handoffs: int = 1500) -> Any:
        system = System(
            contract,
            fifo=fifo,
            injected=CRASH,
            restart=Restart.of(words),
            acknowledge=ON_REPLY,
            drains_transfers=True,
        )
        return simulate(
            SimulationConfig(
                handoffs=handoffs, concurrency=8, fault_rate=0.05, seed=1, system=system
            )
        )

    assert run(TOMBSTONE, True, "keeps-slots").leaks > 0
    assert run(TOMBSTONE, True, "loses-inbox").incomplete > 0
    # In any order a leak needs a cancel to overtake its submission and a restart to strike
    # between them: a few handoffs in a thousand, so this run is longer.
    assert run(TOMBSTONE, False, handoffs=3000).leaks > 0
    # Both remedies leak nothing and finish.  Durable tombstones alone leave the restart's
    # own race: a restart frees the slots of the eight live handoffs at once, some with a
    # transfer coming (W9 88 times with this seed).  A destination refusing the write its
    # restart left unvouched removes it, alone or with them.
    durable = run(TOMBSTONE, False, "durable-tombstones")
    assert (durable.leaks, durable.incomplete) == (0, 0)
    assert set(durable.broken) == {Key.KV_INTO_OWN_SLOT}
    assert durable.broken[Key.KV_INTO_OWN_SLOT] > 20
    for remedy in (("refuses-unvouched",), ("durable-tombstones", "refuses-unvouched")):
        remedied = run(TOMBSTONE, False, *remedy)
        assert (remedied.leaks, remedied.incomplete) == (0, 0)
        assert remedied.faults[Fault.RESTART] > 50
        assert set(remedied.broken) == set()


def test_the_restart_is_named_in_the_report_the_trace_and_the_command_line(
    tmp_path: Path,
) -> None:
    restart = Restart.of(["keeps-slots", "loses-inbox"])
    system = System(TOMBSTONE, restart=restart)
    assert "a restarted worker loses its inbox and keeps its slots" in system.describe()
    assert Workers.of(system).system().restart == restart
    assert unmirrored(system) == "the default restart only: drop --restart"
    world = ("--workers", "tombstone", "--fifo", "--failures", "1", "--faults", "crash")
    done = run_handoff("review", *world, "--restart", "keeps-slots", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "forgets its requests but keeps their slots" in done.stdout
    wrong = run_handoff("review", *world, "--restart", "keeps-slot", cwd=tmp_path)
    assert wrong.returncode == 2
    assert "unknown restart choice 'keeps-slot'" in wrong.stderr


# -- a deadline per handoff

FIRST_WORK_SIDE = {
    HandoffOrder.SOURCE_FIRST: "CancelSource",
    HandoffOrder.DESTINATION_FIRST: "CancelDestination",
}


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_a_deadline_ends_a_handoff_whose_worker_never_answers(order: HandoffOrder) -> None:
    # The worker takes the first work and never acknowledges it: without a deadline nothing
    # is left in flight and the handoff waits for ever (W4).  With one, the deadline fires
    # where the run would otherwise end: TimedOut cancels the side the work went to, the
    # cancel frees the slot (Applied), and the handoff completes CANCELED, five moves.  That
    # is no fault, so W7 (every fault-free run succeeds) shows it.
    assert "W4" in _failing(_review(order, SILENT_TAKE, fifo=True))
    review = _review(order, SILENT_TAKE, fifo=True, deadline=math.inf)
    assert _failing(review) == {"W7"}
    example = review.verdict("W7").counterexample
    assert example is not None
    kinds = [step.kind for step in example.steps]
    assert kinds == [
        MoveKind.START,
        MoveKind.TO_WORKER,
        MoveKind.DEADLINE,
        MoveKind.TO_WORKER,
        MoveKind.TO_COORDINATOR,
    ]
    deadline = example.steps[2]
    assert deadline.call is not None
    assert type(deadline.call.fact).__name__ == "TimedOut"
    assert [type(item.action).__name__ for item in deadline.issued] == [FIRST_WORK_SIDE[order]]
    assert example.steps[-1].state == "canceled"


def test_a_deadline_is_not_a_failure_and_late_replies_still_arrive() -> None:
    # With no failure allowed at all (--failures 0) the deadline still fires, once a handoff:
    # after it, the acknowledgement and fact of the work done before it are delivered (late
    # replies) and the handoff ends CANCELED (W5 holds).
    from handoff._compile.table import compiled
    from handoff._review.environment import Rules
    from handoff._review.system import SystemWorld

    order = HandoffOrder.SOURCE_FIRST
    system = System(
        TOMBSTONE,
        fifo=True,
        faults=0,
        deadline=math.inf,
        acknowledge=ON_REPLY,
        drains_transfers=True,
    )
    assert _failing(review_order(order, system=system)) == set()
    world = SystemWorld(compiled(order), system, Rules(order))

    def after(node: Any, kind: MoveKind) -> Any:
        move = next(m for m in world.moves(node) if m.step.kind is kind)
        assert move.node is not None
        return move.node

    node = after(
        after(after(world.root()[0], MoveKind.START), MoveKind.TO_WORKER), MoveKind.DEADLINE
    )
    moves = list(world.moves(node))
    assert not [m for m in moves if m.step.kind is MoveKind.DEADLINE]  # once
    late = [
        str(m.step.message.describe())
        for m in moves
        if m.step.kind is MoveKind.TO_COORDINATOR and m.step.message
    ]
    assert late == ["#0 Submitted"]
    plain = review_order(order, system=attrs.evolve(system, deadline=None))
    assert review_order(order, system=system).configurations > plain.configurations


def test_the_simulation_fires_the_deadline_after_its_milliseconds() -> None:
    def run(deadline: float | None) -> Any:
        system = System(SILENT_TAKE, fifo=True, deadline=deadline, acknowledge=ON_REPLY)
        return simulate(
            SimulationConfig(handoffs=400, concurrency=8, fault_rate=0.05, seed=1, system=system)
        )

    waiting, ended = run(None), run(200.0)
    assert waiting.incomplete > 0
    assert ended.incomplete == 0
    assert ended.ok
    assert ended.virtual_ms >= 200.0


def test_the_deadline_on_the_command_line_and_in_a_trace(tmp_path: Path) -> None:
    review = run_handoff(
        "review", "--workers", "tombstone", "--fifo", "--failures", "0", "--deadline",
        "--drain-transfers", cwd=tmp_path,
    )  # fmt: skip
    assert review.returncode == 0, review.stdout + review.stderr
    assert "a deadline per handoff" in review.stdout
    simulated = run_handoff("simulate", "--workers", "tombstone", "--deadline", cwd=tmp_path)
    assert simulated.returncode == 2
    assert simulated.stderr.strip().endswith(
        "--deadline takes MS in a simulation: a time after the start"
    )
    bad = run_handoff("simulate", "--workers", "tombstone", "--deadline", "-3", cwd=tmp_path)
    assert bad.returncode == 2
    assert "expected a deadline in milliseconds" in bad.stderr
    for deadline in (math.inf, 50.0):
        workers = Workers.of(System(TOMBSTONE, deadline=deadline))
        assert workers.system().deadline == deadline
    assert unmirrored(System(TOMBSTONE, deadline=50.0)) == (
        "terminal facts counted by --failures only: drop --deadline"
    )


# -- the docs' table of the runtime's duties

DRAIN = "`--drain-transfers`"


def _runtime_rows() -> dict[tuple[str, str, str, str], tuple[str, str]]:
    text = (Path(__file__).parents[1] / "docs" / "integrating.md").read_text(encoding="utf-8")
    section = text.split("<!-- BEGIN GENERATED: runtime-verdicts -->")[1]
    rows = section.split("<!-- END GENERATED: runtime-verdicts -->")[0].strip().splitlines()[2:]
    found = {}
    for row in rows:
        workers, delivery, faults, runtime, reply, send = (
            cell.strip() for cell in row.strip("|").split("|")
        )
        found[workers, delivery, faults, runtime] = (reply, send)
    return found


def test_the_runtime_table_shows_what_the_docs_say() -> None:
    rows = _runtime_rows()
    any_order, fifo = "any order", "FIFO per worker"

    def both(workers: str, delivery: str, faults: str, runtime: str) -> str:
        reply, send = rows[workers, delivery, faults, runtime]
        assert reply == send
        return reply

    def drained(workers: str, delivery: str, faults: str, runtime: str = "") -> str:
        """A row whose runtime also drains transfers (every row after the first ones)."""
        return both(workers, delivery, faults, f"{runtime} {DRAIN}".strip())

    # The drain itself: the cleanup's race in every world without it, gone with it.
    for workers in ("forgetful", "tombstone"):
        for delivery in (any_order, fifo):
            assert "misplaces KV (W9)" in both(workers, delivery, "none", "none")
            assert "W9" not in drained(workers, delivery, "none")
    assert drained("tombstone", any_order, "none") == "safe"
    assert drained("forgetful", fifo, "none") == "safe"
    for delivery in (any_order, fifo):
        hang = drained("tombstone", delivery, "cleanup-failure", "`--no-retry`")
        assert hang == "hangs (W4, W5)"
        assert drained("tombstone", delivery, "cleanup-failure") == "safe"
        assert drained("tombstone", delivery, "lose", "`--resend cleanups`") == "safe"
    assert drained("forgetful", fifo, "lose", "`--resend cleanups`") == "safe"
    assert drained("forgetful", fifo, "lose", "`--resend everything`") == "leaks (W1, W2)"
    # Every remedy the docs recommend for a restart is safe and live, each with the
    # destination refusing the write its restart left unvouched: alone, a remedy that does
    # not refuse it keeps the restart's own race (`RESTART_RACE`).
    race = "misplaces KV (W9)"
    assert drained("tombstone", any_order, "crash", "`--restart durable-tombstones`") == race
    both_remedies = "`--restart durable-tombstones,refuses-unvouched`"
    assert drained("tombstone", any_order, "crash", both_remedies) == "safe"
    assert drained("tombstone", any_order, "crash", "`--restart refuses-unvouched`") == "safe"
    assert drained("forgetful", fifo, "crash", "`--restart refuses-unvouched`") == "safe"
    resent = "`--restart loses-inbox` `--resend cleanups`"
    assert drained("tombstone", fifo, "crash", resent) == race
    resent_fenced = "`--restart loses-inbox,refuses-unvouched` `--resend cleanups`"
    assert drained("tombstone", fifo, "crash", resent_fenced) == "safe"
    lost = drained("tombstone", fifo, "crash", "`--restart loses-inbox`")
    assert lost == f"hangs (W4, W5); {race}"
    for delivery in (any_order, fifo):
        kept = drained("tombstone", delivery, "crash", "`--restart keeps-slots`")
        assert kept == "leaks (W1, W2)"
        assert drained("tombstone", delivery, "none", "`--deadline`") == "safe"


def test_the_drawings_show_the_runtimes_moves() -> None:
    from handoff._docs.path_diagram import system_sequence_of

    lines = []
    worlds: list[tuple[WorkerContract, dict[str, Any]]] = [
        (FORGETFUL, {"resend": Resend.EVERYTHING, "injected": LOSE}),
        (TOMBSTONE, {"restart": Restart.of(["loses-inbox"]), "injected": CRASH}),
    ]
    for contract, world in worlds:
        review = _review(HandoffOrder.SOURCE_FIRST, contract, fifo=True, faults=1, **world)
        for verdict in review.verdicts:
            if verdict.counterexample is not None:
                _title, messages = system_sequence_of(review, verdict, verdict.counterexample)
                lines += [message.text for message in messages]
    text = "\n".join(lines)
    assert "lost: the runtime's timer will send it again" in text
    assert "sent again: the runtime's timer fired" in text
    assert "lost with its inbox: #1 CancelSource" in text


def test_a_runtime_option_about_a_fault_the_world_does_not_suffer_is_a_usage_error(
    tmp_path: Path,
) -> None:
    restart = run_handoff(
        "review", "--workers", "tombstone", "--restart", "keeps-slots", cwd=tmp_path
    )
    assert restart.returncode == 2
    assert restart.stderr.strip().endswith("give --faults crash too")
    resend = run_handoff(
        "simulate", "--workers", "tombstone", "--faults", "crash", "--resend", "cleanups",
        cwd=tmp_path,
    )  # fmt: skip
    assert resend.returncode == 2
    assert "--resend says what is sent again once lost" in resend.stderr

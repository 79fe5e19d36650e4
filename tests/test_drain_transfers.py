"""Draining transfers (`--drain-transfers`): the runtime holds a handoff's `CancelDestination`
while a `StartTransfer` of it has not reached the source, the remedy for the cleanup's
transfer race (W9, and W8 when the slot is another request's by then).

Cleanup issues `CancelSource` and `CancelDestination` together, so without the hold the
destination may free the request's slot while the transfer is still on its way to a source
that holds the KV and performs it.  The hold is a runtime's duty: no chart can wait for a
message it does not see."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from support import run_handoff

from handoff import HandoffOrder
from handoff._compile.table import compiled
from handoff._review.environment import Rules
from handoff._review.explore import Review, review_order
from handoff._review.spin.system import unmirrored
from handoff._review.system import SystemWorld
from handoff._review.verdict import Counterexample, MoveKind, TraceStep
from handoff._runs.simulation import SimulationConfig, simulate
from handoff._runs.trace import Workers, read_trace
from handoff._system.config import Acknowledge, Resend, System
from handoff._system.faults import Fault
from handoff._system.profiles import LIVE, RuntimeProfile
from handoff._system.properties import Key
from handoff._system.runtime import drained
from handoff._system.workers import (
    FORGETFUL,
    RUNTIME_OWN,
    TOMBSTONE,
    Message,
    MessageKind,
    Role,
    WorkerContract,
)
from handoff._values.messages import HandoffAction
from handoff._values.values import HandoffId

W7, W8, W9 = Key.EVERY_HANDOFF_SUCCEEDS, Key.SLOT_OWNED_ONCE, Key.KV_INTO_OWN_SLOT
ORDERS = list(HandoffOrder)
ON_SEND = Acknowledge.ON_SEND
HID = HandoffId(uuid.UUID(int=1))

WORLDS: dict[str, dict[str, Any]] = {
    "tombstone": {"contract": TOMBSTONE},
    "tombstone-fifo": {"contract": TOMBSTONE, "fifo": True},
    "forgetful-fifo": {"contract": FORGETFUL, "fifo": True},
    "one-slot-two-handoffs": {"contract": TOMBSTONE, "slots": 1, "concurrency": 2},
}
"""The worlds that leak nothing and hang nowhere, W9 apart: the remedies the docs recommend
for the workers (tombstones, FIFO delivery) and the issue's run of one slot per worker
shared by two handoffs."""
LEFT = {"one-slot-two-handoffs": {W7}}
"""What a world fails besides the race: one slot cannot serve two handoffs at once, so a
run with no fault may fail the second one's reservation (W7)."""


def _system(world: str, drains: bool) -> System:
    options = dict(WORLDS[world])
    contract: WorkerContract = options.pop("contract")
    return System(contract, acknowledge=ON_SEND, drains_transfers=drains, **options)


def _failing(review: Review) -> set[object]:
    return {verdict.prop.key for verdict in review.failures()}


@pytest.fixture(scope="module")
def reviews() -> dict[tuple[str, bool, HandoffOrder], Review]:
    return {
        (world, drains, order): review_order(order, system=_system(world, drains))
        for world in WORLDS
        for drains in (False, True)
        for order in ORDERS
    }


def _transfer(step: TraceStep) -> bool:
    return step.kind is MoveKind.TO_WORKER and isinstance(
        step.message and step.message.action, HandoffAction.StartTransfer
    )


def _race(example: Counterexample) -> tuple[int, int, int]:
    """Where, in the counterexample of W9, the transfer is issued, the destination takes the
    cancel of the same handoff, and the source takes that transfer (its last step)."""
    steps = example.steps
    taken = steps[-1]
    assert _transfer(taken)
    assert taken.message is not None
    whose = taken.message.handoff
    issued = next(
        n
        for n, step in enumerate(steps)
        if step.handoff == whose
        and any(isinstance(item.action, HandoffAction.StartTransfer) for item in step.issued)
    )
    canceled = next(
        n
        for n, step in enumerate(steps)
        if step.kind is MoveKind.TO_WORKER
        and step.message is not None
        and step.message.role is Role.DESTINATION
        and step.message.handoff == whose
        and isinstance(step.message.action, HandoffAction.CancelDestination)
    )
    return issued, canceled, len(steps) - 1


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("world", list(WORLDS))
def test_without_the_hold_the_destination_frees_the_slot_before_the_transfer_lands(
    reviews: dict[tuple[str, bool, HandoffOrder], Review], world: str, order: HandoffOrder
) -> None:
    # The transfer is issued; a terminal fact makes cleanup issue both cancels; the
    # destination takes its cancel and frees the slot while the transfer is still on its way
    # to the source, which then performs it: the KV goes into a slot its request no longer
    # holds (W9).  With one slot shared by two handoffs the slot may be the other's by then.
    review = reviews[world, False, order]
    assert _failing(review) >= {W9}
    assert _failing(review) - {W8, W9} == LEFT.get(world, set())
    example = review.verdict(W9.value).counterexample
    assert example is not None
    issued, canceled, taken = _race(example)
    assert issued < canceled < taken
    terminal = [
        step
        for step in example.steps[issued:canceled]
        if step.kind is MoveKind.FAULT
        or any(isinstance(item.action, HandoffAction.CancelDestination) for item in step.issued)
    ]
    assert terminal  # the cancel is the cleanup's, after the transfer went out


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("world", list(WORLDS))
def test_holding_the_cancel_until_the_transfer_reached_the_source_keeps_w8_and_w9(
    reviews: dict[tuple[str, bool, HandoffOrder], Review], world: str, order: HandoffOrder
) -> None:
    review = reviews[world, True, order]
    assert _failing(review) == LEFT.get(world, set())
    assert review.verdict(W9.value).checked > 0  # transfers were performed, and judged
    # The hold removes runs, never adds any: fewer configurations than without it.
    assert review.configurations < reviews[world, False, order].configurations


def test_the_one_slot_world_breaks_w8_without_the_hold(
    reviews: dict[tuple[str, bool, HandoffOrder], Review],
) -> None:
    for order in ORDERS:
        assert W8 in _failing(reviews["one-slot-two-handoffs", False, order])


def test_the_hold_is_a_pure_step_over_the_handoffs_own_messages() -> None:
    cancel = Message(MessageKind.ACTION, 3, Role.DESTINATION, HandoffAction.CancelDestination(HID))
    transfer = Message(MessageKind.ACTION, 2, Role.SOURCE, HandoffAction.StartTransfer(HID, 1.0))
    assert drained(cancel, [transfer])
    assert drained(cancel, [transfer._replace(copy=True)])  # a copy may still be performed
    assert not drained(cancel, [])
    # Another handoff's transfer does not hold this one's cancel.
    assert not drained(cancel._replace(handoff=0), [transfer._replace(handoff=1)])
    assert drained(cancel._replace(handoff=1), [transfer._replace(handoff=1)])
    # Only the destination's cancel waits: the source's goes at once.
    source = Message(MessageKind.ACTION, 4, Role.SOURCE, HandoffAction.CancelSource(HID))
    assert not drained(source, [transfer])
    # The transfer's acknowledgement is no transfer on its way.
    acknowledged = transfer._replace(kind=MessageKind.OUTCOME)
    assert not drained(cancel, [acknowledged])
    # The runtime's own cancel after a session ended waits too.
    own = cancel._replace(action_id=RUNTIME_OWN)
    assert drained(own, [transfer])


@pytest.mark.parametrize("order", ORDERS)
def test_the_live_runtimes_own_cleanup_is_drained_too(order: HandoffOrder) -> None:
    # The live runtime ends a session outside the chart: its Abort makes the destination
    # cancel on its own, together with CancelSource, while the transfer may be on its way.
    live = System(TOMBSTONE, **LIVE.settings())  # type: ignore[arg-type]
    racing = review_order(order, system=live)
    assert _failing(racing) == {W9}
    example = racing.verdict(W9.value).counterexample
    assert example is not None
    abandon = next(n for n, s in enumerate(example.steps) if s.kind is MoveKind.ABANDON)
    own = next(
        n
        for n, s in enumerate(example.steps)
        if s.message is not None
        and s.message.action_id == RUNTIME_OWN
        and s.message.role is Role.DESTINATION
    )
    assert abandon < own < len(example.steps) - 1
    assert _transfer(example.steps[-1])
    drained_live = review_order(order, system=attrs.evolve(live, drains_transfers=True))
    assert drained_live.holds, _failing(drained_live)


def test_a_lost_transfer_never_sent_again_releases_the_hold() -> None:
    # A lost StartTransfer that is not re-sent (only cleanups are) ends in TimedOut, and the
    # cancel it held goes: nothing hangs (W4, W5 hold).  Re-sent, it holds the cancel until it
    # arrives.
    for resend in (Resend.CLEANUPS, Resend.EVERYTHING):
        system = System(
            TOMBSTONE,
            fifo=True,
            faults=1,
            injected=frozenset({Fault.LOSS}),
            resend=resend,
            acknowledge=Acknowledge.ON_REPLY,
            drains_transfers=True,
        )
        for order in ORDERS:
            review = review_order(order, system=system)
            assert _failing(review) == set(), (resend, order)


def test_verdicts_agree_without_symmetry_or_the_partial_order_reduction() -> None:
    # The hold of a handoff's cancel depends only on that handoff's messages, so exploring
    # one handoff's commuting moves first (and counting swapped handoffs once) stays sound.
    system = System(TOMBSTONE, concurrency=2, acknowledge=ON_SEND, drains_transfers=True)
    order = HandoffOrder.SOURCE_FIRST
    reduced = review_order(order, system=system)
    full = review_order(order, system=attrs.evolve(system, symmetry=False))
    assert full.configurations > reduced.configurations
    verdicts = {v.prop.key: v.holds for v in reduced.verdicts}
    assert verdicts == {v.prop.key: v.holds for v in full.verdicts}
    assert all(verdicts.values())
    racing = attrs.evolve(system, drains_transfers=False)
    assert {W9} == _failing(review_order(order, system=racing))
    assert {W9} == _failing(review_order(order, system=attrs.evolve(racing, symmetry=False)))


def test_the_simulation_holds_the_cancel_until_the_source_took_the_transfer() -> None:
    def run(drains: bool, **world: Any) -> Any:
        system = System(TOMBSTONE, acknowledge=ON_SEND, drains_transfers=drains, **world)
        return simulate(
            SimulationConfig(handoffs=2000, concurrency=4, fault_rate=0.2, seed=0, system=system)
        )

    racing = run(False, slots=3)
    assert {W8, W9} <= set(racing.broken)
    drained_run = run(True, slots=3)
    assert W9 not in drained_run.broken
    assert W8 not in drained_run.broken
    assert drained_run.incomplete == 0
    assert drained_run.ok
    # Lost transfers, some never sent again: every handoff still ends.
    lossy = run(True, injected=frozenset({Fault.LOSS}), resend=Resend.CLEANUPS)
    assert lossy.faults[Fault.LOSS] > 0
    assert lossy.incomplete == 0
    assert lossy.ok


def test_it_is_named_in_the_report_the_trace_the_profile_and_refused_by_spin() -> None:
    system = System(TOMBSTONE, drains_transfers=True)
    assert "transfers drained before the destination's cancel" in system.describe()
    assert "drained" not in System(TOMBSTONE).describe()
    workers = Workers.of(system)
    assert workers.system().drains_transfers is True
    assert Workers.of(System(TOMBSTONE)).system().drains_transfers is False
    mine = RuntimeProfile("mine", "drains", workers=TOMBSTONE, drains_transfers=True)
    assert mine.settings()["drains_transfers"] is True
    assert "drains_transfers" not in LIVE.settings()  # None: the System's default
    assert unmirrored(system) == "a runtime sending both cancels at once: drop --drain-transfers"


def test_the_command_line_takes_it_and_a_trace_keeps_it(tmp_path: Path) -> None:
    world = ("--workers", "tombstone", "--fifo", "--order", "SourceFirst")
    racing = run_handoff("review", *world, cwd=tmp_path)
    assert racing.returncode == 1, racing.stdout + racing.stderr
    assert racing.stdout.rstrip().splitlines()[-1].startswith("UNSAFE: W9 (SourceFirst")
    held = run_handoff("review", *world, "--drain-transfers", cwd=tmp_path)
    assert held.returncode == 0, held.stdout + held.stderr
    assert "transfers drained before the destination's cancel" in held.stdout
    # Forgetful workers in any order leak (W1) with or without the hold: its trace says the
    # runtime drained, and reads back so.
    leaking = ("--workers", "forgetful", "--order", "SourceFirst", "--drain-transfers")
    kept = run_handoff("review", *leaking, "--trace-out", "t.jsonl", cwd=tmp_path)
    assert kept.returncode == 1, kept.stdout + kept.stderr
    path = tmp_path / "t.jsonl"
    assert '"drain_transfers":true' in path.read_text(encoding="utf-8").splitlines()[0]
    header = read_trace(path).workers
    assert header is not None
    assert header.system().drains_transfers is True
    alone = run_handoff("review", "--drain-transfers", cwd=tmp_path)
    assert alone.returncode == 2
    assert alone.stderr.strip().endswith(
        "--drain-transfers is about the workers: give --workers too"
    )
    spin = run_handoff("review", "--engine", "spin", *world, "--drain-transfers", cwd=tmp_path)
    assert spin.returncode == 2
    assert len(spin.stderr.strip().splitlines()) == 1
    assert "drop --drain-transfers" in spin.stderr


def _walk(order: HandoffOrder, system: System) -> Iterator[tuple[Any, TraceStep]]:
    """Every move of the system world from every configuration it reaches: the configuration
    it is made from, and the move's step."""
    world = SystemWorld(compiled(order), system, Rules(order))
    node, key = world.root()
    seen = {key}
    queue = [node]
    for node in queue:
        for move in world.moves(node):
            yield node, move.step
            if move.node is not None and move.key not in seen:
                seen.add(move.key)
                queue.append(move.node)


def _behind_a_held_cancel(node: Any, step: TraceStep) -> bool:
    """Whether `step` delivers a message its channel holds behind a held cancel."""
    message = step.message
    if step.kind is not MoveKind.TO_WORKER or message is None:
        return False
    decoded = node.codes.decoded(node.state.flight)
    for channel in node.state.flight:
        queued = [node.codes.messages[code] for code in channel]
        if message in queued:
            ahead = queued[: queued.index(message)]
            return any(drained(other, decoded) for other in ahead)
    return False


@pytest.mark.parametrize("fifo", [False, True])
def test_no_cancel_reaches_the_destination_while_its_transfer_is_on_its_way(fifo: bool) -> None:
    # Every move of every configuration of two handoffs sharing the workers: the destination
    # never takes a CancelDestination while a StartTransfer of the same handoff is in flight.
    # With FIFO delivery what was sent behind a held cancel goes first (it was not sent).
    system = System(TOMBSTONE, fifo=fifo, concurrency=2, acknowledge=ON_SEND, drains_transfers=True)
    overtook = False
    for node, step in _walk(HandoffOrder.DESTINATION_FIRST, system):
        message = step.message
        if step.kind is MoveKind.TO_WORKER and message is not None:
            in_flight = node.codes.decoded(node.state.flight)
            assert not drained(message, in_flight), step
            overtook = overtook or (fifo and _behind_a_held_cancel(node, step))
    assert overtook is fifo
    # Without the hold the destination does take such a cancel.
    racing = attrs.evolve(system, drains_transfers=False)
    assert any(
        step.kind is MoveKind.TO_WORKER
        and step.message is not None
        and drained(step.message, node.codes.decoded(node.state.flight))
        for node, step in _walk(HandoffOrder.DESTINATION_FIRST, racing)
    )

"""Handoffs sharing their workers (`--concurrency`), bounded memories and slots, contracts per
role, hashable and nondeterministic contracts, the properties W6 and W7, and properties of
one's own: each verdict below is worked out from the contract, not copied from a run."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import threading
from collections.abc import Hashable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from support import STALE_TRANSFER, Refusing, SecondSlot, run_handoff, uncovered

from handoff import HandoffCompletion, HandoffOrder, SystemView
from handoff._review.explore import Review, review_order
from handoff._review.spin.system import unmirrored
from handoff._review.system import SystemWorld
from handoff._review.system_replay import line_of, replay_moves
from handoff._review.system_state import judge_own
from handoff._review.system_words import describe_step, overtaken
from handoff._system.config import Acknowledge, System
from handoff._system.faults import Fault
from handoff._system.properties import Key, find_property, own_property
from handoff._system.workers import (
    FORGETFUL,
    TOMBSTONE,
    ContractTable,
    PerRole,
    RequestMemory,
    Role,
    Tombstone,
    WorkerContract,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    contract_spelling,
    find_contract,
)

SF = HandoffOrder.SOURCE_FIRST
M, T, Y = RequestMemory, WorkerTask, WorkerReply


def _review(contract: WorkerContract, **options: Any) -> Review:
    return review_order(SF, system=System(contract, **options))


def _failing(review: Review) -> set[object]:
    return {verdict.prop.key for verdict in review.failures()}


@pytest.fixture(scope="module")
def shared() -> dict[str, Review]:
    """tombstone workers shared by two handoffs, with and without symmetry reduction.

    A run suffers one terminal fact or failed work here, not the command's two: the full
    exploration is 11,664 configurations rather than over 100,000, and what is judged (a
    tombstone per request, whichever handoff a fault strikes) is the same."""
    return {
        "reduced": _review(TOMBSTONE, concurrency=2, faults=1),
        "full": _review(TOMBSTONE, concurrency=2, faults=1, symmetry=False),
    }


def test_tombstones_kept_for_every_request_keep_two_handoffs_safe(
    shared: dict[str, Review],
) -> None:
    # Each request has its own tombstone, so what keeps one handoff from leaking keeps two.
    assert _failing(shared["reduced"]) == STALE_TRANSFER
    assert _failing(shared["full"]) == STALE_TRANSFER
    # Two interchangeable handoffs: a configuration and its mirror image are counted once.
    assert shared["reduced"].configurations < shared["full"].configurations


def test_one_tombstone_for_two_handoffs_leaks_the_evicted_ones_late_work() -> None:
    # A worker remembering one idle request forgets the other's tombstone as soon as a second
    # request goes idle, and the late work of the forgotten one is then taken after it was
    # told Noop: W2 breaks, and W1 once that handoff completes CANCELED.  One fault a run is
    # enough (the command's default of two finds the same leak in 80,579 configurations,
    # not 1,404): with it, only h2 is cancelled, and h1's finished request evicts h2's tombstone.
    review = _review(Tombstone(remembers=1), concurrency=2, faults=1)
    assert {Key.NO_SLOT_AFTER_FREED, Key.SLOTS_AT_COMPLETION} <= _failing(review)
    example = review.verdict("W2").counterexample
    assert example is not None
    assert {step.handoff for step in example.steps if step.handoff is not None} == {0, 1}
    # In words, each move says whose it is; the one cancel (h2's, the run's one fault) reached
    # the source before h2's submission, and is told once.
    words = [describe_step(step) for step in example.steps]
    assert words[0].startswith("the runtime calls h1's start() -> ")
    assert any(word.startswith("the runtime calls h2's start() -> ") for word in words)
    assert "the runtime reports on_fact(Failed) to h2 -> cancelling_source" in "\n".join(words)
    assert list(overtaken(example.steps)) == [
        "the cancel h2 #1 CancelSource reached the source before h2 #0 SubmitPrefill, the "
        "work it cancels: it overtook it"
    ]
    # h2's tombstone is gone when its submission arrives: taken, after h2 was told Noop.
    assert "the source gets h2 #0 SubmitPrefill: holds a KV slot for it" in "\n".join(words)


def test_a_reduced_review_judges_as_the_full_one() -> None:
    worlds = [
        (FORGETFUL, {"faults": 0}),
        (TOMBSTONE, {"faults": 1}),
    ]
    for contract, options in worlds:
        reduced = _review(contract, concurrency=2, **options)
        full = _review(contract, concurrency=2, symmetry=False, **options)
        assert _failing(reduced) == _failing(full), (contract, options)


class _Unkept(dict):  # type: ignore[type-arg]
    """A cache that keeps nothing: every lookup misses, so every piece is worked out again."""

    def __setitem__(self, key: object, value: object) -> None:
        return None


class _Afresh(SystemWorld):
    """The system world working out every move afresh: no call's, reaction's or key's result
    kept for the next move that needs it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._transitions = _Unkept()
        self._reactions = _Unkept()
        self._keys = _Unkept()
        self._freeing = _Unkept()


class _Careless(SystemWorld):
    """A system world that keeps what a call does under the coordinator's configuration
    alone, whichever call it was: a cache keyed on too little."""

    @staticmethod
    def _transition_key(configuration: int, *call: Any) -> tuple[int, int]:
        return configuration, 0


def _same(one: Review, other: Review) -> None:
    """Two reviews that explored the same configurations and judged them the same, each
    property with the same counterexample, move for move."""
    assert (one.configurations, one.transitions) == (other.configurations, other.transitions)
    for mine, theirs in zip(one.verdicts, other.verdicts, strict=True):
        assert mine.prop.key == theirs.prop.key
        assert (mine.checked, mine.violations) == (theirs.checked, theirs.violations), mine.prop
        assert mine.summary == theirs.summary
        assert mine.counterexample == theirs.counterexample, mine.prop


def test_the_moves_worked_out_once_are_the_moves_worked_out_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a call does in a coordinator configuration, what a worker does with a message and
    # the canonical key of a configuration are each worked out once and kept; kept under a
    # key that missed something they depend on (the kind of move, the chart state, the
    # copy), a later move would reuse the wrong one, and the review would differ.
    from handoff._review import system as explore  # where the explorer finds the world

    worlds: list[tuple[WorkerContract, dict[str, Any]]] = [
        (Tombstone(remembers=1), {"concurrency": 2, "faults": 1}),
        (FORGETFUL, {"concurrency": 2, "faults": 1, "fifo": True}),
        (TOMBSTONE, {"concurrency": 2, "faults": 0, "slots": 1}),
        (FORGETFUL, {"injected": frozenset({Fault.DUPLICATION, Fault.LOSS}), "faults": 0}),
        (TOMBSTONE, {"injected": frozenset({Fault.RESTART}), "faults": 1}),
        (TOMBSTONE, {"concurrency": 2, "faults": 1, "acknowledge": Acknowledge.ON_REPLY}),
    ]
    for contract, options in worlds:
        kept = _review(contract, **options)
        with monkeypatch.context() as patched, uncovered():  # the same code, worked out anew
            patched.setattr(explore, "SystemWorld", _Afresh)
            afresh = _review(contract, **options)
        _same(kept, afresh)
    # Kept under the coordinator's configuration alone, what a call does is reused for
    # another call: the comparison tells.
    with monkeypatch.context() as patched:
        patched.setattr(explore, "SystemWorld", _Careless)
        careless = _review(Tombstone(remembers=1), concurrency=2, faults=1)
    with pytest.raises(AssertionError):
        _same(_review(Tombstone(remembers=1), concurrency=2, faults=1), careless)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_orders_reviewed_in_a_process_each_are_reviewed_as_one_after_the_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from handoff._review import cli as explore  # the command line forks, the explorer never

    system = System(Tombstone(remembers=1), concurrency=2, faults=1)
    orders = list(HandoffOrder)
    one_by_one = [review_order(order, system=system) for order in orders]
    monkeypatch.setattr(explore, "_cores", lambda: 2)  # fork even on a machine with one core
    # and in a test process (its other threads only carry results: the child never uses them)
    monkeypatch.setattr(explore, "_single_threaded", lambda: True)
    forked = explore.review_orders(orders, system=system)
    for mine, theirs in zip(one_by_one, forked, strict=True):
        _same(mine, theirs)
        assert theirs.order is mine.order
        # A contract is known by identity (a trace spells a shipped one by its name).
        assert theirs.system is system

    # A review that does not come back from its process is made here, the same.
    def garbled(run: object, connection: Any) -> None:
        connection.send_bytes(b"not a pickle")
        connection.close()

    monkeypatch.setattr(explore, "_send_back", garbled)
    again = explore.review_orders(orders, system=system)
    for mine, theirs in zip(one_by_one, again, strict=True):
        _same(mine, theirs)


def test_a_process_running_threads_reviews_every_order_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from handoff._review import cli as explore

    def no_fork(*_: object) -> None:
        raise AssertionError("a process running threads forked")

    monkeypatch.setattr(explore, "_cores", lambda: 2)
    monkeypatch.setattr(multiprocessing, "get_context", no_fork)
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    system = System(TOMBSTONE, concurrency=2, faults=1)
    found = explore.review_orders(list(HandoffOrder), system=system)
    assert [review.order for review in found] == list(HandoffOrder)
    assert all(_failing(review) == STALE_TRANSFER for review in found)


def test_a_shared_run_replays_move_by_move() -> None:
    system = System(FORGETFUL, concurrency=2)
    review = review_order(SF, system=system)
    example = review.verdict("W2").counterexample
    assert example is not None
    from handoff._compile.table import compiled
    from handoff._review.environment import Rules
    from handoff._review.system import SystemWorld

    world = SystemWorld(compiled(SF), system, Rules(SF))
    replayed = replay_moves(world, [line_of(step) for step in example.steps])
    assert replayed.moves == len(example.steps)
    assert Key.NO_SLOT_AFTER_FREED in {found.finding.key for found in replayed.findings}


# -- contracts -----------------------------------------------------------------------------


class _Maybe(WorkerContract):
    """A take may succeed or fail: two reactions, both explored."""

    name = "maybe"

    def react(self, task: WorkerTask, memory: Any) -> WorkerReaction | tuple[WorkerReaction, ...]:
        if task is T.TAKE and memory is M.UNKNOWN:
            return (TOMBSTONE.react(task, memory), WorkerReaction(memory, Y.FAILED))
        return TOMBSTONE.react(task, memory)


class _Counting(WorkerContract):
    """Remembers any hashable value: how many tasks it saw for the request, up to 3."""

    name = "counting"
    initial: Hashable = 0

    def react(self, task: WorkerTask, memory: Any) -> WorkerReaction:
        return WorkerReaction(min(memory + 1, 3), Y.DONE if task is not T.CANCEL else Y.NOOP)


def test_a_second_slot_for_one_request_breaks_w6() -> None:
    review = _review(SecondSlot())
    assert Key.ONE_SLOT_PER_REQUEST in _failing(review)
    example = review.verdict("W6").counterexample
    assert example is not None
    assert "holds 2 KV slots for one request" in example.finding


def test_workers_that_let_nothing_succeed_break_w7_only_there() -> None:
    failing = _failing(_review(Refusing()))
    assert Key.EVERY_HANDOFF_SUCCEEDS in failing
    assert Key.NO_SLOT_AFTER_FREED not in failing


def test_a_nondeterministic_contract_explores_every_answer() -> None:
    table = ContractTable(_Maybe())
    assert not table.deterministic
    assert len(table.reactions(T.TAKE, M.UNKNOWN)) == 2
    assert table.react(T.TAKE, M.UNKNOWN).reply is Y.DONE
    # Failing a take is what a worker failure already does: no new leak, and more runs.
    maybe = _review(_Maybe(), faults=0)
    plain = _review(TOMBSTONE, faults=0)
    assert maybe.configurations > plain.configurations
    assert Key.NO_SLOT_AFTER_FREED not in _failing(maybe)


def test_a_contract_may_remember_any_hashable_value() -> None:
    table = ContractTable(_Counting())
    assert table.initial(Role.SOURCE) == 0
    assert table.memories(Role.SOURCE) == (0, 1, 2, 3)
    assert unmirrored(System(_Counting())) == ("a contract remembering RequestMemory values only")


def test_contracts_by_name_per_role_and_bounded() -> None:
    bounded = find_contract("tombstone:2")
    assert bounded.name == "tombstone:2"
    assert bounded.remembers == 2
    split = find_contract("source=tombstone,destination=forgetful")
    assert isinstance(split, PerRole)
    assert split.for_role(Role.SOURCE) is TOMBSTONE
    assert split.for_role(Role.DESTINATION) is FORGETFUL
    for bad in ("tombstone:0", "tombstone:x", "source=tombstone"):
        with pytest.raises(ValueError, match="tombstone"):
            find_contract(bad)


def test_a_slot_bound_refuses_the_work_beyond_it() -> None:
    # One slot per worker, two handoffs: the second submission is refused (FAILED) while the
    # first holds the slot; a refused take holds nothing, so no request gets two slots.
    review = _review(TOMBSTONE, concurrency=2, slots=1, faults=0)
    assert Key.ONE_SLOT_PER_REQUEST not in _failing(review)
    assert review.configurations > 0


def test_spin_says_in_one_line_what_it_does_not_mirror() -> None:
    assert unmirrored(System(TOMBSTONE)) is None
    assert unmirrored(System(TOMBSTONE, fifo=True)) is None
    # Spin mirrors every world the shipped contracts make: FIFO or not, every
    # fault injected, either acknowledgement (tests/test_spin_system.py checks they agree).
    everything = frozenset({Fault.DUPLICATION, Fault.LOSS, Fault.RESTART})
    assert unmirrored(System(FORGETFUL, injected=everything, budget=3)) is None
    assert unmirrored(System(TOMBSTONE, acknowledge=Acknowledge.ON_SEND)) is None
    # Several handoffs sharing the workers too, a bounded memory forgetting the longest idle.
    assert unmirrored(System(TOMBSTONE, concurrency=2)) is None
    assert unmirrored(System(Tombstone(remembers=1), concurrency=4, fifo=True)) is None
    assert unmirrored(System(TOMBSTONE, slots=1)) is None
    mine = own_property(lambda view: True, "mine")
    assert unmirrored(System(TOMBSTONE, properties=(mine,))) == (
        "the shipped properties only: drop --property"
    )
    assert unmirrored(System(PerRole(TOMBSTONE, FORGETFUL))) is None
    assert unmirrored(System(_Maybe())) == (
        "a contract answering one way only: give a deterministic contract"
    )
    assert unmirrored(System(Tombstone(remembers=1))) is None


# -- properties of one's own -------------------------------------------------------------


def _at_most_one_source_slot(view: SystemView) -> bool:
    """The source holds at most one KV slot at a time."""
    return view.source.held <= 1


def test_a_property_of_ones_own_fails_with_its_shortest_counterexample() -> None:
    mine = own_property(_at_most_one_source_slot, "one_slot")
    review = _review(TOMBSTONE, concurrency=2, properties=(mine,), faults=0)
    verdict = review.verdict("one_slot")
    assert not verdict.holds
    example = verdict.counterexample
    assert example is not None
    # Shortest: both handoffs start, and each submission reaches the source.
    assert len(example.steps) == 4
    assert example.finding == "The source holds at most one KV slot at a time does not hold"


def test_what_a_predicate_answers_is_judged() -> None:
    def answer(value: object) -> str | None:
        return judge_own(own_property(lambda view: value, "p"), None)  # type: ignore[arg-type]

    assert answer(True) is None
    assert answer(False) == "p does not hold"
    assert answer("h1 is late") == "h1 is late"
    assert answer(3) == "the property p returned 3; expected True, False or a reason"

    def raising(view: SystemView) -> bool:
        raise KeyError("nope")

    assert judge_own(own_property(raising, "r"), None) == (  # type: ignore[arg-type]
        "the property r raised KeyError: 'nope'"
    )


def test_a_property_is_found_by_module_and_name(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "props_here.py").write_text(
        "def fine(view):\n    '''Always.'''\n    return True\nNOT_ONE = 3\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = find_property("props_here:fine")
    assert found.title == "Always"
    assert found.key.value == "fine"
    with pytest.raises(ValueError, match="expected MODULE:NAME"):
        find_property("fine")
    with pytest.raises(ValueError, match="has no function NOT_ONE"):
        find_property("props_here:NOT_ONE")


def test_a_property_written_from_the_docs_fails_and_its_trace_replays(tmp_path: Path) -> None:
    (tmp_path / "myprops.py").write_text(
        "def at_most_one_source_slot(view):\n"
        '    """The source holds at most one KV slot at a time."""\n'
        "    return view.source.held <= 1\n",
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "handoff"]
    reviewed = subprocess.run(
        [*command, "review", "--order", "SourceFirst", "--workers", "tombstone",
         "--concurrency", "2", "--fifo", "--property", "myprops:at_most_one_source_slot",
         "--trace-out", "bad.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr
    assert "UNSAFE: at_most_one_source_slot" in reviewed.stdout
    replayed = subprocess.run(
        [*command, "replay", "--property", "myprops:at_most_one_source_slot", "bad.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "VIOLATED bad.jsonl:" in replayed.stdout
    assert "at_most_one_source_slot" in replayed.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == [
        "bad.jsonl",
        "myprops.py",
    ]


def test_a_chart_that_reserves_a_second_destination_slot_breaks_w6(tmp_path: Path) -> None:
    # ReservesTwice issues a second ReserveDestination once the first is accepted.  A tombstone
    # destination drops work only for a request it remembers as canceled or freed; this one is
    # held, so it takes the second reservation as one more slot: two slots for one request.
    tests = Path(__file__).parent
    reviewed = run_handoff(
        "review", "--chart", "charts.reservation:ReservesTwice", "--workers", "tombstone",
        cwd=tmp_path, env={"PYTHONPATH": str(tests)},
    )  # fmt: skip
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr
    out = reviewed.stdout
    assert "W6 fails: the destination holds 2 KV slots for one request after #2 " in out
    # The shortest run: the source is held, the destination accepts #1, the chart asks again.
    assert "issued #2 ReserveDestination" in out
    assert "the destination gets #2 ReserveDestination: holds a KV slot for it" in out
    assert "UNSAFE: W6 (ReservesTwice, tombstone workers)" in out


def test_a_bounded_or_per_role_contract_is_spelled_so_its_trace_replays_in_its_world(
    tmp_path: Path,
) -> None:
    # A trace names the contract as `--workers` does, bound included: replayed with unbounded
    # tombstones, the eviction run could not be made (h2's tombstone would still be there).
    assert contract_spelling(Tombstone(remembers=1)) == "tombstone:1"
    mixed = PerRole(Tombstone(remembers=2), FORGETFUL)
    assert contract_spelling(mixed) == "source=tombstone:2,destination=forgetful"
    assert find_contract(contract_spelling(mixed)).name == mixed.name
    reviewed = run_handoff(
        "review", "--order", "SourceFirst", "--workers", "tombstone:1", "--concurrency", "2",
        "--failures", "1", "--trace-out", "evicted.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr
    # --failures bounds the terminal facts and failed works of a run, and the heading says so.
    assert (
        "2 handoffs sharing them, at most 1 failure a run, StartTransfer acknowledged on send, "
        "other work on the worker's reply, runtime offline: "
    ) in (reviewed.stdout)
    header = json.loads((tmp_path / "evicted.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["workers"]["contract"] == "tombstone:1"
    assert header["workers"]["faults"] == 1
    replayed = run_handoff("replay", "evicted.jsonl", cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "VIOLATED evicted.jsonl:" in replayed.stdout


def test_w5_wants_every_handoff_told_a_terminal_fact_to_end_canceled() -> None:
    from handoff._review.graph import End
    from handoff._review.system_state import SystemWatch, _Node

    success = SimpleNamespace(is_complete=True, completion=HandoffCompletion.SUCCESS)
    canceled = SimpleNamespace(is_complete=True, completion=HandoffCompletion.CANCELED)
    told, untold = SystemWatch(terminated=True), SystemWatch()

    def end(coordinators: tuple[Any, ...], watches: tuple[SystemWatch, ...], w5: bool) -> End:
        node = _Node(coordinators, cast(Any, SimpleNamespace(watches=watches)), cast(Any, None))
        return node.end(terminated=w5)

    # Both handoffs told a terminal fact: one of them succeeding breaks W5.
    assert end((canceled, success), (told, told), True) is End.SUCCESS
    assert end((success, canceled), (told, told), True) is End.SUCCESS
    assert end((canceled, canceled), (told, told), True) is End.CANCELED
    # A handoff told nothing may succeed beside one canceled.
    assert end((canceled, success), (told, untold), True) is End.CANCELED
    # Every handoff (W4, W7): SUCCESS only when each succeeded.
    assert end((canceled, success), (told, untold), False) is End.CANCELED
    assert end((success, success), (untold, untold), False) is End.SUCCESS
    incomplete = SimpleNamespace(is_complete=False, completion=None)
    assert end((incomplete, success), (told, told), True) is End.STUCK

"""The system review and the simulation under injected faults (`--faults duplicate,lose,crash`,
`--fault-budget`) and the runtime's acknowledgement policy (`--acknowledge on-reply|on-send`).

Each expected verdict is worked out from the contracts before it is asserted; the commands the
issue names run for real, in subprocesses side by side.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import attrs
import pytest
from support import run_handoff, run_side_by_side

from handoff import HandoffOrder
from handoff._compile.table import compiled
from handoff._review.environment import Rules
from handoff._review.explore import review_order
from handoff._review.report import counterexample_trace
from handoff._review.system import SystemWorld
from handoff._review.system_replay import line_of, replay_system_run
from handoff._review.verdict import MoveKind
from handoff._runs.trace import read_trace, trace_text, write_trace
from handoff._system import faults
from handoff._system.config import Acknowledge, Resend, Restart, System
from handoff._system.faults import NETWORK, Fault, Strike, strike_message
from handoff._system.workers import TOMBSTONE

TESTS = Path(__file__).parent
CHART = "charts.acknowledgement:CancelOnceSubmitted"

RUNS = {
    "tombstone-crash": (
        "review", "--workers", "tombstone", "--faults", "crash", "--trace-out", "crash.jsonl",
    ),
    "forgetful-fifo-duplicate": (
        "review", "--workers", "forgetful", "--fifo", "--faults", "duplicate",
        "--trace-out", "duplicate.jsonl",
    ),
    "tombstone-fifo-duplicate": (
        "review", "--workers", "tombstone", "--fifo", "--faults", "duplicate",
    ),
    # Both drain transfers (W9, the cleanup's race, apart): the acknowledgement is what differs.
    "on-send": (
        "review", "--chart", CHART, "--workers", "forgetful", "--acknowledge", "on-send",
        "--drain-transfers",
    ),
    "on-reply": (
        "review", "--chart", CHART, "--workers", "forgetful", "--acknowledge", "on-reply",
        "--drain-transfers",
    ),
    "bad-fault": ("review", "--workers", "tombstone", "--faults", "nope"),
    "bad-budget": ("review", "--workers", "tombstone", "--faults", "crash", "--fault-budget", "-1"),
    "budget-alone": ("review", "--workers", "tombstone", "--fault-budget", "2"),
    "faults-alone": ("review", "--faults", "crash"),
    "simulate-crash": (
        "simulate", "--workers", "tombstone", "--faults", "crash", "--fault-rate", "0.3",
        "--handoffs", "3000",
    ),
    "simulate-duplicate": (
        "simulate", "--workers", "tombstone", "--faults", "duplicate", "--fault-rate", "0.3",
        "--handoffs", "3000",
    ),
    "simulate-lose": (
        "simulate", "--workers", "tombstone", "--faults", "lose", "--handoffs", "3000",
    ),
    "simulate-on-reply": (
        "simulate", "--chart", CHART, "--workers", "forgetful", "--acknowledge", "on-reply",
        "--handoffs", "3000",
    ),
    "simulate-on-send": (
        "simulate", "--chart", CHART, "--workers", "forgetful", "--acknowledge", "on-send",
        "--handoffs", "3000",
    ),
    "simulate-faults-alone": ("simulate", "--faults", "lose"),
}  # fmt: skip


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    here = tmp_path_factory.mktemp("faults")

    return run_side_by_side(RUNS, here, env={"PYTHONPATH": str(TESTS)})


def handoff(here: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # The test charts are imported by module name, as a user's own would be from their path.
    return run_handoff(*argv, cwd=here, timeout=300, env={"PYTHONPATH": str(TESTS)})


def test_a_restart_loses_the_tombstone_and_the_late_submission_is_taken(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # Tombstones are what keep a late submission from being taken after its cancel.  A source
    # that restarts between the cancel (answered Noop, tombstone left) and the late
    # SubmitPrefill has forgotten the tombstone, so it takes the submission: the coordinator
    # was told nothing is held (W2) and completes CANCELED with the slot held (W1).
    result = done["tombstone-crash"]
    assert result.returncode == 1, result.stdout
    out = result.stdout
    assert "tombstone workers, messages delivered in any order, faults crash (1 each)" in out
    assert "W2 fails: " in out
    assert "W1 fails: the handoff completed CANCELED and, with nothing of it in flight" in out
    assert "restarts: it forgets the request and frees its slot" in out
    # The trace names the fault, so replaying it makes the restart again and breaks W2 again.
    trace = read_trace(Path(done["here"].stdout) / "crash.jsonl")
    assert trace.workers is not None
    assert trace.workers.injected == frozenset({Fault.RESTART})
    assert any(line.move == "restart" for line in trace.moves)
    replayed = handoff(Path(done["here"].stdout), "replay", "crash.jsonl")
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "VIOLATED crash.jsonl:" in replayed.stdout


def test_a_duplicate_breaks_what_fifo_alone_keeps_safe(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # FIFO keeps forgetful workers safe because a cancel cannot overtake the submission it
    # cancels.  A duplicated SubmitPrefill is sent again behind what is already in flight:
    # when the cancel was issued before the original was delivered, the copy arrives after
    # the cancel.  The source takes the original, frees it on the cancel (Applied), and a
    # forgetful source then takes the copy: a slot held for a handoff that ended CANCELED.
    result = done["forgetful-fifo-duplicate"]
    assert result.returncode == 1, result.stdout
    assert "W1 fails: the handoff completed CANCELED" in result.stdout
    assert "#0 SubmitPrefill (copy)" in result.stdout
    replayed = handoff(Path(done["here"].stdout), "replay", "duplicate.jsonl")
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr


def _failing(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The properties a text review says fail, by key."""
    return set(re.findall(r"^  (\w+) +.*  FAIL  ", result.stdout, re.MULTILINE))


def test_tombstones_with_fifo_survive_a_duplicate(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # A tombstone worker drops a take for a request it canceled or freed, so a copy of a
    # submission or reservation arriving after the cancel or release is dropped; a copy
    # arriving while the slot is held changes nothing (it is still one slot); a copy of a
    # cancel or release finds nothing held and says Noop; a copied reply is one the
    # coordinator already has (dropped as a repeat).  So every W holds but W9, the shipped
    # cleanup's own race, which no delivery order prevents (the cancels go to two workers).
    result = done["tombstone-fifo-duplicate"]
    assert _failing(result) == {"W9"}, result.stdout
    assert "faults duplicate (1 each)" in result.stdout


def test_a_chart_that_waits_for_submitted_is_safe_only_when_the_worker_acknowledges(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # CancelOnceSubmitted cancels a worker only after it acknowledged the work taking a slot.
    # On reply, that acknowledgement comes from the worker holding the slot, so the cancel
    # always finds it and frees it: safe even for forgetful workers.  On send, Submitted is
    # reported before the worker has the submission, so the cancel may reach the source
    # first, be answered Noop, and the late submission then takes a slot for ever.
    # Alone, the chart is unsafe by the contract (S5: a failed submission completes without
    # a cancel, though the contract does not promise a failed action took nothing), and a
    # review with workers says so too; the system's own properties hold on reply.
    on_reply = done["on-reply"]
    assert on_reply.returncode == 1, on_reply.stdout
    verdict = on_reply.stdout.rstrip().splitlines()[-1]
    assert verdict.startswith("UNSAFE: S5 (CancelOnceSubmitted alone); differs from the ")
    assert "workers" not in verdict
    on_send = done["on-send"]
    assert on_send.returncode == 1, on_send.stdout
    assert "W2 (CancelOnceSubmitted, forgetful workers)" in on_send.stdout
    # --acknowledge on-send overrides the default runtime's (offline) acknowledgement, and
    # the heading names both.
    assert (
        "forgetful workers, messages delivered in any order, work acknowledged on send, "
        "transfers drained before the destination's cancel, runtime offline (acknowledge "
        "overridden)"
    ) in on_send.stdout
    assert "the cancel #1 CancelSource reached the source before #0 SubmitPrefill" in (
        on_send.stdout
    )


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("bad-fault", "--faults: unknown fault 'nope': expected a comma-separated"),
        ("bad-budget", "--fault-budget: must be at least 1, got -1"),
        ("budget-alone", "--fault-budget bounds the faults injected: give --faults too"),
        ("faults-alone", "--faults is about the workers: give --workers too"),
        ("simulate-faults-alone", "--faults is about the workers: give --workers too"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(
    done: dict[str, subprocess.CompletedProcess[str]], name: str, words: str
) -> None:
    result = done[name]
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("usage:")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"handoff {RUNS[name][0]}: error: ")
    assert words in lines[0]


def _world(system: System, order: HandoffOrder = HandoffOrder.SOURCE_FIRST) -> SystemWorld:
    return SystemWorld(compiled(order), system, Rules(order))


@pytest.mark.parametrize("fifo", [False, True])
def test_without_faults_the_world_makes_exactly_the_moves_it_made_before(fifo: bool) -> None:
    # Faults are offered after every other move, and a configuration without them keeps its
    # old key: a world with faults begins each configuration's moves with the fault-free
    # world's, in the same order, so a review without --faults is the review of before.
    plain = _world(System(TOMBSTONE, fifo=fifo))
    faulty = _world(System(TOMBSTONE, fifo=fifo, injected=frozenset(NETWORK)))
    # Each world numbers the messages and memories its configurations hold, so each walks
    # its own configurations: the faulty world's twin of each is reached by the same moves.
    seen = 0
    queue = [(plain.root()[0], faulty.root()[0])]
    for node, twin in queue:
        ours = list(plain.moves(node))
        theirs = list(faulty.moves(twin))
        assert [line_of(m.step) for m in theirs[: len(ours)]] == [line_of(m.step) for m in ours]
        extra = [line_of(m.step).move for m in theirs[len(ours) :]]
        assert all(move in {fault.shown.word for fault in NETWORK} for move in extra)
        twins = zip(ours, theirs[: len(ours)], strict=True)
        queue.extend((a.node, b.node) for a, b in twins if a.node is not None)
        seen += 1
        if seen > 60:
            break
    assert seen > 60


def test_the_budget_bounds_each_fault() -> None:
    # One restart per run allows one forgotten worker; two allow both, or one twice: strictly
    # more configurations, each run still explored to its end.
    order = HandoffOrder.SOURCE_FIRST
    crash = frozenset({Fault.RESTART})
    one = review_order(order, system=System(TOMBSTONE, fifo=True, injected=crash))
    two = review_order(order, system=System(TOMBSTONE, fifo=True, injected=crash, budget=2))
    assert two.configurations > one.configurations
    assert one.verdict("Bound").holds
    assert two.verdict("Bound").holds


def test_a_lost_cleanup_is_never_retried_by_the_coordinator() -> None:
    # The coordinator issues each cleanup once and waits for its acknowledgement.  A lost
    # CancelSource is noticed only as TimedOut, which a cancelling coordinator already acts
    # on: nothing is issued again, nothing is in flight, the handoff never completes (W4).
    # Losses are survivable only by a runtime that re-sends what it lost, a duplicate.
    review = review_order(
        HandoffOrder.SOURCE_FIRST,
        system=System(TOMBSTONE, fifo=True, injected=frozenset({Fault.LOSS})),
    )
    assert review.verdict("W1").holds
    assert review.verdict("W2").holds
    w4 = review.verdict("W4")
    assert not w4.holds
    assert w4.counterexample is not None
    last = w4.counterexample.steps[-1]
    assert last.kind is MoveKind.LOSS
    assert last.message is not None
    assert last.message.describe().endswith("CancelSource")


def test_a_trace_names_its_faults_and_policy_and_replays(tmp_path: Path) -> None:
    system = System(
        TOMBSTONE,
        injected=frozenset({Fault.RESTART, Fault.LOSS}),
        budget=2,
        acknowledge=Acknowledge.ON_SEND,
    )
    review = review_order(HandoffOrder.SOURCE_FIRST, system=system)
    example = review.verdict("W1").counterexample
    assert example is not None
    trace = counterexample_trace(review, example)
    header = json.loads(trace_text(trace).splitlines()[0])
    assert header["workers"] == {
        "contract": "tombstone",
        "fifo": False,
        "faults": 2,
        "injected": ["lose", "crash"],
        "budget": 2,
        "acknowledge": "on-send",
    }
    path = tmp_path / "run.jsonl"
    write_trace(trace, path)
    again = read_trace(path)
    assert again.workers == trace.workers
    replayed = replay_system_run(again)
    assert "W1" in {found.finding.key.value for found in replayed.findings}


def _held(result: subprocess.CompletedProcess[str]) -> int:
    """The worker slots a simulation says are still held at its end."""
    line = next(line for line in result.stdout.splitlines() if "worker slots" in line)
    return int(line.split()[2].replace(",", ""))


def _left(result: subprocess.CompletedProcess[str]) -> int:
    """The worker slots a simulation says were held as their handoffs ended: the slots held at
    its end, and those a restart freed after their handoff ended."""
    line = next(line for line in result.stdout.splitlines() if "worker slots" in line)
    if "held as their handoffs ended" not in line:
        return _held(result)
    return int(line.split("; ")[1].split()[0].replace(",", ""))


def test_the_simulation_finds_what_the_review_finds(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # The same faults at scale.  A restart injected as the late submission arrives forgets
    # the tombstone its early cancel left, so tombstone workers hold slots (the review's W1);
    # copies of work are dropped by tombstones, so duplicates leak nothing (the review: safe).
    # The workers are shared: a later restart frees every slot, leaked ones too, so the slots
    # left held as their handoffs ended are counted, and fewer may still be held at the end.
    crash = done["simulate-crash"]
    assert crash.returncode == 1, crash.stdout
    assert _left(crash) > 0
    assert _held(crash) <= _left(crash)
    assert "fault         crash" in crash.stdout
    duplicate = done["simulate-duplicate"]
    assert re.search(r"broken +W9 \d+\n", duplicate.stdout), duplicate.stdout  # cleanup's race
    assert "leaks         0\n" in duplicate.stdout
    assert _held(duplicate) == 0
    assert "fault         duplicate  " in duplicate.stdout
    # A lost action is never re-sent: some handoffs never complete (the review's W4).
    lose = done["simulate-lose"]
    assert lose.returncode == 1, lose.stdout
    incomplete = next(line for line in lose.stdout.splitlines() if "incomplete" in line)
    assert int(incomplete.split()[1].replace(",", "")) > 0


def test_the_simulation_sees_the_acknowledgement_policy_as_the_review_does(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # CancelOnceSubmitted cancels only work a worker acknowledged.  On reply no worker slot is
    # left held (the review: W1 holds).  On send a cancel overtakes its submission and the
    # forgetful source keeps the late one's slot (the review: W1 fails).  The simulation's own
    # owner checks also flag this chart (it completes a failed submission without a cancel),
    # so the slots are what is compared, not the exit status.
    assert _held(done["simulate-on-reply"]) == 0, done["simulate-on-reply"].stdout
    on_send = done["simulate-on-send"]
    assert on_send.returncode == 1
    assert _held(on_send) > 0
    assert (
        "any order, work acknowledged on send, runtime offline (acknowledge overridden)\n"
        in on_send.stdout
    )


def test_a_restart_is_drawn_and_described_where_it_happens() -> None:
    from handoff._docs.path_diagram import mermaid_system_sequence
    from handoff._review.system_words import describe_step

    # With tombstone workers and no FIFO, the only way to a leak is a restart between the
    # early cancel (which left the tombstone) and the late submission: every W2
    # counterexample must show the source restarting after the cancel it kept a tombstone for
    # (six moves, as the issue found).
    review = review_order(
        HandoffOrder.SOURCE_FIRST,
        system=System(TOMBSTONE, injected=frozenset({Fault.RESTART})),
    )
    verdict = review.verdict("W2")
    example = verdict.counterexample
    assert example is not None
    # The fewest moves: start, a terminal fact, the cancel reaching the source, its Noop
    # telling the coordinator, the restart, the late submission.
    assert len(example.steps) == 6
    kinds = [step.kind for step in example.steps]
    assert MoveKind.RESTART in kinds
    restart = kinds.index(MoveKind.RESTART)
    before = [describe_step(step) for step in example.steps[:restart]]
    assert any("CancelSource: remembers the request as canceled" in w for w in before)
    assert describe_step(example.steps[restart]) == (
        "the source restarts: it forgets the request and frees its slot"
    )
    sequence = mermaid_system_sequence(review, verdict, example)
    assert f"Note over Source: {restart + 1}. restarts, forgets all" in sequence


def test_each_fault_is_shown_as_traces_already_name_its_move() -> None:
    # A fault's move kind and trace word are read from the fault (`Fault.shown`); traces
    # written before say these words, and must read back the same.
    words = {fault: MoveKind(fault.shown.move).word for fault in NETWORK}
    assert (
        words.items()
        >= {
            Fault.DUPLICATION: "duplicate",
            Fault.LOSS: "lose",
            Fault.RESTART: "restart",
            Fault.FAILED_CLEANUP: "fail",
        }.items()
    )
    assert MoveKind(Fault.FAILED_CLEANUP.shown.move) is MoveKind.WORKER_FAILS  # shared


def test_what_a_fault_does_to_a_message_is_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    message, copy = "m", "m (copy)"
    duplicated = strike_message(Fault.DUPLICATION, message, copy)
    assert (duplicated.now, duplicated.again, duplicated.lost) == (True, copy, False)
    lost = strike_message(Fault.LOSS, message, copy)
    assert (lost.now, lost.again, lost.lost) == (False, None, True)
    assert lost.notice is not None
    # Sent again but not delivered now: the message itself is held back, not lost.
    held = Strike(message=True, delivered=False, copy=True)
    monkeypatch.setitem(faults._STRIKES, Fault.DUPLICATION, held)
    stalled = strike_message(Fault.DUPLICATION, message, copy)
    assert (stalled.now, stalled.again, stalled.lost) == (False, message, False)
    assert not held.loses


def test_lost_messages_wait_on_the_runtime_timer_only_when_something_loses_them() -> None:
    resending = System(TOMBSTONE, resend=Resend.CLEANUPS)
    assert not resending.loses
    assert not resending.needs_timer  # nothing is ever lost: no timer channel
    lose = attrs.evolve(resending, injected=frozenset({Fault.LOSS}))
    assert lose.loses
    assert lose.needs_timer
    assert not attrs.evolve(lose, resend=Resend.NONE).needs_timer  # noticed in the same move
    inbox = Restart.of(["loses-inbox"])
    crash = System(TOMBSTONE, injected=frozenset({Fault.RESTART}), restart=inbox)
    assert crash.loses
    assert crash.needs_timer
    assert not System(TOMBSTONE, injected=frozenset({Fault.RESTART})).loses

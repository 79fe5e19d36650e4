"""The system review: the coordinator with two workers and the messages in flight."""

from __future__ import annotations

import json
import re
from pathlib import Path
from unittest.mock import ANY

import pytest
from support import SILENT_CANCEL, STALE_TRANSFER

from handoff import HandoffCoordinatorCore, HandoffOrder
from handoff._compile.table import compiled
from handoff._review.environment import Rules
from handoff._review.explore import Review, review_order
from handoff._review.report import counterexample_trace, json_report, markdown, text
from handoff._review.system import SystemWorld
from handoff._review.system_replay import line_of, replay_moves
from handoff._review.system_words import overtaken
from handoff._review.verdict import Counterexample, MoveKind
from handoff._runs.trace import read_trace, trace_text
from handoff._system.config import Acknowledge, System
from handoff._system.properties import GUARDS, AnyKey, Key, WorldKind
from handoff._system.workers import (
    FORGETFUL,
    TOMBSTONE,
    Message,
    MessageKind,
    RequestMemory,
    Slots,
    WorkerContract,
    WorkerReaction,
    WorkerReply,
)
from handoff._values.errors import TraceError

ORDERS = tuple(HandoffOrder)
_FIRST = {
    HandoffOrder.SOURCE_FIRST: ("source", "SubmitPrefill", "CancelSource"),
    HandoffOrder.DESTINATION_FIRST: ("destination", "ReserveDestination", "CancelDestination"),
}


def _review(order: HandoffOrder, contract: WorkerContract, **options: object) -> Review:
    return review_order(order, system=System(contract, **options))  # type: ignore[arg-type]


def _world(
    contract: WorkerContract, order: HandoffOrder = HandoffOrder.SOURCE_FIRST
) -> SystemWorld:
    return SystemWorld(compiled(order), System(contract), Rules(order))


def _keys(world: SystemWorld, example: Counterexample) -> tuple[AnyKey, ...]:
    """The properties replaying `example`'s moves in `world` breaks, first broken first."""
    replayed = replay_moves(world, [line_of(step) for step in example.steps])
    assert replayed.moves == len(example.steps)
    named = {entry.key.value: entry.key for entry in world.properties}
    return tuple(named[found.finding.key.value] for found in replayed.findings)


@pytest.fixture(scope="module")
def forgetful() -> dict[HandoffOrder, Review]:
    return {order: _review(order, FORGETFUL) for order in ORDERS}


@pytest.fixture(scope="module")
def tombstone() -> dict[HandoffOrder, Review]:
    return {order: _review(order, TOMBSTONE) for order in ORDERS}


@pytest.mark.parametrize("order", ORDERS)
def test_forgetful_workers_fail_with_a_cancel_overtaking_its_submission(
    forgetful: dict[HandoffOrder, Review], order: HandoffOrder
) -> None:
    review = forgetful[order]
    failing = {verdict.prop.key for verdict in review.failures()}
    assert failing == {Key.SLOTS_AT_COMPLETION, Key.NO_SLOT_AFTER_FREED, *STALE_TRANSFER}
    worker, work, cancel = _FIRST[order]
    # Worked out by hand: the first action goes out (start), a terminal fact cancels it
    # (fault), the cancel reaches the worker first and is answered Noop, the work arrives and
    # takes a slot, and the Noop tells the coordinator the slot is free: five moves.
    example = review.verdict("W2").counterexample
    assert example is not None
    kinds = [step.kind for step in example.steps]
    assert kinds == [
        MoveKind.START,
        MoveKind.FAULT,
        MoveKind.TO_WORKER,
        MoveKind.TO_WORKER,
        MoveKind.TO_COORDINATOR,
    ]
    delivered = [step.message.describe() for step in example.steps if step.message is not None]
    assert delivered == [f"#1 {cancel}", f"#0 {work}", "#1 Noop"]
    assert example.steps[3].reaction == WorkerReaction(
        RequestMemory.HELD, WorkerReply.DONE, Slots.TAKE
    )
    assert example.finding == (
        f"the coordinator was told the {worker}'s slot was freed (#1 Noop) while the "
        f"{worker} holds it"
    )
    assert list(overtaken(example.steps)) == [
        f"the cancel #1 {cancel} reached the {worker} before #0 {work}, the work it "
        "cancels: it overtook it"
    ]
    # W1 waits for the run to go quiet: the same overtaking, then the rest delivered.
    w1 = review.verdict("W1").counterexample
    assert w1 is not None
    assert w1.finding.startswith("the handoff completed CANCELED and, with nothing of it in flight")
    assert all(not step.sent or step.kind is not MoveKind.TO_COORDINATOR for step in w1.steps[-2:])


@pytest.mark.parametrize("order", ORDERS)
def test_tombstone_workers_pass_every_system_property(
    tombstone: dict[HandoffOrder, Review], order: HandoffOrder
) -> None:
    review = tombstone[order]
    failing = {verdict.prop.key for verdict in review.failures()}
    assert failing == STALE_TRANSFER  # the shipped cleanup's own race, not the workers
    assert review.verdict(Key.SLOTS_AT_COMPLETION).checked > 0
    assert review.verdict("W5").checked > 0
    assert review.configurations > 100


@pytest.mark.parametrize("order", ORDERS)
def test_fifo_channels_keep_even_forgetful_workers_safe(order: HandoffOrder) -> None:
    # A cancel goes to the worker its work went to, after it: in order, it cannot overtake.
    review = _review(order, FORGETFUL, fifo=True)
    assert {verdict.prop.key for verdict in review.failures()} == STALE_TRANSFER
    assert review.configurations < _review(order, FORGETFUL).configurations


def test_a_run_without_faults_only_succeeds() -> None:
    review = _review(HandoffOrder.SOURCE_FIRST, FORGETFUL, faults=0)
    assert review.holds
    # One action in flight at a time, its acknowledgement and fact in either order: a
    # handful of configurations along the success path.
    assert review.configurations < 40
    assert review.verdict("W5").checked == 0


def test_a_worker_that_never_acknowledges_a_cancel_breaks_liveness() -> None:
    review = _review(HandoffOrder.SOURCE_FIRST, SILENT_CANCEL)
    failing = {verdict.prop.key for verdict in review.failures()}
    assert failing == {Key.DELIVERIES_COMPLETE, Key.TERMINAL_CANCELS, *STALE_TRANSFER}
    stuck = review.verdict("W4").counterexample
    assert stuck is not None
    assert "the run ends with the handoff incomplete, in cancelling_source" in stuck.finding
    assert "nothing in flight" in stuck.finding
    cancels = review.verdict("W5").counterexample
    assert cancels is not None
    # The run goes on past the terminal fact to where it ends: the cancel delivered, no reply.
    faults = [n for n, step in enumerate(cancels.steps) if step.kind is MoveKind.FAULT]
    assert faults
    silent = WorkerReaction(RequestMemory.FREED, WorkerReply.SILENT)
    assert [step.reaction for step in cancels.steps].count(silent) == 1
    assert cancels.steps[-1].state == "cancelling_source"
    assert not cancels.steps[-1].sent  # nothing left in flight: the run has ended there
    assert cancels.finding == "after the terminal fact a run ends with the handoff incomplete"


class _Duplicating(SystemWorld):
    """A broken runtime: it carries the first action to its worker twice."""

    def _send(self, flight, sent):  # type: ignore[no-untyped-def]
        # The configurations hold messages by number (`Codes`).
        messages = self.codes.messages
        twice = [
            code
            for code in sent
            if messages[code].kind is MessageKind.ACTION and messages[code].action_id == 0
        ]
        return super()._send(flight, [*sent, *twice])


def test_a_runtime_that_performs_an_action_twice_breaks_w3(monkeypatch: pytest.MonkeyPatch) -> None:
    from handoff._review import system

    monkeypatch.setattr(system, "SystemWorld", _Duplicating)
    review = _review(HandoffOrder.SOURCE_FIRST, TOMBSTONE, faults=0)
    verdict = review.verdict("W3")
    assert not verdict.holds
    assert verdict.counterexample is not None
    assert verdict.counterexample.finding == "the source performed #0 SubmitPrefill a second time"


def test_a_crashing_coordinator_is_an_errors_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    real = HandoffCoordinatorCore.on_fact

    def crash(self: HandoffCoordinatorCore, fact: object) -> object:
        if type(fact).__name__ == "TimedOut":
            raise ZeroDivisionError("boom")
        return real(self, fact)  # type: ignore[arg-type]

    monkeypatch.setattr(HandoffCoordinatorCore, "on_fact", crash)
    review = _review(HandoffOrder.SOURCE_FIRST, TOMBSTONE)
    verdict = review.verdict("Errors")
    assert verdict.counterexample is not None
    assert verdict.counterexample.finding == "the call raised ZeroDivisionError: boom"
    assert {v.prop.key for v in review.failures()} == {Key.ERRORS, *STALE_TRANSFER}


def test_a_message_says_what_it_carries() -> None:
    review_example = _review(HandoffOrder.SOURCE_FIRST, FORGETFUL).verdict("W1").counterexample
    assert review_example is not None
    sent = [m for step in review_example.steps for m in step.sent]
    assert {m.describe() for m in sent} >= {"#0 SubmitPrefill", "#0 Submitted", "SourceHeld"}
    assert all(isinstance(m, Message) for m in sent)


# -- replaying a system run ------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_a_system_counterexample_replays_and_breaks_its_property_again(
    forgetful: dict[HandoffOrder, Review], order: HandoffOrder
) -> None:
    review = forgetful[order]
    for key in ("W1", "W2"):
        example = review.verdict(key).counterexample
        assert example is not None
        written = trace_text(counterexample_trace(review, example))
        lines = [json.loads(line) for line in written.splitlines()]
        # The policy is written unless it is on-reply, which a trace without it was made under.
        assert lines[0]["workers"] == {
            "contract": "forgetful",
            "fifo": False,
            "faults": 2,
            "acknowledge": "on-send",
        }
        assert lines[-1] == {"end": {"moves": len(example.steps)}}
        assert Key(key) in _keys(_world(FORGETFUL, order), example)
    # With workers that keep tombstones the same moves break nothing, or cannot be made:
    # the late work is dropped, so its acknowledgement is a failure, never the one W1 delivers.
    w2, w1 = (review.verdict(key).counterexample for key in ("W2", "W1"))
    assert w2 is not None
    assert w1 is not None
    assert _keys(_world(TOMBSTONE, order), w2) == ()
    with pytest.raises(TraceError, match="the system cannot make the move"):
        _keys(_world(TOMBSTONE, order), w1)


def test_a_system_trace_that_cannot_replay_says_where(tmp_path: Path) -> None:
    header = (
        '{"handoff_id":"00000000-0000-0000-0000-000000000001","order":"SourceFirst",'
        '"workers":{"contract":"forgetful","fifo":false,"faults":2},'
        '"fallback_transfer_delay_ms":0.0}\n'
    )
    path = tmp_path / "run.jsonl"
    for body, refusal in [
        ('{"move":"start"}\n{"end":{"calls":1}}\n', "the end line must be"),
        ('{"call":"start"}\n{"end":{"moves":1}}\n', "unexpected key 'call'"),
        ("[]\n" + '{"end":{"moves":1}}\n', "expected a JSON object"),
    ]:
        path.write_text(header + body)
        with pytest.raises(TraceError, match=refusal):
            read_trace(path)
    broken = header.replace('{"contract":"forgetful","fifo":false,"faults":2}', "3")
    path.write_text(broken + '{"end":{"moves":0}}\n')
    with pytest.raises(TraceError, match="workers must be"):
        read_trace(path)
    moves = '{"move":"start"}\n{"move":"deliver","message":"#5 ReleaseSource"}\n'
    path.write_text(header + moves + '{"end":{"moves":2}}\n')
    trace = read_trace(path)
    # The move is named as its line spells it, so the reader finds it in the file.
    with pytest.raises(
        TraceError,
        match=re.escape(
            'line 3: the system cannot make the move {"move":"deliver","message":"#5 '
            'ReleaseSource"} here'
        ),
    ):
        replay_moves(_world(FORGETFUL), trace.moves)


# -- reports ---------------------------------------------------------------------------------


def test_the_reports_name_the_system_and_the_overtaking(
    forgetful: dict[HandoffOrder, Review], tombstone: dict[HandoffOrder, Review]
) -> None:
    failing = text(list(forgetful.values()))
    assert "SourceFirst, forgetful workers, messages delivered in any order" in failing
    assert "W2 fails: the coordinator was told the source's slot was freed" in failing
    assert "it overtook it" in failing
    assert (
        failing.rstrip()
        .splitlines()[-1]
        .startswith(
            # Root cause first: W2 breaks in five moves, W1 only once the late work is done,
            # W9 once a transfer went out before the cancels.
            "UNSAFE: W2 (SourceFirst, forgetful workers), W1 (SourceFirst, forgetful workers), "
            "W9 (SourceFirst, forgetful workers), W2 (DestinationFirst, forgetful workers)"
        )
    )
    passing = text(list(tombstone.values()))
    assert (
        passing.rstrip()
        .splitlines()[-1]
        .startswith(
            # The shipped cleanup's race (W9) is all that fails.
            "UNSAFE: W9 (SourceFirst, tombstone workers), W9 (DestinationFirst, tombstone workers)"
        )
    )
    data = json_report(list(forgetful.values()))
    assert data["ok"] is False
    assert data["safe"] is False
    assert data["verdict"].startswith("UNSAFE: W2 (SourceFirst, forgetful workers)")
    first = data["orders"][0]
    assert first["world"] == "system"
    workers = first["workers"]
    assert (workers["contract"], workers["fifo"], first["order"]) == (
        "forgetful",
        False,
        "SourceFirst",
    )
    w2 = next(p for p in first["properties"] if p["key"] == "W2")
    assert w2["family"] == "safety"
    assert w2["counterexample"]["overtaken"]
    assert [step["kind"] for step in w2["counterexample"]["steps"]][:2] == [
        "start",
        "terminal fact",
    ]
    json.dumps(data)
    written = markdown(list(forgetful.values()))
    assert "## SourceFirst, forgetful workers, messages delivered in any order" in written
    assert "| W1 | no slot held for a CANCELED handoff" in written
    assert "```text\nW1 fails:" in written


# -- the judgements' corners -------------------------------------------------------------------


def test_the_guard_cuts_an_exploration_short_and_judges_nothing_over_every_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(GUARDS, WorldKind.SYSTEM, 10)
    review = _review(HandoffOrder.SOURCE_FIRST, TOMBSTONE)
    assert review.configurations == 10
    assert review.cut_short == "the exploration stopped at its guard of 10 configurations"
    why = f"{review.cut_short}, so not every run was explored to its end"
    # The guard says nothing of the chart: Bound is not judged, not failed; nor is any
    # property that needs every run (the cut runs would otherwise read as stuck).
    unjudged = {"W4", "W5", "W7", "Bound"}
    assert {verdict.prop.key.value for verdict in review.unjudged()} == unjudged
    for verdict in review.unjudged():
        assert (verdict.word, verdict.unjudged, verdict.counterexample) == ("NOT JUDGED", why, None)
        assert (verdict.holds, verdict.fails) == (False, False)
    assert review.failures() == ()
    assert (review.holds, review.safe, review.unsafe) == (False, False, False)


def test_a_cycle_of_deliveries_is_a_run_that_never_ends() -> None:
    from handoff._review.explore import _Explorer
    from handoff._review.graph import End, Liveness, no_cancel

    explorer = _Explorer(_world(TOMBSTONE))
    explorer.explore()
    found = explorer.explored()
    liveness = Liveness(found.nodes, found.edges, found.parents)
    # Two configurations that deliver into each other, and one leading into them.
    edge = explorer.edges[0][0]
    liveness.deliveries[0:3] = [[edge._replace(target=n)] for n in (1, 2, 1)]
    ends = liveness._ends(terminated=False)
    assert ends[1] & End.STUCK
    assert ends[0] & End.STUCK
    assert liveness.cycles == {1}
    # From 0, one delivery reaches the cycle: the nearest end that is not a SUCCESS.
    assert liveness._to_a_wrong_end(0, ends, End.SUCCESS) == ([ANY], 1)
    assert no_cancel(End.SUCCESS) == "after the terminal fact a run still ends with a SUCCESS"


def test_w1_at_success_wants_the_destination_holding_and_the_source_free() -> None:
    from handoff import HandoffCompletion
    from handoff._system.judgments import at_completion
    from handoff._system.worker_state import Remembered, WorkerState

    held = WorkerState((Remembered(0, RequestMemory.HELD, 1, 0),))
    free = WorkerState((Remembered(0, RequestMemory.FREED, 0, 0),))
    # Another request's slot is not this handoff's.
    other = WorkerState((Remembered(1, RequestMemory.HELD, 1, 0),))
    success = HandoffCompletion.SUCCESS

    def finding(
        source: WorkerState,
        destination: WorkerState,
        completion: HandoffCompletion = success,
        restarted: bool = False,
        whose: str = "the handoff",
    ) -> str | None:
        slots = source.slots(0), destination.slots(0)
        return at_completion(*slots, completion, restarted, whose)

    assert finding(free, held) is None
    assert finding(held, held) == (
        "the handoff completed SUCCESS and the source still holds a KV slot for it"
    )
    assert finding(free, free) == (
        "the handoff completed SUCCESS and the destination holds no KV slot for it"
    )
    assert finding(other, other) == (
        "the handoff completed SUCCESS and the destination holds no KV slot for it"
    )
    # A destination that restarted lost the request it decoded: no slot leaks.
    assert finding(free, free, restarted=True) is None
    both = finding(held, held, HandoffCompletion.CANCELED, whose="h1")
    assert both == (
        "h1 completed CANCELED and, with nothing of it in flight, the source and the "
        "destination holds a KV slot for it"
    )


def test_w3_names_work_never_issued_or_sent_to_the_wrong_worker() -> None:
    from handoff import HandoffAction
    from handoff._system.call import HANDOFF_ID
    from handoff._system.judgments import performed
    from handoff._system.workers import Role

    submit = Message(MessageKind.ACTION, 0, Role.SOURCE, HandoffAction.SubmitPrefill(HANDOFF_ID))
    astray = submit._replace(role=Role.DESTINATION)
    never = [words for _key, words in performed(0, 0, submit)]
    assert never == ["the source performed #0 SubmitPrefill, never issued"]
    wrong = [words for _key, words in performed(1, 0, astray)]
    assert wrong == ["#0 SubmitPrefill went to the destination"]
    assert list(performed(1, 0, submit)) == []


def test_a_refused_call_is_described_with_its_error() -> None:
    from handoff._review.system_words import describe_step
    from handoff._review.verdict import TraceStep
    from handoff._system.call import Call

    step = TraceStep(Call.start(), "idle", error="HandoffError: no", kind=MoveKind.START)
    assert describe_step(step) == "the runtime calls start() -> idle: refused, HandoffError: no"


def test_an_acknowledgement_sent_on_send_comes_from_the_runtime_in_words() -> None:
    # On send, the runtime puts Submitted in flight beside the work, so the coordinator hears
    # it from the runtime; on reply the source's own reply carries it.  Each forgetful review
    # fails, and its counterexamples deliver Submitted somewhere: the words name the sender.
    senders = {}
    for policy in Acknowledge:
        report = text([_review(HandoffOrder.SOURCE_FIRST, FORGETFUL, acknowledge=policy)])
        delivered = [line for line in report.splitlines() if "gets #0 Submitted from the " in line]
        assert delivered, report
        senders[policy] = {line.split(" from the ")[1].split(":")[0] for line in delivered}
    assert senders == {Acknowledge.ON_SEND: {"runtime"}, Acknowledge.ON_REPLY: {"source"}}

"""Spin's second opinion on the system review: the generated system model, verified by Spin,
breaks exactly the system properties the explorer breaks.

Spin must be installed, as for tests/test_spin.py (skipped elsewhere, never under CI)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from charts import SF_ALONE, SF_BOTH, states, without
from charts.acknowledgement import CancelOnceSubmitted
from support import (
    SILENT_CANCEL,
    CancelAlwaysFails,
    Refusing,
    SecondSlot,
    assert_contains,
    spin_or_skip,
)

from handoff import HandoffOrder, SourceFirstChart
from handoff._compile.table import CompiledChart, compiled
from handoff._review.spin.agreement import Agreement, agreement
from handoff._review.spin.replay import confirm_system
from handoff._review.spin.run import Trail, run_spin
from handoff._review.spin.system import G_ACT, G_OUT, HANDOFF_CODE, ModelMove, system_model
from handoff._review.spin.vocabulary import FACTS, OUTCOME_KINDS
from handoff._review.verdict import MoveKind
from handoff._system.config import Acknowledge, PerAction, System
from handoff._system.faults import Fault
from handoff._system.properties import Key, own_property
from handoff._system.workers import FORGETFUL, TOMBSTONE, PerRole, Tombstone
from handoff._values.messages import HandoffFact
from handoff._values.values import OutcomeKind

S = SourceFirstChart


class Leaking(SourceFirstChart):
    """A failure while the destination is reserved cancels only the source."""

    terminated = (
        S.cancelling_source.from_(
            *states(S, (*SF_ALONE, "destination_reserving")), on="cancel_source"
        )
        | S.cancelling_both.from_(
            *states(S, without(SF_BOTH, "destination_reserving")),
            on=["cancel_source", "cancel_destination"],
        )
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )


SF, DF = compiled(HandoffOrder.SOURCE_FIRST), compiled(HandoffOrder.DESTINATION_FIRST)
W1, W2, W4, W5, W6 = Key("W1"), Key("W2"), Key("W4"), Key("W5"), Key("W6")
W7 = Key("W7")
CRASH, LOSE = frozenset({Fault.RESTART}), frozenset({Fault.LOSS})
ON_SEND = Acknowledge.ON_SEND
MIXED = PerRole(TOMBSTONE, FORGETFUL)
FAILS = CancelAlwaysFails()
AWAITS = compiled(CancelOnceSubmitted)
FIFO_DUP: dict[str, Any] = {"fifo": True, "injected": frozenset({Fault.DUPLICATION})}
TWO: dict[str, Any] = {"concurrency": 2, "faults": 1}
SYSTEMS: dict[str, tuple[CompiledChart, System, set[Key]]] = {
    # A forgetful worker answers a cancel that overtook the work Noop and then takes the late
    # work: a slot held after the handoff ended CANCELED (W1), after it was told freed (W2).
    "forgetful SourceFirst": (SF, System(FORGETFUL), {W1, W2}),
    "forgetful DestinationFirst": (DF, System(FORGETFUL), {W1, W2}),
    "tombstone SourceFirst": (SF, System(TOMBSTONE), set()),
    "tombstone DestinationFirst": (DF, System(TOMBSTONE), set()),
    "silent cancels": (SF, System(SILENT_CANCEL), {W4, W5}),
    "a leaking chart": (compiled(Leaking), System(TOMBSTONE), {W1}),
    # FIFO per worker: a cancel can no longer overtake the work it cancels, so even forgetful
    # workers never see one first.
    "forgetful SourceFirst, FIFO": (SF, System(FORGETFUL, fifo=True), set()),
    "forgetful DestinationFirst, FIFO": (DF, System(FORGETFUL, fifo=True), set()),
    # A restart forgets the tombstone: the submission a cancel overtook is then taken, after
    # the source was told freed (W2) and, once it is delivered, for a CANCELED handoff (W1).
    "tombstone SourceFirst, crash": (SF, System(TOMBSTONE, injected=CRASH), {W1, W2}),
    "tombstone DestinationFirst, crash": (DF, System(TOMBSTONE, injected=CRASH), {W1, W2}),
    # FIFO, but a duplicated submission's copy goes behind the cancel queued after it: a
    # forgetful worker frees, forgets, and takes the copy as new work; a tombstone drops it.
    "forgetful SourceFirst, FIFO, duplicate": (SF, System(FORGETFUL, **FIFO_DUP), {W1, W2}),
    "forgetful DestinationFirst, FIFO, duplicate": (DF, System(FORGETFUL, **FIFO_DUP), {W1, W2}),
    "tombstone SourceFirst, FIFO, duplicate": (SF, System(TOMBSTONE, **FIFO_DUP), set()),
    "tombstone DestinationFirst, FIFO, duplicate": (DF, System(TOMBSTONE, **FIFO_DUP), set()),
    # A lost cancel is never sent again: its timeout leaves the cleanup waiting for ever.
    "tombstone SourceFirst, lose": (SF, System(TOMBSTONE, injected=LOSE), {W4, W5}),
    "tombstone DestinationFirst, lose": (DF, System(TOMBSTONE, injected=LOSE), {W4, W5}),
    # Acknowledged on send, a cancel may still overtake the work: forgetful workers leak as
    # on reply.  A chart that cancels only once the work is acknowledged (charts.
    # acknowledgement) is safe on reply, even with forgetful workers, and leaks on send,
    # where the acknowledgement says nothing of where the work is.
    "forgetful SourceFirst, on send": (SF, System(FORGETFUL, acknowledge=ON_SEND), {W1, W2}),
    "forgetful DestinationFirst, on send": (DF, System(FORGETFUL, acknowledge=ON_SEND), {W1, W2}),
    "cancel once submitted, forgetful, on reply": (
        AWAITS,
        System(FORGETFUL, acknowledge=Acknowledge.ON_REPLY),
        set(),
    ),
    "cancel once submitted, forgetful, on send": (
        AWAITS,
        System(FORGETFUL, acknowledge=ON_SEND),
        {W1, W2},
    ),
    # Acknowledgement per kind (the offline runtime's: StartTransfer on send, the rest on
    # reply): the chart waits for Submitted, which comes on the worker's reply, so it is safe
    # as on reply; with SubmitPrefill on send too it leaks as on send.  Spin writes the kinds.
    "cancel once submitted, forgetful, offline": (
        AWAITS,
        System(FORGETFUL, acknowledge=PerAction(frozenset({"StartTransfer"}))),
        set(),
    ),
    "cancel once submitted, forgetful, SubmitPrefill on send": (
        AWAITS,
        System(FORGETFUL, acknowledge=PerAction(frozenset({"SubmitPrefill", "StartTransfer"}))),
        {W1, W2},
    ),
    # One handoff is one request: a worker remembering only the last idle one never forgets
    # it, and a crash forgets it all the same, as for unbounded tombstones.
    "tombstone:1 SourceFirst, crash": (
        SF,
        System(Tombstone(remembers=1), injected=CRASH),
        {W1, W2},
    ),
    # Two handoffs sharing the workers, one failure a run (--failures 1, to keep it small): a
    # tombstone for each canceled request keeps both safe; a memory of one idle request
    # forgets the first handoff's tombstone when the second's request goes idle, and then
    # takes the first's late work (W1, W2), as forgetful workers do with any number.
    "tombstone DestinationFirst, 2 handoffs": (DF, System(TOMBSTONE, **TWO), set()),
    "tombstone:1 DestinationFirst, 2 handoffs": (
        DF,
        System(Tombstone(remembers=1), **TWO),
        {W1, W2},
    ),
    "forgetful SourceFirst, 2 handoffs": (SF, System(FORGETFUL, **TWO), {W1, W2}),
    "forgetful SourceFirst, FIFO, 2 handoffs": (SF, System(FORGETFUL, fifo=True, **TWO), set()),
    # Slots counted: activating takes a second slot for one request (W6), unless the worker
    # holds one slot at most (--slots 1), when the activation is refused instead: then no
    # handoff can succeed, even with no fault at all (W7).
    "second slot, SourceFirst": (SF, System(SecondSlot()), {W6}),
    "second slot, DestinationFirst, one slot": (DF, System(SecondSlot(), slots=1), {W7}),
    # Workers that take no work: with no fault at all the handoff still ends CANCELED (W7),
    # and nothing leaks, since nothing was ever held.
    "refusing workers, SourceFirst": (SF, System(Refusing()), {W7}),
    "refusing workers, DestinationFirst": (DF, System(Refusing()), {W7}),
    # A contract per role: the forgetful destination leaks as forgetful workers do.
    "source tombstone, destination forgetful, SourceFirst": (SF, System(MIXED), {W1, W2}),
    # A worker that fails every cancel of a held slot, and a runtime that does not retry
    # (the model drops a refused failure, as such a runtime does): cleanup never completes.
    "cancel always fails, no retry, SourceFirst": (SF, System(FAILS, retry=False), {W4, W5}),
    "cancel always fails, no retry, DestinationFirst": (DF, System(FAILS, retry=False), {W4, W5}),
}


@pytest.fixture(scope="module")
def agreements() -> dict[str, Agreement]:
    spin_or_skip()

    def check(name: str) -> Agreement:
        chart, system, _ = SYSTEMS[name]
        return agreement(name, chart, system)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(SYSTEMS, pool.map(check, SYSTEMS), strict=True))


@pytest.mark.parametrize("name", SYSTEMS)
def test_spin_and_the_explorer_break_the_same_system_properties(
    agreements: dict[str, Agreement], name: str
) -> None:
    found = agreements[name]
    expected = SYSTEMS[name][2]
    assert found.review_fails == expected
    assert found.spin_fails == expected
    assert found.agree, found.line()
    assert found.states > 0
    assert set(found.liveness_states) == {W4, W5, W7}


def test_the_model_tabulates_the_contract_and_names_what_it_checks() -> None:
    text = system_model(SF, System(TOMBSTONE))
    assert_contains(
        text,
        "the workers' contract, 'tombstone', tabulated: r, t, m",
        "#define T_CANCEL 5",
        "#define M_UNKNOWN 0",
        "#define M_CANCELED 3",
        "#define Y_DONE 1",
        "#define Y_NOOP 2",
        # The contract is data at the end, a REACT line per role, task and memory: the source
        # (role 0) answers a cancel (task 5) of an unknown request (memory 0) Noop (2) and
        # leaves a tombstone (memory 3), its slots kept (SL_KEEP, 3).
        "REACT 0 5 0 3 2 3   source, CANCEL with UNKNOWN: NOOP, to CANCELED, slots KEEP",
        "#define REACT_MEMORY(r, t, m) react_cells[CONTRACT_AT(0, r, t, m)]",
        "ROLE 0 0 0 0   source",  # unbounded, starting from UNKNOWN
        "ltl W4 {",
        "ltl W5 {",
        "assert(!W2_broken)",
        # A fact too early is a flag of the chart state (SourceHeld's is 2), read off the
        # chart's STATE lines: in idle and prefill_submitting, SourceHeld (2), DestinationReserved
        # (4) and TransferCompleted (8) come too early; once the prefill runs, SourceHeld does not.
        "#define EARLY_SubmitPrefill(H) (state_flags[co[H].h_state] & 2)",
        "STATE 0 14   idle: source_held too early, destination_reserved too early, "
        "transfer_completed too early",
        "STATE 1 14   prefill_submitting: source_held too early,",
        "STATE 2 12   prefill_running: destination_reserved too early, transfer_completed",
        "STATE 9 1   succeeded: complete",
    )
    # The chart is data at the end: both orders' models of one system are the same before it,
    # so one compiled verifier serves both.
    other = system_model(DF, System(TOMBSTONE))
    cells = "/* -- the chart's cells"
    before = text[: text.index(cells)]
    assert before.replace("SourceFirst", "DestinationFirst") == other[: other.index(cells)]
    # So do the contracts: forgetful workers' model is the same before the data, and its
    # cancel of an unknown request forgets it (memory 0).
    forgetful = system_model(SF, System(FORGETFUL))
    before_data = before.replace("'tombstone'", "'forgetful'").replace("tombstone ", "forgetful ")
    assert forgetful[: forgetful.index(cells)] == before_data
    assert "REACT 0 5 0 0 2 3   source, CANCEL with UNKNOWN: NOOP, to UNKNOWN" in forgetful
    # Slots follow the contract's reactions (SL_TAKE 1, SL_FREE 2, SL_KEEP 3): a take (task 1)
    # on an unknown request takes one and answers Done, a cancel of a held one (memory 1) frees
    # it and is done, leaving the request freed (memory 2).
    assert_contains(
        text,
        "REACT 0 1 0 1 1 1   source, TAKE with UNKNOWN: DONE, to HELD, slots TAKE",
        "REACT 0 5 1 2 1 2   source, CANCEL with HELD: DONE, to FREED, slots FREE",
    )
    # A contract per role: each role's cells, the destination's (role 1) forgetful.
    mixed = system_model(SF, System(MIXED))
    assert_contains(
        mixed,
        "REACT 0 5 0 3 2 3   source, CANCEL with UNKNOWN: NOOP, to CANCELED",
        "REACT 1 5 0 0 2 3   destination, CANCEL with UNKNOWN: NOOP, to UNKNOWN",
    )
    # Any order: one sorted multiset, every message deliverable; FIFO: four channels, each
    # delivering its first message only.
    assert "#define CHANNELS 1 " in text
    assert "q[0].n > 3 && DELIVERABLE(q[0].m[3])" in text
    fifo = system_model(SF, System(TOMBSTONE, fifo=True))
    assert "#define CHANNELS 4 " in fifo
    assert "q[3].n > 0 && DELIVERABLE(q[3].m[0])" in fifo
    assert "q[0].n > 1" not in fifo
    # Each fault --faults injects is a move of its own, within its budget; none without it.
    assert "MV_DUPLICATE;" not in text
    faulty = system_model(SF, System(TOMBSTONE, injected=CRASH | LOSE, budget=2))
    assert_contains(
        faulty,
        "#define BUDGET 2",
        "restarts < BUDGET && REMEMBERS_ANY(1) -> mv = MV_RESTART; k = 1",
        "lost[HANDOFF_OF(q[0].m[7])] < BUDGET && q[0].n > 7 -> mv = MV_LOSE",
        "#define QMAX 8",
    )
    # In any order, every place a message may be in is a choice; a copy needs one more.
    assert "q[0].n > 8" not in faulty
    copies = system_model(SF, System(TOMBSTONE, injected=frozenset({Fault.DUPLICATION})))
    assert_contains(copies, "#define QMAX 9", "q[0].n > 8 && DELIVERABLE(q[0].m[8])")
    assert "MV_DUPLICATE;" not in faulty
    # The budget is each handoff's: counted by the handoff of the message struck, room in
    # flight for each handoff's copies, and a run fault-free while no handoff suffered one.
    shared = System(TOMBSTONE, injected=frozenset({Fault.DUPLICATION}), concurrency=2)
    assert_contains(
        system_model(SF, shared),
        "#define QMAX 18",
        "duplicated[HANDOFF_OF(q[0].m[17])] < BUDGET && q[0].n > 17",
        "duplicated[0] == 0 && lost[0] == 0 && duplicated[1] == 0 && lost[1] == 0",
        "dequeue(); nm = qm; enqueue(); duplicated[hc]++; deliver()",
    )
    # One handoff is the first of N: its coordinator's variables are handoff hc's, and an
    # unbounded memory keeps no idle order (its ROLE line: initial memory 0, not bounded).
    assert_contains(text, "#define HANDOFFS 1 ", "#define state co[hc].h_state", "ROLE 0 0 0 0")
    assert "hc = 1" not in text
    # Three handoffs: each starts and is told terminal facts as a move of its own, each message
    # names its handoff, and a bounded memory forgets the longest idle request.
    three = system_model(SF, System(Tombstone(remembers=1), concurrency=3))
    assert_contains(
        three,
        "#define HANDOFFS 3 ",
        f"#define MSG(H, K, G) ((H) * {HANDOFF_CODE} + (K) * 16 + (G))",
        ":: !stopped && !started[2] -> mv = MV_START; hc = 2",
        "started[2] -> mv = MV_TERMINAL; c_fact = F_Failed; hc = 2",
        "ROLE 0 0 1 1   source",  # initial memory 0, bounded, to 1 idle request
        "#define BOUND(W) role_cells[(W) * 3 + 2]",
        ":: nidle[w] > BOUND(w) ->",
        "#define QMAX 24",
        "ltl W7 { [] ((calm && FAULT_FREE) -> <> (QUIET && ALL_COMPLETE && ALL_SUCCESS)) }",
    )


def test_run_spin_refuses_what_unmirrored_names() -> None:
    mine = own_property(lambda view: True, "mine")
    with pytest.raises(
        ValueError, match=r"^Spin mirrors the shipped properties only: drop --property$"
    ):
        run_spin(SF, system=System(TOMBSTONE, concurrency=2, properties=(mine,)))


def test_a_fault_the_model_does_not_write_is_refused_never_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from handoff._review.spin import system as model
    from handoff._system.faults import Fault

    lossy = System(TOMBSTONE, injected=frozenset({Fault.LOSS, Fault.DUPLICATION}))
    assert model.unmirrored(lossy) is None
    # A fault added to the world before its Promela twin: the model would explore a world
    # without it and call that the user's.
    monkeypatch.setattr(model, "MIRRORED_FAULTS", frozenset({Fault.DUPLICATION}))
    assert model.unmirrored(lossy) == "the faults it models only: drop lose from --faults"
    with pytest.raises(ValueError, match=r"drop lose from --faults$"):
        run_spin(SF, system=lossy)


@pytest.mark.parametrize(
    ("workers", "status", "lines"),
    [
        # The review's report, judged by Spin: W1 and W2 fail, and the explorer agrees.
        (
            "forgetful",
            1,
            (
                # The default runtime, offline, acknowledges StartTransfer on send (Spin
                # mirrors acknowledgement per kind), and the heading says it.
                "SourceFirst, forgetful workers, messages delivered in any order, StartTransfer "
                "acknowledged on send, other work on the worker's reply, runtime offline: ",
                "UNSAFE: W1 (SourceFirst, forgetful workers), W2 (SourceFirst, forgetful workers)",
                "SourceFirst: Spin agrees with the explorer",
            ),
        ),
        (
            "tombstone",
            1,
            (
                # Every mirrored system property, W7 (an LTL formula) included, holds; W9,
                # which Spin does not mirror, the explorer finds broken, and the exit says so.
                "OK: all 9 properties hold for SourceFirst with tombstone workers",
                "; not mirrored: W8, W9, W10\n",
                "SourceFirst: Spin agrees with the explorer",
                "SourceFirst: not mirrored, the explorer alone finds W9 broken\n",
            ),
        ),
        # A fault injected: a restart forgets the tombstone (see SYSTEMS), and both say so.
        (
            "tombstone --faults crash",
            1,
            (
                "SourceFirst, tombstone workers, messages delivered in any order, faults crash "
                "(1 each), StartTransfer acknowledged on send, other work on the worker's "
                "reply, runtime offline: ",
                # Spin's trail, replayed through the explorer's world, told in its words.
                "the destination restarts: it forgets the request and frees its slot",
                "holds a KV slot for it (Spin trail, replayed)",
                # Spin's depth-first search stops at its first trail, not at a shortest one.
                "counterexample (the first Spin found, ",
                "SourceFirst: Spin agrees with the explorer",
            ),
        ),
    ],
)
def test_review_workers_engine_spin_reports_the_agreement(
    workers: str, status: int, lines: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    spin_or_skip()
    from handoff.__main__ import main

    argv = ["review", "--workers", *workers.split(), "--engine", "spin", "--order", "SourceFirst"]
    assert main(argv) == status
    assert_contains(capsys.readouterr().out, *lines)


def _code(action_id: int, carried: int) -> int:
    return action_id * 16 + carried


FAILED = FACTS.index(HandoffFact.Failed) + 1
NOOP = G_OUT + OUTCOME_KINDS.index(OutcomeKind.NOOP) + 1
# Forgetful workers, SourceFirst: a failure before the submission arrives cancels it; the
# source answers the cancel Noop, the coordinator takes that as freed, and then the late
# submission takes a slot (W2).  As the model prints its moves: MOVE mv what id.
OVERTAKEN = (
    (ModelMove.START, 0, 0),
    (ModelMove.TERMINAL, FAILED, 0),
    (ModelMove.DELIVER, _code(1, G_ACT), 1),
    (ModelMove.CALM, 0, 0),
    (ModelMove.DELIVER, _code(1, NOOP), 1),
    (ModelMove.DELIVER, _code(0, G_ACT), 0),
)


def _tagged(handoff: int, move: tuple[int, int, int]) -> tuple[int, int, int]:
    """`move` of handoff `handoff` (0: h1) among several: its message, or its start or fact."""
    mv, what, number = move
    if mv in (ModelMove.START, ModelMove.TERMINAL):
        return (mv, what, handoff)
    if mv == ModelMove.CALM:
        return move
    return (mv, what + handoff * HANDOFF_CODE, number)


def test_a_concurrency_trail_names_its_handoffs_and_is_confirmed_in_their_world() -> None:
    # Two handoffs: h1 starts and waits; h2 is overtaken as OVERTAKEN tells, its moves tagged.
    system = System(FORGETFUL, concurrency=2)
    h2 = tuple(_tagged(1, move) for move in OVERTAKEN)
    trail = ((ModelMove.START, 0, 0), *h2)
    found = confirm_system(SF, system, W2, Trail((), moves=trail))
    assert found.finding is not None
    assert "took a KV slot for h2 #0 SubmitPrefill after the coordinator was told" in found.finding
    assert [step.handoff for step in found.steps] == [0, 1, 1, 1, 1, 1]
    # The same moves with the late submission h1's: h1 was told nothing, so nothing breaks;
    # with the failure reported to h1, h2 never issues the cancel delivered next.
    late_h1 = (*trail[:-1], _tagged(0, OVERTAKEN[-1]))
    assert confirm_system(SF, system, W2, Trail((), moves=late_h1)).finding is None
    wrong = (*trail[:2], _tagged(0, OVERTAKEN[1]), *trail[3:])
    assert confirm_system(SF, system, W2, Trail((), moves=wrong)).finding is None


def test_a_system_trail_is_confirmed_by_the_explorers_world_move_by_move() -> None:
    system = System(FORGETFUL)
    found = confirm_system(SF, system, W2, Trail((), moves=OVERTAKEN))
    assert found.finding is not None
    assert "took a KV slot for #0 SubmitPrefill after the coordinator was told" in found.finding
    assert [step.kind for step in found.steps] == [
        MoveKind.START,
        MoveKind.FAULT,
        MoveKind.TO_WORKER,
        MoveKind.TO_COORDINATOR,
        MoveKind.TO_WORKER,
    ]
    # Stopped short of the violation, the same run confirms nothing; a move the world cannot
    # make (the cancel, never issued without the failure) confirms nothing either; nor does
    # a trail of a property the run does not break.
    assert confirm_system(SF, system, W2, Trail((), moves=OVERTAKEN[:-1])).finding is None
    impossible = (OVERTAKEN[0], *OVERTAKEN[2:])
    assert confirm_system(SF, system, W2, Trail((), moves=impossible)).finding is None
    assert confirm_system(SF, system, W1, Trail((), moves=OVERTAKEN)).finding is None
    # With tombstones the same moves leave a tombstone: the late submission is dropped.
    assert confirm_system(SF, System(TOMBSTONE), W2, Trail((), moves=OVERTAKEN)).finding is None

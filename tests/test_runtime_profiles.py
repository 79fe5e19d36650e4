"""Runtime profiles (`--runtime`): the upstream runtimes' behaviours as settings of the one
world, what each setting does to the moves the review explores, and what the reports say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from support import HID, run_handoff, run_side_by_side

from handoff import AnyHandoffAction, HandoffAction, HandoffOrder, RuntimeProfile
from handoff._compile.lookup import NotGiven
from handoff._compile.table import compiled
from handoff._review.environment import Rules
from handoff._review.explore import review_order
from handoff._review.system import SystemWorld
from handoff._review.system_replay import line_of, replay_moves
from handoff._review.verdict import MoveKind, TraceStep
from handoff._runs.trace import Workers
from handoff._system.config import Acknowledge, PerAction, Resend, System, acknowledge_of
from handoff._system.faults import Fault
from handoff._system.profiles import EAGER, LIVE, OFFLINE, find_runtime
from handoff._system.properties import Key
from handoff._system.runtime import (
    DEMO_WORKLOAD,
    abandoned,
    answered,
    busy,
    carried,
    held_back,
    may_expire,
)
from handoff._system.workers import (
    FORGETFUL,
    RUNTIME_OWN,
    TOMBSTONE,
    Message,
    MessageKind,
    Role,
    Tombstone,
    WorkerReply,
)
from handoff._values.messages import HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffActionId, HandoffActionOutcome

SF, DF = HandoffOrder.SOURCE_FIRST, HandoffOrder.DESTINATION_FIRST
TESTS = Path(__file__).parent
CHART = "charts.acknowledgement:CancelOnceSubmitted"

# A runtime profile of one's own, for `--runtime MODULE:NAME` (this module is importable as
# `test_runtime_profiles` from the tests directory).
MINE = RuntimeProfile(
    "mine",
    "on reply, tombstones that expire, transfers drained before the destination's cancel",
    workers=TOMBSTONE,
    expires=True,
    drains_transfers=True,
)
"""A runtime of one's own that does what the shipped ones do not: it drains transfers, so
its review holds (W9 included)."""
NOT_A_PROFILE = "a string"


def _live(**changes: object) -> System:
    return System(TOMBSTONE, **{**LIVE.settings(), **changes})  # type: ignore[arg-type]


def _walk(order: HandoffOrder, system: System) -> Iterator[tuple[object, TraceStep]]:
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


# -- the settings as pure steps -----------------------------------------------------------


def _issued(action: AnyHandoffAction, number: int = 0) -> IssuedHandoffAction:
    return IssuedHandoffAction(HandoffActionId(number), action)


def test_offline_acknowledges_the_transfer_on_send_and_the_rest_on_the_worker_reply() -> None:
    offline = OFFLINE.acknowledge
    transfer = _issued(HandoffAction.StartTransfer(HID, 1.0), 2)
    submit = _issued(HandoffAction.SubmitPrefill(HID))
    # StartTransfer: the runtime's Scheduled goes right behind the action.
    sent = carried((transfer,), offline)
    assert [message.kind for message in sent] == [MessageKind.ACTION, MessageKind.OUTCOME]
    assert sent[1].outcome == HandoffActionOutcome.SCHEDULED
    # SubmitPrefill: only the action; the worker's reply carries Submitted, then SourceHeld.
    assert [message.kind for message in carried((submit,), offline)] == [MessageKind.ACTION]
    back = answered(carried((submit,), offline)[0], WorkerReply.DONE, DEMO_WORKLOAD, offline)
    assert [message.kind for message in back] == [MessageKind.OUTCOME, MessageKind.FACT]
    # The transfer's worker then reports only its fact (its acknowledgement went out).
    done = answered(sent[0], WorkerReply.DONE, DEMO_WORKLOAD, offline)
    assert [message.kind for message in done] == [MessageKind.FACT]


def test_an_acknowledgement_policy_is_spelled_and_read_back() -> None:
    assert acknowledge_of("on-send") is Acknowledge.ON_SEND
    assert acknowledge_of("on-reply") is Acknowledge.ON_REPLY
    per_kind = acknowledge_of("on-send:StartTransfer")
    assert per_kind == PerAction(frozenset({"StartTransfer"})) == OFFLINE.acknowledge
    assert acknowledge_of(per_kind.value) == per_kind
    with pytest.raises(ValueError, match="ReleaseSource cannot be acknowledged on send"):
        acknowledge_of("on-send:ReleaseSource")
    with pytest.raises(ValueError, match="expected on-send, on-reply or on-send:KIND"):
        acknowledge_of("sometimes")


def test_a_fact_is_held_back_only_where_its_coordinator_would_refuse_it_as_early() -> None:
    held = Message(MessageKind.FACT, 0, Role.SOURCE, HandoffAction.SubmitPrefill(HID))
    held = held._replace(fact=HandoffFact.SourceHeld(HID, DEMO_WORKLOAD.timing))
    assert held_back(held, early=True)
    assert not held_back(held, early=False)
    # The live runtime holds SourceHeld and DestinationReserved; a transfer's fact refused as
    # early is kept in flight as by any runtime.
    done = held._replace(fact=HandoffFact.TransferCompleted(HID))
    assert not held_back(done, early=True)


def test_a_worker_taking_one_action_at_a_time_is_busy_while_its_reply_is_on_its_way() -> None:
    action = Message(MessageKind.ACTION, 1, Role.SOURCE, HandoffAction.CancelSource(HID))
    reply = Message(
        MessageKind.OUTCOME, 0, Role.SOURCE, HandoffAction.SubmitPrefill(HID),
        HandoffActionOutcome.SUBMITTED,
    )  # fmt: skip
    assert busy(action, [reply])
    assert not busy(action, [reply._replace(role=Role.DESTINATION)])
    assert not busy(action, [reply._replace(copy=True)])  # the network's copy: none awaited
    assert not busy(reply, [reply])  # only actions wait


def test_a_tombstone_expires_only_once_nothing_of_its_request_is_on_its_way_to_it() -> None:
    submit = Message(MessageKind.ACTION, 0, Role.SOURCE, HandoffAction.SubmitPrefill(HID))
    assert not may_expire(Role.SOURCE, True, [submit])
    assert may_expire(Role.DESTINATION, True, [submit])
    assert may_expire(Role.SOURCE, True, [])
    assert not may_expire(Role.SOURCE, False, [])  # the request has not retired


def test_the_runtime_cleanup_has_no_action_id_and_no_coordinator_hears_its_reply() -> None:
    source, destination = abandoned(HID)
    assert (source.action_id, destination.action_id) == (RUNTIME_OWN, RUNTIME_OWN)
    assert (source.role, destination.role) == (Role.SOURCE, Role.DESTINATION)
    assert source.describe() == "CancelSource (no action id)"
    assert destination.describe() == "Abort (CancelDestination on its own)"
    assert answered(source, WorkerReply.DONE, DEMO_WORKLOAD, Acknowledge.ON_REPLY) == ()


# -- the profiles -----------------------------------------------------------------------------


def test_a_runtime_is_found_by_name_or_as_module_name_and_a_file_name_is_data() -> None:
    assert find_runtime("offline") is OFFLINE
    assert find_runtime(" LIVE ") is LIVE
    assert find_runtime("eager") is EAGER
    assert find_runtime("test_runtime_profiles:MINE") == MINE
    assert find_runtime("test_runtime_profiles:MINE").settings()["runtime"] == (
        "test_runtime_profiles:MINE"
    )
    with pytest.raises(NotGiven):
        find_runtime("test_runtime_profiles:MINE", allowed=())
    with pytest.raises(ValueError, match="unknown runtime 'nightly': expected offline, live"):
        find_runtime("nightly")
    with pytest.raises(ValueError, match="is not a runtime profile"):
        find_runtime("test_runtime_profiles:NOT_A_PROFILE")


def test_a_profile_hands_the_runtime_duties_it_names_to_the_system() -> None:
    # Retries, re-sends and restarts are the System's own settings: a profile that names
    # one passes it on under the field's name, and one that does not leaves the default.
    assert not {"retry", "resend", "restart"} & LIVE.settings().keys()
    own = attrs.evolve(MINE, retry=False, resend=Resend.CLEANUPS)
    assert own.settings()["retry"] is False
    assert own.settings()["resend"] is Resend.CLEANUPS
    assert "restart" not in own.settings()
    bounded = attrs.evolve(LIVE, tombstones=2).contract()
    assert isinstance(bounded, Tombstone)
    assert bounded.remembers == 2


def test_the_report_names_the_runtime_and_what_an_option_overrode() -> None:
    assert System(TOMBSTONE).describe().endswith("work acknowledged on send, runtime eager")
    live = _live().describe()
    assert live.endswith(
        "work acknowledged on the worker's reply, early facts held back, one action at a time "
        "per worker, last 16 outcomes answered again, tombstones expire, sessions end with "
        "cleanup outside the chart, runtime live"
    )
    overridden = _live(acknowledge=Acknowledge.ON_SEND)
    assert overridden.describe().endswith("runtime live (acknowledge overridden)")
    # Other workers than the runtime's own are named first, plainly: no note.
    forgetful = attrs.evolve(_live(), contract=FORGETFUL).describe()
    assert forgetful.startswith("forgetful workers, ")
    assert forgetful.endswith("cleanup outside the chart, runtime live")


def test_a_trace_names_the_runtime_and_reads_it_back() -> None:
    workers = Workers.of(_live())
    assert workers.runtime == "live"
    assert workers.system().holds_early
    assert workers.system().abandons
    assert Workers.of(System(TOMBSTONE)).runtime is None  # the default: as traces were
    offline = Workers.of(System(FORGETFUL, **OFFLINE.settings()))  # type: ignore[arg-type]
    assert offline.system().acknowledge == OFFLINE.acknowledge


# -- what each setting does to the world the review explores -----------------------------


def test_holding_early_facts_leaves_out_the_refusals_and_changes_no_verdict() -> None:
    # On reply, SourceHeld may overtake Submitted: delivered, the coordinator refuses it as
    # early and the runtime keeps it in flight.  Holding it back is the same runs without the
    # refused delivery in between, so every verdict is the same.
    plain = System(TOMBSTONE, acknowledge=Acknowledge.ON_REPLY)
    holding = attrs.evolve(plain, holds_early=True)
    refused = [
        step for _node, step in _walk(SF, plain) if step.error and "SourceHeld" in str(step.call)
    ]
    assert refused
    assert not [
        step for _node, step in _walk(SF, holding) if step.error and "SourceHeld" in str(step.call)
    ]
    for order in (SF, DF):
        verdicts = [
            [(v.prop.key, v.holds) for v in review_order(order, system=system).verdicts]
            for system in (plain, holding)
        ]
        assert verdicts[0] == verdicts[1]


def _took_while_replying(order: HandoffOrder, system: System) -> bool:
    """Whether some worker takes an action while a reply of its own is still in flight."""
    for node, step in _walk(order, system):
        message = step.message
        if step.kind is MoveKind.TO_WORKER and message is not None:
            in_flight = node.codes.decoded(node.state.flight)  # type: ignore[attr-defined]
            if any(
                other.kind is MessageKind.OUTCOME and other.role is message.role
                for other in in_flight
            ):
                return True
    return False


def test_one_action_at_a_time_waits_for_the_workers_last_reply() -> None:
    plain = System(TOMBSTONE, acknowledge=Acknowledge.ON_REPLY)
    assert _took_while_replying(SF, plain)
    assert not _took_while_replying(SF, attrs.evolve(plain, one_at_a_time=True))


def test_the_destination_answers_a_repeated_action_from_its_cache() -> None:
    # A duplicated ReserveDestination reaches the destination twice.  Without a cache the
    # second is silent; with one, the destination sends the same Accepted again and does
    # nothing else (the coordinator takes a repeated acknowledgement as a repeat).
    plain = System(
        TOMBSTONE, acknowledge=Acknowledge.ON_REPLY, injected=frozenset({Fault.DUPLICATION})
    )

    def again(system: System) -> set[tuple[str, ...]]:
        return {
            tuple(sent.describe() for sent in step.sent)
            for _node, step in _walk(DF, system)
            if step.kind is MoveKind.TO_WORKER
            and step.message is not None
            and step.message.copy
            and step.message.role is Role.DESTINATION
        }

    assert again(plain) <= {()}
    cached = again(attrs.evolve(plain, answers_again=16))
    assert ("#0 Accepted",) in cached
    # Safe with the cache, once the runtime drains transfers (W9: test_drain_transfers.py).
    cached_and_drained = attrs.evolve(plain, answers_again=16, drains_transfers=True)
    assert review_order(DF, system=cached_and_drained).holds


def test_a_tombstone_expires_only_after_its_handoff_retired() -> None:
    system = _live()
    expiries = [(node, step) for node, step in _walk(SF, system) if step.kind is MoveKind.EXPIRE]
    assert expiries
    for node, _step in expiries:
        coordinators, state = node.coordinators, node.state  # type: ignore[attr-defined]
        assert coordinators[0].is_complete or state.watches[0].abandoned


# -- the live runtime's cleanup outside the chart -----------------------------------------


@pytest.mark.parametrize("order", [SF, DF])
def test_the_live_runtime_with_tombstones_is_safe_and_demands_no_completion(
    order: HandoffOrder,
) -> None:
    # A session may end at any time before its handoff completed; the coordinator then hears
    # nothing more, so the run ends with it incomplete: W4, W5 and W7 ask nothing of it (W7's
    # runs suffer no fault, and an ending is one).  The runtime's own cancels reach workers
    # that remember a canceled request, so late work is dropped, and a tombstone expires
    # only once nothing of its request is on its way: no slot is left held.  Its own
    # cleanup issues both cancels at once, so it is safe once it drains transfers (W9).
    review = review_order(order, system=_live(drains_transfers=True))
    assert review.holds, [v.prop.key for v in review.verdicts if not v.holds]
    steps = [step for _node, step in _walk(order, _live())]
    assert any(step.kind is MoveKind.ABANDON for step in steps)
    assert any(step.kind is MoveKind.DROP for step in steps)


@pytest.mark.parametrize(
    ("order", "work"), [(SF, "#0 SubmitPrefill"), (DF, "#0 ReserveDestination")]
)
def test_the_live_cleanup_leaks_with_forgetful_workers(order: HandoffOrder, work: str) -> None:
    # The session ends while the first take is on its way; the runtime's own cancel reaches
    # the worker first, which answers Noop and forgets; the take then holds a slot nobody
    # frees: with nothing of the handoff in flight a worker holds a slot for it (W1), taken
    # after the runtime's cleanup freed it (W2).
    system = attrs.evolve(_live(), contract=FORGETFUL)
    review = review_order(order, system=system)
    broken = review.verdict(Key.SLOTS_AT_COMPLETION.value)
    assert not broken.holds
    example = broken.counterexample
    assert example is not None
    assert "session ended outside the chart" in example.finding
    kinds = [step.kind for step in example.steps]
    assert MoveKind.ABANDON in kinds
    took = next(s for s in example.steps if s.message and s.message.describe() == work)
    assert kinds.index(MoveKind.ABANDON) < example.steps.index(took)
    assert not review.verdict(Key.NO_SLOT_AFTER_FREED.value).holds
    # The counterexample replays in the review's world, move by move.
    world = SystemWorld(compiled(order), system, Rules(order))
    replayed = replay_moves(world, [line_of(step) for step in example.steps])
    assert Key.SLOTS_AT_COMPLETION in {found.finding.key for found in replayed.findings}


def test_a_lost_cleanup_of_the_live_runtime_is_never_sent_again() -> None:
    # The live runtime never reports TimedOut: a lost message ends the session (a transport
    # error).  Its own CancelSource, lost in turn, is not sent again, so a slot the source
    # took stays held once nothing of the handoff is in flight (W1); no liveness property
    # fails, since nothing waits for a completion.  (Transfers drained: W9 apart.)
    lossy = _live(injected=frozenset({Fault.LOSS}), drains_transfers=True)
    review = review_order(SF, system=lossy)
    failing = {v.prop.key for v in review.verdicts if not v.holds}
    assert failing == {Key.SLOTS_AT_COMPLETION}
    example = review.verdict(Key.SLOTS_AT_COMPLETION.value).counterexample
    assert example is not None
    lost = [step for step in example.steps if step.kind is MoveKind.LOSS]
    assert lost
    assert lost[-1].message is not None
    assert lost[-1].message.action_id == RUNTIME_OWN


# -- the command line -----------------------------------------------------------------------


DRAINED = "--drain-transfers"
"""Where a run shows a runtime safe: its cleanup issues both cancels at once, so it holds
only once the runtime drains transfers (W9, test_drain_transfers.py)."""
RUNS = {
    "live": ("review", "--runtime", "live", "--format", "json", DRAINED),
    "live-two": (
        "review",
        "--runtime",
        "live",
        "--concurrency",
        "2",
        "--order",
        "SourceFirst",
        DRAINED,
    ),
    "live-on-send": (
        "review",
        "--runtime",
        "live",
        "--acknowledge",
        "on-send",
        "--order",
        "SourceFirst",
    ),
    "offline": ("review", "--runtime", "offline"),
    "unknown": ("review", "--runtime", "nightly"),
    "eager-alone": ("review", "--runtime", "eager"),
    "mine": ("review", "--runtime", "test_runtime_profiles:MINE", "--order", "SourceFirst"),
    # CancelOnceSubmitted cancels only what a worker acknowledged taking.  The offline
    # runtime acknowledges SubmitPrefill on the worker's reply: safe with forgetful workers.
    # Told to acknowledge SubmitPrefill on send, the cancel may overtake it: a leak.
    "offline-chart": ("review", "--chart", CHART, "--runtime", "offline", DRAINED),
    "offline-chart-send": (
        "review",
        "--chart",
        CHART,
        "--runtime",
        "offline",
        "--acknowledge",
        "on-send:SubmitPrefill,StartTransfer",
        DRAINED,
    ),
    "spin-live": ("review", "--engine", "spin", "--runtime", "live"),
    "simulate-live": ("simulate", "--runtime", "live", "--handoffs", "1000"),
    "simulate-live-forgetful": (
        "simulate",
        "--runtime",
        "live",
        "--workers",
        "forgetful",
        "--handoffs",
        "3000",
    ),
    "simulate-offline": ("simulate", "--runtime", "offline", "--handoffs", "200"),
}


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    here = tmp_path_factory.mktemp("runtimes")
    return run_side_by_side(RUNS, here, env={"PYTHONPATH": str(TESTS)})


def test_review_live_says_it_and_holds(done: dict[str, subprocess.CompletedProcess[str]]) -> None:
    ran = done["live"]
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads(ran.stdout)
    for order in report["orders"]:
        workers = order["workers"]
        assert workers["runtime"] == "live"
        assert workers["contract"] == "tombstone"
        assert workers["acknowledge"] == "on-reply"
        assert "sessions end with cleanup outside the chart" in workers["runtime_settings"]
    two = done["live-two"]
    assert two.returncode == 0, two.stdout
    assert "2 handoffs sharing them" in two.stdout
    assert "runtime live" in two.stdout


def test_an_explicit_option_overrides_the_runtime(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    ran = done["live-on-send"]
    assert "work acknowledged on send" in ran.stdout, ran.stdout + ran.stderr
    assert "runtime live (acknowledge overridden)" in ran.stdout


def test_offline_assumes_forgetful_workers_and_leaks_in_both_orders(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # The offline replay answers a cancel for a request its worker has not seen Noop and
    # keeps no tombstone: the cancel may overtake the take, which then holds a slot for a
    # handoff that completed CANCELED, in either order.
    ran = done["offline"]
    assert ran.returncode == 1, ran.stdout
    assert "runtime offline" in ran.stdout
    assert "UNSAFE: W2 (SourceFirst, forgetful workers), W1 (SourceFirst" in ran.stdout
    assert "W2 (DestinationFirst, forgetful workers), W1 (DestinationFirst" in ran.stdout


def test_acknowledgement_per_kind_decides_a_chart_verdict(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    safe, leaks = done["offline-chart"], done["offline-chart-send"]
    # The chart breaks S5 alone (a failed submission completes without a cancel), so the
    # review is UNSAFE by the chart alone; with the offline runtime's workers it keeps every
    # system property, and the verdict names no world with workers.
    assert safe.returncode == 1, safe.stdout + safe.stderr
    verdict = safe.stdout.rstrip().splitlines()[-1]
    assert verdict.startswith("UNSAFE: S5 (CancelOnceSubmitted alone)"), verdict
    assert "workers" not in verdict
    assert "StartTransfer acknowledged on send, other work on the worker's reply" in safe.stdout
    assert leaks.returncode == 1, leaks.stdout + leaks.stderr
    assert "W1 fails" in leaks.stdout
    assert "runtime offline (acknowledge overridden)" in leaks.stdout


def test_bad_or_unmirrored_runtimes_are_one_line(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    unknown = done["unknown"]
    assert unknown.returncode == 2
    assert "unknown runtime 'nightly'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    # eager names no workers of its own: the review needs --workers with it.
    alone = done["eager-alone"]
    assert alone.returncode == 2
    assert alone.stderr.strip().endswith("the runtime eager names no workers: give --workers too")
    spin = done["spin-live"]
    assert spin.returncode == 2, spin.stdout + spin.stderr
    assert len(spin.stderr.strip().splitlines()) == 1
    assert "--engine spin mirrors a runtime without one action at a time" in spin.stderr
    assert "cleanup outside the chart" in spin.stderr


def _count(ran: subprocess.CompletedProcess[str], label: str) -> int:
    line = next(line for line in ran.stdout.splitlines() if line.startswith(f"  {label} "))
    return int(line.split()[1].replace(",", ""))


def test_the_simulation_shows_the_live_verdicts_at_scale(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # As the review: with tombstones the live runtime's cleanup frees every slot; sessions
    # end untold (a deadline or a client's cancel, at the fault rate) and no completion is
    # asked of them.  With forgetful workers its cleanup overtakes the work it cleans up
    # after, and the late work keeps its slot (W1, W2).
    live = done["simulate-live"]
    assert live.returncode == 0, live.stdout + live.stderr
    assert _count(live, "abandoned") > 0
    assert _count(live, "incomplete") == 0
    assert live.stdout.rstrip().endswith(
        "OK: every handoff completed or ended outside the chart, no owner leaked"
    )
    forgetful = done["simulate-live-forgetful"]
    assert forgetful.returncode == 1, forgetful.stdout
    broken = next(line for line in forgetful.stdout.splitlines() if "broken" in line)
    assert "W1" in broken
    assert "W2" in broken


def test_a_runtime_of_ones_own_and_the_simulation_name_the_runtime(
    done: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    mine = done["mine"]
    assert mine.returncode == 0, mine.stdout + mine.stderr
    assert "tombstones expire, runtime test_runtime_profiles:MINE" in mine.stdout
    simulated = done["simulate-offline"]
    assert "StartTransfer acknowledged on send, other work on the worker's reply, runtime " in (
        simulated.stdout
    )


def test_the_runtime_is_about_workers_it_names(tmp_path: Path) -> None:
    ran = run_handoff("review", "--runtime", "test_runtime_profiles:MINE", cwd=tmp_path)
    assert ran.returncode == 2  # not importable from here: one line, no traceback
    assert "Traceback" not in ran.stderr


def test_the_docs_runtime_of_ones_own_is_what_it_says() -> None:
    text = (TESTS.parent / "docs" / "integrating.md").read_text(encoding="utf-8")
    section = text.split("## Runtime profiles")[1].split("\n## ")[0]
    code = section.split("```python\n")[1].split("```")[0]
    scope: dict[str, object] = {}
    exec(code, scope)
    mine = scope["MINE"]
    assert isinstance(mine, RuntimeProfile)
    assert mine.contract() is TOMBSTONE
    system = System(TOMBSTONE, **mine.settings())  # type: ignore[arg-type]
    assert system.describe().endswith(
        "StartTransfer acknowledged on send, other work on the worker's reply, tombstones "
        "expire, runtime mine"
    )


def test_a_counterexample_of_a_runtime_replays_from_its_trace(tmp_path: Path) -> None:
    # The live runtime's counterexample (its session ended, its cleanup overtaken by the take
    # it cleans up after) is kept as a trace naming the runtime, and replays: the trace's
    # moves (the session's end, the dropped replies) are the live world's.
    env = {"PYTHONPATH": str(TESTS)}
    argv = ("review", "--order", "SourceFirst", "--workers", "forgetful")
    live = run_handoff(*argv, "--runtime", "live", "--trace-out", "live.jsonl", cwd=tmp_path)
    assert live.returncode == 1, live.stdout + live.stderr
    header = json.loads((tmp_path / "live.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["workers"]["runtime"] == "live"
    assert '{"move":"abandon"}' in (tmp_path / "live.jsonl").read_text(encoding="utf-8")
    replayed = run_handoff("replay", "live.jsonl", cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "VIOLATED live.jsonl:" in replayed.stdout
    # A runtime of one's own named by a trace is data: imported only when given.
    mine = run_handoff(
        *argv, "--runtime", "test_runtime_profiles:MINE", "--trace-out", "mine.jsonl",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert mine.returncode == 1, mine.stdout + mine.stderr
    refused = run_handoff("replay", "mine.jsonl", cwd=tmp_path, env=env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "give it with --runtime test_runtime_profiles:MINE" in refused.stderr
    given = ("replay", "--runtime", "test_runtime_profiles:MINE", "mine.jsonl")
    allowed = run_handoff(*given, cwd=tmp_path, env=env)
    assert allowed.returncode == 1, allowed.stdout + allowed.stderr
    assert "VIOLATED mine.jsonl:" in allowed.stdout


def test_an_explained_counterexample_of_ones_own_runtime_is_kept_as_a_test(
    tmp_path: Path,
) -> None:
    # The pytest file the review writes hands check_trace the runtime the trace names, as it
    # does the contract: it replays the run, and fails while the run breaks W1.
    env = {"PYTHONPATH": str(TESTS)}
    argv = ("review", "--order", "SourceFirst", "--workers", "forgetful", "--explain", "out")
    ran = run_handoff(*argv, "--runtime", "test_runtime_profiles:MINE", cwd=tmp_path, env=env)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    test = tmp_path / "out" / "test_source_first_forgetful_w1.py"
    assert "runtimes=['test_runtime_profiles:MINE']" in test.read_text(encoding="utf-8")
    kept = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         str(test)],
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, **env}, check=False,
    )  # fmt: skip
    assert kept.returncode == 1, kept.stdout + kept.stderr
    assert "violated at line" in kept.stdout

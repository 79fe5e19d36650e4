"""The runtime's options and the words of its moves, in process.

The command-line tests run `handoff` in a subprocess; these call the one option translator and
the move words directly, for what each option sets in the `System` it builds and how a
counterexample reads each move the runtime adds (a loss waiting on the runtime's timer, a
re-send, a timer's timeout, a deadline, a session ended outside the chart, a dropped reply).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import pytest
from support import HID, SILENT_TAKE

from handoff import HandoffOrder
from handoff._cli import UsageError
from handoff._docs.path_diagram import system_sequence_of
from handoff._review.explore import review_order
from handoff._review.system_words import moves_counterexample
from handoff._runs.simulation import SimulationConfig, simulate
from handoff._runs.simulation_report import SimulationReport
from handoff._runs.trace import TraceError, read_trace, trace_text
from handoff._system.acknowledge import Acknowledge
from handoff._system.cli import (
    Options,
    add_system_options,
    deadline_argument,
    restart_argument,
    system_of,
)
from handoff._system.config import System
from handoff._system.duties import Resend, Restart
from handoff._system.faults import Fault
from handoff._system.properties import Key
from handoff._system.workers import FORGETFUL, TOMBSTONE, WorkerContract

ORDER = HandoffOrder.SOURCE_FIRST


def _system(*argv: str, options: Options = Options.REVIEWED) -> System | None:
    parser = argparse.ArgumentParser()
    add_system_options(parser, workers_help="the workers", options=options)
    return system_of(parser.parse_args(argv), options)


def test_each_duty_option_sets_its_system_field_over_the_default_runtime() -> None:
    system = _system(
        "--workers", "tombstone", "--faults", "lose,crash", "--resend", "cleanups",
        "--restart", "loses-inbox,durable-tombstones", "--no-retry", "--drain-transfers",
        "--deadline",
    )  # fmt: skip
    assert system is not None
    assert system.resend is Resend.CLEANUPS
    assert system.restart == Restart(loses_inbox=True, durable_tombstones=True)
    assert not system.retry
    assert system.drains_transfers
    assert system.deadline == math.inf  # the review is untimed: it may fire at any moment
    assert system.runtime == "offline"  # the command line's default runtime
    words = system.describe()
    for said in ("failed cancels not retried", "lost cleanups re-sent", "loses its inbox"):
        assert said in words, words


def test_a_profile_fills_the_system_and_an_explicit_option_overrides_it() -> None:
    live = _system("--runtime", "live")
    assert live is not None
    assert live.contract is TOMBSTONE  # the live runtime's own workers
    assert (live.abandons, live.one_at_a_time, live.answers_again) == (True, True, 16)
    assert live.acknowledge is Acknowledge.ON_REPLY
    told = _system("--runtime", "live", "--acknowledge", "on-send", "--workers", "forgetful")
    assert told is not None
    assert told.contract is FORGETFUL
    assert told.acknowledge is Acknowledge.ON_SEND
    assert told.describe().endswith("runtime live (acknowledge overridden)")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("--workers", "tombstone", "--restart", "keeps-slots"), "give --faults crash too"),
        (("--workers", "tombstone", "--resend", "everything"), "give --faults lose, or"),
        (("--runtime", "eager"), "the runtime eager names no workers: give --workers too"),
        (("--drain-transfers",), "--drain-transfers is about the workers"),
    ],
)
def test_an_option_the_world_cannot_use_is_a_usage_error(argv: tuple[str, ...], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        _system(*argv)


def test_a_simulated_deadline_takes_milliseconds() -> None:
    with pytest.raises(UsageError, match="--deadline takes MS in a simulation"):
        _system("--workers", "tombstone", "--deadline", options=Options.NONE)
    timed = _system("--workers", "tombstone", "--deadline", "25", options=Options.NONE)
    assert timed is not None
    assert timed.deadline == 25.0
    with pytest.raises(argparse.ArgumentTypeError, match="positive number"):
        deadline_argument("-1")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown restart choice 'nope'"):
        restart_argument("nope")


def _lines(system: System, key: Key) -> list[str]:
    """The counterexample of `key` in words, then the notes of its sequence drawing."""
    review = review_order(ORDER, system=system)
    verdict = next(v for v in review.verdicts if v.prop.key is key)
    assert not verdict.holds, f"{key.value} holds in {system.describe()}"
    assert verdict.counterexample is not None
    _title, drawn = system_sequence_of(review, verdict, verdict.counterexample)
    notes = [line.text for line in drawn]
    return [*moves_counterexample(verdict, verdict.counterexample), *notes]


def test_a_loss_re_sent_reads_as_the_timer_sending_it_again() -> None:
    # Re-sending everything: a lost message waits on the runtime's timer, then goes out again.
    system = System(
        FORGETFUL, fifo=True, injected=frozenset({Fault.LOSS}), resend=Resend.EVERYTHING
    )
    text = "\n".join(_lines(system, Key.SLOTS_AT_COMPLETION))
    assert "is lost; the runtime's timer will send it again" in text
    assert "the runtime's timer fires: it sends #0 SubmitPrefill again" in text
    assert "lost: the runtime's timer will send it again" in text  # the drawing's note


def test_a_lost_inbox_reads_as_the_timer_reporting_a_timeout() -> None:
    # A restart loses the actions on their way to the worker; not re-sent, each is noticed by
    # the runtime's timer as TimedOut.
    system = System(
        TOMBSTONE,
        fifo=True,
        injected=frozenset({Fault.RESTART}),
        restart=Restart(loses_inbox=True),
    )
    text = "\n".join(_lines(system, Key.DELIVERIES_COMPLETE))
    assert "its inbox is lost: #1 CancelSource" in text, text
    assert "the runtime's timer fires for the lost" in text, text


def test_a_deadline_reads_as_the_runtime_reporting_timed_out() -> None:
    # A worker that never acknowledges its submission: only the deadline ends the handoff,
    # so no run without a fault succeeds (W7), and the counterexample shows it firing.
    system = System(SILENT_TAKE, deadline=math.inf, faults=0)
    text = "\n".join(_lines(system, Key.EVERY_HANDOFF_SUCCEEDS))
    assert "deadline fires" in text, text


def test_a_session_ended_outside_the_chart_reads_so_and_its_replies_are_dropped() -> None:
    system = System(FORGETFUL, abandons=True, holds_early=True, acknowledge=Acknowledge.ON_REPLY)
    text = "\n".join(_lines(system, Key.SLOTS_AT_COMPLETION))
    assert "the runtime ends the session outside the chart" in text, text
    assert "CancelSource (no action id)" in text, text
    assert "session ends outside the chart" in text  # the drawing's note


def _trace(tmp_path: Path, **fields: object) -> Path:
    workers = {"contract": "tombstone", "fifo": False, "faults": 2, **fields}
    header = {
        "handoff_id": "00000000-0000-0000-0000-000000000001",
        "order": "SourceFirst",
        "workers": workers,
        "fallback_transfer_delay_ms": 0.0,
    }
    path = tmp_path / "run.jsonl"
    lines = (header, {"move": "start"}, {"end": {"moves": 1}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_trace_header_gives_back_the_runtime_it_names(tmp_path: Path) -> None:
    path = _trace(
        tmp_path,
        runtime="live",
        retry=False,
        resend="cleanups",
        restart=["keeps-slots"],
        deadline=True,
        drain_transfers=True,
    )
    workers = read_trace(path).workers
    assert workers is not None
    system = workers.system()
    assert system.runtime == "live"
    assert system.abandons  # the profile's own settings
    assert not system.retry
    assert system.resend is Resend.CLEANUPS
    assert system.restart == Restart(keeps_slots=True)
    assert system.deadline == math.inf
    assert system.drains_transfers
    # Written again, the header names each setting as it was read.
    written = trace_text(read_trace(path)).splitlines()[0]
    for field in (
        '"runtime":"live"',
        '"retry":false',
        '"resend":"cleanups"',
        '"restart":["keeps-slots"]',
        '"deadline":true',
        '"drain_transfers":true',
    ):
        assert field in written, written


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("retry", "yes", "retry must be true or false, got 'yes'"),
        ("resend", "sometimes", "resend must be one of none, cleanups, everything"),
        # A value JSON can hold but no policy is (a list cannot even be looked up by name).
        ("resend", ["x"], "resend must be one of none, cleanups, everything, got ['x']"),
        ("drain_transfers", "no", "drain_transfers must be true or false, got 'no'"),
        ("restart", ["nap"], "restart must be a list of loses-inbox"),
        ("deadline", -3, "deadline must be a positive number of ms or true, got -3"),
        ("runtime", "", "runtime must be a name, got ''"),
    ],
)
def test_a_bad_runtime_field_in_a_trace_header_is_named(
    tmp_path: Path, field: str, value: object, words: str
) -> None:
    with pytest.raises(TraceError, match=re.escape(words)):
        read_trace(_trace(tmp_path, **{field: value}))


def test_the_live_runtime_simulated_ends_sessions_and_with_the_drain_breaks_nothing() -> None:
    # The live runtime's settings, its own cleanup drained: sessions end outside the chart
    # (at the fault rate, in place of a timeout or a client's cancel), one action at a time,
    # repeats answered from the cache, tombstones let go: nothing leaks, nothing breaks.
    def run(contract: WorkerContract, drained: bool) -> SimulationReport:
        system = System(
            contract,
            acknowledge=Acknowledge.ON_REPLY,
            holds_early=True,
            one_at_a_time=True,
            answers_again=16,
            expires=True,
            abandons=True,
            drains_transfers=drained,
            injected=frozenset({Fault.DUPLICATION}),
        )
        config = SimulationConfig(handoffs=400, concurrency=8, fault_rate=0.1, system=system)
        return simulate(config)

    live = run(TOMBSTONE, drained=True)
    assert live.abandoned > 0
    assert live.faults[Fault.DUPLICATION] > 0
    assert (live.leaks, live.incomplete, live.worker_slots) == (0, 0, 0)
    assert not live.broken, live.violations[:1]
    # Forgetful workers under the same runtime: its cleanup overtakes the work it cleans up
    # after, and the late work keeps its slot (W1), as the review finds.
    forgetful = run(FORGETFUL, drained=True)
    assert forgetful.leaks > 0
    assert Key.SLOTS_AT_COMPLETION in forgetful.broken


def test_the_transfer_carries_the_generation_its_reservation_was_taken_in() -> None:
    from handoff._system.runtime import Vouch, fenced
    from handoff._system.workers import Message, MessageKind, Role, WorkerReply
    from handoff._values.messages import HandoffAction

    hid = HID
    reserve = Message(
        MessageKind.ACTION, 1, Role.DESTINATION, HandoffAction.ReserveDestination(hid)
    )
    transfer = Message(MessageKind.ACTION, 2, Role.SOURCE, HandoffAction.StartTransfer(hid, 0))
    # A reservation taken stamps the generation; a refused one, or another action, does not.
    assert Vouch.NONE.taken(reserve, WorkerReply.DONE) is Vouch.VOUCHED
    assert Vouch.NONE.taken(reserve, WorkerReply.FAILED) is Vouch.NONE
    cancel = reserve._replace(action=HandoffAction.CancelDestination(hid))
    assert Vouch.NONE.taken(cancel, WorkerReply.DONE) is Vouch.NONE
    # Only a restart after the stamp leaves it unvouched, for good: a later reservation (a
    # copy taken by the restarted destination) is not the one the transfer carries.
    assert Vouch.NONE.restarted() is Vouch.NONE
    assert Vouch.VOUCHED.restarted() is Vouch.UNVOUCHED
    assert Vouch.UNVOUCHED.taken(reserve, WorkerReply.DONE) is Vouch.UNVOUCHED
    # The write is refused only then, and only the source's transfer is a write.
    assert fenced(transfer, Vouch.UNVOUCHED)
    assert not fenced(transfer, Vouch.VOUCHED)
    assert not fenced(transfer, Vouch.NONE)
    assert not fenced(reserve, Vouch.UNVOUCHED)

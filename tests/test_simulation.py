"""The simulation drives real coordinators through faults, and its checks catch real bugs."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    IssuedHandoffAction,
)
from handoff.__main__ import main
from handoff._runs.replay import replay
from handoff._runs.simulation import _ENDINGS, FAULTS, SimulationConfig, simulate
from handoff._runs.trace import read_trace, write_trace
from handoff._system.call import TERMINAL_FACTS, Call, CallKind
from handoff._system.faults import Fault
from handoff._system.properties import LEAKS, Key


def test_faulty_runs_complete_without_leaks() -> None:
    report = simulate(SimulationConfig(handoffs=3000, concurrency=200, fault_rate=0.3, seed=3))
    assert report.ok
    assert report.handoffs == 3000
    assert sum(report.completions.values()) == 3000
    assert report.completions["SUCCESS"] > 0
    assert report.completions["CANCELED"] > 0
    assert report.reopened > 0
    assert all(report.faults[fault] > 0 for fault in FAULTS), report.faults


def test_without_faults_every_handoff_succeeds_and_nothing_is_refused() -> None:
    report = simulate(SimulationConfig(handoffs=500, concurrency=50, fault_rate=0.0))
    assert report.completions == {"SUCCESS": 500}
    assert sum(report.faults.values()) == 0
    assert sum(report.refusals.values()) == 0
    # 9 calls per successful handoff: start, 5 acknowledgements, 3 facts.
    assert report.calls == 500 * 9


def test_a_seed_fixes_the_run() -> None:
    config = SimulationConfig(handoffs=400, concurrency=40, fault_rate=0.2, seed=11)
    first, second = simulate(config), simulate(config)
    assert (first.completions, first.faults, first.refusals, first.calls) == (
        second.completions,
        second.faults,
        second.refusals,
        second.calls,
    )


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_one_order_at_a_time(order: HandoffOrder) -> None:
    report = simulate(SimulationConfig(handoffs=200, concurrency=20, orders=(order,), seed=5))
    assert report.ok


class ForgetfulCoordinator(HandoffCoordinatorCore):
    """Completes as canceled on a terminal fact without cancelling anything: leaks owners."""

    __slots__ = ("_forgot",)

    def __init__(self, handoff_id: HandoffId, order: HandoffOrder, fallback: float) -> None:
        super().__init__(handoff_id, order, fallback)
        self._forgot = False

    @property
    def is_complete(self) -> bool:
        return self._forgot or super().is_complete

    @property
    def completion(self) -> HandoffCompletion | None:
        return HandoffCompletion.CANCELED if self._forgot else super().completion

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        if self._forgot:
            return []
        if (
            isinstance(fact, HandoffFact.Canceled | HandoffFact.TimedOut)
            and not super().is_complete
        ):
            self._forgot = True
            return [
                IssuedHandoffAction(HandoffActionId(99), HandoffAction.Complete(self.handoff_id))
            ]
        return super().on_fact(fact)

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        return [] if self._forgot else super().on_action_outcome(action_id, outcome)


def test_a_leaking_coordinator_is_caught() -> None:
    config = SimulationConfig(
        handoffs=500, concurrency=50, fault_rate=0.3, seed=2, record_calls=True
    )
    report = simulate(config, make=ForgetfulCoordinator)
    assert not report.ok
    assert report.leaks > 0
    leaked = [v for v in report.violations if any(f.key in LEAKS for f in v.findings)]
    assert len(leaked) == report.leaks
    record = leaked[0]
    assert record.calls[0].call == Call.start()
    # The call that "completed" it was the terminal fact, with no cancel before it.
    (completing,) = [
        entry
        for entry in record.calls
        if any(isinstance(item.action, HandoffAction.Complete) for item in entry.expect or ())
    ]
    assert completing.call.kind is CallKind.FACT
    assert isinstance(completing.call.fact, HandoffFact.Canceled | HandoffFact.TimedOut)
    assert not any(
        isinstance(item.action, HandoffAction.CancelSource | HandoffAction.CancelDestination)
        for entry in record.calls
        for item in entry.expect or ()
    )


def test_recorded_failures_are_traces_the_real_coordinator_diverges_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = SimulationConfig(
        handoffs=200, concurrency=20, fault_rate=0.3, seed=2, record_calls=True
    )
    report = simulate(config, make=ForgetfulCoordinator)
    assert report.violations
    path = tmp_path / "one.jsonl"
    write_trace(report.violations[0].trace, path)
    trace = read_trace(path)
    assert trace == report.violations[0].trace
    # Replayed on the real coordinator, the forgetful one's premature Complete diverges.
    divergence = replay(trace).divergence
    assert divergence is not None
    assert isinstance(divergence.call.fact, HandoffFact.Canceled | HandoffFact.TimedOut)
    assert "Complete" in divergence.expected
    assert "Complete" not in divergence.actual


def test_the_command_records_failures_and_says_when_it_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from handoff._runs import simulate_cli

    # Every handoff gets stuck before its release: each one fails the completion check.
    monkeypatch.setattr(
        simulate_cli, "simulate", functools.partial(simulate, make=StuckCoordinator)
    )
    args = ["simulate", "--handoffs", "4", "--concurrency", "2", "--fault-rate", "0"]
    failures = tmp_path / "failures"
    assert main([*args, "--record-failures", str(failures)]) == 1
    written = sorted(failures.iterdir())
    assert len(written) == 4
    assert capsys.readouterr().out.count("recorded ") == len(written)
    assert all(read_trace(path).entries for path in written)
    blocked = tmp_path / "file"
    blocked.write_text("")
    # A file where a directory belongs is refused before the run, as a usage error.
    assert main([*args, "--record-failures", str(blocked)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("handoff simulate: error: --record-failures: ")
    assert err.count("\n") == 1


class StuckCoordinator(HandoffCoordinatorCore):
    """Never issues ReleaseSource: the handoff can never complete."""

    __slots__ = ()

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        issued = super().on_action_outcome(action_id, outcome)
        return [item for item in issued if not isinstance(item.action, HandoffAction.ReleaseSource)]


def test_a_handoff_that_never_completes_is_caught() -> None:
    report = simulate(
        SimulationConfig(handoffs=50, concurrency=10, fault_rate=0.0), make=StuckCoordinator
    )
    assert report.incomplete == 50
    assert all([f.key for f in v.findings] == [Key.DELIVERIES_COMPLETE] for v in report.violations)


def test_the_command_prints_totals_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--handoffs", "300", "--concurrency", "30", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "simulated 300 handoffs (order all)" in out
    assert "leaks         0" in out
    assert "OK: every handoff completed, no owner leaked" in out


def test_every_terminal_fact_is_reported_by_a_fault_the_simulation_may_draw() -> None:
    # A new terminal fact comes with its fault: the review offers the fact at any time, and the
    # simulation draws each such fault as a handoff begins (a cancel after success aside).
    reported = {fault.fact for fault in Fault} - {None}
    assert reported == set(TERMINAL_FACTS)
    drawn = [fault for fault, _ in _ENDINGS]
    assert {Fault.TIMEOUT, Fault.CANCELLATION} <= set(drawn) <= set(FAULTS)
    assert Fault.CANCELLATION_AFTER_SUCCESS not in drawn
    assert all(fact is fault.fact for fault, fact in _ENDINGS)

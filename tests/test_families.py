"""Safety told apart from the reference: the two families, the verdict line, the exit status,
and reports a user can act on (the chart a trace names, root cause first, the cut, the time).

The charts of `charts.families` are ones an engineer can argue are safe, and one that leaks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from charts import families as family_charts
from charts.discipline import AcceptsMismatchedOutcome

from handoff import (
    ConflictingOutcomeError,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
)
from handoff.__main__ import main
from handoff._chart.base import HandoffChart
from handoff._review.explore import Review, review_chart
from handoff._review.report import DIFFERS, UNSAFE, exit_status, text, verdict_line
from handoff._system.properties import PROPERTIES, Family, Key

HANDOFF = str(Path(sys.executable).with_name("handoff"))
TESTS = Path(__file__).resolve().parent
SAFE = {
    family_charts.DropEarlyTransfer: {Key.FACTS},
    family_charts.CancelDestinationFirst: {Key.PROMPT},
    family_charts.RetryFailedCancel: {Key.EACH_ACTION, Key.OUTCOMES},
}
"""Each chart an engineer can argue is safe, with the reference properties it differs on."""


@pytest.fixture(scope="module")
def reviewed() -> dict[type[HandoffChart], Review]:
    charts = [*SAFE, family_charts.LeakReservation]
    return {chart: review_chart(chart) for chart in charts}


def _handoff(*args: str, cwd: Path = TESTS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HANDOFF, *args], cwd=cwd, text=True, capture_output=True, timeout=600, check=False
    )


def test_every_property_has_a_family_and_a_reason() -> None:
    families = {prop.key: prop.family for prop in PROPERTIES}
    assert set(families.values()) == set(Family)
    # What the families are for: a leak, an early activation, a handoff that cannot end.
    for key in (Key.OWNERS_FREED, Key.ACTIVATE_AFTER_TRANSFER, Key.PROGRESS, Key.CANCELLATION):
        assert families[key] is Family.SAFETY, key
    # Refusal classes and phrases, what goes out in which call, the exact lifecycle record.
    for key in (Key.FACTS, Key.OUTCOMES, Key.PROMPT, Key.LIFECYCLE):
        assert families[key] is Family.CONFORMANCE, key
    assert all(prop.why and "\n" not in prop.why for prop in PROPERTIES)


def test_a_chart_that_differs_only_from_the_reference_is_safe(
    reviewed: dict[type[HandoffChart], Review],
) -> None:
    for chart, differs in SAFE.items():
        found = reviewed[chart]
        failing = {verdict.prop.key for verdict in found.failures()}
        assert failing == differs, chart.__name__
        assert found.safe
        line = verdict_line([found])
        assert line is not None
        assert line.startswith("SAFE, differs from the reference: "), line
        for key in differs:
            assert f"{key.value} ({chart.__name__})" in line
        assert exit_status([found]) == DIFFERS == 3
        assert exit_status([found], safety_only=True) == 0


def test_a_leaking_chart_is_unsafe_and_its_root_cause_comes_first(
    reviewed: dict[type[HandoffChart], Review],
) -> None:
    found = reviewed[family_charts.LeakReservation]
    assert not found.safe
    assert verdict_line([found]) == (
        "UNSAFE: S5 (SourceFirst); differs from the reference: Q1 (SourceFirst)"
    )
    assert exit_status([found]) == exit_status([found], safety_only=True) == UNSAFE == 1
    # Q1 breaks at the call that begins cleanup, S5 only at the completion after it.
    first, second = found.failures()
    assert (first.prop.key, second.prop.key) == (Key.PROMPT, Key.OWNERS_FREED)
    assert first.counterexample is not None
    assert second.counterexample is not None
    assert len(first.counterexample.steps) < len(second.counterexample.steps)
    report = text([found])
    assert report.index("Q1 fails:") < report.index("S5 fails:")


def test_the_report_says_where_the_time_went(
    reviewed: dict[type[HandoffChart], Review],
) -> None:
    found = reviewed[family_charts.DropEarlyTransfer]
    assert [name for name, _ in found.phases] == ["exploration", "liveness", "Table"]
    assert sum(seconds for _, seconds in found.phases) <= found.seconds
    header = text([found]).splitlines()[0]
    assert "s (exploration " in header
    assert ", liveness " in header
    assert ", Table " in header


def test_the_command_exits_by_family_and_json_carries_it(tmp_path: Path) -> None:
    chart = "charts.families:DropEarlyTransfer"
    done = _handoff("review", "--chart", chart, "--format", "json")
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["safe"] is True
    assert report["verdict"] == "SAFE, differs from the reference: R1 (DropEarlyTransfer)"
    (order,) = report["orders"]
    assert order["origin"] == chart
    families = {prop["key"]: prop["family"] for prop in order["properties"]}
    assert families["R1"] == "conformance"
    assert families["S5"] == "safety"
    assert _handoff("review", "--chart", chart, "--safety-only").returncode == 0


def test_a_counterexample_trace_names_its_chart_and_replays_on_it(tmp_path: Path) -> None:
    # The leaking chart keeps its parent's title: only its MODULE:CLASS names it.
    trace = tmp_path / "leak.jsonl"
    done = _handoff(
        "review", "--chart", "charts.families:LeakReservation", "--trace-out", str(trace)
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.rstrip().splitlines()[-1].startswith("UNSAFE: S5 (SourceFirst)")
    header = json.loads(trace.read_text().splitlines()[0])
    assert header["chart"] == "charts.families:LeakReservation"
    # A trace's chart is data: the chart it names is replayed once it is handed over.
    refused = _handoff("replay", str(trace))
    assert refused.returncode == 2, refused.stderr
    assert "give it with --chart charts.families:LeakReservation to allow it" in refused.stderr
    replayed = _handoff("replay", "--chart", "charts.families:LeakReservation", str(trace))
    assert replayed.returncode == 1, replayed.stderr
    assert "VIOLATED" in replayed.stdout
    # The first counterexample is the root cause's: the call that begins cleanup owes a cancel.
    assert "wrote the Q1 counterexample" in done.stderr
    assert "Q1 (actions go out in the call that makes them due)" in replayed.stdout
    # The shipped chart, given instead, answers the trace as the SPEC does.
    fixed = _handoff("replay", "--chart", "handoff:SourceFirstChart", str(trace))
    assert fixed.returncode == 0, fixed.stdout


def test_a_trace_naming_a_chart_that_cannot_be_loaded_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "lost.jsonl"
    trace.write_text(
        '{"handoff_id":"00000000-0000-0000-0000-000000000001","order":"SourceFirst",'
        '"chart":"nowhere_at_all:Chart","fallback_transfer_delay_ms":0.0}\n'
        '{"call":"start"}\n{"end":{"calls":1}}\n',
        encoding="utf-8",
    )
    assert main(["replay", str(trace)]) == 2  # as for any trace that cannot be replayed
    error = capsys.readouterr().err
    assert "chart nowhere_at_all:Chart is neither shipped nor given" in error
    assert "give it with --chart nowhere_at_all:Chart to allow it" in error


def test_a_cleanup_failure_a_chart_takes_is_journaled_so_a_second_report_is_not_taken() -> None:
    # RetryFailedCancel takes a failed CancelSource (issuing a new cancel) where the reference
    # refuses it.  Taken, the report is journaled: the same report again is the duplicate the
    # reference drops, another outcome for that action the conflict it refuses.
    hid = HandoffId(uuid.UUID(int=7))
    coordinator = HandoffCoordinatorCore(hid, chart=family_charts.RetryFailedCancel)
    [submit] = coordinator.start()
    assert coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED) == []
    [cancel] = coordinator.on_fact(HandoffFact.Canceled(hid))
    assert isinstance(cancel.action, HandoffAction.CancelSource)
    failed = HandoffActionOutcome.failed("busy")
    [retry] = coordinator.on_action_outcome(cancel.id, failed)
    assert isinstance(retry.action, HandoffAction.CancelSource)
    assert retry.id != cancel.id
    for _ in range(3):  # taken once, never again: no further cancels
        assert coordinator.on_action_outcome(cancel.id, failed) == []
    assert coordinator.chart_state == "retrying_source"
    with pytest.raises(ConflictingOutcomeError, match=f"handoff action {cancel.id.value}"):
        coordinator.on_action_outcome(cancel.id, HandoffActionOutcome.APPLIED)
    [complete] = coordinator.on_action_outcome(retry.id, HandoffActionOutcome.APPLIED)
    assert isinstance(complete.action, HandoffAction.Complete)
    assert coordinator.completion is HandoffCompletion.CANCELED


def test_a_mismatched_outcome_a_chart_takes_is_journaled() -> None:
    hid = HandoffId(uuid.UUID(int=8))
    coordinator = HandoffCoordinatorCore(hid, chart=AcceptsMismatchedOutcome)
    [submit] = coordinator.start()
    assert coordinator.on_action_outcome(submit.id, HandoffActionOutcome.APPLIED) == []
    assert coordinator.on_action_outcome(submit.id, HandoffActionOutcome.APPLIED) == []
    with pytest.raises(ConflictingOutcomeError):
        coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)

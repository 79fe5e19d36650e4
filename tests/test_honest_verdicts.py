"""Verdicts a review earned: cut short by its guard, out of memory, its progress on a terminal,
the fault budget counted per handoff, and the chart's own properties in a review with workers."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest
from charts.broken import ReleaseWithActivation
from support import run_handoff, users_environment

from handoff import HandoffOrder, check_trace
from handoff.__main__ import main
from handoff._compile.table import compiled
from handoff._review.environment import Rules
from handoff._review.explore import _Explorer, review_chart, review_order
from handoff._review.judge import RunJudge, judge, review_alone
from handoff._review.meter import QUIET_SECONDS, Meter
from handoff._review.report import CUT_SHORT, exit_status, json_report, markdown, text
from handoff._review.system import SystemWorld
from handoff._runs.replay import replay
from handoff._runs.simulated_workers import SimulatedWorkers
from handoff._runs.trace import Trace, read_trace, write_trace
from handoff._system.config import Acknowledge, System
from handoff._system.faults import Fault
from handoff._system.workers import TOMBSTONE, Tombstone

TESTS = Path(__file__).parent
ON_SEND = Acknowledge.ON_SEND
_WORLD = (
    "--order", "SourceFirst", "--workers", "tombstone", "--acknowledge", "on-send",
    "--drain-transfers",
)  # fmt: skip
"""A world that is safe and live once its runtime drains transfers (else the cleanup's race
breaks W9): what is explored reviews OK, so only a cut, or the chart alone, can change it."""


# -- cut short ------------------------------------------------------------------------------


def test_a_review_its_guard_stops_says_cut_short_and_exits_with_its_own_status(
    tmp_path: Path,
) -> None:
    argv = (*_WORLD, "--concurrency", "2", "--max-configurations", "300")
    ran = run_handoff("review", *argv, cwd=tmp_path, timeout=120)
    assert ran.returncode == CUT_SHORT == 5, ran.stderr
    assert ran.stderr == ""
    last = ran.stdout.rstrip().splitlines()[-1]
    assert last.startswith(
        "CUT SHORT: SourceFirst, tombstone workers: the exploration stopped at its guard of 300 "
        "configurations, W4, W5, W7, Bound not judged; no safety property failed in what was "
        "explored"
    )
    # Nothing fails for want of exploring, and no message the guard cut reads as refused.
    assert "FAIL" not in ran.stdout
    assert "refused" not in ran.stdout
    for key in ("W4", "W5", "W7", "Bound"):
        row = next(line for line in ran.stdout.splitlines() if line.startswith(f"  {key} "))
        assert "NOT JUDGED" in row
        assert "guard of 300 configurations, so not every run was explored to its end" in row

    data = json.loads(run_handoff("review", *argv, "--format", "json", cwd=tmp_path).stdout)
    assert (data["ok"], data["safe"], data["cut_short"]) == (False, False, True)
    order = data["orders"][0]
    assert order["configurations"] == 300
    assert order["cut_short"] == "the exploration stopped at its guard of 300 configurations"
    verdicts = {entry["key"]: entry for entry in order["properties"]}
    assert verdicts["W4"]["verdict"] == "NOT JUDGED"
    assert verdicts["W4"]["judged"] is False
    assert verdicts["W4"]["counterexample"] is None
    assert verdicts["W2"]["verdict"] == "PASS"


def test_a_counterexample_found_before_the_cut_is_true_and_the_review_unsafe(
    tmp_path: Path,
) -> None:
    world = ("--order", "SourceFirst", "--workers", "forgetful", "--acknowledge", "on-send")
    argv = (*world, "--max-configurations", "300")
    ran = run_handoff("review", *argv, cwd=tmp_path, timeout=120)
    assert ran.returncode == 1
    last = ran.stdout.rstrip().splitlines()[-1]
    assert last.startswith("UNSAFE: W2 (SourceFirst, forgetful workers)")
    assert "forgetful workers: the exploration stopped at its guard of 300 configurations" in last
    assert "W2 fails: " in ran.stdout


def test_the_chart_alone_cut_short_judges_nothing_the_cut_hides() -> None:
    review = review_order(HandoffOrder.SOURCE_FIRST, guard=40)
    assert review.cut_short == "the exploration stopped at its guard of 40 configurations"
    # L1, L2 need every run; Bound is unknown; Coverage's dead cells may lie past the cut and
    # Table compared only the cells reached.
    assert {v.prop.key.value for v in review.unjudged()} == {
        "L1",
        "L2",
        "Coverage",
        "Bound",
        "Table",
    }
    coverage = review.verdict("Coverage")
    assert (coverage.notes, coverage.dead) == ((), ())
    assert review.failures() == ()
    assert exit_status([review]) == CUT_SHORT
    assert exit_status([review], safety_only=True) == CUT_SHORT


def test_the_whole_space_is_not_cut(tmp_path: Path) -> None:
    review = review_order(HandoffOrder.SOURCE_FIRST)
    assert review.cut_short == ""
    assert review.unjudged() == ()
    assert exit_status([review]) == 0


def test_spin_has_no_guard_to_set(tmp_path: Path) -> None:
    ran = run_handoff("review", "--engine", "spin", "--max-configurations", "9", cwd=tmp_path)
    assert ran.returncode == 2
    assert ran.stderr == (
        "handoff review: error: --max-configurations bounds the review's own explorer: drop "
        "it with --engine spin\n"
    )


# -- out of memory ---------------------------------------------------------------------------

_RUN = """
import os, sys
from handoff.__main__ import main
from handoff._review import cli, explore

{patch}
sys.exit(main(sys.argv[1:]))
"""

_CHILD_EXHAUSTED = """
parent = os.getpid()
explored = explore._Explorer.explore
def explore_(self):
    if os.getpid() != parent:  # the order reviewed in the forked process
        raise MemoryError
    explored(self)
explore._Explorer.explore = explore_
cli._cores = lambda: 2  # fork even on a one-core machine
"""


def _patched(patch: str, *argv: str) -> subprocess.CompletedProcess[str]:
    script = _RUN.format(patch=textwrap.dedent(patch))
    return subprocess.run(
        [sys.executable, "-c", script, *argv],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=users_environment(),
    )


def test_a_forked_review_out_of_memory_is_one_line_and_its_own_status() -> None:
    # Both orders with workers: the second is reviewed in a forked process, which runs out.
    ran = _patched(_CHILD_EXHAUSTED, "review", "--workers", "tombstone")
    assert ran.returncode == 4
    assert ran.stdout == ""
    assert ran.stderr.count("\n") == 1
    assert ran.stderr.startswith("handoff review: error: out of memory: ")
    assert "Traceback" not in ran.stderr


# -- progress on a terminal ------------------------------------------------------------------

_EVERY_MOVE = """
from handoff._review import meter
meter.QUIET_SECONDS = 0.0
meter._EVERY = 0.0
explore._TICK = 0
"""


def test_progress_shows_on_a_terminal_and_is_cleared_before_the_report() -> None:
    import pty

    leader, follower = pty.openpty()
    script = _RUN.format(patch=_EVERY_MOVE)
    with subprocess.Popen(
        [sys.executable, "-c", script, "review", *_WORLD],
        cwd=TESTS,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=users_environment(),
    ) as process:
        os.close(follower)
        shown = b""
        while True:  # read as it is written: a full terminal would stop the command
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:  # the terminal closed with the command
                break
            if not chunk:
                break
            shown += chunk
        os.close(leader)
        assert process.stdout is not None
        report = process.stdout.read().decode()
        assert process.wait(timeout=120) == 0
    words = shown.decode()
    assert "\r\x1b[Kreviewing SourceFirst: " in words
    assert " configurations found, " in words
    assert " a second" in words
    assert words.endswith("\r\x1b[K")  # the report is not written over a progress line
    assert "reviewing" not in report
    assert report.rstrip().splitlines()[-1].startswith("OK: ")


def test_progress_shows_nothing_when_stderr_is_not_a_terminal() -> None:
    ran = _patched(_EVERY_MOVE, "review", *_WORLD)
    assert ran.returncode == 0
    assert ran.stderr == ""


def test_the_meter_waits_its_quiet_seconds_then_shows_the_rate() -> None:
    now = [100.0]
    out = io.StringIO()
    shown = Meter(out, clock=lambda: now[0])
    show = shown.showing("SourceFirst")
    now[0] += QUIET_SECONDS - 0.5
    show(4_000, 1_000)
    assert out.getvalue() == ""
    now[0] = 100.0 + 2.5
    show(20_000, 5_000)
    assert out.getvalue() == (
        "\r\x1b[Kreviewing SourceFirst: 20,000 configurations found, 5,000 explored, 2,000 a second"
    )
    shown.clear()
    assert out.getvalue().endswith("\r\x1b[K")


# -- the fault budget, per handoff -------------------------------------------------------------


def _explored(system: System) -> list[Any]:
    chart = compiled(HandoffOrder.SOURCE_FIRST)
    explorer = _Explorer(SystemWorld(chart, system, Rules(chart.order)))
    explorer.explore()
    return explorer.nodes


def test_each_handoff_suffers_its_own_budget_of_message_faults() -> None:
    system = System(
        TOMBSTONE,
        faults=0,
        injected=frozenset({Fault.DUPLICATION, Fault.RESTART}),
        concurrency=2,
        acknowledge=ON_SEND,
    )
    spent = [node.state.spent for node in _explored(system)]
    duplicated = Counter(tuple(s.of(Fault.DUPLICATION, n) for n in range(2)) for s in spent)
    # A duplicate of each handoff's messages in one run: the budget is each handoff's.
    assert duplicated[1, 1] > 0
    assert max(max(pair) for pair in duplicated) == 1
    # A restart strikes both handoffs at once: one a run.
    assert max(s.of(Fault.RESTART) for s in spent) == 1


def test_the_budget_per_handoff_is_symmetric() -> None:
    # Which handoff spent its budget is renamed with the handoff: the verdicts are those of
    # the world explored without symmetry.
    reviews = [
        review_order(
            HandoffOrder.SOURCE_FIRST,
            system=System(
                Tombstone(remembers=1),
                faults=0,
                injected=frozenset({Fault.LOSS}),
                concurrency=2,
                acknowledge=ON_SEND,
                symmetry=symmetry,
            ),
        )
        for symmetry in (True, False)
    ]
    folded, apart = ([v.word for v in review.verdicts] for review in reviews)
    assert folded == apart
    assert reviews[0].configurations < reviews[1].configurations


class _Live:
    def __init__(self, number: int) -> None:
        self.number = number
        self.spent: Counter[Fault] = Counter()
        self.restarts = 0


class _Always:
    def fault(self, kind: Fault) -> bool:
        return True


def test_a_simulated_restart_strikes_every_live_handoff_within_its_budget() -> None:
    system = System(TOMBSTONE, injected=frozenset({Fault.RESTART}))
    workers: SimulatedWorkers[Any] = SimulatedWorkers(system, _Always())  # type: ignore[arg-type]
    first, second = _Live(0), _Live(1)
    workers.begin(first)
    workers.begin(second)
    assert workers._strikes_every(Fault.RESTART)
    assert (first.spent[Fault.RESTART], second.spent[Fault.RESTART]) == (1, 1)
    # Either has lived through its one restart: no other while both are live.
    third = _Live(2)
    workers.begin(third)
    assert not workers._strikes_every(Fault.RESTART)
    assert third.spent[Fault.RESTART] == 0


# -- the chart's own properties in a review with workers -------------------------------------


def test_a_chart_unsafe_alone_is_unsafe_with_workers() -> None:
    system = System(TOMBSTONE, acknowledge=ON_SEND, drains_transfers=True)
    review = review_chart(ReleaseWithActivation, system=system)
    # With its workers (transfers drained: W9 apart) it is live and leaks nothing: only the
    # chart alone shows S2.
    assert all(verdict.holds for verdict in review.verdicts)
    assert review.alone is not None
    assert review.alone.verdict("S2").fails
    assert review.unsafe
    assert exit_status([review]) == 1
    words = text([review])
    assert words.rstrip().splitlines()[-1].startswith("UNSAFE: S2 (ReleaseWithActivation alone)")
    assert "S2 fails: ReleaseSource issued before ActivateDestination was acknowledged" in words
    data = json_report([review])
    assert data["safe"] is False
    assert data["orders"][0]["alone"]["world"] == "chart"
    assert "\n## ReleaseWithActivation (SourceFirst), the chart alone\n" in markdown([review])


def test_a_review_with_workers_says_the_chart_was_judged_alone_too(tmp_path: Path) -> None:
    ran = run_handoff("review", *_WORLD, cwd=tmp_path, timeout=120)
    assert ran.returncode == 0
    lines = ran.stdout.rstrip().splitlines()
    assert lines[0].startswith("SourceFirst, the chart alone: all 19 properties hold (119 conf")
    assert lines[-1].startswith(
        # W1-W10, Bound and Errors: 12, W8-W10 the ownership properties.
        "OK: all 12 properties hold for SourceFirst with tombstone workers, and all 19 of the "
        "chart alone; "
    )


def test_the_command_reviews_the_named_chart_alone_too(tmp_path: Path) -> None:
    trace = tmp_path / "s2.jsonl"
    chart = ("--chart", "charts.broken:ReleaseWithActivation")
    world = ("--workers", "tombstone", "--acknowledge", "on-send")
    argv = ("review", *chart, *world, "--trace-out", str(trace))
    ran = run_handoff(*argv, cwd=TESTS, timeout=120)
    assert ran.returncode == 1, ran.stderr
    # It fails alone, so its whole table is shown, before the system's.
    assert ran.stdout.startswith("ReleaseWithActivation (SourceFirst): ")
    assert "S2 fails: ReleaseSource issued before ActivateDestination" in ran.stdout
    assert (
        ran.stdout.rstrip().splitlines()[-1].startswith("UNSAFE: S2 (ReleaseWithActivation alone)")
    )
    # Its counterexample is the chart's own, written and replayed as any other.
    assert ran.stderr == f"wrote the S2 counterexample to {trace}\n"
    replayed = run_handoff("replay", *chart, str(trace), cwd=TESTS, timeout=120)
    assert replayed.returncode == 1
    assert "S2 (release only after the activation applied)" in replayed.stdout


def test_a_simulation_of_a_chart_unsafe_alone_fails_whatever_its_runs_show() -> None:
    chart = ("--chart", "charts.broken:ReleaseWithActivation")
    world = ("--workers", "tombstone", "--acknowledge", "on-send", "--drain-transfers")
    argv = ("simulate", *chart, *world, "--handoffs", "200", "--seed", "1")
    ran = run_handoff(*argv, cwd=TESTS, timeout=120)
    assert ran.returncode == 1, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[2] == (
        "  chart alone   ReleaseWithActivation, every run reviewed (254 configurations): "
        "UNSAFE: S2 (release only after the activation applied)"
    )
    # Its sampled runs complete and leak nothing with these workers: only the chart alone
    # shows that the source may let go of the KV before the destination holds it.
    assert "  broken        none" in lines
    assert "  incomplete    0" in lines
    assert "  leaks         0" in lines
    assert lines[-1] == "FAILED"


def test_a_simulation_of_the_shipped_charts_says_each_is_safe_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", "--handoffs", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == [
        "  chart alone   SourceFirst, every run reviewed (119 configurations): every safety "
        "property holds",
        "  chart alone   DestinationFirst, every run reviewed (146 configurations): every "
        "safety property holds",
    ]
    assert lines[-1] == "OK: every handoff completed, no owner leaked"


def test_the_review_alone_a_simulation_runs_says_what_it_found_or_that_it_was_cut() -> None:
    order = HandoffOrder.SOURCE_FIRST
    assert review_alone(None, order) == (
        False,
        "SourceFirst, every run reviewed (119 configurations): every safety property holds",
    )
    unsafe, words = review_alone(ReleaseWithActivation, order)
    assert unsafe
    assert words.endswith(": UNSAFE: S2 (release only after the activation applied)")
    # A review its guard stopped fails nothing it did not find broken, and says so.
    cut, words = review_alone(None, order, guard=5)
    assert not cut
    assert words == (
        "SourceFirst, reviewed alone (5 configurations): CUT SHORT: the exploration "
        "stopped at its guard of 5 configurations, no safety property failed in what was "
        "explored"
    )


# -- a replay's look-ahead cut short ---------------------------------------------------------


def _run_begun(tmp_path: Path) -> Path:
    """The shipped example's first three calls: most of the handoff lies ahead of its end."""
    example = read_trace(TESTS / "traces" / "source_first_success.jsonl")
    path = tmp_path / "begun.jsonl"
    write_trace(attrs.evolve(example, entries=example.entries[:3]), path)
    return path


def _small_guard(trace: Trace) -> RunJudge:
    return judge(trace, guard=5)


def test_a_replay_whose_look_ahead_is_cut_judges_neither_l1_nor_l2() -> None:
    example = read_trace(TESTS / "traces" / "source_first_success.jsonl")
    begun = attrs.evolve(example, entries=example.entries[:3])
    assert replay(begun, (judge,)).ok  # explored to every run's end: L1 and L2 hold
    cut = replay(begun, (_small_guard,))
    assert cut.violations == ()
    assert [(one.key.value, one.title) for one in cut.unjudged] == [
        ("L1", "a cooperative environment completes"),
        ("L2", "a terminal fact leads to CANCELED"),
    ]
    assert cut.unjudged[0].why == (
        "from the run's last configuration, the exploration stopped at its guard of 5 "
        "configurations, so not every run was explored to its end"
    )
    assert not cut.ok


def test_the_replay_command_says_cut_short_and_exits_with_the_reviews_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from handoff._runs import replay_cli

    begun = _run_begun(tmp_path)
    args = argparse.Namespace(traces=[begun], record=False)
    assert replay_cli.run(args, [_small_guard]) == CUT_SHORT
    assert capsys.readouterr().out.splitlines() == [
        f"CUT SHORT {begun} (3 calls); every property judged holds, L1, L2 not judged",
        f"NOT JUDGED {begun}: L1 (a cooperative environment completes)",
        "  from the run's last configuration, the exploration stopped at its guard of 5 "
        "configurations, so not every run was explored to its end",
        f"NOT JUDGED {begun}: L2 (a terminal fact leads to CANCELED)",
        "  from the run's last configuration, the exploration stopped at its guard of 5 "
        "configurations, so not every run was explored to its end",
    ]
    # A property not judged is not one broken: a divergence elsewhere is the worse verdict.
    lines = (TESTS / "traces" / "source_first_success.jsonl").read_text().splitlines()
    diverging = tmp_path / "diverging.jsonl"
    diverging.write_text("\n".join([lines[0], '{"call":"start","expect":[]}', *lines[2:]]) + "\n")
    args = argparse.Namespace(traces=[diverging, begun], record=False)
    assert replay_cli.run(args, [judge]) == 1
    assert replay_cli.run(args, [_small_guard]) == 1
    args = argparse.Namespace(traces=[begun], record=False)
    assert replay_cli.run(args, [judge]) == 0
    assert "OK " in capsys.readouterr().out


def test_check_trace_says_which_properties_it_could_not_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handoff._review import trace_check

    begun = _run_begun(tmp_path)
    assert check_trace(begun).ok
    monkeypatch.setattr(trace_check, "judge", _small_guard)
    check = check_trace(begun)
    assert not check.ok
    assert check.violated == ()
    assert [verdict.key for verdict in check.unjudged] == ["L1", "L2"]
    assert str(check.verdict("L1")).startswith(
        "L1 (a cooperative environment completes) not judged: from the run's last "
        "configuration, the exploration stopped at its guard of 5 configurations"
    )
    assert check.verdict("S1").holds
    assert repr(check).endswith("3 calls, violated: none, not judged: L1, L2>")
    assert repr(check.verdict("L2")).startswith("<PropertyVerdict L2 not judged: from the run's")

"""Spin's second opinion: the generated model, the runner, and agreement with the review.

Spin must be installed (`./dev` installs Debian's `spin` when run as root).  Under CI a
missing Spin fails these tests; elsewhere they are skipped with the command that installs it.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import attrs
import pytest
from charts.broken import ReleaseBeforeActivation
from review_mutants import MUTANTS, shared_reviews
from support import SessionCache, spin_or_skip

from handoff import ChartEvent, HandoffOrder
from handoff.__main__ import main
from handoff._compile.table import CompiledChart, compile_chart, compiled
from handoff._review.environment import MAX_ACTIONS, environment
from handoff._review.explore import review
from handoff._review.spin import run as spin_module
from handoff._review.spin.agreement import Agreement, agreement, cross_check
from handoff._review.spin.cli import UNCONFIRMED, spin_review
from handoff._review.spin.coordinator import CRASHES
from handoff._review.spin.model import model
from handoff._review.spin.properties import MIRRORED, mirrored, not_mirrored
from handoff._review.spin.replay import confirm
from handoff._review.spin.run import (
    INSTALL_HINT,
    SpinUnavailableError,
    Trail,
    run_spin,
    spin_version,
)
from handoff._system.properties import Key, SpinCheck, WorldKind, properties_of


@pytest.fixture
def spin_installed() -> str:
    return spin_or_skip()


ALL_CHARTS: dict[str, CompiledChart] = {
    "SourceFirst": compiled(HandoffOrder.SOURCE_FIRST),
    "DestinationFirst": compiled(HandoffOrder.DESTINATION_FIRST),
    **{mutant.name: mutant.compiled() for mutant in MUTANTS if mutant.adapter is None},
}
"""Both shipped charts and every chart mutant (an adapter mutant patches Python, not Spin)."""

SHIPPED = ("SourceFirst", "DestinationFirst")


@pytest.fixture(scope="module")
def agreements(session_cache: SessionCache) -> dict[str, Agreement]:
    """Every chart judged by the review and by Spin, two charts at a time; a mutant's review
    is the session's (made once for tests/test_review_mutants.py, tests/test_explain.py and
    this module, by whichever asks first)."""
    spin_or_skip()
    made = shared_reviews(session_cache, (m for m in MUTANTS if m.name in ALL_CHARTS), workers=2)
    found = cross_check(ALL_CHARTS, workers=2, reviews=made)
    return {each.name: each for each in found}


# -- agreement ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ALL_CHARTS))
def test_spin_and_the_review_fail_the_same_mirrored_properties(
    agreements: dict[str, Agreement], name: str
) -> None:
    found = agreements[name]
    assert found.error is None
    assert found.spin_fails == found.review_fails
    if name in SHIPPED:
        assert not found.spin_fails


@pytest.mark.parametrize("name", list(ALL_CHARTS))
def test_every_spin_trail_replays_to_the_violation_on_the_real_coordinator(
    agreements: dict[str, Agreement], name: str
) -> None:
    assert not agreements[name].unconfirmed


def test_each_mutant_fails_its_own_mirrored_property_under_spin(
    agreements: dict[str, Agreement],
) -> None:
    mirrored = {key.value for key in MIRRORED}
    caught = [m for m in MUTANTS if m.caught_by in mirrored and m.name in ALL_CHARTS]
    # A chart mutant for every mirrored property but S7, which only an adapter can break.
    assert {m.caught_by for m in caught} == mirrored - {"S7"}
    for mutant in caught:
        assert Key(mutant.caught_by) in agreements[mutant.name].spin_fails, mutant.name


def test_a_broken_chart_in_process_names_its_spin_trail_and_crash(spin_installed: str) -> None:
    # In this process, unlike the workers above, so that coverage sees the replay.
    chart = ALL_CHARTS["TransferWithoutDelayCheck"]
    theirs, found = spin_review(chart)
    errors = theirs.verdict("Errors")
    assert errors.counterexample is not None
    assert "'a transfer is issued only after its delay was checked' fired" in (
        errors.counterexample.finding
    )
    trail = found.trails[Key.ERRORS]
    assert trail is not None
    assert trail.crash == CRASHES[0]
    # The real adapter must raise the very assertion the model's crash names.
    assert confirm(chart, Key.ERRORS, trail).finding is not None
    assert confirm(chart, Key.ERRORS, attrs.evolve(trail, crash="another")).finding is None
    assert not theirs.verdict("L1").holds
    assert UNCONFIRMED not in str(theirs.verdict("L1").counterexample)


def test_one_chart_is_judged_both_ways_in_process(spin_installed: str) -> None:
    found = agreement("TransferWithoutDelayCheck", ALL_CHARTS["TransferWithoutDelayCheck"])
    assert found.agree
    assert Key.ERRORS in found.spin_fails
    assert found.line().startswith("agree    TransferWithoutDelayCheck")


def test_a_chart_spin_cannot_judge_is_a_disagreement_with_its_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    found = agreement("SourceFirst", ALL_CHARTS["SourceFirst"])
    assert not found.agree
    assert "DISAGREE" in found.line()
    assert INSTALL_HINT in found.line()


def test_a_review_given_to_the_cross_check_is_the_one_judged(spin_installed: str) -> None:
    # The shipped chart's model, judged against a broken chart's review: they cannot agree,
    # unless the cross-check reviewed the chart itself.
    broken = review(ALL_CHARTS["NoDestinationCancel"])
    (found,) = cross_check(
        {"SourceFirst": ALL_CHARTS["SourceFirst"]}, 1, reviews={"SourceFirst": broken}
    )
    assert Key.OWNERS_FREED in found.review_fails
    assert not found.spin_fails
    assert not found.agree
    assert found.configurations == broken.configurations


def test_a_re_recording_chart_in_process_breaks_s6_and_bound(spin_installed: str) -> None:
    theirs, _ = spin_review(ALL_CHARTS["ReservationRecordedAgain"])
    for key in ("S6", "Bound"):
        example = theirs.verdict(key).counterexample
        assert example is not None
        assert UNCONFIRMED not in example.finding
    assert theirs.verdict("L1").holds
    assert theirs.verdict("L2").holds


def test_every_review_property_is_mirrored_or_its_absence_explained() -> None:
    for world in WorldKind:
        keys = {prop.key for prop in properties_of(world)}
        assert set(mirrored(world)) | set(not_mirrored(world)) == keys
        assert not set(mirrored(world)) & set(not_mirrored(world))


# -- the model --------------------------------------------------------------------------


_CELLS = "/* -- the chart's cells"


def test_the_model_ends_with_the_chart_as_cells_one_step_reads() -> None:
    text = model(compiled(HandoffOrder.SOURCE_FIRST))
    assert text.startswith("/* AUTOGENERATED by `handoff export promela`")
    assert "inline chart_step() {" in text
    assert "ltl L1 { [] (mode == M_COOPERATING -> <> RUN_COMPLETE) }" in text
    # Every call of the review's environment is offered, outcomes only for ids seen so far.
    assert f"#define NCALLS {1 + len(environment().facts) + (MAX_ACTIONS + 1) * 6}" in text
    assert f":: nlog >= {MAX_ACTIONS} -> c = " in text
    cells = text[text.index(_CELLS) :].splitlines()
    # One cell per chart state and event: 14 states, one event per `ChartEvent`.
    events = len(ChartEvent)
    assert f"CHART 14 {events}" in cells
    assert sum(line.startswith("CELL ") for line in cells) == 14 * events
    # start() in idle: taken (2), not in place (0), to state 1 (prefill_submitting), nothing
    # kept (0), no lifecycle event (0), no check (0 0), one action: SubmitPrefill (1),
    # recording no completion (0); the second action slot is empty (0 0).
    assert (
        "CELL 0 0 2 0 0 1 0 0 0 0 1 1 0 0 0   idle, start: taken, to prefill_submitting, "
        "issues SubmitPrefill"
    ) in cells
    assert "#define A_SubmitPrefill 1" in text
    assert "S_idle" not in text  # states are named in the cells only


def test_a_mutant_exports_its_own_cells_and_nothing_else_of_its_own() -> None:
    real = model(compiled(HandoffOrder.SOURCE_FIRST))
    broken = model(compile_chart(ReleaseBeforeActivation))
    # Transferring (6) on transfer_completed (3): the mutant releases the source as it
    # activates the destination: two actions, ActivateDestination (4) and ReleaseSource (5).
    releasing = "CELL 6 3 2 0 0 7 0 0 0 0 2 4 0 5 0   transferring, transfer_completed: "
    assert releasing in broken
    assert releasing not in real
    # Everything before the cells is the same, so that one verifier serves both charts.
    assert broken.index(_CELLS) == real.index(_CELLS)
    assert broken[: broken.index(_CELLS)] == real[: real.index(_CELLS)]


def test_charts_of_one_order_share_one_verifier_each_reading_its_own_cells(
    spin_installed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiles = []
    run = spin_module._run

    def counting(command: list[str], folder: Path, *, live: bool = False) -> str:
        compiles.extend(command[:1] if command[0] == "gcc" else [])
        return run(command, folder, live=live)

    monkeypatch.setattr(spin_module, "_run", counting)
    monkeypatch.setattr(spin_module, "_BUILT", {})
    shipped = run_spin(ALL_CHARTS["SourceFirst"])
    broken = run_spin(compile_chart(ReleaseBeforeActivation))
    assert compiles == ["gcc"]
    assert not shipped.broken
    assert Key.RELEASE_AFTER_ACTIVATION in broken.broken  # its own cells, not the shipped chart's
    assert broken.states != shipped.states


def test_a_verifier_whose_model_lost_cells_says_so_in_one_line(
    spin_installed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = spin_module._build

    def cutting(folder: Path) -> None:
        build(folder)
        lines = (folder / "model.pml").read_text().splitlines()
        cells = [n for n, line in enumerate(lines) if line.startswith("CELL ")]
        del lines[cells[-10] : cells[-1] + 1]  # the last ten cells
        (folder / "model.pml").write_text("\n".join(lines))

    monkeypatch.setattr(spin_module, "_build", cutting)
    cells = 14 * len(ChartEvent)  # SourceFirst's 14 states, one cell per event
    lost = f"holds {cells - 10} of the chart's cells, not {cells}"
    with pytest.raises(SpinUnavailableError, match=lost):
        run_spin(ALL_CHARTS["SourceFirst"])


def test_export_writes_the_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "df.pml"
    assert main(["export", "promela", "--order", "destination-first", "--out", str(target)]) == 0
    assert "DestinationFirst chart" in target.read_text(encoding="utf-8")
    assert main(["export", "promela"]) == 0
    assert "SourceFirst chart" in capsys.readouterr().out
    assert main(["export", "promela", "--order", "sideways"]) == 2
    assert "unknown order 'sideways'" in capsys.readouterr().err


# -- the runner and the CLI --------------------------------------------------------------


def test_the_cli_cross_checks_both_orders(
    spin_installed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["review", "--engine", "spin"]) == 0
    out = capsys.readouterr().out
    assert "Spin: assertion over" in out
    assert f"checked by {spin_installed}; not mirrored: Coverage, Table" in out


def test_the_cli_cross_checks_a_chart_of_ones_own(
    spin_installed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["review", "--engine", "spin", "--chart", "charts.broken:ReleaseBeforeActivation"])
        == 1
    )
    out = capsys.readouterr().out
    assert "ReleaseBeforeActivation" in out
    assert "S2 fails" in out


def test_export_takes_a_chart_of_ones_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "promela", "--chart", "charts.broken:ReleaseBeforeActivation"]) == 0
    assert "issues ActivateDestination, issues ReleaseSource" in capsys.readouterr().out
    assert main(["export", "promela", "--chart", "charts.broken:NoSuchChart"]) == 2
    assert "has no NoSuchChart" in capsys.readouterr().err


def test_the_spin_engine_reports_in_text_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "--engine", "spin", "--format", "json"]) == 2
    assert "text only" in capsys.readouterr().err


def test_a_missing_spin_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SpinUnavailableError, match="apt-get install -y spin") as missing:
        spin_version()
    assert "./dev" not in str(missing.value)  # a pip user has no checkout to run it from
    assert main(["review", "--engine", "spin"]) == 1
    assert INSTALL_HINT in capsys.readouterr().err


def test_another_spin_release_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "spin"
    fake.write_text("#!/bin/sh\necho 'Spin Version 6.4.9 -- 1 January 2018'\n", encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(
        SpinUnavailableError, match=r"6\.5\.x is pinned, found Spin Version 6\.4\.9"
    ):
        spin_version()


def test_each_property_s_first_error_is_the_first_message_naming_it() -> None:
    output = "\n".join(
        [
            "pan:1: assertion violated  !(S4_broken) (at depth 575)",
            "pan:3: assertion violated  !(Bound_broken) (at depth 2613)",
            "pan:4: assertion violated  !(S4_broken) (at depth 575)",
            "pan:7: assertion violated  !(S6_broken) (at depth 12)",
            "State-vector 188 byte, depth reached 3374, errors: 9",
        ]
    )
    assert spin_module._first_errors(output) == {
        Key.ONE_COMPLETE: 1,
        Key.BOUND: 3,
        Key.NO_EFFECT: 7,
    }


def test_a_trail_is_read_back_as_the_review_calls() -> None:
    replayed = "CALL 0\nCALL 6\nMODE cancelling\nCALL 7\npan:1: assertion violated\n"
    trail = spin_module._trail(replayed)
    calls = spin_module._CALLS
    assert trail == Trail((calls[0], calls[6], calls[7]), switch=2)
    assert str(calls[0]) == "start()"


def test_a_trail_the_coordinator_does_not_confirm_fails_the_cross_check() -> None:
    chart = compiled(HandoffOrder.SOURCE_FIRST)
    start_only = Trail((spin_module._CALLS[0],))
    for key in MIRRORED:
        assert confirm(chart, key, start_only).finding is None, key


def test_unexpected_verifier_output_is_an_error() -> None:
    with pytest.raises(SpinUnavailableError, match="unexpected output"):
        spin_module._count(r"(\d+) states, stored", "pan: out of memory")


def test_liveness_properties_are_ltl_and_the_rest_assertions() -> None:
    safety = {"S1", "S2", "S3", "S4", "S5", "S6", "S7", "C1", "R1", "R2", "P1", "Q1", "C2"}
    assert {key.value for key, c in MIRRORED.items() if c is SpinCheck.ASSERTION} == safety | {
        "Bound",
        "Errors",
    }
    assert {key.value for key, c in MIRRORED.items() if c is SpinCheck.LTL} == {"L1", "L2"}


def test_run_spin_can_keep_its_work_files(spin_installed: str, tmp_path: Path) -> None:
    found = run_spin(compiled(HandoffOrder.SOURCE_FIRST), tmp_path)
    assert (tmp_path / "pan").exists()
    assert found.trails == dict.fromkeys(MIRRORED)
    assert io.StringIO(found.version).read().startswith("Spin Version 6.5")


def test_a_crashed_verifier_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SpinUnavailableError, match=r"sh crashed \(signal 11\)"):
        spin_module._run(["sh", "-c", "kill -11 $$"], tmp_path)

"""Runs that always end: every driver cuts a handoff where the review cuts a run.

Three charts whose cleanup never ends, each another way (one cancel re-issued forever, two
states cancelling by turns, the other order), driven by each driver of the runs wing: the
simulation and the demo's reopening.  Each ends within seconds as a failure naming
the chart and the loop, and writes nothing.  The demo without its reopening never cleans up:
it must pass, not be cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile import (
    DESTINATION_FIRST_LOOP,
    LOOPING,
    PING_PONG,
    Ran,
    Sandbox,
    chart_module,
    failure,
    only_changed,
)

from handoff import HandoffAction, HandoffCoordinatorCore, HandoffId, SourceFirstChart
from handoff._runs.simulation import SimulationConfig, simulate
from handoff._system.bound import MAX_ACTIONS, MAX_STALLS, Runaway, cut, overrun
from handoff._system.call import Call
from handoff._values.values import HandoffOrder

_ONE = r"; the loop: CancelDestination \d+ times; "
_TWO = r"; the loop: Cancel(Source|Destination) \d+ times, Cancel(Source|Destination) \d+ times; "
CHARTS = {
    "loops:Looping": ("CancelsForever", _ONE),
    "loops:PingPong": ("PingPong", _TWO),
    "other_loops:Looping": ("DestinationFirstForever", _ONE),
}
DRIVERS = {
    "simulate": ("simulate", "--handoffs", "300", "--fault-rate", "0.3", "--chart"),
    "demo": ("demo", "--chart"),
    "demo --reopen": ("demo", "--reopen", "--chart"),
}
# The demo's success path never cleans up: it never reaches the loops.
NEVER_REACHED = {(chart, "demo") for chart in CHARTS}
CASES = [(driver, chart) for chart in CHARTS for driver in DRIVERS]


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = Sandbox(tmp_path_factory.mktemp("runaway"))
    (sandbox.root / "loops.py").write_text(chart_module(Looping=LOOPING, PingPong=PING_PONG))
    (sandbox.root / "other_loops.py").write_text(
        chart_module("DestinationFirstChart", Looping=DESTINATION_FIRST_LOOP)
    )
    return sandbox


@pytest.fixture(scope="module")
def ran(box: Sandbox) -> Iterator[dict[tuple[str, str], Ran]]:
    before = box.snapshot()
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            (driver, chart): pool.submit(box.run, *DRIVERS[driver], chart, timeout=300)
            for driver, chart in CASES
        }
        yield {case: future.result() for case, future in futures.items()}
    only_changed(before, box.snapshot())


@pytest.mark.parametrize(("driver", "chart"), CASES, ids=[f"{d} {c}" for d, c in CASES])
def test_a_chart_that_never_ends_is_cut_as_a_failure(
    ran: dict[tuple[str, str], Ran], driver: str, chart: str
) -> None:
    result = ran[driver, chart]
    title, loop = CHARTS[chart]
    if (chart, driver) in NEVER_REACHED:
        assert result.status == 0, result.err
        return
    failure(result, 1, f"chart {title}", "never end", "actions issued in one run (at most 9)")
    if driver != "simulate":  # the simulation's first runaway may have come by another way
        assert re.search(loop + r"on_action_outcome\(\d+, Applied\) issued Cancel", result.err)


def test_the_simulation_counts_what_it_cut(ran: dict[tuple[str, str], Ran]) -> None:
    out = ran["simulate", "loops:Looping"].out
    assert out.rstrip().endswith("FAILED")
    never = next(line for line in out.splitlines() if "never ending" in line)
    assert int(never.split()[-1].replace(",", "")) > 0


# -- the cut itself ------------------------------------------------------------------------


def test_the_review_and_the_drivers_share_one_cut() -> None:
    from handoff._review import environment, progress

    assert progress.overrun is overrun
    assert (environment.MAX_ACTIONS, progress.MAX_STALLS) == (MAX_ACTIONS, MAX_STALLS)
    assert overrun(MAX_ACTIONS) is None
    assert overrun(MAX_ACTIONS + 1) == f"{MAX_ACTIONS + 1} actions issued in one run (at most 9)"


def test_a_cut_names_what_the_last_call_issued() -> None:
    coordinator = HandoffCoordinatorCore(HandoffId.new(), HandoffOrder.SOURCE_FIRST)
    issued = coordinator.start()
    before = [HandoffAction.SubmitPrefill(coordinator.handoff_id)] * MAX_ACTIONS
    with pytest.raises(
        Runaway, match=r"chart X never ends: .*; the loop: SubmitPrefill 10 times; start\(\) issued"
    ):
        cut("X", before, Call.start(), issued)
    cut("X", before[1:], Call.start(), issued)  # at the limit: not cut


def test_the_simulation_cuts_a_handoff_whatever_drives_it(tmp_path: Path) -> None:
    import importlib
    import sys

    (tmp_path / "loops_api.py").write_text(chart_module(Looping=LOOPING))
    sys.path.insert(0, str(tmp_path))
    try:
        chart = importlib.import_module("loops_api").Looping
    finally:
        sys.path.remove(str(tmp_path))
    assert issubclass(chart, SourceFirstChart)

    def make(handoff_id: HandoffId, order: HandoffOrder, delay: float) -> HandoffCoordinatorCore:
        return HandoffCoordinatorCore(handoff_id, order, delay, chart=chart)

    config = SimulationConfig(handoffs=50, fault_rate=0.5, seed=3, orders=(chart.order,))
    failed: list[object] = []
    report = simulate(config, make, failed=failed.append)
    assert report.endless
    assert not report.ok
    assert report.violations == []  # handed over as they failed, not kept
    assert re.search(r"the loop: CancelDestination \d+ times", report.runaway or "")
    assert len(failed) >= report.endless

"""Charts with groups (`State.Compound`): compiled flat, run by python-statemachine as written,
refused where a flat table cannot hold them, and taken by every tool.

The fixture charts are `tests/charts/compound.py`.  The command-line tools run once each, in
subprocesses started together from a module-scoped fixture; the tests read the results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from charts import SF_ALONE, SF_BOTH
from charts.compound import (
    CancelDestinationOnly,
    CompoundSourceFirst,
    FlatCancelDestinationOnly,
    QuietReservation,
)
from statemachine import State
from statemachine.exceptions import InvalidDefinition

from handoff import (
    HandoffActionOutcome,
    HandoffChart,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    SourceFirstChart,
    diagrams,
    ignored,
    wire,
)
from handoff._chart.groups import groups
from handoff._chart.vocabulary import ChartEvent
from handoff._compile.interpreted import InterpretedChart
from handoff._compile.table import StepKind, compile_chart, startup_table
from handoff._docs.diagram import state_graph
from handoff._review.equivalence import compare

HANDOFF = str(Path(sys.executable).with_name("handoff"))
TESTS = Path(__file__).resolve().parent
HID = HandoffId.new()
CHART = "charts.compound:CompoundSourceFirst"


def _cells(chart: type[HandoffChart]) -> tuple[object, ...]:
    table = compile_chart(chart)
    return table.states, table.names, table.rows, table.complete


# -- compiling and running ---------------------------------------------------------------


def test_a_compound_chart_compiles_to_the_shipped_flat_table() -> None:
    assert _cells(CompoundSourceFirst) == _cells(SourceFirstChart)
    shipped = startup_table(HandoffOrder.SOURCE_FIRST)
    assert _cells(CompoundSourceFirst) == (
        shipped.states,
        shipped.names,
        shipped.rows,
        shipped.complete,
    )


@pytest.mark.parametrize("chart", [CompoundSourceFirst, CancelDestinationOnly, QuietReservation])
def test_python_statemachine_runs_a_compound_chart_as_its_table(
    chart: type[HandoffChart],
) -> None:
    comparison = compare(chart)
    assert comparison.holds, comparison.disagreements
    # The same fourteen states under the same events and payloads as the flat shipped chart:
    # every cell the flat chart is compared on, the compound one is compared on too.
    assert comparison.cells == compare(SourceFirstChart).cells


def test_the_interpreter_started_inside_groups_is_in_the_innermost_state() -> None:
    interpreter = InterpretedChart(CompoundSourceFirst, "transfer_starting")
    assert interpreter.state == "transfer_starting"
    interpreter.move_to("activating")
    assert interpreter.state == "activating"
    # The group is active around it: the group's rule answers a failed action.
    configuration = {state.id for state in interpreter._machine.configuration}
    assert configuration == {"both_engaged", "activating"}


def test_the_inner_rule_wins_over_the_groups() -> None:
    table = compile_chart(QuietReservation)
    kinds = {
        state: table.step(table.index(state), ChartEvent.SOURCE_HELD).kind
        for state in ("destination_reserving", "destination_accepted", "releasing")
    }
    # destination_reserving refuses by its own rule; the rest of the group drops, by its rule.
    assert kinds == {
        "destination_reserving": StepKind.REFUSED,
        "destination_accepted": StepKind.IGNORED,
        "releasing": StepKind.IGNORED,
    }


def test_a_one_line_override_inside_a_group_is_the_flat_derived_chart() -> None:
    assert _cells(CancelDestinationOnly) == _cells(FlatCancelDestinationOnly)
    step = compile_chart(CancelDestinationOnly).step(5, ChartEvent.ACTION_FAILED)
    assert compile_chart(CancelDestinationOnly).states[step.target] == "cancelling_destination"
    # The parent keeps its rule.
    parent = compile_chart(CompoundSourceFirst)
    assert parent.states[parent.step(5, ChartEvent.ACTION_FAILED).target] == "cancelling_both"


def test_the_shipped_charts_declare_their_groups() -> None:
    declared = {group.id: group.states for group in groups(SourceFirstChart)}
    # The groups are where the cleanup cancels the source alone, and both owners.
    assert declared == {"prefill": SF_ALONE, "both_engaged": SF_BOTH}
    # Named as before the groups: derived charts and the docs spell states so.
    assert SourceFirstChart.transferring is SourceFirstChart.both_engaged.transferring


# -- what is refused -----------------------------------------------------------------------


def test_a_parallel_state_is_refused_in_one_line_naming_it() -> None:
    with pytest.raises(InvalidDefinition) as refused:

        class Regions(HandoffChart):
            order = HandoffOrder.SOURCE_FIRST
            idle = State("idle", initial=True)

            class cleanup(State.Parallel):
                class source(State.Compound):
                    cancelling = State("cancelling", initial=True)

                class destination(State.Compound):
                    waiting = State("waiting", initial=True)

            start = idle.to(cleanup)

    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("Regions: 'cleanup' is a State.Parallel, which handoff does not")
    assert "State.Compound" in message
    assert "not states of this chart" not in message


def test_a_group_that_acts_by_itself_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match="group 'busy' declares \\['complete_canceled'\\]"):

        class Acting(HandoffChart):
            order = HandoffOrder.SOURCE_FIRST
            idle = State("idle", initial=True)

            class busy(State.Compound, enter="complete_canceled"):
                working = State("working", initial=True)

            start = idle.to(busy)


def test_a_state_inside_a_group_named_again_in_the_body_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match=r"'working' is busy\.working, a state inside"):

        class Alias(HandoffChart):
            order = HandoffOrder.SOURCE_FIRST
            idle = State("idle", initial=True)

            class busy(State.Compound):
                working = State("working", initial=True)

            working = busy.working
            start = idle.to(busy)


def test_a_rule_on_a_group_is_not_a_rule_on_a_foreign_state() -> None:
    # Rules naming states inside the groups, at the chart level and inside a group's body.
    class Nested(HandoffChart):
        order = HandoffOrder.SOURCE_FIRST
        idle = State("idle", initial=True)

        class busy(State.Compound):
            working = State("working", initial=True)
            done = State("done", enter="complete_success")
            source_held = working.to(done)

        start = idle.to(busy)
        terminated = busy.working.to(idle) | ignored(busy)

    table = compile_chart(Nested)
    assert table.states == ("idle", "working", "done")
    assert table.states[table.step(1, ChartEvent.SOURCE_HELD).target] == "done"
    assert table.step(2, ChartEvent.TERMINATED).kind is StepKind.IGNORED
    assert table.states[table.step(1, ChartEvent.TERMINATED).target] == "idle"
    assert compare(Nested).holds


# -- every tool ----------------------------------------------------------------------------


def test_a_coordinator_on_a_compound_chart_snapshots_and_runs_interpreted() -> None:
    for interpreted in (False, True):
        coordinator = HandoffCoordinatorCore(
            HID, chart=CompoundSourceFirst, interpreted=interpreted
        )
        [submit] = coordinator.start()
        coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
        text = wire.dumps(coordinator)
        assert f'"chart":"{CHART}"' in text
        restored = wire.loads(text, HandoffCoordinatorCore, charts=[CompoundSourceFirst])
        assert restored.chart_state == "prefill_running"
        [cancel] = restored.on_fact(HandoffFact.Canceled(HID))
        restored.on_action_outcome(cancel.id, HandoffActionOutcome.APPLIED)
        assert restored.completion is HandoffCompletion.CANCELED


def test_the_diagrams_draw_the_declared_groups_as_named_boxes() -> None:
    dot = diagrams.draw(CompoundSourceFirst, "state", format="dot")
    assert "subgraph cluster_both_engaged {" in dot
    assert "subgraph cluster_before_transfer {" in dot  # nested inside both_engaged
    assert dot.count("ltail=cluster_both_engaged") == 1  # its one rule: cancel both
    assert "ltail=cluster_prefill" in dot
    assert "states that clean up alike" not in dot
    mermaid = diagrams.draw(CompoundSourceFirst, "state", format="mermaid")
    assert 'state "both engaged" as both_engaged {' in mermaid
    assert 'state "before the transfer" as before_transfer {' in mermaid
    assert "    both_engaged --> cancelling_both: terminated |" in mermaid
    # A flat chart keeps its inferred bands.
    flat = state_graph(compile_chart(SourceFirstChart))
    assert not flat.groups
    assert any(len(edge.sources) > 1 and edge.group is None for edge in flat.edges)


_COMMANDS = {
    "review": ["review", "--chart", CHART, "--format", "json"],
    "shipped": ["review", "--order", "SourceFirst", "--format", "json"],
    "override": ["review", "--chart", "charts.compound:CancelDestinationOnly", "--format", "json"],
    "flat": ["review", "--chart", "charts.compound:FlatCancelDestinationOnly", "--format", "json"],
    "workers": ["review", "--workers", "tombstone", "--chart", CHART],
    "promela": ["export", "promela", "--chart", CHART],
    "shipped promela": ["export", "promela", "--order", "SourceFirst"],
    "simulate": ["simulate", "--chart", "charts.compound:CancelDestinationOnly",
                 "--handoffs", "200", "--fault-rate", "0.3", "--record-failures", "{out}"],
}  # fmt: skip


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("failures")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)

    def start(args: list[str]) -> subprocess.Popen[str]:
        args = [arg.replace("{out}", str(out)) for arg in args]
        return subprocess.Popen(
            [HANDOFF, *args], cwd=TESTS, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    def finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
        stdout, stderr = process.communicate(timeout=300)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    started = {name: start(args) for name, args in _COMMANDS.items()}
    results = {name: finish(process) for name, process in started.items()}
    traces = sorted(str(path) for path in out.glob("*.jsonl"))
    assert traces, results["simulate"].stdout
    results["replay"] = finish(
        start(["replay", "--chart", "charts.compound:CancelDestinationOnly", *traces])
    )
    return results


def _order(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    (order,) = json.loads(result.stdout)["orders"]
    return {key: order[key] for key in ("ok", "safe", "configurations", "transitions")} | {
        "verdicts": [(p["key"], p["verdict"], p["checked"]) for p in order["properties"]]
    }


def test_the_compound_chart_reviews_as_the_shipped_chart(
    ran: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    assert ran["review"].returncode == 0, ran["review"].stderr
    assert _order(ran["review"]) == _order(ran["shipped"])
    assert _order(ran["review"])["configurations"] == 119


def test_the_one_line_override_reviews_as_the_flat_derived_chart(
    ran: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    assert ran["override"].returncode == ran["flat"].returncode == 1
    assert _order(ran["override"]) == _order(ran["flat"])
    failing = [key for key, verdict, _ in _order(ran["override"])["verdicts"] if verdict == "FAIL"]  # type: ignore[attr-defined]
    assert failing == ["S5", "Q1"]


def test_the_other_tools_take_a_compound_chart(
    ran: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # As the shipped chart: tombstones leak nothing, the cleanup's transfer race fails W9.
    assert ran["workers"].returncode == 1, ran["workers"].stderr
    last = ran["workers"].stdout.rstrip().splitlines()[-1]
    assert last.startswith("UNSAFE: W9 (CompoundSourceFirst, tombstone workers); reviewed in ")
    # The Promela model is the table's: the same as the shipped chart's.
    assert ran["promela"].returncode == 0, ran["promela"].stderr
    assert ran["promela"].stdout == ran["shipped promela"].stdout
    # The override leaks the prefill's KV: simulation finds it, and replay reproduces it.
    assert ran["simulate"].returncode == 1
    assert "leaks" in ran["simulate"].stdout
    assert ran["replay"].returncode == 1, ran["replay"].stderr
    assert "yet the SubmitPrefill was never released or canceled (KV leaked)" in (
        ran["replay"].stdout
    )

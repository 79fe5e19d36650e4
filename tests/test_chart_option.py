"""`--chart MODULE:CLASS` in process: the option type, and each command on a chart module
written beside the test (the subprocess tests in test_user_chart.py drive the real command)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import module_beside

from handoff import SourceFirstChart, _cli
from handoff.__main__ import main

_MODULE = """
from handoff import SourceFirstChart

S = SourceFirstChart


class Renamed(SourceFirstChart):
    title = "Renamed Chart"


class Leaking(SourceFirstChart):
    terminated = (
        S.cancelling_both.from_(S.destination_reserving, S.destination_accepted,
                                S.transfer_starting, S.transferring, S.activating, S.releasing,
                                on=["cancel_source", "cancel_destination"])
        | S.cancelling_destination.from_(S.prefill_submitting, S.prefill_running,
                                         on="cancel_destination")
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from module_beside(tmp_path, monkeypatch, "option_charts", _MODULE)


def test_the_type_imports_a_chart_from_the_current_directory(here: Path) -> None:
    chart = _cli.chart("option_charts:Renamed")
    assert issubclass(chart, SourceFirstChart)
    assert sys.path[0] == str(here)
    assert _cli.chart("handoff:SourceFirstChart") is SourceFirstChart


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("option_charts", "expected MODULE:CLASS"),
        (":Renamed", "expected MODULE:CLASS"),
        ("option_charts:Nope", "module option_charts has no Nope"),
        ("option_charts:S.order", "is not a chart"),
        ("handoff:HandoffChart", "is not a chart"),
        ("no_such_module_here:X", "no module no_such_module_here in "),
        # A file's name where the module's belongs gets the fix, whether the file is there.
        ("option_charts.py:Renamed", r"did you mean option_charts:Renamed\?$"),
        ("charts/eager.py:X", r"no module charts/eager.py in .*did you mean charts.eager:X\?$"),
    ],
)
def test_the_type_refuses_what_is_not_a_chart(here: Path, text: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        _cli.chart(text)


def test_a_module_that_imports_a_missing_module_says_so(here: Path) -> None:
    (here / "needs_more.py").write_text("import not_installed_anywhere\n")
    with pytest.raises(argparse.ArgumentTypeError, match="importing needs_more failed: No modu"):
        _cli.chart("needs_more:X")


def test_every_command_works_on_a_chart(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = ["--chart", "option_charts:Renamed"]
    assert main(["review", *chart, "--format", "markdown"]) == 0
    assert "## Renamed Chart (SourceFirst)" in capsys.readouterr().out
    assert main(["demo", *chart]) == 0
    assert capsys.readouterr().out.startswith("Renamed Chart (order SourceFirst)\n")
    assert main(["diagrams", *chart, "--out", "drawn"]) == 0
    assert (here / "drawn" / "renamed_chart.svg").is_file()
    assert main(["diagrams", *chart, "--out", "drawn", "--check"]) == 0
    (here / "drawn" / "renamed_chart.mmd").write_text("changed")
    assert main(["diagrams", *chart, "--out", "drawn", "--check"]) == 1
    capsys.readouterr()
    assert main(["simulate", *chart, "--handoffs", "50"]) == 0
    assert "simulated 50 handoffs (chart Renamed Chart)" in capsys.readouterr().out


def test_a_leaking_chart_records_traces_that_fail_on_it_and_pass_on_the_shipped_chart(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaking = ["--chart", "option_charts:Leaking"]
    assert main(["review", *leaking, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [p["key"] for p in report["orders"][0]["properties"] if p["verdict"] == "FAIL"]
    args = ["simulate", *leaking, "--handoffs", "200", "--fault-rate", "0.5"]
    assert main([*args, "--record-failures", "failures"]) == 1
    traces = sorted(str(path) for path in (here / "failures").iterdir())
    assert traces
    capsys.readouterr()
    # Replay judges the properties: each recorded leak is a violation on its chart, which the
    # chart's terminated transitions cause by never canceling the source: S5 names the leak.
    for trace in traces:
        assert main(["replay", *leaking, trace]) == 1
        out = capsys.readouterr().out
        assert f"VIOLATED {trace}:" in out
        assert "  S5 (every owner freed or handed over at completion): CANCELED completion, " in out
        assert "the SubmitPrefill was never released or canceled (KV leaked)" in out
    # Each call expects the SPEC's answer: on the shipped chart every trace replays as OK.
    assert main(["replay", "--chart", "handoff:SourceFirstChart", *traces]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ")[:2] for line in lines] == [["OK", trace] for trace in traces]
    assert all(line.endswith("; every property a run can show holds") for line in lines)
    # Without the chart that made it, a trace is not replayed on a shipped one.
    assert main(["replay", traces[0]]) == 2
    err = capsys.readouterr().err
    assert "made on chart Leaking: give it with --chart MODULE:CLASS" in err

"""The drawing API: any chart, any scenario, names of any shape; `handoff diagrams` writes only
drawings, wherever it runs."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import attrs
import pytest
from support import run_handoff

from handoff import HandoffOrder, diagrams
from handoff._compile.table import compiled
from handoff._docs.diagram import break_name, header, state_graph
from handoff._docs.dot import dot_highlighted, dot_source, svg
from handoff._docs.highlight import RunMove, run_graph
from handoff._docs.mermaid import mermaid_highlighted, mermaid_state_diagram, mermaid_text
from handoff._docs.sequence import Scenario, ScenarioError, run_scenario

RETRYING_ENGINE = (Path(__file__).parent / "charts" / "retrying_engine.py").read_text()
"""A writer's chart, written beside a scratch site as their module `retrying_engine`."""

ODD = [
    "retransferring_everything_once_more",
    "état prêt ✓ 状態",
    'say "hello"',
    "<b>bold</b> & <i>",
    "two\nlines",
    "back\\slash {braces}; #hash `tick`",
    "dash--dash -->",
]
"""Names and titles of every odd shape: long without a space, unicode, quotes, angle
brackets, newlines, and the characters DOT and Mermaid give a meaning to."""


@pytest.fixture(scope="module")
def own_chart(tmp_path_factory: pytest.TempPathFactory) -> type:
    folder = tmp_path_factory.mktemp("charts")
    (folder / "retrying_engine.py").write_text(RETRYING_ENGINE)
    sys.path.insert(0, str(folder))
    try:
        return diagrams.resolve_chart("retrying_engine:RetryingEngine")  # type: ignore[return-value]
    finally:
        sys.path.remove(str(folder))


def _odd_table(index: int) -> object:
    """The SourceFirst table with every state renamed oddly and an odd title."""
    table = compiled(HandoffOrder.SOURCE_FIRST)
    names = tuple(ODD[(index + i) % len(ODD)] + f" {i}" * (i % 2) for i in range(len(table.names)))
    return attrs.evolve(table, names=names, name=ODD[index])


# -- names and titles of every shape --------------------------------------------------------


def test_a_long_name_without_a_space_stays_one_line_and_others_split_evenly() -> None:
    assert break_name("retransferring") == ("retransferring",)
    assert break_name("destination reserving") == ("destination", "reserving")
    assert break_name("a very long state name") == ("a very long", "state name")
    assert break_name("two\nlines") == ("two lines",)


@pytest.mark.parametrize("index", range(len(ODD)))
def test_odd_names_and_titles_draw_in_every_format(index: int) -> None:
    table = _odd_table(index)
    graph = state_graph(table)  # type: ignore[arg-type]
    dot = dot_source(graph, header=header(ODD[index], "handoff diagrams", "0"))
    drawn = svg(dot, header=header(ODD[index], "handoff diagrams", "0"))
    root = ElementTree.fromstring(drawn)  # the whole file is XML, its header comment too
    texts = " ".join(text.text or "" for text in root.iter("{http://www.w3.org/2000/svg}text"))
    assert " ".join(ODD[index].split()) + " handoff lifecycle" in texts
    for name in graph.nodes:
        for line in name.lines:
            assert line in texts
    mermaid = re.sub(r"#\w+;", "", mermaid_state_diagram(graph))
    labels = re.findall(r'state "(.*)" as (\S+)$|: (.*)$', mermaid, re.M)
    assert len(labels) >= len(graph.nodes) + len(graph.edges)
    for label in labels:
        text = "".join(label).replace("<br/>", " ")
        assert not set(text) & set('"<>{};#`\n'), text
    moves = [RunMove("idle", "prefill_submitting", ODD[index], breaking=True, detail=ODD[0])]
    marked = run_graph(table, moves, ODD[index], ODD[-1])  # type: ignore[arg-type]
    ElementTree.fromstring(svg(dot_highlighted(marked)).split("-->\n", 1)[1].split("\n", 2)[2])
    assert mermaid_highlighted(marked).startswith('---\ntitle: "')


def test_mermaid_text_keeps_every_character_off_the_syntax() -> None:
    assert mermaid_text('a "b" <c> {d}; #e `f`\ng') == (
        "a #quot;b#quot; #lt;c#gt; #123;d#125;, no. e f g"
    )


# -- scenarios ------------------------------------------------------------------------------


@pytest.mark.parametrize("order", list(HandoffOrder))
@pytest.mark.parametrize("name", ["success", "cancel", "reopen", "fail:StartTransfer"])
def test_every_named_scenario_runs_to_an_end(order: HandoffOrder, name: str) -> None:
    run = run_scenario(order, name)
    notes = [m.text for m in run.messages if m.arrow.value == "note" and m.lane == ""]
    completes = [note for note in notes if note.startswith("Complete")]
    assert completes, run.messages
    expected = "SUCCESS" if name == "success" else "CANCELED"
    assert completes[0].endswith(expected if name != "reopen" else "SUCCESS")
    if name == "reopen":
        assert any(m.text == "TimedOut" for m in run.messages)
        assert completes[-1].endswith("CANCELED")
    assert run.moves[0].label == "start()"


def test_an_explicit_scenario_draws_refusals_and_runs_the_real_coordinator() -> None:
    run = run_scenario(HandoffOrder.SOURCE_FIRST, "start; TransferCompleted, ok, ok")
    refused = [m for m in run.messages if m.arrow.value == "refusal"]
    assert refused
    assert refused[0].text.startswith("refused: ")
    assert run.moves[1].source == run.moves[1].target == "prefill_submitting"
    assert run.moves[1].label == "TransferCompleted (refused)"
    assert any(m.text == "no pending action to ok" for m in run.messages)
    assert Scenario.parse("start,\n ok SubmitPrefill").calls == (
        ("start", ""),
        ("ok", "SubmitPrefill"),
    )


def test_an_explicit_scenario_reports_facts_with_usable_payloads() -> None:
    # SourceFirst: the submission acknowledged, SourceHeld reserves the destination; once it
    # is accepted, DestinationReserved (with a usable token count) starts the transfer.
    run = run_scenario(HandoffOrder.SOURCE_FIRST, "start, ok, SourceHeld, ok, DestinationReserved")
    assert [m.text for m in run.messages if m.arrow.value == "action"] == [
        "SubmitPrefill [0]",
        "ReserveDestination [1]",
        "StartTransfer [2]",
    ]
    assert not [m for m in run.messages if m.arrow.value == "refusal"]
    assert run.moves[-1].target == "transfer_starting"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no scenario given"),
        ("start, jump", "cannot read the call 'jump'"),
        ("fail:Teleport", "unknown action 'Teleport'"),
        ("ok Teleport", "cannot read the call 'ok Teleport'"),
    ],
)
def test_a_scenario_that_cannot_be_read_says_what_would_be_right(text: str, words: str) -> None:
    with pytest.raises(ScenarioError, match=words):
        Scenario.parse(text)
    with pytest.raises(diagrams.DiagramError, match=words):
        diagrams.sequence_diagram("SourceFirst", text)


def test_a_derived_chart_draws_its_own_rule(own_chart: type) -> None:
    mine = diagrams.sequence_diagram(own_chart, "fail:StartTransfer", format="mermaid")
    parent = diagrams.sequence_diagram("SourceFirst", "fail:StartTransfer", format="mermaid")
    assert "title RetryingEngine: StartTransfer fails" in mine
    assert "CancelSource" in parent.split("Failed")[1]
    assert "CancelSource" not in mine.split("Failed")[1]
    path = diagrams.path_diagram(own_chart, "fail:StartTransfer", format="mermaid")
    assert "transfer_starting --> cancelling_destination : " in path


def test_parallel_mermaid_arrows_spell_their_shared_label_once(own_chart: type) -> None:
    text = diagrams.state_diagram(own_chart, format="mermaid")
    arrows = re.findall(r"^\s*(\w+) --> (\w+): (.*)$", text, re.M)
    into_both = [(source, label) for source, target, label in arrows if target == "cancelling_both"]
    failed = "action_failed<br/>/ cancel_source,<br/>cancel_destination"
    # The five states of "both engaged" but transfer_starting fail into cancelling_both alike.
    assert [label for _, label in into_both if label.startswith("action_failed")] == [
        failed,
        *["action_failed / …"] * 4,
    ]
    assert ("both_engaged", "terminated<br/>/ cancel_source,<br/>cancel_destination") in into_both
    # A label seen before but into another state is spelt out there in full.
    into_source = [label for _, target, label in arrows if target == "cancelling_source"]
    assert into_source.count("action_failed<br/>/ cancel_source") == 1
    assert "terminated<br/>/ cancel_source" in into_source


# -- the API --------------------------------------------------------------------------------


def test_every_kind_draws_in_every_format_with_one_title() -> None:
    for kind, formats in diagrams.FORMATS.items():
        for fmt in formats:
            text = diagrams.draw("DestinationFirst", kind, scenario="cancel", format=fmt)
            assert text.strip(), (kind, fmt)
            if kind != "state" and fmt != "markdown":
                assert "DestinationFirst" in text
                assert "DESTINATION_FIRST" not in text
    assert diagrams.chart_title(HandoffOrder.SOURCE_FIRST) == "SourceFirst"


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: diagrams.draw("SourceFirst", "pie"), "unknown kind 'pie'"),
        (lambda: diagrams.draw("SourceFirst", "sequence", format="dot"), "made as svg or mermaid"),
        (lambda: diagrams.state_diagram("Sideways"), "unknown order 'Sideways'"),
        (lambda: diagrams.rules_table("no_such_module:X"), "no module no_such_module"),
        (lambda: diagrams.state_diagram("handoff:HandoffOrder"), "not a chart|chart class"),
    ],
)
def test_what_cannot_be_drawn_is_a_diagram_error(call: object, words: str) -> None:
    with pytest.raises(diagrams.DiagramError, match=words):
        call()  # type: ignore[operator]


def test_the_rules_table_is_as_wide_as_its_column_and_breaks_long_words() -> None:
    table = diagrams.rules_table("SourceFirst")
    assert table.startswith('<table class="handoff-rules" style="table-layout:fixed;width:100%;')
    assert "max-width:880px" in table
    assert "cancel_<wbr>destination" in table
    assert table.count("<tr>") == 1 + sum(
        1 for step in compiled(HandoffOrder.SOURCE_FIRST).steps() if step.kind == "moves"
    )
    assert "#" not in table.replace("&#", "")  # no colour: it takes the page's
    assert diagrams.rules_table("SourceFirst", format="markdown").startswith("| State | Event |")


# -- `handoff diagrams` in someone else's repository ------------------------------------------


def _handoff(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_handoff("diagrams", *argv, cwd=cwd)


def _snapshot(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_diagrams_in_a_writers_repository_writes_only_drawings(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "errors.md").write_text("# Our errors\n\nNothing to do with handoff.\n")
    (docs / "index.md").write_text("# Our project\n")
    (docs / "lifecycle.md").write_text("<!-- BEGIN GENERATED: x -->\n<!-- END GENERATED: x -->\n")
    (tmp_path / "retrying_engine.py").write_text(RETRYING_ENGINE)
    before = _snapshot(tmp_path)
    done = _handoff(tmp_path)
    assert done.returncode == 0, done.stderr
    mine = _handoff(tmp_path, "--chart", "retrying_engine:RetryingEngine", "--out", "drawn")
    assert mine.returncode == 0, mine.stderr
    after = _snapshot(tmp_path)
    assert {path: after[path] for path in before} == before
    new = sorted(str(path.relative_to(tmp_path)) for path in set(after) - set(before))
    stems = ("source_first", "destination_first", "drawn/retrying_engine")
    suffixes = [".dot", ".svg", ".mmd", ".sequence.mmd", ".cancel.sequence.mmd"]
    suffixes += [".sequence.svg", ".cancel.sequence.svg"]
    assert new == sorted(f"{stem}{suffix}" for stem in stems for suffix in suffixes)
    assert not (tmp_path / "handoff").exists()
    first = (tmp_path / "drawn" / "retrying_engine.dot").read_text().split("\n", 1)[0]
    assert first.startswith(
        "// AUTOGENERATED from chart RetryingEngine by "
        "`handoff diagrams --chart retrying_engine:RetryingEngine --out drawn` (kv-handoff "
    )
    # An XML comment may not hold "--": the SVG's header spells each option's dashes apart,
    # and the file stays XML a browser draws.
    drawn = (tmp_path / "drawn" / "retrying_engine.svg").read_text()
    assert drawn.startswith(
        "<!-- AUTOGENERATED from chart RetryingEngine by "
        "`handoff diagrams - -chart retrying_engine:RetryingEngine - -out drawn` (kv-handoff "
    )
    ElementTree.fromstring(drawn)
    assert _handoff(tmp_path, "--check").returncode == 0


def test_diagrams_never_replaces_a_file_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "source_first.svg").write_text("<svg>ours</svg>\n")
    done = _handoff(tmp_path, "--order", "SourceFirst")
    assert done.returncode == 1
    assert done.stderr == (
        "handoff diagrams: error: source_first.svg exists and was not generated: move it away "
        "or choose another --out (nothing was written)\n"
    )
    assert [path.name for path in tmp_path.iterdir()] == ["source_first.svg"]


def test_diagrams_refuses_an_out_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    done = _handoff(tmp_path, "--out", "taken")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "taken is not a directory" in done.stderr
    assert done.stdout == ""

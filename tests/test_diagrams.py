"""Diagrams and generated doc tables say what the chart says, and fit a docs column."""

from __future__ import annotations

import inspect
import itertools
import re
import typing
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import handoff
from handoff import HandoffError, HandoffOrder, diagrams, expected_normalized_handoff
from handoff._chart.vocabulary import ChartEvent, EventKind, Refusal
from handoff._compile.table import compiled
from handoff._docs.diagram import (
    HEADER,
    LABEL_WIDTH,
    StateGraph,
    break_lines,
    file_stem,
    state_changes,
    state_graph,
)
from handoff._docs.dot import BROKEN_FILL, VIOLATING, dot_source
from handoff._docs.mermaid import mermaid_sequence as _mermaid_sequence
from handoff._docs.mermaid import mermaid_state_diagram
from handoff._docs.sections import (
    NON_CHART_PHRASES,
    acknowledged,
    error_catalogue,
    error_classes,
    ignored,
    lifecycle_tables,
    ordering_rules,
    refusals,
    transitions,
)
from handoff._docs.sequence import LANES, Arrow, SequenceLine, sequence
from handoff._docs.sequence_svg import svg_sequence, text_width, wrap

ROOT = Path(__file__).parent.parent


def mermaid_sequence(messages: tuple[SequenceLine, ...], title: str) -> str:
    return _mermaid_sequence(messages, title, LANES)


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
        found.append((tail, head, _one_line(label)))
    return found


def _one_line(label: str) -> str:
    return " ".join(label.replace("\\l", " ").replace("\\n", " ").replace("<br/>", " ").split())


def _sections() -> dict[str, str]:
    return ordering_rules() | lifecycle_tables() | error_catalogue()


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
        (chart.states[step.source], step.event, chart.states[step.target])
        for step in state_changes(chart)
    )
    drawn = Counter(
        (source, event, edge.target)
        for edge in graph.edges
        for source in edge.sources
        for event in edge.events
    )
    assert drawn == table
    assert len(_dot_edges(dot_source(graph))) == len(graph.edges)
    assert _mermaid_arrows(mermaid_state_diagram(graph), graph) == table


def _mermaid_arrows(text: str, graph: StateGraph) -> Counter[tuple[str, ChartEvent, str]]:
    """(source, event, target) of every Mermaid arrow; one from a box leaves each state in it."""
    bands = {f"band_{edge.sources[0]}": edge.sources for edge in graph.edges}
    bands |= {edge.group: edge.sources for edge in graph.edges if edge.group is not None}
    found: Counter[tuple[str, ChartEvent, str]] = Counter()
    for line in text.splitlines():
        arrow = re.fullmatch(r"\s*(\w+) --> (\w+): (.*)", line)
        if arrow is None:
            continue
        tail, head, label = arrow.groups()
        events = _one_line(label).split(" [")[0].split(" / ")[0].split(" | ")
        for source in bands.get(tail, (tail,)):
            # A two-argument __new__ builds the members, which hides value lookup from mypy.
            by_value = typing.cast(Callable[[str], ChartEvent], ChartEvent)
            found.update((source, by_value(event), head) for event in events)
    return found


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
    assert "rankdir=TB" in dot
    cluster = dot.split("subgraph cluster_cleanup {", 1)[1].split("}", 1)[0]
    assert set(re.findall(r"^\s*(\w+) \[label=", cluster, re.M)) == CLEANUP
    for state, _ in SPINES[order]:
        assert re.search(rf"^\s*{state} \[label=.*group=spine", dot, re.M)


@pytest.mark.parametrize("order", ORDERS)
def test_the_mermaid_state_diagram(order: HandoffOrder) -> None:
    text = mermaid_state_diagram(state_graph(order))
    assert text.splitlines()[:3] == [f"%% {HEADER}", "stateDiagram-v2", "    direction TB"]
    assert "    [*] --> idle" in text
    arrows = {
        tuple(line.split(": ", 1)[0].split()): _one_line(line.split(": ", 1)[1])
        for line in text.splitlines()
        if " --> " in line and ": " in line
    }
    for (state, label), (following, _) in itertools.pairwise(SPINES[order]):
        assert arrows[(state, "-->", following)] == label


# -- sequence diagrams -----------------------------------------------------------------


def _position(messages: tuple[SequenceLine, ...], arrow: Arrow, text: str) -> int:
    (found,) = [i for i, m in enumerate(messages) if m.arrow is arrow and m.text.startswith(text)]
    return found


@pytest.mark.parametrize("order", ORDERS)
def test_the_success_sequence_activates_only_after_the_transfer(order: HandoffOrder) -> None:
    messages = sequence(order)
    completed = _position(messages, Arrow.FACT, "TransferCompleted")
    activate = _position(messages, Arrow.ACTION, "ActivateDestination")
    assert messages[activate].lane == "Destination"
    assert completed < activate
    assert messages[-1] == SequenceLine(Arrow.NOTE, "", "Complete [5]: SUCCESS")
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
    assert messages[canceled].lane == "Runtime"
    text = mermaid_sequence(messages, "canceled")
    assert "Coordinator->>Source: CancelSource" in text
    assert "Coordinator->>Destination: CancelDestination" in text
    assert "Runtime->>Coordinator: Canceled" in text
    assert "Destination->>Coordinator: Canceled" not in text


def test_the_sequence_draws_four_participants_and_its_title() -> None:
    text = mermaid_sequence(sequence(HandoffOrder.SOURCE_FIRST), "a title")
    assert text.splitlines()[1:7] == [
        "sequenceDiagram",
        "    title a title",
        "    participant Source",
        "    participant Coordinator",
        "    participant Destination",
        "    participant Runtime",
    ]


def test_a_label_breaks_at_spaces_never_inside_a_name() -> None:
    long = "5. on_fact(DestinationReserved(transferable_prompt_tokens=1024)) at last"
    text = mermaid_sequence((SequenceLine(Arrow.FACT, "Destination", long),), "title")
    assert "on_fact(DestinationReserved(transferable_prompt_tokens=1024))" in text
    assert "Destination->>Coordinator: 5.<br/>on_fact(" in text
    assert wrap("a DestinationReserved b", 10) == ["a", "DestinationReserved", "b"]
    assert wrap("one two three\nfour", 1000) == ["one two three", "four"]


_TEXT = re.compile(r'<text x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>')


def _texts(svg: str) -> list[tuple[float, float, str]]:
    return [(float(x), float(y), words) for x, y, words in _TEXT.findall(svg)]


@pytest.mark.parametrize("order", ORDERS)
def test_the_svg_sequence_draws_every_message_whole_in_order(order: HandoffOrder) -> None:
    messages = sequence(order, cancel_after_reservation=True)
    drawn = svg_sequence(messages, "canceled", LANES, "a header")
    assert drawn.startswith("<!-- a header -->\n<svg ")
    texts = _texts(drawn)
    heads = {words: x for x, _, words in texts if words in LANES}
    assert list(heads) == list(LANES)  # left to right, in the order given
    assert sorted(heads.values()) == list(heads.values())
    lines = [words for _, _, words in texts]
    # Short labels stay on one line: each message's text is one <text>, drawn top to bottom.
    places = [lines.index(m.text) for m in messages if "\n" not in m.text and len(m.text) < 30]
    assert places == sorted(places)
    assert any(line.startswith("CancelDestination [") for line in lines)


def test_lanes_are_spaced_so_a_long_label_fits_between_them() -> None:
    label = "an uncommonly long label that would overlap its neighbours"
    drawn = svg_sequence((SequenceLine(Arrow.FACT, "Source", label),), "t", LANES, None)
    heads = {words: x for x, _, words in _texts(drawn) if words in LANES}
    widest = max(text_width(line) for line in wrap(label, 170))
    assert heads["Coordinator"] - heads["Source"] >= widest
    # ... and the others keep their ordinary distance.
    assert heads["Runtime"] - heads["Destination"] < widest


def test_the_breaking_call_sits_in_a_band_and_a_refusal_is_red() -> None:
    messages = (
        SequenceLine(Arrow.FACT, "Runtime", "1. start()"),
        SequenceLine(Arrow.REFUSAL, "Runtime", "refused: not now", boxed=True),
    )
    drawn = svg_sequence(messages, "t", LANES, None)
    band = re.compile(f'<rect [^>]*fill="{BROKEN_FILL}"')
    assert len(band.findall(drawn)) == 1
    assert f'fill="{VIOLATING}">refused: not now</text>' in drawn
    assert not band.search(svg_sequence(messages[:1], "t", LANES, None))


def test_sequence_svgs_need_no_extra_and_mermaid_stays_available() -> None:
    assert diagrams.FORMATS["sequence"] == ("svg", "mermaid")
    assert diagrams.draw("SourceFirst", "sequence").lstrip().startswith("<!--")
    assert "sequenceDiagram" in diagrams.draw("SourceFirst", "sequence", format="mermaid")


# -- generated docs ------------------------------------------------------------------------


def _rows(section: str) -> list[list[str]]:
    lines = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


@pytest.mark.parametrize("order", ORDERS)
def test_the_transition_table_has_a_row_per_step_that_moves_or_issues(
    order: HandoffOrder,
) -> None:
    chart = compiled(order)
    rows = _rows(_sections()[f"{file_stem(order)}.transitions"])
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
    rows = _rows(_sections()[f"{file_stem(order)}.refusals"])
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
    text = _sections()[f"{file_stem(order)}.ignored"]
    for state, events in ignored(chart).items():
        (line,) = [
            line for line in text.splitlines() if line.startswith(f"- **{chart.names[state]}**")
        ]
        assert line.count("`") == 2 * len(events)


def test_the_error_catalogue_lists_every_error_and_phrase() -> None:
    text = _sections()["errors"]
    rows = {row[0].strip("`"): row for row in _rows(text)}
    exported = {
        name
        for name in handoff.__all__
        if isinstance(getattr(handoff, name), type)
        and issubclass(getattr(handoff, name), HandoffError)
    }
    assert set(rows) == {error.__name__ for error in error_classes()} >= exported
    for error in error_classes():
        # The catalogue gives a docstring's first paragraph, on one line.
        summary = (inspect.getdoc(error) or "").split("\n\n")[0]
        assert rows[error.__name__][1] == " ".join(summary.split())
    for refusal in Refusal:
        assert f"`{refusal.phrase}`" in rows[refusal.error.__name__][2]
    for phrase, error in NON_CHART_PHRASES:
        assert f"`{phrase}`" in rows[error.__name__][2]


def test_the_phrases_raised_outside_the_chart_are_in_the_code() -> None:
    # The library raises them: the core's modules, not the wings that only report them.
    wings = {"_system", "_review", "_runs", "_docs"}
    core = [p for p in (ROOT / "handoff").rglob("*.py") if not wings & set(p.parts)]
    code = "".join(path.read_text() for path in core)
    for phrase, error in NON_CHART_PHRASES:
        assert phrase in code, phrase
        assert error.__name__ in code


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


# -- sized for a docs column -----------------------------------------------------------------

COLUMN_PX = 880
FURO_COLUMN_PX = 736
"""Furo's content column in a 912 px window, where the Sphinx directive's drawings are read."""
PX_PER_PT = 4 / 3
"""CSS pixels per point: 96 px and 72 pt to the inch."""


@pytest.mark.parametrize("order", ORDERS)
def test_each_svg_fits_a_docs_column_with_legible_labels(order: HandoffOrder) -> None:
    text = (ROOT / "diagrams" / f"{file_stem(order)}.svg").read_text()
    size = re.search(
        r'<svg class="handoff-diagram" width="([\d.]+)pt" height="([\d.]+)pt"\s+viewBox="([^"]+)"',
        text,
    )
    assert size is not None
    width_pt, height_pt = float(size[1]), float(size[2])
    # One user unit is one point, so font sizes in the file are points too.
    assert [float(n) for n in size[3].split()] == [0, 0, width_pt, height_pt]
    width_px = width_pt * PX_PER_PT
    assert width_px <= 930  # with room at the right edge for a wider font than Helvetica
    shown = min(1.0, COLUMN_PX / width_px)
    fonts = [float(size) for size in re.findall(r'font-size="([\d.]+)"', text)]
    assert len(fonts) > 40
    assert min(fonts) * PX_PER_PT * shown >= 10
    assert min(fonts) * PX_PER_PT * min(1.0, FURO_COLUMN_PX / width_px) >= 11


@pytest.mark.parametrize("order", ORDERS)
def test_the_labels_are_wrapped_for_a_narrow_column(order: HandoffOrder) -> None:
    graph = state_graph(order)
    longest_word = max(
        len(word) for edge in graph.edges for word in edge.label.replace(", ", " ").split()
    )
    for edge in graph.edges:
        assert _one_line(" ".join(edge.short_lines())) == edge.label
        for line in edge.short_lines():
            assert len(line) <= max(LABEL_WIDTH, longest_word + 2), line
    # The longest one-word line is "transferring"; two-word names split at their space.
    assert max(len(line) for node in graph.nodes for line in node.lines) == len("transferring")
    mermaid = mermaid_state_diagram(graph)
    assert 'state "destination<br/>reserving" as destination_reserving' in mermaid
    assert "<br/>/ cancel_source,<br/>cancel_destination" in mermaid


def test_break_lines_joins_short_words_and_breaks_long_ones() -> None:
    assert break_lines("a | b, c") == ["a | b, c"]
    assert break_lines("source_released | source_canceled") == [
        "source_released |",
        "source_canceled",
    ]
    assert break_lines("x" * 30) == ["x" * 30]


def test_every_generated_table_has_rows() -> None:
    # A misspelt step kind would select nothing and leave a table silently empty.
    for name, text in _sections().items():
        assert text.count("\n") >= 2, name

"""A counterexample drawn: over the chart's state diagram, and as a sequence of messages.

The state diagram is the whole chart in grey (every transition that changes state), with the
run drawn over it: the states it visits filled, each call a numbered arrow (a loop when the
call leaves the state as it was), the violating call in red.  The sequence diagram shows the
same calls between the Runtime, the Coordinator and the two workers, the violating call in a
red box with the property's sentence beside it.  This module reads the run into the records
of `handoff._docs.highlight` and `handoff._docs.sequence`; the renderers write the text.
"""

from __future__ import annotations

from collections.abc import Iterator

from handoff._compile.table import CompiledChart
from handoff._docs.dot import dot_highlighted
from handoff._docs.highlight import HighlightedGraph, RunMove, run_graph
from handoff._docs.mermaid import mermaid_highlighted, mermaid_sequence
from handoff._docs.sequence import (
    _ACTION_LANES,
    _FACT_LANES,
    COORDINATOR,
    DESTINATION,
    RUNTIME,
    SOURCE,
    Arrow,
    Message,
)
from handoff._review.verdict import Counterexample, TraceStep
from handoff._system.call import CallKind
from handoff._system.properties import Property
from handoff._values.messages import HandoffAction

__all__ = ["counterexample_graph", "dot_path", "mermaid_path", "mermaid_sequence_of"]

_LANES = (RUNTIME, SOURCE, COORDINATOR, DESTINATION)


def counterexample_graph(
    chart: CompiledChart, prop: Property, example: Counterexample
) -> HighlightedGraph:
    """The chart with the run drawn over it, its last call breaking `prop`."""
    moves, state = [], chart.states[0]
    calls = example.calls
    last = len(calls)
    for number, step in enumerate(calls, start=1):
        assert step.call is not None
        breaking = number == last
        detail = _issued(step) if breaking else ""
        moves.append(RunMove(state, step.state, step.call.label, breaking, detail))
        state = step.state
    title = f"{chart.name}: {prop.key.value} fails in {len(moves)} calls"
    return run_graph(chart, moves, title, prop.title)


def dot_path(chart: CompiledChart, prop: Property, example: Counterexample) -> str:
    """DOT text of the chart with the run drawn over it."""
    return dot_highlighted(counterexample_graph(chart, prop, example))


def mermaid_path(chart: CompiledChart, prop: Property, example: Counterexample) -> str:
    """Mermaid `stateDiagram-v2` text of the chart with the run drawn over it."""
    return mermaid_highlighted(counterexample_graph(chart, prop, example))


def mermaid_sequence_of(prop: Property, example: Counterexample) -> str:
    """Mermaid `sequenceDiagram` text of the run, the violating call boxed in red."""
    messages: list[Message] = []
    lanes: dict[int, str] = {}
    last = len(example.steps)
    for number, step in enumerate(example.steps, start=1):
        boxed = number == last
        messages += [
            Message(m.arrow, m.lane, m.text, boxed) for m in _messages(number, step, lanes)
        ]
        if boxed:
            note = f"{SOURCE},{DESTINATION}"
            messages.append(Message(Arrow.NOTE, note, f"✗ {example.finding}", boxed=True))
    words = f"{prop.key.value}: {prop.words}"
    messages.append(Message(Arrow.NOTE, f"{RUNTIME},{DESTINATION}", words))
    title = f"{prop.key.value} fails: {prop.title}"
    return mermaid_sequence(messages, title, _LANES, header=None)


def _messages(number: int, step: TraceStep, lanes: dict[int, str]) -> Iterator[Message]:
    call = step.call
    assert call is not None  # a chart reviewed alone: every move is a call
    if call.kind is CallKind.START:
        lane = RUNTIME
    elif call.fact is not None:
        lane = _FACT_LANES.get(type(call.fact), RUNTIME)
    else:
        lane = lanes.get(call.action_id.value if call.action_id else -1, RUNTIME)
    arrow = Arrow.OUTCOME if call.kind is CallKind.OUTCOME else Arrow.FACT
    yield Message(arrow, lane, f"{number}. {call.label}")
    if step.error is not None:
        yield Message(Arrow.REFUSAL, lane, f"refused: {step.error}")
    for item in step.issued:
        name = f"{type(item.action).__name__} [{item.id.value}]"
        target = _ACTION_LANES.get(type(item.action))
        lanes[item.id.value] = target or RUNTIME
        if target is None or isinstance(item.action, HandoffAction.Complete):
            yield Message(Arrow.NOTE, "", name)
        else:
            yield Message(Arrow.ACTION, target, name)


def _issued(step: TraceStep) -> str:
    if step.error is not None:
        return f"refused: {step.error}"
    names = ", ".join(f"{type(item.action).__name__} [{item.id.value}]" for item in step.issued)
    return f"issued {names}" if names else "issued nothing"

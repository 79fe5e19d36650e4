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
from typing import TYPE_CHECKING

import attrs

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
    SequenceLine,
)
from handoff._docs.sequence_svg import svg_sequence
from handoff._review.report import review_title
from handoff._review.system_words import overtaken
from handoff._review.verdict import Counterexample, MoveKind, TraceStep
from handoff._system.call import CallKind
from handoff._system.faults import NETWORK
from handoff._system.properties import Property
from handoff._system.workers import Slots, memory_name
from handoff._values.messages import HandoffAction

if TYPE_CHECKING:
    from handoff._review.explore import Review
    from handoff._review.verdict import Verdict

__all__ = [
    "counterexample_graph",
    "dot_path",
    "mermaid_path",
    "mermaid_sequence_of",
    "mermaid_system_sequence",
    "sequence_of",
    "svg_sequence_of",
    "svg_system_sequence",
    "system_sequence_of",
]

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
    title, messages = sequence_of(prop, example)
    return mermaid_sequence(messages, title, _LANES, header=None)


def svg_sequence_of(prop: Property, example: Counterexample, header: str) -> str:
    """The run as an SVG sequence diagram, the violating call in a red band."""
    title, messages = sequence_of(prop, example)
    return svg_sequence(messages, title, _LANES, header)


def sequence_of(prop: Property, example: Counterexample) -> tuple[str, list[SequenceLine]]:
    """The title and messages of a chart's run reviewed alone."""
    messages: list[SequenceLine] = []
    lanes: dict[int, str] = {}
    last = len(example.steps)
    for number, step in enumerate(example.steps, start=1):
        boxed = number == last
        messages += [
            SequenceLine(m.arrow, m.lane, m.text, boxed) for m in _messages(number, step, lanes)
        ]
        if boxed:
            note = f"{SOURCE},{DESTINATION}"
            messages.append(SequenceLine(Arrow.NOTE, note, f"✗ {example.finding}", boxed=True))
    words = f"{prop.key.value}: {prop.words}"
    messages.append(SequenceLine(Arrow.NOTE, f"{RUNTIME},{DESTINATION}", words))
    return f"{prop.key.value} fails: {prop.title}", messages


def _messages(number: int, step: TraceStep, lanes: dict[int, str]) -> Iterator[SequenceLine]:
    call = step.call
    assert call is not None  # a chart reviewed alone: every move is a call
    if call.kind is CallKind.START:
        lane = RUNTIME
    elif call.fact is not None:
        lane = _FACT_LANES.get(type(call.fact), RUNTIME)
    else:
        lane = lanes.get(call.action_id.value if call.action_id else -1, RUNTIME)
    arrow = Arrow.OUTCOME if call.kind is CallKind.OUTCOME else Arrow.FACT
    yield SequenceLine(arrow, lane, f"{number}. {call.label}")
    if step.error is not None:
        yield SequenceLine(Arrow.REFUSAL, lane, f"refused: {step.error}")
    for item in step.issued:
        name = f"{type(item.action).__name__} [{item.id.value}]"
        target = _ACTION_LANES.get(type(item.action))
        lanes[item.id.value] = target or RUNTIME
        if target is None or isinstance(item.action, HandoffAction.Complete):
            yield SequenceLine(Arrow.NOTE, "", name)
        else:
            yield SequenceLine(Arrow.ACTION, target, name)


def _issued(step: TraceStep) -> str:
    if step.error is not None:
        return f"refused: {step.error}"
    names = ", ".join(f"{type(item.action).__name__} [{item.id.value}]" for item in step.issued)
    return f"issued {names}" if names else "issued nothing"


# -- a system run: the coordinator, the runtime and the two workers ------------------------

_SYSTEM_LANES = (COORDINATOR, RUNTIME, SOURCE, DESTINATION)
_WORKER_LANES = {"source": SOURCE, "destination": DESTINATION}


def mermaid_system_sequence(review: Review, verdict: Verdict, example: Counterexample) -> str:
    """Mermaid `sequenceDiagram` text of a system run, the breaking move boxed in red."""
    title, messages = system_sequence_of(review, verdict, example)
    return mermaid_sequence(messages, title, _SYSTEM_LANES, header=None)


def svg_system_sequence(
    review: Review, verdict: Verdict, example: Counterexample, header: str
) -> str:
    """A system run as an SVG sequence diagram, the breaking move in a red band."""
    title, messages = system_sequence_of(review, verdict, example)
    return svg_sequence(messages, title, _SYSTEM_LANES, header)


def system_sequence_of(
    review: Review, verdict: Verdict, example: Counterexample
) -> tuple[str, list[SequenceLine]]:
    """The title and messages of a system run: the race between the coordinator, the runtime
    that carries its messages, and the two workers."""
    prop = verdict.prop
    messages: list[SequenceLine] = []
    last = len(example.steps)
    for number, step in enumerate(example.steps, start=1):
        boxed = number == last
        messages += [attrs.evolve(m, boxed=boxed) for m in _system_messages(number, step)]
        if boxed:
            across = f"{COORDINATOR},{DESTINATION}"
            messages.append(SequenceLine(Arrow.NOTE, across, f"✗ {example.finding}", boxed=True))
    messages += [
        SequenceLine(Arrow.NOTE, f"{RUNTIME},{DESTINATION}", note)
        for note in overtaken(example.steps)
    ]
    words = f"{prop.key.value}: {prop.words}"
    messages.append(SequenceLine(Arrow.NOTE, f"{COORDINATOR},{DESTINATION}", words))
    return f"{prop.key.value} fails: {review_title(review)}", messages


def _system_messages(number: int, step: TraceStep) -> Iterator[SequenceLine]:
    message = step.message
    if step.worker is not None:
        lane = _WORKER_LANES[step.worker.value]
        if step.kind is MoveKind.EXPIRE:
            yield SequenceLine(Arrow.NOTE, lane, f"{number}. tombstone expires")
        else:
            yield from _restart_moves(number, step, lane)
        return
    if step.call is None and message is not None and step.kind in _TIMER_MOVES:
        what = f"{message.describe()} {_TIMER_MOVES[step.kind]}"
        yield SequenceLine(Arrow.NOTE, RUNTIME, f"{number}. {what}")
        return
    if step.kind is MoveKind.ABANDON:
        yield SequenceLine(Arrow.NOTE, RUNTIME, f"{number}. session ends outside the chart")
        for sent in step.sent:
            lane = _WORKER_LANES[sent.role.value]
            yield SequenceLine(Arrow.OUTCOME, RUNTIME, f"{sent.describe()} (in flight)", peer=lane)
        return
    if step.kind is MoveKind.DROP:
        assert message is not None
        yield SequenceLine(Arrow.NOTE, RUNTIME, f"{number}. {message.describe()} dropped")
        for sent in step.sent:  # its own cleanup failed: sent again
            lane = _WORKER_LANES[sent.role.value]
            yield SequenceLine(Arrow.OUTCOME, RUNTIME, f"{sent.describe()} (in flight)", peer=lane)
        return
    if step.call is None:
        assert message is not None
        assert step.reaction is not None
        yield from _worker_moves(number, step, _WORKER_LANES[message.role.value])
        return
    if step.kind is MoveKind.FAULT:
        yield SequenceLine(Arrow.NOTE, RUNTIME, "fault")
    if step.kind is MoveKind.DEADLINE:
        yield SequenceLine(Arrow.NOTE, RUNTIME, "deadline")
    if message is not None and step.kind in _CARRIER_FAULTS:
        yield SequenceLine(
            Arrow.NOTE, RUNTIME, f"{message.describe()} {_CARRIER_FAULTS[step.kind]}"
        )
    yield SequenceLine(Arrow.FACT, RUNTIME, f"{number}. {step.call}")
    if step.error is not None:
        yield SequenceLine(Arrow.REFUSAL, RUNTIME, f"refused: {step.error}")
        for again in step.sent:  # a failed cancel, retried
            name = again._replace(copy=False).describe()
            yield SequenceLine(Arrow.NOTE, RUNTIME, f"{name} sent again (retry)")
    for item in step.issued:
        name = f"#{item.id.value} {type(item.action).__name__}"
        if any(sent.action_id == item.id.value for sent in step.sent):
            yield SequenceLine(Arrow.OUTCOME, COORDINATOR, f"{name} (in flight)", peer=RUNTIME)
        else:
            yield SequenceLine(Arrow.NOTE, COORDINATOR, f"{name} → {step.state}")


_CARRIER_FAULTS = {
    **{MoveKind(fault.shown.move): fault.shown.note for fault in NETWORK if fault.shown.note},
    MoveKind.TIMER: "lost: the timer fires",
}
_TIMER_MOVES = {
    MoveKind.LOST: "lost: the runtime's timer will send it again",
    MoveKind.RESEND: "sent again: the runtime's timer fired",
    **{MoveKind(fault.shown.move): fault.shown.aside for fault in NETWORK if fault.shown.aside},
}
"""Moves that name a message without delivering it, drawn as a note (each injected fault's
that sets the message aside says how: `Shown.aside`)."""


def _restart_moves(number: int, step: TraceStep, lane: str) -> Iterator[SequenceLine]:
    """A worker's restart, what it lost with it and the work it refused."""
    kept = step.reaction is not None and step.reaction.slots is Slots.KEEP
    yield SequenceLine(
        Arrow.NOTE, lane, f"{number}. restarts, forgets all{', keeps its slots' if kept else ''}"
    )
    if step.lost:
        lost = ", ".join(message.describe() for message in step.lost)
        yield SequenceLine(Arrow.NOTE, RUNTIME, f"lost with its inbox: {lost}")
    for sent in step.sent:
        yield SequenceLine(Arrow.OUTCOME, lane, f"{sent.describe()} (in flight)", peer=RUNTIME)


def _worker_moves(number: int, step: TraceStep, lane: str) -> Iterator[SequenceLine]:
    """A message the runtime hands a worker, what the worker makes of it, and what it sends
    back (or, for a copy, what the runtime sends it again)."""
    assert step.message is not None
    assert step.reaction is not None
    yield SequenceLine(Arrow.FACT, RUNTIME, f"{number}. {step.message.describe()}", peer=lane)
    done = "fails the work" if step.kind is MoveKind.WORKER_FAILS else ""
    yield SequenceLine(Arrow.NOTE, lane, done or memory_name(step.reaction.memory))
    for sent in step.sent:
        ends = (RUNTIME, lane) if sent.copy else (lane, RUNTIME)
        yield SequenceLine(Arrow.OUTCOME, ends[0], f"{sent.describe()} (in flight)", peer=ends[1])

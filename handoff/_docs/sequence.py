"""Sequence diagrams: one handoff driven through a real coordinator, drawn as Mermaid text.

`sequence(order)` drives a coordinator the way a well-behaved runtime would, along the
success path or through a cancellation, and records the messages that cross the lanes;
`mermaid_sequence` renders them as a `sequenceDiagram`.  Pure and deterministic, like the
state diagrams in `handoff._docs.diagram`.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from handoff._chart import CHARTS
from handoff._coordinator import HandoffCoordinatorCore
from handoff._docs.diagram import HEADER
from handoff._lifecycle import NormalizedHandoffEvent
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._runs.bound import cut
from handoff._runs.call import Call, CallKind
from handoff._runs.runtime import HANDOFF_ID, Workload, acknowledgement
from handoff._table import compiled
from handoff._timing import HandoffTransferTiming
from handoff._values import (
    HandoffOrder,
    KvTransferTimingMode,
)

if TYPE_CHECKING:
    from handoff._chart_base import HandoffChart

__all__ = ["Arrow", "Message", "mermaid_sequence", "sequence"]

SOURCE = "Source"
COORDINATOR = "Coordinator"
DESTINATION = "Destination"
RUNTIME = "Runtime"

_ACTION_LANES: dict[type[HandoffAction], str] = {
    HandoffAction.SubmitPrefill: SOURCE,
    HandoffAction.ReserveDestination: DESTINATION,
    HandoffAction.StartTransfer: SOURCE,
    HandoffAction.ActivateDestination: DESTINATION,
    HandoffAction.ReleaseSource: SOURCE,
    HandoffAction.CancelSource: SOURCE,
    HandoffAction.CancelDestination: DESTINATION,
}
"""Who performs each action (`Complete` concerns everyone: it is drawn as a note)."""

_FACT_LANES: dict[type[HandoffFact], str] = {
    HandoffFact.SourceHeld: SOURCE,
    HandoffFact.DestinationReserved: DESTINATION,
    HandoffFact.TransferCompleted: DESTINATION,
    HandoffFact.Canceled: RUNTIME,
    HandoffFact.Failed: RUNTIME,
    HandoffFact.TimedOut: RUNTIME,
}
"""Who reports each fact the drawings use: the workers report progress; the runtime around
the coordinator reports the terminal facts (a client's cancel, a failure, a deadline)."""

_HANDOFF = HANDOFF_ID
_WORKLOAD = Workload(
    HandoffTransferTiming(
        mode=KvTransferTimingMode.DESTINATION_MISSING,
        full_prompt_tokens=1024,
        kv_bytes_per_token=None,
        bandwidth_gb_s=None,
    ),
    transferable_prompt_tokens=1024,
)
"""What the drawn runtime reports (no bandwidth: the drawings show no delay)."""


class Arrow(enum.Enum):
    """How a sequence-diagram line is drawn."""

    FACT = "fact"
    """A fact, reported by a lane to the coordinator."""
    ACTION = "action"
    """An action, issued by the coordinator to the lane that performs it."""
    OUTCOME = "outcome"
    """An acknowledgement of an action, from the lane back to the coordinator."""
    NOTE = "note"
    """A note over the coordinator (`lane` set) or over every lane (`lane` empty)."""


@attrs.frozen
class Message:
    """One line of a sequence diagram."""

    arrow: Arrow
    lane: str
    text: str


def sequence(
    order: HandoffOrder | type[HandoffChart], *, cancel_after_reservation: bool = False
) -> tuple[Message, ...]:
    """The messages of one handoff in `order` (or on a chart class), through a real coordinator.

    The runtime acknowledges every action with its fitting outcome, first issued first, and
    reports the fact each acknowledged action leads to (`handoff._runs.runtime`).  With
    `cancel_after_reservation`, the request is canceled as soon as the destination's
    reservation is accepted; the runtime then acknowledges the cleanup actions only.  A chart
    whose handoff never ends is cut where the review cuts a run: `Runaway` names the loop.
    """
    runtime = _Runtime(order)
    runtime.call(Call.start())
    while runtime.pending:
        if cancel_after_reservation and _RESERVED in runtime.core.lifecycle:
            runtime.cancel()
            cancel_after_reservation = False
        item = runtime.pending.popleft()
        runtime.acknowledge(item)
        runtime.report_fact_after(item)
    return tuple(runtime.messages)


_RESERVED = NormalizedHandoffEvent.DESTINATION_RESERVED


class _Runtime:
    """A well-behaved runtime around one coordinator, recording what crosses the lanes."""

    def __init__(self, order: HandoffOrder | type[HandoffChart]) -> None:
        chart = CHARTS[order] if isinstance(order, HandoffOrder) else order
        self.core = HandoffCoordinatorCore(_HANDOFF, chart=chart)
        self.chart = compiled(order)
        self.messages = [Message(Arrow.NOTE, COORDINATOR, self._state_name())]
        self.pending: deque[IssuedHandoffAction] = deque()
        self.issued: list[HandoffAction] = []

    def call(self, call: Call) -> None:
        """Make one call; note where it moved the chart and what it recorded, then issue."""
        state, recorded = self.core.chart_state, len(self.core.lifecycle)
        issued = call.send(self.core)
        cut(self.chart.name, self.issued, call, issued)
        self.issued += (item.action for item in issued)
        label = call.describe() if call.kind is CallKind.START else ""
        note = f"{label} → {self._state_name()}" if self.core.chart_state != state else label
        lifecycle = ", ".join(event.value for event in self.core.lifecycle[recorded:])
        if lifecycle:
            note = f"{note}<br/>lifecycle: {lifecycle}" if note else f"lifecycle: {lifecycle}"
        if note:
            self.messages.append(Message(Arrow.NOTE, COORDINATOR, note.strip()))
        for item in issued:
            self._issue(item)

    def _issue(self, item: IssuedHandoffAction) -> None:
        text = f"{type(item.action).__name__} [{item.id.value}]"
        if isinstance(item.action, HandoffAction.Complete):
            completion = self.core.completion
            assert completion is not None
            self.messages.append(Message(Arrow.NOTE, "", f"{text}: {completion.name}"))
            return
        self.messages.append(Message(Arrow.ACTION, _ACTION_LANES[type(item.action)], text))
        self.pending.append(item)

    def acknowledge(self, item: IssuedHandoffAction) -> None:
        outcome = acknowledgement(item.action)
        lane = _ACTION_LANES[type(item.action)]
        self.messages.append(Message(Arrow.OUTCOME, lane, f"{outcome} [{item.id.value}]"))
        self.call(Call.of_outcome(item.id, outcome))

    def report_fact_after(self, item: IssuedHandoffAction) -> None:
        fact = _WORKLOAD.fact_after(item.action)
        if fact is not None:
            self._report(fact)

    def cancel(self) -> None:
        overtaken = [f"{type(item.action).__name__} [{item.id.value}]" for item in self.pending]
        self.pending.clear()
        self._report(HandoffFact.Canceled(_HANDOFF))
        if overtaken:
            text = f"cleanup does not wait for {', '.join(overtaken)}"
            self.messages.append(Message(Arrow.NOTE, "", text))

    def _report(self, fact: HandoffFact) -> None:
        self.messages.append(Message(Arrow.FACT, _FACT_LANES[type(fact)], type(fact).__name__))
        self.call(Call.of_fact(fact))

    def _state_name(self) -> str:
        return self.chart.names[self.chart.index(self.core.chart_state)]


def mermaid_sequence(messages: Iterable[Message], title: str) -> str:
    """The Mermaid `sequenceDiagram` text of `messages`."""
    lines = [
        f"%% {HEADER}",
        "sequenceDiagram",
        f"    title {title}",
        f"    participant {SOURCE}",
        f"    participant {COORDINATOR}",
        f"    participant {DESTINATION}",
        f"    participant {RUNTIME}",
    ]
    lines += [f"    {_sequence_line(message)}" for message in messages]
    return "\n".join(lines) + "\n"


def _sequence_line(message: Message) -> str:
    if message.arrow is Arrow.FACT:
        return f"{message.lane}->>{COORDINATOR}: {message.text}"
    if message.arrow is Arrow.ACTION:
        return f"{COORDINATOR}->>{message.lane}: {message.text}"
    if message.arrow is Arrow.OUTCOME:
        return f"{message.lane}-->>{COORDINATOR}: {message.text}"
    return f"Note over {message.lane or f'{SOURCE},{DESTINATION}'}: {message.text}"

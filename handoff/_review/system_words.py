"""A system run in words: each move of a counterexample with workers, who sent what, and how
a cancel overtook the work it cancels, for the report's text and JSON and the drawings.
Loaded only when a review with workers is reported."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterator, Sequence

from handoff._review.verdict import Counterexample, MoveKind, TraceStep, Verdict
from handoff._system.faults import NETWORK
from handoff._system.workers import (
    Message,
    MessageKind,
    RequestMemory,
    Role,
    Slots,
    WorkerTask,
    memory_name,
    role_of,
    task_of,
)
from handoff._values.messages import IssuedHandoffAction

__all__ = [
    "describe_step",
    "memory_words",
    "moves_counterexample",
    "overtaken",
    "runtime_acknowledged",
]


def moves_counterexample(verdict: Verdict, example: Counterexample) -> list[str]:
    """A system counterexample in words, one move a line, and how a cancel overtook its work."""
    lines = [
        f"{verdict.prop.key.value} fails: {example.finding}",
        example.heading,
    ]
    by_runtime = runtime_acknowledged(example.steps)
    lines += [
        f"  {number:>2}. {describe_step(step, by_runtime)}"
        for number, step in enumerate(example.steps, 1)
    ]
    lines += [f"  {note}" for note in overtaken(example.steps)]
    return lines


def runtime_acknowledged(steps: Sequence[TraceStep]) -> frozenset[Message]:
    """The acknowledgements the runtime put in flight itself, as it sent the work (on send):
    those a move of the coordinator's sent, where a worker's own come from its moves."""
    return frozenset(
        sent
        for step in steps
        if step.call is not None
        for sent in step.sent
        if sent.kind is MessageKind.OUTCOME
    )


def describe_step(step: TraceStep, by_runtime: Collection[Message] = ()) -> str:
    """One move in words: who got what, and what followed (an acknowledgement among
    `by_runtime` comes from the runtime, not from the worker: `runtime_acknowledged`)."""
    message = step.message
    # Several handoffs share the workers: say whose coordinator the runtime calls.
    whose = "" if step.handoff is None else f"h{step.handoff + 1}'s "
    if step.kind is MoveKind.START:
        return (
            f"the runtime calls {whose}start() -> {step.state}: {_answer(step.issued, step.error)}"
        )
    if step.kind is MoveKind.DEADLINE:
        whose = whose or "the handoff's "
        return f"{whose}deadline fires: the runtime reports {_called(step)}"
    if step.kind in (MoveKind.FAULT, MoveKind.CALL):
        to = "" if step.handoff is None else f" to h{step.handoff + 1}"
        return (
            f"the runtime reports {step.call}{to} -> {step.state}: "
            f"{_answer(step.issued, step.error)}"
        )
    if step.kind is MoveKind.ABANDON:
        sent = ", ".join(sent.describe() for sent in step.sent)
        return (
            f"the runtime ends {whose or 'the '}session outside the chart, its coordinator "
            f"left in {step.state}: sends {sent}"
        )
    if step.kind is MoveKind.EXPIRE:
        assert step.worker is not None
        of = "the request" if step.handoff is None else f"h{step.handoff + 1}'s request"
        return f"the {step.worker.value}'s tombstone for {of} expires: it forgets it"
    if step.worker is not None:
        return _restart_words(step)
    assert message is not None
    if step.kind is MoveKind.TIMER:
        return (
            f"the runtime's timer fires for the lost {message.describe()}: it reports "
            f"{_called(step)}"
        )
    if step.kind in _ASIDE:
        return f"{message.describe()} {_ASIDE[step.kind]}"
    if step.kind is MoveKind.LOST:
        return f"{message.describe()} is lost; the runtime's timer will send it again"
    if step.kind is MoveKind.RESEND:
        return f"the runtime's timer fires: it sends {message.describe()} again"
    if step.kind is MoveKind.DROP:
        again = f", and sends {step.sent[0].describe()}" if step.sent else ""
        return f"the runtime drops {message.describe()}: its session ended{again}"
    if step.kind is MoveKind.LOSS and step.call is None:
        ended = ", ".join(sent.describe() for sent in step.sent)
        ends = f"the runtime ends the session outside the chart: sends {ended}"
        return f"{message.describe()} is lost; {ends if ended else 'its session is over already'}"
    if step.kind is MoveKind.LOSS:
        return f"{message.describe()} is lost; the runtime reports {_called(step)}"
    again = ", and a copy of it is sent again" if step.kind is MoveKind.DUPLICATE else ""
    if step.call is not None:
        original = message._replace(copy=False)  # a copy comes from where the original did
        sender = "runtime" if original in by_runtime else message.role.value
        return (
            f"the coordinator gets {message.describe()} from the {sender}{again}: "
            f"{_called(step)}{_retry(step)}"
        )
    reaction = step.reaction
    assert reaction is not None
    did = "fails it" if step.kind is MoveKind.WORKER_FAILS else memory_words(reaction.memory)
    sent = ", ".join(sent.describe() for sent in step.sent if not sent.copy) or "nothing"
    return f"the {message.role.value} gets {message.describe()}{again}: {did}; sends {sent}"


_ASIDE = {MoveKind(fault.shown.move): fault.shown.aside for fault in NETWORK if fault.shown.aside}
"""Each injected fault's move that neither delivers the message it names nor loses it: what
becomes of the message (`Shown.aside`)."""

_UNDELIVERED = (MoveKind.LOST, MoveKind.RESEND, MoveKind.TIMER, *_ASIDE)
"""Moves that name a message without delivering it."""

_MEMORY = {
    RequestMemory.UNKNOWN: "knows nothing of the request",
    RequestMemory.HELD: "holds a KV slot for it",
    RequestMemory.FREED: "holds no slot for it (freed)",
    RequestMemory.CANCELED: "remembers the request as canceled",
    RequestMemory.SERVING: "serves the request from its KV slot",
}


def memory_words(memory: Hashable) -> str:
    """What a worker remembering `memory` of a request does, in a report's words."""
    if isinstance(memory, RequestMemory):
        return _MEMORY[memory]
    return f"remembers {memory_name(memory)}"


def overtaken(steps: Sequence[TraceStep]) -> Iterator[str]:
    """Each cancel that reached its worker before the work it cancels: overtaking it.

    Action ids count per handoff, so a delivery is known by its handoff and id; each cancel
    is named once, with the first of its handoff's work it overtook."""
    delivered: set[tuple[int | None, int]] = set()
    for step in steps:
        message = step.message
        if message is None or message.kind is not MessageKind.ACTION or step.kind in _UNDELIVERED:
            continue
        delivered.add((message.handoff, message.action_id))
        if task_of(message.action) is not WorkerTask.CANCEL:
            continue
        work = next(
            (
                item
                for earlier in steps
                if earlier.handoff == message.handoff
                for item in earlier.issued
                if _takes(item, message.role) and (message.handoff, item.id.value) not in delivered
            ),
            None,
        )
        if work is not None:
            whose = "" if message.handoff is None else f"h{message.handoff + 1} "
            yield (
                f"the cancel {message.describe()} "
                f"reached the {message.role.value} before {whose}#{work.id.value} "
                f"{type(work.action).__name__}, the work it cancels: it overtook it"
            )


def _takes(item: IssuedHandoffAction, role: Role) -> bool:
    """Whether `item` asks the worker of `role` to take a slot."""
    return role_of(item.action) is role and task_of(item.action) is WorkerTask.TAKE


def _restart_words(step: TraceStep) -> str:
    """A restart in words, and the work it refused as sent before it."""
    assert step.worker is not None
    kept = step.reaction is not None and step.reaction.slots is Slots.KEEP
    what = (
        "forgets its requests but keeps their slots"
        if kept
        else ("forgets the request and frees its slot")
    )
    refused = ", ".join(sent.describe() for sent in step.sent)
    then = f"; it refuses the work sent before it: sends {refused}" if refused else ""
    if step.lost:
        then += f"; its inbox is lost: {', '.join(lost.describe() for lost in step.lost)}"
    return f"the {step.worker.value} restarts: it {what}{then}"


def _retry(step: TraceStep) -> str:
    """What the runtime sends again once the coordinator refused a failed cancel."""
    if step.error is None or not step.sent:
        return ""
    again = ", ".join(sent._replace(copy=False).describe() for sent in step.sent)
    return f"; the runtime retries: sends {again} again"


def _called(step: TraceStep) -> str:
    """The call a move made, where it led and what it issued."""
    return f"{step.call} -> {step.state}: {_answer(step.issued, step.error)}"


def _answer(issued: Sequence[IssuedHandoffAction], error: str | None) -> str:
    if error is not None:
        return f"refused, {error}"
    if not issued:
        return "issued nothing"
    return "issued " + ", ".join(
        f"#{item.id.value} {type(item.action).__name__}" for item in issued
    )

"""A system run in words: each move of a counterexample with workers, who sent what, and how
a cancel overtook the work it cancels, for the report's text and JSON and the drawings.
Loaded only when a review with workers is reported."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterator, Sequence

from handoff._review.verdict import Counterexample, MoveKind, TraceStep, Verdict
from handoff._system.workers import (
    Message,
    MessageKind,
    RequestMemory,
    Role,
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
    if step.kind in (MoveKind.FAULT, MoveKind.CALL):
        to = "" if step.handoff is None else f" to h{step.handoff + 1}"
        return (
            f"the runtime reports {step.call}{to} -> {step.state}: "
            f"{_answer(step.issued, step.error)}"
        )
    if step.worker is not None:
        return f"the {step.worker.value} restarts: it forgets the request and frees its slot"
    assert message is not None
    if step.kind is MoveKind.LOSS:
        return (
            f"{message.describe()} is lost; the runtime reports {step.call} -> {step.state}: "
            f"{_answer(step.issued, step.error)}"
        )
    again = ", and a copy of it is sent again" if step.kind is MoveKind.DUPLICATE else ""
    if step.call is not None:
        original = message._replace(copy=False)  # a copy comes from where the original did
        sender = "runtime" if original in by_runtime else message.role.value
        return (
            f"the coordinator gets {message.describe()} from the {sender}{again}: "
            f"{step.call} -> {step.state}: {_answer(step.issued, step.error)}"
        )
    reaction = step.reaction
    assert reaction is not None
    did = "fails it" if step.kind is MoveKind.WORKER_FAILS else memory_words(reaction.memory)
    sent = ", ".join(sent.describe() for sent in step.sent if not sent.copy) or "nothing"
    return f"the {message.role.value} gets {message.describe()}{again}: {did}; sends {sent}"


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
        if message is None or message.kind is not MessageKind.ACTION:
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
                f"the cancel {whose}#{message.action_id} {type(message.action).__name__} "
                f"reached the {message.role.value} before {whose}#{work.id.value} "
                f"{type(work.action).__name__}, the work it cancels: it overtook it"
            )


def _takes(item: IssuedHandoffAction, role: Role) -> bool:
    """Whether `item` asks the worker of `role` to take a slot."""
    return role_of(item.action) is role and task_of(item.action) is WorkerTask.TAKE


def _answer(issued: Sequence[IssuedHandoffAction], error: str | None) -> str:
    if error is not None:
        return f"refused, {error}"
    if not issued:
        return "issued nothing"
    return "issued " + ", ".join(
        f"#{item.id.value} {type(item.action).__name__}" for item in issued
    )

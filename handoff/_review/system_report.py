"""The system review's reports: text, JSON and Markdown, each counterexample move by move."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from handoff._messages import IssuedHandoffAction
from handoff._review.system import (
    SYSTEM_PROPERTIES,
    SystemCounterexample,
    SystemReview,
    SystemVerdict,
)
from handoff._review.system_state import MessageKind, SystemStep, SystemStepKind
from handoff._runs.trace import call_object
from handoff._runs.workers import RequestMemory, Role, WorkerTask, role_of, task_of

__all__ = [
    "describe_step",
    "overtaken",
    "system_json",
    "system_markdown",
    "system_text",
    "system_title",
]


def system_title(review: SystemReview) -> str:
    """`SourceFirst, forgetful workers, any order`: the chart and the system around it."""
    chart = (
        review.name
        if review.name == review.order.value
        else f"{review.name} ({review.order.value})"
    )
    delivery = "FIFO per worker" if review.options.fifo else "any order"
    return f"{chart}, {review.contract.name} workers, messages delivered in {delivery}"


def system_text(reviews: Sequence[SystemReview]) -> str:
    """The verdict tables, then each failure's shortest counterexample, then the verdict line."""
    parts = [_text_review(review) for review in reviews]
    failing = [
        f"{verdict.prop.key.value} ({review.name}, {review.contract.name} workers)"
        for review in reviews
        for verdict in review.failures()
    ]
    seconds = sum(review.seconds for review in reviews)
    if failing:
        # Every system property is a safety property: a failure is unsafe.
        parts.append(f"UNSAFE: {', '.join(failing)}; reviewed in {seconds:.2f} s\n")
    else:
        names = " and ".join(review.name for review in reviews)
        contracts = sorted({review.contract.name for review in reviews})
        parts.append(
            f"OK: all {len(SYSTEM_PROPERTIES)} system properties hold for {names} with "
            f"{' and '.join(contracts)} workers; reviewed in {seconds:.2f} s\n"
        )
    return "\n".join(parts)


def _text_review(review: SystemReview) -> str:
    width = max(len(prop.title) for prop in SYSTEM_PROPERTIES)
    lines = [
        f"{system_title(review)}: {review.configurations:,} configurations, "
        f"{review.moves:,} moves explored in {review.seconds:.2f} s",
        "",
        f"  {'':9}{'property':<{width}}  verdict  checked",
    ]
    for verdict in review.verdicts:
        lines.append(
            f"  {verdict.prop.key.value:<9}{verdict.prop.title:<{width}}  "
            f"{_word(verdict):<7}  {_checked(verdict)}"
        )
    for verdict in review.failures():
        if verdict.counterexample is not None:
            lines += ["", *counterexample_lines(verdict, verdict.counterexample)]
    return "\n".join(lines) + "\n"


def counterexample_lines(verdict: SystemVerdict, example: SystemCounterexample) -> list[str]:
    """A counterexample in words, one move a line, and how a cancel overtook its work."""
    lines = [
        f"{verdict.prop.key.value} fails: {example.finding}",
        f"shortest counterexample ({len(example.steps)} moves):",
    ]
    lines += [
        f"  {number:>2}. {describe_step(step)}" for number, step in enumerate(example.steps, 1)
    ]
    lines += [f"  {note}" for note in overtaken(example.steps)]
    return lines


def describe_step(step: SystemStep) -> str:
    """One move in words: who got what, and what followed."""
    message = step.message
    if step.kind is SystemStepKind.START:
        return f"the runtime calls start() -> {step.state}: {_issued(step.issued, step.error)}"
    if step.kind is SystemStepKind.FAULT:
        assert step.call is not None
        return (
            f"the runtime reports {step.call} -> {step.state}: {_issued(step.issued, step.error)}"
        )
    assert message is not None
    if step.kind is SystemStepKind.TO_COORDINATOR:
        return (
            f"the coordinator gets {message.describe()} from the {message.role.value}: "
            f"{step.call} -> {step.state}: {_issued(step.issued, step.error)}"
        )
    reaction = step.reaction
    assert reaction is not None
    did = "fails it" if step.kind is SystemStepKind.WORKER_FAILS else _memory(reaction.memory)
    sent = ", ".join(sent.describe() for sent in step.sent) or "nothing"
    return f"the {message.role.value} gets {message.describe()}: {did}; sends {sent}"


def _memory(memory: RequestMemory) -> str:
    return {
        RequestMemory.UNKNOWN: "knows nothing of the request",
        RequestMemory.HELD: "holds a KV slot for it",
        RequestMemory.FREED: "holds no slot for it (freed)",
        RequestMemory.CANCELED: "remembers the request as canceled",
    }[memory]


def overtaken(steps: Sequence[SystemStep]) -> Iterator[str]:
    """Each cancel that reached its worker before the work it cancels: overtaking it."""
    delivered: set[int] = set()
    for step in steps:
        message = step.message
        if message is None or message.kind is not MessageKind.ACTION:
            continue
        delivered.add(message.action_id)
        if task_of(message.action) is not WorkerTask.CANCEL:
            continue
        for earlier in steps:
            work = next((item for item in earlier.issued if _takes(item, message.role)), None)
            if work is not None and work.id.value not in delivered:
                yield (
                    f"the cancel #{message.action_id} {type(message.action).__name__} reached "
                    f"the {message.role.value} before #{work.id.value} "
                    f"{type(work.action).__name__}, the work it cancels: it overtook it"
                )


def _takes(item: IssuedHandoffAction, role: Role) -> bool:
    """Whether `item` asks the worker of `role` to take a slot."""
    return role_of(item.action) is role and task_of(item.action) is WorkerTask.TAKE


def _issued(issued: Sequence[IssuedHandoffAction], error: str | None) -> str:
    if error is not None:
        return f"refused, {error}"
    if not issued:
        return "issued nothing"
    return "issued " + ", ".join(
        f"#{item.id.value} {type(item.action).__name__}" for item in issued
    )


def _word(verdict: SystemVerdict) -> str:
    return "PASS" if verdict.holds else "FAIL"


def _checked(verdict: SystemVerdict) -> str:
    counted = f"{verdict.prop.unit}: {verdict.checked:,}"
    return counted if verdict.holds else f"{counted}, {verdict.violations:,} violating"


# -- markdown ------------------------------------------------------------------------------


def system_markdown(reviews: Sequence[SystemReview]) -> str:
    """The system review as Markdown: the properties, then a table per chart and system."""
    lines = [
        "# System review",
        "",
        *(f"- **{prop.key.value}** {prop.words}" for prop in SYSTEM_PROPERTIES),
    ]
    for review in reviews:
        verdict = "every property holds" if review.holds else "**some properties fail**"
        lines += [
            "",
            f"## {system_title(review)}",
            "",
            f"{review.configurations:,} configurations and {review.moves:,} moves explored; "
            f"{verdict}.",
            "",
            "| property | | verdict | checked |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {v.prop.key.value} | {v.prop.title} | {_word(v)} | {_checked(v)} |"
            for v in review.verdicts
        ]
        for failing in review.failures():
            if failing.counterexample is not None:
                body = counterexample_lines(failing, failing.counterexample)
                lines += ["", "```text", *body, "```"]
    return "\n".join(lines) + "\n"


# -- json ----------------------------------------------------------------------------------


def system_json(reviews: Sequence[SystemReview]) -> dict[str, Any]:
    """Everything the system review found, as JSON-ready values."""
    return {"ok": all(review.holds for review in reviews), "systems": [_json(r) for r in reviews]}


def _json(review: SystemReview) -> dict[str, Any]:
    return {
        "order": review.order.value,
        "chart": review.name,
        "workers": review.contract.name,
        "fifo": review.options.fifo,
        "faults": review.options.faults,
        "ok": review.holds,
        "configurations": review.configurations,
        "moves": review.moves,
        "seconds": round(review.seconds, 3),
        "properties": [_json_verdict(verdict) for verdict in review.verdicts],
    }


def _json_verdict(verdict: SystemVerdict) -> dict[str, Any]:
    example = verdict.counterexample
    return {
        "key": verdict.prop.key.value,
        "family": None if verdict.prop.family is None else verdict.prop.family.value,
        "title": verdict.prop.title,
        "verdict": _word(verdict),
        "checked": verdict.checked,
        "unit": verdict.prop.unit,
        "violations": verdict.violations,
        "counterexample": None if example is None else _json_example(example),
    }


def _json_example(example: SystemCounterexample) -> dict[str, Any]:
    return {
        "finding": example.finding,
        "overtaken": list(overtaken(example.steps)),
        "steps": [_json_step(step) for step in example.steps],
    }


def _json_step(step: SystemStep) -> dict[str, Any]:
    message = step.message
    reaction = step.reaction
    return {
        "kind": step.kind.value,
        "message": None if message is None else message.describe(),
        "worker": None if message is None else message.role.value,
        "call": None if step.call is None else call_object(step.call),
        "state": step.state,
        "issued": [f"#{item.id.value} {type(item.action).__name__}" for item in step.issued],
        "error": step.error,
        "memory": None if reaction is None else reaction.memory.value,
        "sent": [sent.describe() for sent in step.sent],
        "words": describe_step(step),
    }

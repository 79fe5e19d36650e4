"""The review's reports: a verdict table per chart as text, everything as JSON, the markdown of
`docs/model-review.md` (deterministic, no timings), and a counterexample as a replayable trace.

The command (`handoff._review.cli`) chooses one and writes it; the docs wing writes the committed
markdown report with the same function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from handoff._messages import HandoffAction, IssuedHandoffAction
from handoff._review.environment import Call
from handoff._review.explore import OrderReview
from handoff._review.properties import PROPERTIES, Family
from handoff._review.verdict import Counterexample, Verdict
from handoff._runs.replay import record
from handoff._runs.trace import Entry, Trace, call_object

__all__ = [
    "DIFFERS",
    "UNSAFE",
    "call_json",
    "counterexample_trace",
    "exit_status",
    "json_report",
    "markdown",
    "text",
    "verdict_line",
]

# -- text ------------------------------------------------------------------------------


def verdict_line(reviews: Sequence[OrderReview]) -> str | None:
    """`UNSAFE: S5 (chart), …`, `SAFE, differs from the reference: Q1 (chart), …`, or None
    when every property holds; failures root cause first."""
    failing = [(review, verdict) for review in reviews for verdict in review.failures()]
    unsafe = [_named(r, v) for r, v in failing if v.prop.family is Family.SAFETY]
    differs = [_named(r, v) for r, v in failing if v.prop.family is Family.CONFORMANCE]
    if unsafe:
        also = f"; differs from the reference: {', '.join(differs)}" if differs else ""
        return f"UNSAFE: {', '.join(unsafe)}{also}"
    if differs:
        return f"SAFE, differs from the reference: {', '.join(differs)}"
    return None


def exit_status(reviews: Sequence[OrderReview], *, safety_only: bool = False) -> int:
    """0 every property holds; 1 a safety property fails (UNSAFE); 3 only conformance
    properties fail (SAFE, differs from the reference), or 0 with `safety_only`."""
    if not all(review.safe for review in reviews):
        return UNSAFE
    if safety_only or all(review.holds for review in reviews):
        return 0
    return DIFFERS


UNSAFE = 1
"""The exit status of a review that fails a safety property."""
DIFFERS = 3
"""The exit status of a review that fails conformance properties only (2 is a usage error)."""


def _named(review: OrderReview, verdict: Verdict) -> str:
    return f"{verdict.prop.key.value} ({review.name})"


def text(reviews: Sequence[OrderReview]) -> str:
    """The verdict tables, then each failure's shortest counterexample (root cause first)."""
    parts = [_text_order(review) for review in reviews]
    line = verdict_line(reviews)
    seconds = sum(review.seconds for review in reviews)
    if line is not None:
        parts.append(f"{line}; reviewed in {seconds:.2f} s\n")
    else:
        orders = " and ".join(review.name for review in reviews)
        parts.append(
            f"OK: all {len(PROPERTIES)} properties hold for {orders}; reviewed in {seconds:.2f} s\n"
        )
    return "\n".join(parts)


def _text_order(review: OrderReview) -> str:
    width = max(len(prop.title) for prop in PROPERTIES)
    lines = [
        f"{_title(review)}: {review.configurations:,} configurations, "
        f"{review.transitions:,} transitions explored in {review.seconds:.2f} s{_phases(review)}",
        "",
        f"  {'':9}{'property':<{width}}  verdict  checked",
    ]
    for verdict in review.verdicts:
        lines.append(
            f"  {verdict.prop.key.value:<9}{verdict.prop.title:<{width}}  "
            f"{_verdict_word(verdict):<7}  {_checked(verdict)}"
        )
    lines += [f"  {v.prop.key.value}: {note}" for v in review.verdicts for note in v.notes]
    for verdict in review.failures():
        if verdict.counterexample is not None:
            lines += ["", *_text_counterexample(verdict, verdict.counterexample)]
    return "\n".join(lines) + "\n"


def _text_counterexample(verdict: Verdict, example: Counterexample) -> list[str]:
    lines = [
        f"{verdict.prop.key.value} fails: {example.finding}",
        f"shortest counterexample ({len(example.steps)} calls):",
    ]
    call_width = max((len(str(step.call)) for step in example.steps), default=0)
    state_width = max((len(step.state) for step in example.steps), default=0)
    if not example.steps:
        lines[-1] += " the coordinator as it starts, before any call"
    for number, step in enumerate(example.steps, start=1):
        did = _issued_text(step.issued) if step.error is None else f"raised {step.error}"
        lines.append(
            f"  {number:>2}. {step.call!s:<{call_width}}  -> {step.state:<{state_width}}  {did}"
        )
    return lines


def _phases(review: OrderReview) -> str:
    """Where the time went: ` (exploration 0.40 s, Table 0.10 s, liveness 0.02 s)`."""
    if not review.phases:
        return ""
    return " (" + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in review.phases) + ")"


def _title(review: OrderReview) -> str:
    """A chart's name, and its order when the name is its own."""
    if review.name == review.order.value:
        return review.name
    return f"{review.name} ({review.order.value})"


def _verdict_word(verdict: Verdict) -> str:
    return "PASS" if verdict.holds else "FAIL"


def _checked(verdict: Verdict) -> str:
    counted = verdict.summary or f"{verdict.prop.unit}: {verdict.checked:,}"
    if verdict.holds:
        return counted
    return f"{counted}, {verdict.violations:,} violating"


def _issued_text(issued: Sequence[IssuedHandoffAction]) -> str:
    if not issued:
        return "issued nothing"
    return "issued " + ", ".join(_action_text(item) for item in issued)


def _action_text(item: IssuedHandoffAction) -> str:
    action = item.action
    name = type(action).__name__
    if isinstance(action, HandoffAction.StartTransfer):
        return f"#{item.id.value} {name}({action.delay_ms} ms)"
    return f"#{item.id.value} {name}"


# -- markdown --------------------------------------------------------------------------


def markdown(reviews: Sequence[OrderReview]) -> str:
    """The report committed in `docs/model-review.md`; no timings, so it is reproducible."""
    lines = [
        "# Model review",
        "",
        "`handoff review` explores, breadth first, every configuration a coordinator can reach "
        "under a nondeterministic environment: from each one it calls `start()`, reports every "
        "fact (with a usable payload; with a bandwidth that is NaN, inf, -inf or negative; with a "
        "timing or a reservation whose delay overflows; for another handoff) and acknowledges "
        "every action id issued so far, and one never issued, with every kind of outcome.  The "
        "safety properties are judged from what the environment saw (its calls, what each "
        "returned or raised), never from the coordinator's records.",
        "",
        "## Properties",
        "",
        *(f"- **{prop.key.value}** {prop.words}" for prop in PROPERTIES),
        "",
        "## Two families",
        "",
        "A failing *safety* property means the chart can lose KV or own it twice, leave an owner "
        "unfreed at completion, act after completion or never complete: the review says "
        "`UNSAFE: …` and exits 1.  A failing *conformance* property means the chart answers "
        "otherwise than the reference, SPEC.md (a refusal's class or phrase, what goes out in "
        "which call, the exact lifecycle record), and may still be safe: the review says "
        "`SAFE, differs from the reference: …` and exits 3, or 0 with `--safety-only`.",
        "",
        "| property | family | why |",
        "|---|---|---|",
        *(f"| {prop.key.value} | {prop.family.value} | {prop.why} |" for prop in PROPERTIES),
    ]
    for review in reviews:
        lines += ["", *_markdown_order(review)]
    return "\n".join(lines) + "\n"


def _markdown_order(review: OrderReview) -> list[str]:
    verdict = "every property holds" if review.holds else "**some properties fail**"
    lines = [
        f"## {_title(review)}",
        "",
        f"{review.configurations:,} configurations and {review.transitions:,} transitions "
        f"explored; {verdict}.",
        "",
        "| property | | verdict | checked |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {verdict.prop.key.value} | {verdict.prop.title} | {_verdict_word(verdict)} "
        f"| {_checked(verdict)} |"
        for verdict in review.verdicts
    ]
    notes = [f"- {v.prop.key.value}: {note}" for v in review.verdicts for note in v.notes]
    if notes:
        lines += ["", *notes]
    for failing in review.failures():
        if failing.counterexample is not None:
            lines += ["", "```text", *_text_counterexample(failing, failing.counterexample), "```"]
    return lines


# -- json and traces -------------------------------------------------------------------


def json_report(reviews: Sequence[OrderReview]) -> dict[str, Any]:
    """Everything the review found, as JSON-ready values."""
    return {
        "ok": all(review.holds for review in reviews),
        "safe": all(review.safe for review in reviews),
        "verdict": verdict_line(reviews) or "OK",
        "orders": [_json_order(review) for review in reviews],
    }


def _json_order(review: OrderReview) -> dict[str, Any]:
    return {
        "order": review.order.value,
        "chart": review.name,
        "origin": review.origin,
        "ok": review.holds,
        "safe": review.safe,
        "configurations": review.configurations,
        "transitions": review.transitions,
        "seconds": round(review.seconds, 3),
        "phases": {name: round(seconds, 3) for name, seconds in review.phases},
        "properties": [_json_verdict(verdict) for verdict in review.verdicts],
    }


def _json_verdict(verdict: Verdict) -> dict[str, Any]:
    example = verdict.counterexample
    return {
        "key": verdict.prop.key.value,
        "title": verdict.prop.title,
        "family": verdict.prop.family.value,
        "verdict": _verdict_word(verdict),
        "checked": verdict.checked,
        "unit": verdict.prop.unit,
        "violations": verdict.violations,
        "summary": verdict.summary,
        "notes": list(verdict.notes),
        "counterexample": None if example is None else _json_counterexample(example),
    }


def _json_counterexample(example: Counterexample) -> dict[str, Any]:
    return {
        "finding": example.finding,
        "steps": [
            {
                "call": call_json(step.call),
                "state": step.state,
                "issued": [_issued_json(item) for item in step.issued],
                "error": step.error,
            }
            for step in example.steps
        ],
    }


def counterexample_trace(review: OrderReview, example: Counterexample) -> Trace:
    """A counterexample as a replayable trace: its calls, each expecting the SPEC's answer.

    The SPEC's answers are those of the order's shipped chart, which the review proves: the
    trace then replays as OK once the chart is fixed, and diverges where the broken one errs.
    """
    entries = tuple(Entry(step.call) for step in example.steps)
    chart = review.origin
    if chart is None and review.name != review.order.value:
        chart = review.name
    trace = Trace(
        review.handoff_id, review.order, review.fallback_transfer_delay_ms, entries, chart=chart
    )
    return record(trace)


def call_json(call: Call) -> dict[str, Any]:
    """One call in the trace format: start, a fact, or an outcome for an action id."""
    return call_object(call)


def _issued_json(item: IssuedHandoffAction) -> dict[str, Any]:
    action = item.action
    fields: dict[str, Any] = {"handoff_id": str(action.handoff_id)}
    if isinstance(action, HandoffAction.StartTransfer):
        fields["delay_ms"] = _float(action.delay_ms)
    return {"id": item.id.value, "action": {type(action).__name__: fields}}


def _float(value: float | None) -> float | None:
    # JSON has no NaN or infinity; like serde_json, write them as null.
    return value if value is None or math.isfinite(value) else None

"""`handoff review`: explore each order's chart, print the verdicts, exit 1 on any failure.

Formats: `text`, a verdict table per order (then each failure's shortest counterexample);
`json`, everything, for tools; `markdown`, the report committed as `docs/model-review.md`,
deterministic (no timings).  `--trace-out FILE` writes the first counterexample as JSON Lines
that replay it: a header naming the order, the handoff id and the fallback delay, then one
call per line.  `--explain DIR` writes, for each failing property, the counterexample as a
trace, its diagrams and a pytest file (the writer is handed in by the command line: it draws,
and drawing lives above the review).  The report alone goes to stdout; every line about a
file written or removed goes to stderr, so `--format json` output is always pure JSON.  The
committed report is one of the generated files `handoff diagrams` writes and checks.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from handoff import _cli
from handoff._errors import HandoffError
from handoff._messages import HandoffAction, IssuedHandoffAction
from handoff._review.environment import Call
from handoff._review.explore import OrderReview, review_chart, review_order
from handoff._review.properties import PROPERTIES, Counterexample, Verdict
from handoff._runs.replay import record
from handoff._runs.trace import (
    Entry,
    Trace,
    TraceError,
    call_object,
    read_trace,
    write_trace,
)

Explainer = Callable[[Sequence[OrderReview], Path], list[str]]
"""Writes the explain set of every failure into a directory; one line per file touched."""

__all__ = [
    "configure",
    "counterexample_trace",
    "json_report",
    "markdown",
    "run",
    "text",
]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `handoff review`."""
    _cli.add_chart_options(parser, order="each", order_help="the chart(s) to explore", tables=True)
    parser.add_argument(
        "--format",
        choices=["text", "json", "markdown"],
        default="text",
        help="text: a verdict table per order; json: everything, for tools; "
        "markdown: the report kept in docs/model-review.md",
    )
    parser.add_argument(
        "--engine",
        choices=["explore", "spin"],
        default="explore",
        help="who judges: the review's own explorer, or Spin on the generated Promela model",
    )
    parser.add_argument(
        "--trace-out",
        metavar="FILE",
        type=_cli.new_file,
        help="write the first failure's shortest counterexample as replayable JSON Lines",
    )
    parser.add_argument(
        "--explain",
        metavar="DIR",
        type=_cli.output_directory,
        help="for each failing property write into DIR its counterexample as a trace, a "
        "sequence diagram, the state diagram with its path drawn over it, and a pytest file",
    )


def run(
    args: argparse.Namespace,
    out: TextIO | None = None,
    explain: Explainer | None = None,
    err: TextIO | None = None,
) -> int:
    """Review the chosen orders; 0 when every property holds, 1 otherwise."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if args.engine == "spin":
        from handoff._review import spin_cli  # imported on demand: it runs external tools

        return spin_cli.run(args, out, text)
    if args.chart:
        reviews = [review_chart(chart) for chart in args.chart]
    else:
        reviews = [review_order(order) for order in args.order]
    holds = all(review.holds for review in reviews)
    # The report first: a trace that cannot be written must not cost the report.
    if args.format == "json":
        out.write(json.dumps(json_report(reviews), indent=2) + "\n")
    elif args.format == "markdown":
        out.write(markdown(reviews))
    else:
        out.write(text(reviews))
    if args.trace_out is not None:
        _write_trace(args.trace_out, reviews, err)
    if getattr(args, "explain", None) is not None:
        if explain is None:
            raise _cli.CommandError("--explain needs the diagram writer (run `handoff review`)")
        for line in explain(reviews, args.explain):
            err.write(line + "\n")
    return 0 if holds else 1


# -- text ------------------------------------------------------------------------------


def text(reviews: Sequence[OrderReview]) -> str:
    """The verdict tables, then each failure's shortest counterexample."""
    parts = [_text_order(review) for review in reviews]
    failing = [
        f"{verdict.prop.key.value} ({review.name})"
        for review in reviews
        for verdict in review.failures()
    ]
    seconds = sum(review.seconds for review in reviews)
    if failing:
        parts.append(f"FAIL: {', '.join(failing)}; reviewed in {seconds:.2f} s\n")
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
        f"{review.transitions:,} transitions explored in {review.seconds:.2f} s",
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
        "orders": [_json_order(review) for review in reviews],
    }


def _json_order(review: OrderReview) -> dict[str, Any]:
    return {
        "order": review.order.value,
        "chart": review.name,
        "ok": review.holds,
        "configurations": review.configurations,
        "transitions": review.transitions,
        "seconds": round(review.seconds, 3),
        "properties": [_json_verdict(verdict) for verdict in review.verdicts],
    }


def _json_verdict(verdict: Verdict) -> dict[str, Any]:
    example = verdict.counterexample
    return {
        "key": verdict.prop.key.value,
        "title": verdict.prop.title,
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
    chart = None if review.name == review.order.value else review.name
    trace = Trace(
        review.handoff_id, review.order, review.fallback_transfer_delay_ms, entries, chart=chart
    )
    return record(trace)


def _write_trace(path: Path, reviews: Sequence[OrderReview], out: TextIO) -> None:
    for review in reviews:
        for verdict in review.failures():
            if verdict.counterexample is not None:
                try:
                    write_trace(counterexample_trace(review, verdict.counterexample), path)
                except TraceError as error:
                    raise _cli.CommandError(str(error)) from None
                out.write(f"wrote the {verdict.prop.key.value} counterexample to {path}\n")
                return
    if not path.exists():
        out.write(f"no counterexample to write to {path}\n")
    elif _is_trace(path):
        # A trace left from an earlier run would look like this run's counterexample.
        path.unlink()
        out.write(f"no counterexample: removed the stale {path}\n")
    else:
        out.write(f"no counterexample; {path} is not a trace, so it was left as it is\n")


def _is_trace(path: Path) -> bool:
    try:
        read_trace(path, require_end=False)
    except (HandoffError, OSError):
        return False
    return True


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

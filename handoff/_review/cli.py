"""`handoff review`: explore each order's chart, print the verdicts, exit 1 on any failure.

Formats: `text`, a verdict table per order (then each failure's shortest counterexample);
`json`, everything, for tools; `markdown`, the report committed as `docs/model-review.md`,
deterministic (no timings).  `--trace-out FILE` writes the first counterexample as JSON Lines
that replay it: a header naming the order, the handoff id and the fallback delay, then one
call per line.  `--write FILE` rewrites the generated block of FILE with the markdown report;
`--check FILE` exits 1 when that block is stale.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._review.environment import Call
from handoff._review.explore import OrderReview, review_order
from handoff._review.properties import PROPERTIES, Counterexample, Verdict
from handoff._timing import HandoffTransferTiming
from handoff._values import HandoffActionOutcome, HandoffOrder

__all__ = [
    "BEGIN",
    "END",
    "configure",
    "json_report",
    "markdown",
    "run",
    "text",
    "trace_lines",
    "with_generated_block",
]

_ORDERS = {
    "source-first": (HandoffOrder.SOURCE_FIRST,),
    "destination-first": (HandoffOrder.DESTINATION_FIRST,),
    "both": (HandoffOrder.SOURCE_FIRST, HandoffOrder.DESTINATION_FIRST),
}

BEGIN = "<!-- BEGIN GENERATED: model-review -->"
END = "<!-- END GENERATED: model-review -->"
_REGENERATE = "handoff review --format markdown --write docs/model-review.md"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `handoff review`."""
    parser.add_argument("--order", choices=list(_ORDERS), default="both")
    parser.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    parser.add_argument(
        "--engine",
        choices=["explore", "spin"],
        default="explore",
        help="who judges: the review's own explorer, or Spin on the generated Promela model",
    )
    parser.add_argument(
        "--trace-out",
        metavar="FILE",
        type=Path,
        help="write the first failure's shortest counterexample as replayable JSON Lines",
    )
    files = parser.add_mutually_exclusive_group()
    files.add_argument(
        "--write",
        metavar="FILE",
        type=Path,
        help="put the markdown report between the generated-block markers of FILE",
    )
    files.add_argument(
        "--check",
        metavar="FILE",
        type=Path,
        help="exit 1 when the generated block of FILE differs from the markdown report",
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Review the chosen orders; 0 when every property holds, 1 otherwise."""
    out = sys.stdout if out is None else out
    if args.engine == "spin":
        from handoff._review import spin_cli  # imported on demand: it runs external tools

        return spin_cli.run(args, out)
    reviews = [review_order(order) for order in _ORDERS[args.order]]
    holds = all(review.holds for review in reviews)
    if args.trace_out is not None:
        _write_trace(args.trace_out, reviews, out)
    if args.write is not None or args.check is not None:
        return _sync(args.write or args.check, reviews, write=args.write is not None, out=out)
    if args.format == "json":
        out.write(json.dumps(json_report(reviews), indent=2) + "\n")
    elif args.format == "markdown":
        out.write(markdown(reviews))
    else:
        out.write(text(reviews))
    return 0 if holds else 1


# -- text ------------------------------------------------------------------------------


def text(reviews: Sequence[OrderReview]) -> str:
    """The verdict tables, then each failure's shortest counterexample."""
    parts = [_text_order(review) for review in reviews]
    failing = [
        f"{verdict.prop.key} ({review.order.value})"
        for review in reviews
        for verdict in review.failures()
    ]
    seconds = sum(review.seconds for review in reviews)
    if failing:
        parts.append(f"FAIL: {', '.join(failing)}; reviewed in {seconds:.2f} s\n")
    else:
        orders = " and ".join(review.order.value for review in reviews)
        parts.append(
            f"OK: all {len(PROPERTIES)} properties hold for {orders}; reviewed in {seconds:.2f} s\n"
        )
    return "\n".join(parts)


def _text_order(review: OrderReview) -> str:
    width = max(len(prop.title) for prop in PROPERTIES)
    lines = [
        f"{review.order.value}: {review.configurations:,} configurations, "
        f"{review.transitions:,} transitions explored in {review.seconds:.2f} s",
        "",
        f"  {'':9}{'property':<{width}}  verdict  checked",
    ]
    for verdict in review.verdicts:
        lines.append(
            f"  {verdict.prop.key:<9}{verdict.prop.title:<{width}}  "
            f"{_verdict_word(verdict):<7}  {_checked(verdict)}"
        )
    lines += [
        f"  {verdict.prop.key}: {note}" for verdict in review.verdicts for note in verdict.notes
    ]
    for verdict in review.failures():
        if verdict.counterexample is not None:
            lines += ["", *_text_counterexample(verdict, verdict.counterexample)]
    return "\n".join(lines) + "\n"


def _text_counterexample(verdict: Verdict, example: Counterexample) -> list[str]:
    lines = [
        f"{verdict.prop.key} fails: {example.finding}",
        f"shortest counterexample ({len(example.steps)} calls):",
    ]
    call_width = max(len(str(step.call)) for step in example.steps)
    state_width = max(len(step.state) for step in example.steps)
    for number, step in enumerate(example.steps, start=1):
        did = _issued_text(step.issued) if step.error is None else f"raised {step.error}"
        lines.append(
            f"  {number:>2}. {step.call!s:<{call_width}}  -> {step.state:<{state_width}}  {did}"
        )
    return lines


def _verdict_word(verdict: Verdict) -> str:
    return "PASS" if verdict.holds else "FAIL"


def _checked(verdict: Verdict) -> str:
    counted = verdict.summary or f"{verdict.checked:,} {verdict.prop.unit}"
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
    """The generated block of `docs/model-review.md`, markers included; no timings."""
    lines = [
        BEGIN,
        f"<!-- AUTOGENERATED by `handoff review --format markdown`: do not edit; "
        f"regenerate with `{_REGENERATE}`. -->",
        "",
        "# Model review",
        "",
        "`handoff review` explores, breadth first, every configuration a coordinator can reach "
        "under a nondeterministic environment: from each one it calls `start()`, reports every "
        "fact (with a usable payload, an invalid bandwidth, a reservation whose delay overflows, "
        "another handoff's id) and acknowledges every action id issued so far, and one never "
        "issued, with every kind of outcome.  The safety properties are judged from what the "
        "environment saw (its calls and the actions issued), not from the coordinator's records.",
        "",
        "## Properties",
        "",
        *(f"- **{prop.key}** {prop.words}" for prop in PROPERTIES),
    ]
    for review in reviews:
        lines += ["", *_markdown_order(review)]
    return "\n".join(lines) + "\n\n" + END + "\n"


def _markdown_order(review: OrderReview) -> list[str]:
    verdict = "every property holds" if review.holds else "**some properties fail**"
    lines = [
        f"## {review.order.value}",
        "",
        f"{review.configurations:,} configurations and {review.transitions:,} transitions "
        f"explored; {verdict}.",
        "",
        "| property | | verdict | checked |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {verdict.prop.key} | {verdict.prop.title} | {_verdict_word(verdict)} "
        f"| {_checked(verdict)} |"
        for verdict in review.verdicts
    ]
    notes = [f"- {v.prop.key}: {note}" for v in review.verdicts for note in v.notes]
    if notes:
        lines += ["", *notes]
    for failing in review.failures():
        if failing.counterexample is not None:
            lines += ["", "```text", *_text_counterexample(failing, failing.counterexample), "```"]
    return lines


def with_generated_block(document: str, block: str) -> str:
    """`document` with its generated block replaced by `block` (appended when it has none)."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        return document + ("\n" if document and not document.endswith("\n") else "") + block
    return document[:start] + block + document[end + len(END) :].removeprefix("\n")


def _sync(path: Path, reviews: Sequence[OrderReview], *, write: bool, out: TextIO) -> int:
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    wanted = with_generated_block(current, markdown(reviews))
    holds = all(review.holds for review in reviews)
    if write:
        if wanted != current:
            path.write_text(wanted, encoding="utf-8")
        out.write(f"wrote {path}\n")
        return 0 if holds else 1
    if wanted != current:
        out.write(f"{path} is stale: regenerate with `{_REGENERATE}`\n")
        return 1
    out.write(f"{path} is fresh\n")
    return 0 if holds else 1


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
        "ok": review.holds,
        "configurations": review.configurations,
        "transitions": review.transitions,
        "seconds": round(review.seconds, 3),
        "properties": [_json_verdict(verdict) for verdict in review.verdicts],
    }


def _json_verdict(verdict: Verdict) -> dict[str, Any]:
    example = verdict.counterexample
    return {
        "key": verdict.prop.key,
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


def trace_lines(review: OrderReview, example: Counterexample) -> list[str]:
    """A counterexample as JSON Lines: a header, then one call per line."""
    header = {
        "order": review.order.value,
        "handoff_id": str(review.handoff_id),
        "fallback_transfer_delay_ms": review.fallback_transfer_delay_ms,
    }
    return [_dumps(header)] + [_dumps(call_json(step.call)) for step in example.steps]


def _write_trace(path: Path, reviews: Sequence[OrderReview], out: TextIO) -> None:
    for review in reviews:
        for verdict in review.failures():
            if verdict.counterexample is not None:
                lines = trace_lines(review, verdict.counterexample)
                path.write_text("\n".join(lines) + "\n", encoding="utf-8")
                out.write(f"wrote the {verdict.prop.key} counterexample to {path}\n")
                return
    out.write(f"no counterexample to write to {path}\n")


def call_json(call: Call) -> dict[str, Any]:
    """One call in the trace format: start, a fact, or an outcome for an action id."""
    if call.fact is not None:
        return {"call": "fact", "fact": _fact_json(call.fact)}
    if call.outcome is not None and call.action_id is not None:
        return {
            "call": "outcome",
            "id": call.action_id.value,
            "outcome": _outcome_json(call.outcome),
        }
    return {"call": "start"}


def _fact_json(fact: HandoffFact) -> dict[str, Any]:
    fields: dict[str, Any] = {"handoff_id": str(fact.handoff_id)}
    if isinstance(fact, HandoffFact.SourceHeld):
        fields["transfer_timing"] = _timing_json(fact.transfer_timing)
    elif isinstance(fact, HandoffFact.DestinationReserved):
        fields["transferable_prompt_tokens"] = fact.transferable_prompt_tokens
    return {type(fact).__name__: fields}


def _timing_json(timing: HandoffTransferTiming) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "mode": timing.mode.value,
        "full_prompt_tokens": timing.full_prompt_tokens,
        "kv_bytes_per_token": timing.kv_bytes_per_token,
        "bandwidth_gb_s": _float(timing.bandwidth_gb_s),
    }
    if timing.kv_bytes_per_request:
        fields["kv_bytes_per_request"] = timing.kv_bytes_per_request
    return fields


def _outcome_json(outcome: HandoffActionOutcome) -> str | dict[str, str]:
    if outcome.reason is not None:
        return {outcome.kind.value: outcome.reason}
    return outcome.kind.value


def _issued_json(item: IssuedHandoffAction) -> dict[str, Any]:
    action = item.action
    fields: dict[str, Any] = {"handoff_id": str(action.handoff_id)}
    if isinstance(action, HandoffAction.StartTransfer):
        fields["delay_ms"] = _float(action.delay_ms)
    return {"id": item.id.value, "action": {type(action).__name__: fields}}


def _float(value: float | None) -> float | None:
    # JSON has no NaN or infinity; like serde_json, write them as null.
    return value if value is None or math.isfinite(value) else None


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)

"""The review's reports: a verdict table per chart as text, everything as JSON, the markdown of
`docs/model-review.md` (deterministic, no timings), and a counterexample as a replayable trace.

One report for every world: a chart reviewed alone shows its counterexamples call by call, a
chart reviewed with its workers move by move (who got which message, and what followed).  The
command (`handoff._review.cli`) chooses a format and writes it; the docs wing writes the
committed markdown report with the same function.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from handoff._review.environment import Call
from handoff._review.explore import Review
from handoff._review.verdict import Counterexample, MoveKind, TraceStep, Verdict
from handoff._system.properties import (
    PROPERTIES,
    Family,
    Judged,
    Key,
    Property,
    WorldKind,
    properties_of,
)
from handoff._values.messages import HandoffAction, IssuedHandoffAction

if TYPE_CHECKING:
    from handoff._runs.trace import Trace

__all__ = [
    "CUT_SHORT",
    "DIFFERS",
    "UNSAFE",
    "call_json",
    "counterexample_trace",
    "exit_status",
    "json_report",
    "markdown",
    "review_title",
    "system_properties",
    "text",
    "verdict_line",
]

# -- text ------------------------------------------------------------------------------


def verdict_line(reviews: Sequence[Review]) -> str | None:
    """`UNSAFE: S5 (chart), …`, `CUT SHORT: …`, `SAFE, differs from the reference: Q1
    (chart), …`, or None when every property holds; failures root cause first.  A
    counterexample found is true whatever was left unexplored, so UNSAFE stays UNSAFE when the
    review was cut short too; the line then says what was not judged."""
    every = list(_parts(reviews))
    failing = [(name, verdict) for review, name in every for verdict in review.failures()]
    unsafe = [_named(n, v) for n, v in failing if v.prop.family is Family.SAFETY]
    differs = [_named(n, v) for n, v in failing if v.prop.family is Family.CONFORMANCE]
    also = f"; differs from the reference: {', '.join(differs)}" if differs else ""
    cut = _cut_short(every)
    if unsafe:
        return f"UNSAFE: {', '.join(unsafe)}{also}{'; ' + cut if cut else ''}"
    if cut:
        return f"CUT SHORT: {cut}; no safety property failed in what was explored{also}"
    if differs:
        return f"SAFE, differs from the reference: {', '.join(differs)}"
    return None


def _cut_short(reviews: Sequence[tuple[Review, str]]) -> str:
    """What the guard cut short, and which properties it left unjudged ("": nothing)."""
    said = []
    for review, name in reviews:
        if review.cut_short:
            unjudged = ", ".join(v.prop.key.value for v in review.unjudged())
            said.append(f"{name}: {review.cut_short}, {unjudged} not judged")
    return "; ".join(said)


def exit_status(reviews: Sequence[Review], *, safety_only: bool = False) -> int:
    """0 every property holds; 1 a safety property fails (UNSAFE), even if the review was cut
    short; 5 the review was cut short (CUT SHORT: not every property could be judged); 3
    only conformance properties fail (SAFE, differs from the reference), or 0 with
    `safety_only`.  (2 is a usage error, 4 out of memory: every command's.)"""
    if any(review.unsafe for review in reviews):
        return UNSAFE
    if any(review.cut_short for review, _name in _parts(reviews)):
        return CUT_SHORT
    if safety_only or all(review.holds for review in reviews):
        return 0
    return DIFFERS


UNSAFE = 1
"""The exit status of a review that fails a safety property."""
DIFFERS = 3
"""The exit status of a review that fails conformance properties only (2 is a usage error)."""
CUT_SHORT = 5
"""The exit status of a review its guard on configurations stopped, with no safety property
found broken (4 is running out of memory)."""


def _parts(reviews: Sequence[Review]) -> Iterator[tuple[Review, str]]:
    """Every review made, and how a verdict line names it: `SourceFirst`, with workers
    `SourceFirst alone` (the chart alone) first, then `SourceFirst, tombstone workers`."""
    for review in reviews:
        if review.system is None:
            yield review, review.name
            continue
        if review.alone is not None:
            yield review.alone, f"{review.name} alone"
        yield review, f"{review.name}, {review.system.contract.name} workers"


def _named(name: str, verdict: Verdict) -> str:
    return f"{verdict.prop.key.value} ({name})"


def text(reviews: Sequence[Review]) -> str:
    """The verdict tables, then each failure's shortest counterexample (root cause first).

    With workers, the chart's review alone comes first: one line when every property holds
    there, its whole table when one does not."""
    parts = []
    for review in reviews:
        if review.alone is not None:
            parts.append(_text_alone(review.alone))
        parts.append(_text_order(review))
    line = verdict_line(reviews)
    seconds = sum(review.seconds for review, _name in _parts(reviews))
    if line is not None:
        parts.append(f"{line}; reviewed in {seconds:.2f} s\n")
    else:
        orders = " and ".join(review.name for review in reviews)
        judged = {verdict.prop.key for review in reviews for verdict in review.verdicts}
        contracts = sorted({r.system.contract.name for r in reviews if r.system is not None})
        workers = f" with {' and '.join(contracts)} workers" if contracts else ""
        alone = {v.prop.key for r in reviews if r.alone is not None for v in r.alone.verdicts}
        also = f", and all {len(alone)} of the chart alone" if alone else ""
        parts.append(
            f"OK: all {len(judged)} properties hold for {orders}{workers}{also}; "
            f"reviewed in {seconds:.2f} s\n"
        )
    return "\n".join(parts)


def _text_alone(review: Review) -> str:
    """The chart alone, reviewed for a review with workers: one line when it holds."""
    if not review.holds:
        return _text_order(review)
    return (
        f"{review_title(review)}, the chart alone: all {len(review.verdicts)} properties hold "
        f"({review.configurations:,} configurations, {review.seconds:.2f} s)\n"
    )


def _moves_word(review: Review) -> str:
    return "transitions" if review.system is None else "moves"


def _text_order(review: Review) -> str:
    width = max(len(prop.title) for prop in review.properties)
    # A property of one's own is keyed by its function's name, which may be long.
    keys = max(9, *(len(prop.key.value) + 1 for prop in review.properties))
    lines = [
        f"{review_title(review)}: {review.configurations:,} configurations, "
        f"{review.transitions:,} {_moves_word(review)} explored in {review.seconds:.2f} s"
        f"{_phases(review)}",
        "",
        f"  {'':{keys}}{'property':<{width}}  {'verdict':<{_word_width(review)}}  checked",
    ]
    words = _word_width(review)
    for verdict in review.verdicts:
        lines.append(
            f"  {verdict.prop.key.value:<{keys}}{verdict.prop.title:<{width}}  "
            f"{verdict.word:<{words}}  {_checked(verdict)}"
        )
    lines += [f"  {v.prop.key.value}: {note}" for v in review.verdicts for note in v.notes]
    if review.cut_short:
        lines.append(
            f"  cut short: {review.cut_short}; the properties that pass hold in the "
            "configurations explored, and no more"
        )
    for verdict in review.failures():
        if verdict.counterexample is not None:
            lines += ["", *_text_counterexample(verdict, verdict.counterexample)]
    return "\n".join(lines) + "\n"


def _text_counterexample(verdict: Verdict, example: Counterexample) -> list[str]:
    if example.with_workers:
        from handoff._review.system_words import moves_counterexample  # with workers only

        return moves_counterexample(verdict, example)
    lines = [
        f"{verdict.prop.key.value} fails: {example.finding}",
        example.heading,
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


def _phases(review: Review) -> str:
    """Where the time went: ` (exploration 0.40 s, Table 0.10 s, liveness 0.02 s)`."""
    if not review.phases:
        return ""
    return " (" + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in review.phases) + ")"


def review_title(review: Review) -> str:
    """A chart's name, its order when the name is its own, and the system it ran in."""
    title = review.name
    if review.name != review.order.value:
        title = f"{review.name} ({review.order.value})"
    if review.system is not None:
        title = f"{title}, {review.system.describe()}"
    return title


def _word_width(review: Review) -> int:
    return max(7, *(len(verdict.word) for verdict in review.verdicts))


def _checked(verdict: Verdict) -> str:
    if verdict.unjudged:
        return verdict.unjudged
    counted = verdict.summary or f"{verdict.prop.unit}: {verdict.checked:,}"
    if not verdict.fails:
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


def markdown(reviews: Sequence[Review]) -> str:
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
        *(f"- **{prop.key.value}** {prop.words}" for prop in properties_of(WorldKind.CHART)),
        "",
        "## Two families",
        "",
        "A failing *safety* property means the chart can lose KV or own it twice, leave an owner "
        "unfreed at completion, act after completion or never complete: the review says "
        "`UNSAFE: …` and exits 1.  A failing *conformance* property means the chart answers "
        "otherwise than the reference, the contract (docs/contract.md: a refusal's class or "
        "phrase, what goes out in which call, the exact lifecycle record), and may still be "
        "safe: the review says "
        "`SAFE, differs from the reference: …` and exits 3, or 0 with `--safety-only`.  A "
        "review its guard stops before every run's end says `CUT SHORT: …` and exits 5 (1 if a "
        "safety property failed in what it explored): what needs every run is not judged.",
        "",
        "| property | family | why |",
        "|---|---|---|",
        *(f"| {prop.key.value} | {prop.family.value} | {prop.why} |" for prop in PROPERTIES),
    ]
    for review in reviews:
        if review.alone is not None:
            lines += ["", *_markdown_order(review.alone, ", the chart alone")]
        lines += ["", *_markdown_order(review)]
    return "\n".join(lines) + "\n"


def system_properties() -> str:
    """The table of the properties judged with the workers, for `docs/model-review.md`."""
    lines = [
        "| key | property | judged |",
        "|---|---|---|",
        *(
            f"| {entry.key.value} | {entry.words} | {_judged_words(entry)} |"
            for entry in properties_of(WorldKind.SYSTEM)
        ),
    ]
    return "\n".join(lines)


def _judged_words(entry: Property) -> str:
    if entry.key is Key.SLOTS_AT_COMPLETION:
        return "at every quiet configuration (nothing in flight) whose coordinator is complete"
    if entry.key in (Key.SLOT_OWNED_ONCE, Key.KV_INTO_OWN_SLOT):
        return "at each transfer the source performs"
    if entry.key is Key.ACTIVATED_SERVES:
        return "at each action the destination takes"
    if entry.judged is Judged.EDGE:
        return "at each move"
    return str(entry.judged.value)


def _markdown_order(review: Review, alone: str = "") -> list[str]:
    verdict = "every property holds" if review.holds else "**some properties fail**"
    if review.cut_short and not review.failures():
        verdict = f"**cut short**: {review.cut_short}"
    lines = [
        f"## {review_title(review)}{alone}",
        "",
        f"{review.configurations:,} configurations and {review.transitions:,} "
        f"{_moves_word(review)} explored; {verdict}.",
        "",
        "| property | | verdict | checked |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {verdict.prop.key.value} | {verdict.prop.title} | {verdict.word} "
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


def json_report(reviews: Sequence[Review]) -> dict[str, Any]:
    """Everything the review found, as JSON-ready values."""
    return {
        "ok": all(review.holds for review in reviews),
        "safe": all(review.safe for review in reviews),
        "cut_short": any(review.cut_short for review, _name in _parts(reviews)),
        "verdict": verdict_line(reviews) or "OK",
        "orders": [_json_order(review) for review in reviews],
    }


def _json_order(review: Review) -> dict[str, Any]:
    system = review.system
    alone = review.alone
    return {
        "order": review.order.value,
        "chart": review.name,
        "origin": review.origin,
        "world": review.world.value,
        "workers": None
        if system is None
        else {
            "contract": system.contract.name,
            "fifo": system.fifo,
            "faults": system.faults,
            "runtime": system.runtime,
            "acknowledge": system.acknowledge.value,
            "runtime_settings": list(system.features),
            "description": system.describe(),
        },
        "ok": review.holds,
        "safe": review.safe,
        "configurations": review.configurations,
        "transitions": review.transitions,
        "seconds": round(review.seconds, 3),
        "phases": {name: round(seconds, 3) for name, seconds in review.phases},
        "cut_short": review.cut_short or None,
        "properties": [_json_verdict(verdict) for verdict in review.verdicts],
        "alone": None if alone is None else _json_order(alone),
    }


def _json_verdict(verdict: Verdict) -> dict[str, Any]:
    example = verdict.counterexample
    return {
        "key": verdict.prop.key.value,
        "title": verdict.prop.title,
        "family": verdict.prop.family.value,
        "verdict": verdict.word,
        "judged": not verdict.unjudged,
        "unjudged": verdict.unjudged or None,
        "checked": verdict.checked,
        "unit": verdict.prop.unit,
        "violations": verdict.violations,
        "summary": verdict.summary,
        "notes": list(verdict.notes),
        "counterexample": None if example is None else _json_counterexample(example),
    }


def counterexample_trace(review: Review, example: Counterexample) -> Trace:
    """A counterexample as a replayable trace: its calls, each expecting the SPEC's answer.

    The SPEC's answers are those of the order's shipped chart, which the review proves: the
    trace then replays as OK once the chart is fixed, and diverges where the broken one errs.
    """
    # Traces and their replay load only when a counterexample is written as one.
    from handoff._review.system_replay import line_of
    from handoff._runs.replay import record
    from handoff._runs.trace import Entry, Trace, Workers

    chart = review.origin
    if chart is None and review.name != review.order.value:
        chart = review.name
    system = review.system
    if system is not None:
        workers = Workers.of(system)
        moves = tuple(line_of(step) for step in example.steps)
        return Trace(
            review.handoff_id,
            review.order,
            review.fallback_transfer_delay_ms,
            (),
            chart=chart,
            workers=workers,
            moves=moves,
        )
    entries = tuple(Entry(step.call) for step in example.steps if step.call is not None)
    trace = Trace(
        review.handoff_id, review.order, review.fallback_transfer_delay_ms, entries, chart=chart
    )
    return record(trace)


def call_json(call: Call) -> dict[str, Any]:
    """One call in the trace format: start, a fact, or an outcome for an action id."""
    from handoff._runs.trace import call_object  # the trace format's, loaded when asked for

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


def _json_counterexample(example: Counterexample) -> dict[str, Any]:
    steps = example.steps
    words: list[tuple[str | None, str | None]] = [(None, None)] * len(steps)
    overtook: list[str] = []
    if example.with_workers:
        from handoff._review.system_words import describe_step, overtaken, runtime_acknowledged
        from handoff._system.workers import memory_name

        by_runtime = runtime_acknowledged(steps)
        words = [
            (
                describe_step(step, by_runtime),
                None if step.reaction is None else memory_name(step.reaction.memory),
            )
            for step in steps
        ]
        overtook = list(overtaken(steps))
    return {
        "finding": example.finding,
        "overtaken": overtook,
        "steps": [_json_step(step, said) for step, said in zip(steps, words, strict=True)],
    }


def _json_step(step: TraceStep, told: tuple[str | None, str | None]) -> dict[str, Any]:
    """One move: the call it made, if any, and with workers who moved and what followed
    (`told`: the move in words, and what the worker remembers after it)."""
    message = step.message
    words, memory = told
    return {
        "kind": step.kind.value,
        "call": None if step.call is None else call_json(step.call),
        "state": step.state,
        "issued": [_issued_json(item) for item in step.issued],
        "error": step.error,
        "message": None if message is None else message.describe(),
        "worker": None if message is None else message.role.value,
        "memory": memory,
        "sent": [sent.describe() for sent in step.sent],
        "words": None if step.kind is MoveKind.CALL else words,
    }

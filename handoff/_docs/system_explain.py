"""`handoff review --workers CONTRACT --explain DIR`: each system failure, to see and to replay.

For every failing system property, `<chart>_<workers>_<property>` names three files: the run
as a Mermaid sequence diagram between the Coordinator, the Runtime and the two workers
(`.sequence.mmd`: every message as it is sent and as it is delivered, what each worker then
remembers, the breaking move in red), the run as a system trace (`.system.jsonl`, which
`handoff._review.system_replay.replay_system` replays move by move, showing the property
broken again), and the coordinator's side of it (`.jsonl`, the calls the runtime made, which
`handoff replay` replays as OK: the coordinator answered each call as the SPEC says; what
breaks is between it and the workers).  The directory's manifest is the review's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from handoff._docs.explain import MANIFEST, _remove_previous, stem
from handoff._docs.mermaid import mermaid_text
from handoff._review.system import SystemCounterexample, SystemReview, SystemVerdict
from handoff._review.system_cli import coordinator_trace
from handoff._review.system_replay import system_trace_text
from handoff._review.system_report import overtaken, system_title
from handoff._review.system_state import StepKind, SystemStep
from handoff._runs.trace import trace_text

__all__ = ["mermaid_system_sequence", "write_system_explain"]

COORDINATOR = "Coordinator"
RUNTIME = "Runtime"
_LANES = {"source": "Source", "destination": "Destination"}


def write_system_explain(reviews: Sequence[SystemReview], directory: Path) -> list[str]:
    """Write the explain set of every system failure into `directory`; one line per file."""
    directory.mkdir(parents=True, exist_ok=True)
    removed = _remove_previous(directory)
    files: dict[str, str] = {}
    for review in reviews:
        for verdict in review.failures():
            if verdict.counterexample is not None:
                files.update(_explain_set(review, verdict, verdict.counterexample))
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    (directory / MANIFEST).write_text("".join(f"{name}\n" for name in files), encoding="utf-8")
    return [
        *(f"removed stale {path}" for path in removed),
        *(f"wrote {directory / name}" for name in files),
    ]


def _explain_set(
    review: SystemReview, verdict: SystemVerdict, example: SystemCounterexample
) -> dict[str, str]:
    name = stem(f"{review.chart.name}_{review.contract.name}", verdict.prop.key.value)
    return {
        f"{name}.sequence.mmd": mermaid_system_sequence(review, verdict, example),
        f"{name}.system.jsonl": system_trace_text(review, example),
        f"{name}.jsonl": trace_text(coordinator_trace(review, example)),
    }


def mermaid_system_sequence(
    review: SystemReview, verdict: SystemVerdict, example: SystemCounterexample
) -> str:
    """Mermaid `sequenceDiagram` text of a system run, the breaking move boxed in red."""
    prop = verdict.prop
    lines = [
        "sequenceDiagram",
        f"    title {prop.key.value} fails: {mermaid_text(system_title(review))}",
        f"    participant {COORDINATOR}",
        f"    participant {RUNTIME}",
        "    participant Source",
        "    participant Destination",
    ]
    last = len(example.steps)
    for number, step in enumerate(example.steps, start=1):
        body = [f"    {line}" for line in _lines(number, step)]
        if number == last:
            lines += ["    rect rgb(246, 213, 209)", *body]
            lines.append(f"    Note over {COORDINATOR},Destination: ✗ {_text(example.finding)}")
            lines.append("    end")
        else:
            lines += body
    for note in overtaken(example.steps):
        lines.append(f"    Note over {RUNTIME},Destination: {_text(note)}")
    lines.append(
        f"    Note over {COORDINATOR},Destination: {_text(f'{prop.key.value}: {prop.words}')}"
    )
    return "\n".join(lines) + "\n"


def _lines(number: int, step: SystemStep) -> Iterator[str]:
    message = step.message
    if step.kind in (StepKind.TO_WORKER, StepKind.WORKER_FAILS):
        assert message is not None
        assert step.reaction is not None
        lane = _LANES[message.role.value]
        yield f"{RUNTIME}->>{lane}: {number}. {_text(message.describe())}"
        if step.kind is StepKind.WORKER_FAILS:
            yield f"Note over {lane}: fails the work"
        else:
            yield f"Note over {lane}: {step.reaction.memory.value}"
        for sent in step.sent:
            yield f"{lane}-->>{RUNTIME}: {_text(sent.describe())} (in flight)"
        return
    assert step.call is not None
    if step.kind is StepKind.FAULT:
        yield f"Note over {RUNTIME}: fault"
    yield f"{RUNTIME}->>{COORDINATOR}: {number}. {_text(str(step.call))}"
    if step.error is not None:
        yield f"{COORDINATOR}--x{RUNTIME}: refused: {_text(step.error)}"
    for item in step.issued:
        name = f"#{item.id.value} {type(item.action).__name__}"
        if any(sent.action_id == item.id.value for sent in step.sent):
            yield f"{COORDINATOR}-->>{RUNTIME}: {name} (in flight)"
        else:
            yield f"Note over {COORDINATOR}: {name} → {step.state}"


def _text(text: str) -> str:
    return mermaid_text(text).replace(";", ",")

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

from collections.abc import Sequence
from pathlib import Path

from handoff import _files
from handoff._docs.explain import MANIFEST, _remove_previous, stem
from handoff._docs.mermaid import mermaid_system_sequence
from handoff._review.system import SystemCounterexample, SystemReview, SystemVerdict
from handoff._review.system_cli import coordinator_trace
from handoff._review.system_replay import system_trace_text
from handoff._runs.trace import trace_text

__all__ = ["write_system_explain"]


def write_system_explain(reviews: Sequence[SystemReview], directory: Path) -> list[str]:
    """Write the explain set of every system failure into `directory`; one line per file."""
    _files.make_directory(directory)
    removed = _remove_previous(directory)
    files: dict[str, str] = {}
    for review in reviews:
        for verdict in review.failures():
            if verdict.counterexample is not None:
                files.update(_explain_set(review, verdict, verdict.counterexample))
    for name, text in files.items():
        _files.write_text(directory / name, text)
    _files.write_text(directory / MANIFEST, "".join(f"{name}\n" for name in files))
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

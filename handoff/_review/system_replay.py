"""System traces: a system run written one move a line, and replayed through the model.

    {"system":{"chart":"SourceFirst","order":"SourceFirst","workers":"forgetful","fifo":false}}
    {"move":"start"}
    {"move":"fault","fact":"Failed"}
    {"move":"deliver","message":"#1 CancelSource"}
    {"move":"fail","message":"#0 SubmitPrefill"}
    {"end":{"moves":4}}

`replay_system` makes each move again from the system's first configuration, refusing a move
the system cannot make there, and returns what the moves broke: a counterexample replayed so
shows its property broken again, and once the chart or the contract is fixed, no longer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from handoff._errors import TraceError
from handoff._review.system import SystemCounterexample, SystemReview
from handoff._review.system_model import SystemModel, completion_finding
from handoff._review.system_state import (
    SystemFinding,
    SystemKey,
    SystemOptions,
    SystemStep,
    SystemStepKind,
)
from handoff._table import CompiledChart

__all__ = ["Replayed", "move_of", "replay_system", "system_trace_text"]

_MOVES = {
    SystemStepKind.START: "start",
    SystemStepKind.FAULT: "fault",
    SystemStepKind.TO_WORKER: "deliver",
    SystemStepKind.TO_COORDINATOR: "deliver",
    SystemStepKind.WORKER_FAILS: "fail",
}


def move_of(step: SystemStep) -> dict[str, str]:
    """One move as a trace line's object."""
    move = {"move": _MOVES[step.kind]}
    if step.kind is SystemStepKind.FAULT:
        assert step.call is not None
        assert step.call.fact is not None
        move["fact"] = type(step.call.fact).__name__
    elif step.message is not None:
        move["message"] = step.message.describe()
    return move


def system_trace_text(review: SystemReview, example: SystemCounterexample) -> str:
    """A system counterexample as JSON Lines: a header, one move a line, an end line."""
    header = {
        "chart": review.name,
        "order": review.order.value,
        "workers": review.contract.name,
        "fifo": review.options.fifo,
    }
    lines = [{"system": header}, *(move_of(step) for step in example.steps)]
    lines.append({"end": {"moves": len(example.steps)}})
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


@attrs.frozen
class Replayed:
    """What a replayed system run broke, move by move (its first findings first)."""

    moves: int
    findings: tuple[SystemFinding, ...]


def replay_system(chart: CompiledChart, options: SystemOptions, text: str) -> Replayed:
    """Replay the moves of a system trace on `chart` with `options`; raises TraceError when a
    line is malformed or names a move the system cannot make there."""
    lines = [line for line in text.split("\n") if line.strip()]
    moves = [_line(number, line) for number, line in enumerate(lines, start=1)]
    if len(moves) < 2 or "system" not in moves[0] or "end" not in moves[-1]:
        raise TraceError("a system trace is a header line, one line per move and an end line")
    model = SystemModel(chart, options)
    coordinator, state = model.root()
    findings: list[SystemFinding] = []
    for number, wanted in enumerate(moves[1:-1], start=2):
        found = next(
            (m for m in model.moves(coordinator, state) if move_of(m.step) == wanted), None
        )
        if found is None:
            raise TraceError(f"line {number}: the system cannot make the move {wanted} here")
        findings += found.findings
        if found.coordinator is None or found.state is None:
            break
        coordinator, state = found.coordinator, found.state
        if state.quiet and coordinator.is_complete:
            words = completion_finding(state, coordinator.completion)
            if words is not None:
                findings.append(SystemFinding(SystemKey.SLOTS_AT_COMPLETION, words))
    return Replayed(len(moves) - 2, tuple(findings))


def _line(number: int, line: str) -> dict[str, object]:
    try:
        value = json.loads(line)
    except ValueError as error:
        raise TraceError(f"line {number}: not JSON: {error}") from None
    if not isinstance(value, dict):
        raise TraceError(f"line {number}: expected a JSON object")
    return value


def findings_keys(replayed: Replayed) -> Sequence[SystemKey]:
    """The keys of the properties a replay broke, first broken first, each once."""
    return tuple(dict.fromkeys(finding.key for finding in replayed.findings))

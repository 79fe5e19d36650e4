"""System runs written down as move lines and replayed through the system world
(`handoff._review.system`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence

import attrs

from handoff._compile.lookup import NotGiven
from handoff._compile.table import CompiledChart, compiled
from handoff._coordinator import probe as probe
from handoff._review.environment import Rules
from handoff._review.graph import End, Tag, no_cancel, not_every_success
from handoff._review.monitors import Checked
from handoff._review.verdict import MoveKind, TraceStep
from handoff._runs.replay import Violation
from handoff._runs.trace import MoveLine, Trace
from handoff._system.call import Call
from handoff._system.properties import AnyKey, Finding, Key
from handoff._values.errors import TraceError

__all__ = ["Replayed", "line_of", "replay_moves", "replay_system_run"]


from handoff._review.system import SystemWorld
from handoff._review.system_state import _Node


def line_of(step: TraceStep) -> MoveLine:
    """One system move as a trace line: what moved, named as the report names it (with several
    handoffs, a start or a fault names its handoff, `h2`)."""
    whose = None if step.handoff is None else f"h{step.handoff + 1}"
    if step.kind is MoveKind.FAULT:
        assert step.call is not None
        assert step.call.fact is not None
        return MoveLine(step.kind.word, fact=type(step.call.fact).__name__, handoff=whose)
    if step.worker is not None:
        expired = step.kind is MoveKind.EXPIRE  # with several handoffs, whose tombstone
        return MoveLine(
            step.kind.word, worker=step.worker.value, handoff=whose if expired else None
        )
    if step.kind in (MoveKind.START, MoveKind.DEADLINE, MoveKind.ABANDON):
        return MoveLine(step.kind.word, handoff=whose)
    message = None if step.message is None else step.message.describe()
    return MoveLine(step.kind.word, message=message)


@attrs.frozen
class Replayed:
    """What a replayed system run broke, move by move: each property once, first broken first,
    with the line that broke it."""

    moves: int
    findings: tuple[Violation, ...]
    """Each at the line of its move, with the move's call (None: a worker's or a fault's)."""


def replay_moves(world: SystemWorld, lines: Sequence[MoveLine], first_line: int = 2) -> Replayed:
    """Make each move again from the system's first configuration and judge them; raises
    TraceError for a move the system cannot make where the trace makes it.

    Where the run ends with nothing more to deliver, W4 and W5 are judged on how it ended,
    and W7 too when no move of it was a fault: a counterexample to any of them ends so.
    """
    node, _key = world.root()
    found: dict[AnyKey, Violation] = {}

    def note(number: int, made: Call | None, checks: Iterable[Checked]) -> None:
        for key, words in checks:
            if words is not None:
                found.setdefault(key, Violation(number, made, "", Finding.of(key, words)))

    number = first_line - 1
    fault_free = True
    """No move so far was a fault (a terminal fact, failed work, anything injected)."""
    for number, wanted in enumerate(lines, start=first_line):
        move = next((m for m in world.moves(node) if line_of(m.step) == wanted), None)
        if move is None:
            raise TraceError(f"line {number}: the system cannot make the move {wanted} here")
        fault_free = fault_free and (
            move.step.kind is MoveKind.START or bool(move.tags & Tag.COOPERATIVE)
        )
        made = move.step.call
        note(number, made, move.checks)
        if move.node is None:
            return Replayed(len(lines), tuple(found.values()))
        node = move.node
        note(number, made, world.checks(node))
    if not any(move.tags & Tag.COOPERATIVE and move.node is not None for move in world.moves(node)):
        note(number, None, _how_it_ended(node, fault_free=fault_free))
    return Replayed(len(lines), tuple(found.values()))


def _how_it_ended(node: _Node, *, fault_free: bool) -> Iterator[Checked]:
    if node.end() & End.STUCK:
        yield Key.DELIVERIES_COMPLETE, node.stuck()
    if fault_free and node.end() is not End.SUCCESS:
        yield Key.EVERY_HANDOFF_SUCCEEDS, not_every_success(node.end())
    if node.terminated:
        end = node.end(terminated=True)
        if end is not End.CANCELED:
            yield Key.TERMINAL_CANCELS, no_cancel(end)


def replay_system_run(trace: Trace, allowed: Collection[str] = ()) -> Replayed:
    """Replay a system run's trace on its chart with the workers its header names.

    The header is data: a contract or property it names as `MODULE:NAME` is imported only if
    the caller allows that name (`allowed`), else `NotGiven` says which.
    """
    workers = trace.workers
    assert workers is not None
    try:
        system = workers.system(allowed)
        rules = Rules(trace.order, trace.handoff_id, trace.fallback_transfer_delay_ms)
        world = SystemWorld(_table(trace), system, rules)
    except NotGiven:
        raise
    except ValueError as error:
        raise TraceError(f"the trace's workers {workers.contract!r}: {error}") from None
    return replay_moves(world, trace.moves)


def _table(trace: Trace) -> CompiledChart:
    rules = trace.rules
    if isinstance(rules, CompiledChart):
        return rules
    return compiled(trace.order if rules is None else rules)

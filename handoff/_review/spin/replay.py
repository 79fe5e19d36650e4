"""Confirm a Spin trail on the real coordinator: replay its calls, judge them in Python.

A safety trail is confirmed when its last call, and no call before, breaks the property
under the review's rules for one run (`handoff._review.judge`, which `handoff replay` uses
too); a crash must also be the adapter assertion the model named.  A liveness trail is
confirmed when, from the configuration where its environment changed mode, the real
coordinator cannot reach the wanted completion by the moves that mode allows, within the
review's cut (searched exhaustively, breadth first, on forks of the real coordinator).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from handoff._compile.table import CompiledChart
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.environment import HANDOFF_ID, Call, Rules
from handoff._review.judge import RunJudge
from handoff._review.spin.run import Trail
from handoff._review.spin.system import G_ACT, G_FACT, G_FAILED, G_OUT, HANDOFF_CODE, ModelMove
from handoff._review.spin.vocabulary import FACTS, OUTCOME_KINDS
from handoff._review.system import SystemWorld
from handoff._review.system_replay import line_of, replay_moves
from handoff._review.system_state import _Node
from handoff._review.verdict import MoveKind, TraceStep
from handoff._runs.replay import CallResult, Unjudged
from handoff._system.config import System
from handoff._system.properties import Judged, Key, prop
from handoff._system.workers import Message, MessageKind, Role
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffFact

__all__ = ["Confirmation", "confirm", "confirm_system"]


@attrs.frozen
class Confirmation:
    """A Spin trail replayed through the real coordinator."""

    steps: tuple[TraceStep, ...]
    finding: str | None
    """What the review's monitors say broke; None: the replay does not confirm the trail."""


def confirm(chart: CompiledChart, key: Key, trail: Trail) -> Confirmation:
    """Replay `trail` on a fresh coordinator for `chart` and judge property `key`."""
    steps, first = _replay(chart, trail.calls)
    if prop(key).judged is Judged.GRAPH:
        return Confirmation(steps, _liveness(chart, key, trail))
    broken = first.get(key)
    if broken is None:
        return Confirmation(steps, None)
    at, finding = broken
    if at != len(steps) - 1:
        # Spin's trail ends at its first violation: a coordinator that breaks the property
        # earlier on the same calls does not confirm it.
        return Confirmation(steps, None)
    if key is Key.ERRORS and not _same_crash(trail.crash, steps[at].error):
        return Confirmation(steps, None)
    return Confirmation(steps, finding)


def confirm_system(chart: CompiledChart, system: System, key: Key, trail: Trail) -> Confirmation:
    """Replay a trail of the system model through the explorer's system world and judge
    property `key` there, as `handoff replay` judges a system run (`replay_moves`).

    Each move the model made is matched to the world's move that moves the same thing (the
    same kind of move, and message, fact or worker).  The trail is confirmed when every move
    is one the world can make and the world finds `key` broken: a safety property by the last
    move and no move before, W4 or W5 where the run ends with nothing more to deliver.  With
    several handoffs the world offers every move, each handoff's in every order, as the model
    does (no symmetry reduction), and numbers the handoffs as the model does."""
    world = SystemWorld(chart, attrs.evolve(system, symmetry=False), Rules(chart.order))
    node: _Node | None = world.root()[0]
    steps: list[TraceStep] = []
    for made in trail.moves:
        if made[0] == ModelMove.CALM:
            continue  # the model's switch into deliveries only: no move of the world
        assert node is not None
        found = next((move for move in world.moves(node) if _moves_alike(move.step, made)), None)
        if found is None:
            return Confirmation(tuple(steps), None)
        steps.append(found.step)
        node = found.node
        if node is None:  # a crash ends the run, in the model too
            break
    replayed = replay_moves(world, [line_of(step) for step in steps])
    for violation in replayed.findings:
        number, broken, words = violation.line, violation.finding.key, violation.finding.message
        last = number - 1 == len(steps)  # the first line replayed is line 2
        if broken == key and (last or prop(key).judged is Judged.GRAPH):
            return Confirmation(tuple(steps), words)
    return Confirmation(tuple(steps), None)


_DELIVERIES = {
    ModelMove.DELIVER: (MoveKind.TO_WORKER, MoveKind.TO_COORDINATOR),
    ModelMove.FAIL: (MoveKind.WORKER_FAILS,),
    ModelMove.DUPLICATE: (MoveKind.DUPLICATE,),
    ModelMove.LOSE: (MoveKind.LOSS,),
}


def _moves_alike(step: TraceStep, made: tuple[int, int, int]) -> bool:
    """Whether the world's move `step` is the model's move `made` (`MOVE mv what id`)."""
    mv, what, number = made
    if mv == ModelMove.START:
        return step.kind is MoveKind.START and (step.handoff or 0) == number
    if mv == ModelMove.TERMINAL:
        fact = None if step.call is None else step.call.fact
        if step.kind is not MoveKind.FAULT or (step.handoff or 0) != number:
            return False
        return FACTS.index(type(fact)) + 1 == what
    if mv == ModelMove.RESTART:
        return step.kind is MoveKind.RESTART and step.worker is list(Role)[number]
    kinds = _DELIVERIES.get(ModelMove(mv), ())
    return step.kind in kinds and step.message is not None and _carries(step.message, what)


def _carries(message: Message, code: int) -> bool:
    """Whether `message` is the model's message `code` (its handoff times 256, plus its action
    id times 16, plus what it carries)."""
    carried = code % 16
    if message.action_id != code // 16 % 16 or (message.handoff or 0) != code // HANDOFF_CODE:
        return False
    if carried == G_ACT:
        return message.kind is MessageKind.ACTION
    if carried in (G_FACT, G_FAILED):
        failed = isinstance(message.fact, HandoffFact.Failed)
        return message.kind is MessageKind.FACT and failed == (carried == G_FAILED)
    outcome = message.outcome
    return (
        message.kind is MessageKind.OUTCOME
        and outcome is not None
        and OUTCOME_KINDS.index(outcome.kind) + 1 == carried - G_OUT
    )


def _same_crash(crash: str | None, raised: str | None) -> bool:
    """Whether the adapter raised the assertion the model's crash names.

    An assertion without a message shows as a bare `AssertionError: `; the model then names
    what it asserts in its own words.
    """
    if crash is None or raised is None or not raised.startswith("AssertionError: "):
        return False
    return raised.removeprefix("AssertionError: ") in ("", crash)


def _replay(
    chart: CompiledChart, made: Sequence[Call]
) -> tuple[tuple[TraceStep, ...], dict[Key, tuple[int, str]]]:
    """The trail's calls on the real coordinator, and where and how each property first broke
    under the review's rules for one run (`handoff._review.judge`, as `handoff replay` judges
    a trace).  A crash ends the replay, as it ends the model's run."""
    coordinator = _fresh(chart)
    judge = RunJudge(Rules(chart.order))
    steps: list[TraceStep] = []
    first: dict[Key, tuple[int, str]] = {}
    for call in made:
        answer = CallResult.of(call, coordinator)
        steps.append(TraceStep(call, coordinator.chart_state, answer.issued, _words(answer.error)))
        for finding in judge.see(call, answer):
            first.setdefault(Key(finding.key.value), (len(steps) - 1, finding.message))
        if answer.error is not None and not isinstance(answer.error, HandoffError):
            break
    return tuple(steps), first


def _words(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


def _liveness(chart: CompiledChart, key: Key, trail: Trail) -> str | None:
    """Whether the real coordinator, led by the trail's calls to where its environment changed
    mode, cannot complete from there (L1) or cannot be canceled (L2): judged as `handoff
    replay` judges the end of a run (`RunJudge.end`), over everything reachable from there."""
    switch = trail.switch
    if switch is None or (key is Key.CANCELLATION and switch >= len(trail.calls)):
        return None  # not a liveness counterexample: the environment never changed mode
    coordinator = _fresh(chart)
    judge = RunJudge(Rules(chart.order))
    for call in trail.calls[: switch + (1 if key is Key.CANCELLATION else 0)]:
        for _finding in judge.see(call, CallResult.of(call, coordinator)):
            pass  # what the prefix broke is the safety judges' business, not this one's
    # A look-ahead its guard cut short confirms nothing (`Unjudged`).
    found = (f for f in judge.end() if f.key is key and not isinstance(f, Unjudged))
    return next((f.message for f in found), None)


def _fresh(chart: CompiledChart) -> HandoffCoordinatorCore:
    return probe.for_table(HANDOFF_ID, chart, 0.0)

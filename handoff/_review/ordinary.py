"""Counterexamples shown with ordinary payloads wherever an ordinary payload shows the same run.

The environment's one usable timing has a vanishing bandwidth (`handoff._review.environment`),
so that the largest reservation overflows the delay; along a run that does not need that, it
only makes the report read `StartTransfer(1e+298 ms)` from `bandwidth_gb_s: 1e-304`.  Each
counterexample of the chart alone is therefore made again with a usual timing (1,000 tokens of
100 kB, 50 GB/s) and a usual reservation (1,000 tokens), in a world of its own: when it
breaks the same property at the same call, through the same states issuing the same kinds of
actions, it is the one reported.  Otherwise the one the exploration found stands.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from handoff._review.environment import Call, CallKind, environment
from handoff._review.verdict import Counterexample, TraceStep, Verdict
from handoff._review.world import ChartWorld
from handoff._system.properties import AnyKey
from handoff._values.messages import HandoffFact
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import KvTransferTimingMode

__all__ = ["with_ordinary_payloads"]

_TOKENS = 1000
_TIMING = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, _TOKENS, 100_000, 50.0)


def with_ordinary_payloads(world: ChartWorld, verdicts: Sequence[Verdict]) -> tuple[Verdict, ...]:
    """`verdicts`, each counterexample made with ordinary payloads where that shows the same
    run; `world` is the one they were found in (it is not changed)."""
    return tuple(_ordinary(world, verdict) for verdict in verdicts)


def _ordinary(world: ChartWorld, verdict: Verdict) -> Verdict:
    example = verdict.counterexample
    if example is None or example.with_workers or not any(map(_odd, example.made)):
        return verdict
    calls = [_usual(step.call) for step in example.steps if step.call is not None]
    again = _replayed(world, calls, verdict.prop.key)
    if again is None or not _same_run(example.steps, again.steps):
        return verdict
    return attrs.evolve(verdict, counterexample=attrs.evolve(again, shortest=example.shortest))


def _odd(call: Call) -> bool:
    fact = call.fact
    if isinstance(fact, HandoffFact.SourceHeld):
        return call.usable
    return isinstance(fact, HandoffFact.DestinationReserved) and call.usable


def _usual(call: Call) -> Call:
    """`call` with an ordinary payload in place of the environment's odd usable one."""
    fact = call.fact
    if call.kind is not CallKind.FACT or not call.usable:
        return call
    if isinstance(fact, HandoffFact.SourceHeld):
        return Call.of_fact(HandoffFact.SourceHeld(fact.handoff_id, _TIMING), call.label)
    if isinstance(fact, HandoffFact.DestinationReserved):
        usual = HandoffFact.DestinationReserved(fact.handoff_id, _TOKENS)
        return Call.of_fact(usual, f"on_fact(DestinationReserved({_TOKENS}))")
    return call


def _replayed(world: ChartWorld, calls: Sequence[Call], key: AnyKey) -> Counterexample | None:
    """The run of `calls` in a fresh copy of `world`, if it breaks `key` at its last call
    and not before."""
    env = environment(world.rules.handoff_id)
    fresh = ChartWorld(world.chart, env, world.rules, source=world.source)
    node, _ = fresh.root()
    steps: list[TraceStep] = []
    for number, call in enumerate(calls, start=1):
        move = fresh._judge(node, fresh._send(node.coordinator, call))
        steps.append(move.step)
        finding = dict(move.checks).get(key)
        if finding is not None:
            return Counterexample(tuple(steps), finding) if number == len(calls) else None
        if move.node is None:
            return None
        node = move.node
    return None


def _same_run(found: Sequence[TraceStep], again: Sequence[TraceStep]) -> bool:
    """Whether two runs pass through the same states issuing the same kinds of actions and
    refusing the same calls."""
    return len(found) == len(again) and all(
        one.state == other.state
        and [type(item.action) for item in one.issued]
        == [type(item.action) for item in other.issued]
        and (one.error is None) == (other.error is None)
        for one, other in zip(found, again, strict=True)
    )

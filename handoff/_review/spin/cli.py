"""`handoff review --engine spin`: the same review, judged by Spin, in the review's format.

Each property Spin mirrors in the world reviewed gets a verdict.  Alone, a failing one shows
Spin's trail as the review's calls, replayed through the real coordinator, with the finding
the review's own monitors make of it; a trail the real coordinator does not confirm fails the
cross-check.  With workers, a trail is replayed through the explorer's system world
(`handoff._review.spin.replay.confirm_system`) and reported in its words, and the explorer
reviews the same system beside Spin, which must agree with it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

import attrs

from handoff import _cli
from handoff._compile.table import CompiledChart, compiled
from handoff._review.environment import HANDOFF_ID
from handoff._review.explore import Review, review
from handoff._review.report import exit_status
from handoff._review.spin.properties import mirrored, not_mirrored
from handoff._review.spin.replay import confirm, confirm_system
from handoff._review.spin.run import SpinRun, SpinUnavailableError, run_spin
from handoff._review.spin.system import unmirrored
from handoff._review.verdict import Counterexample, Verdict
from handoff._system.properties import Key, SpinCheck, WorldKind, prop, properties_of

if TYPE_CHECKING:
    from handoff._system.config import System

__all__ = ["UNCONFIRMED", "run", "spin_review"]

UNCONFIRMED = "the real coordinator does not confirm Spin's trail"
UNREAD = "Spin wrote no trail for it"


def run(
    args: argparse.Namespace,
    out: TextIO,
    text: Callable[[Sequence[Review]], str],
    system: System | None = None,
) -> int:
    """Judge the chosen charts (`--chart`, else `--order`) with Spin; exits as the review.

    With workers Spin judges each chart alone too (its own properties), the explorer judges
    each system beside Spin, and a disagreement exits 1.
    """
    if args.format != "text":
        raise _cli.UsageError("--engine spin reports as text only: drop --format")
    if system is not None and (why := unmirrored(system)) is not None:
        raise _cli.UsageError(f"--engine spin mirrors {why}")
    if system is not None and (args.trace_out is not None or args.explain is not None):
        raise _cli.UsageError(
            "--engine spin writes no system counterexample: drop --trace-out, --explain"
        )
    charts = (
        [named.table for named in args.chart] if args.chart else list(map(compiled, args.order))
    )
    try:
        found = [spin_review(chart, system) for chart in charts]
        # With workers, the chart's own properties are judged alone, as the explorer does.
        alone = [None if system is None else spin_review(chart)[0] for chart in charts]
    except SpinUnavailableError as error:
        raise _cli.CommandError(str(error)) from None
    reviews = [
        spin if chart is None else attrs.evolve(spin, alone=chart)
        for (spin, _), chart in zip(found, alone, strict=True)
    ]
    out.write(text(reviews))
    world = WorldKind.CHART if system is None else WorldKind.SYSTEM
    unchecked = ", ".join(key.value for key in not_mirrored(world))
    coverage = f"not mirrored: {unchecked}" if unchecked else "every property mirrored"
    out.write(f"checked by {found[0][1].version}; {coverage}\n")
    status = exit_status(reviews, safety_only=getattr(args, "safety_only", False))
    if system is None:
        return status
    for spin, _ in found:
        ours = review(spin.chart, system=system)
        # What the explorer could not judge (it was cut short) it cannot disagree about.
        unjudged = {v.prop.key for v in ours.unjudged()}
        theirs = {v.prop.key for v in spin.failures()} - unjudged
        agree = {v.prop.key for v in ours.failures()} & set(mirrored(world)) == theirs
        word = "agrees with" if agree else "DISAGREES with"
        out.write(
            f"{spin.name}: Spin {word} the explorer ({ours.configurations:,} configurations)\n"
        )
        status = max(status, 0 if agree else 1)
        status = max(status, _explorer_alone(spin.name, ours, set(mirrored(world)), out))
    return status


def _explorer_alone(name: str, ours: Review, checked: set[Key], out: TextIO) -> int:
    """What the explorer finds broken among the properties Spin does not mirror: said, and
    its exit status (a system Spin passes is not called safe when the explorer saw it fail)."""
    broken = [v.prop.key for v in ours.failures() if v.prop.key not in checked]
    if not broken:
        return 0
    keys = ", ".join(key.value for key in broken)
    out.write(f"{name}: not mirrored, the explorer alone finds {keys} broken\n")
    return exit_status([ours])


def spin_review(chart: CompiledChart, system: System | None = None) -> tuple[Review, SpinRun]:
    """Spin's verdicts on `chart`, alone or in `system`, as a `Review` (mirrored properties)."""
    found = run_spin(chart, system=system)
    checks = mirrored(found.world)
    verdicts = tuple(
        _verdict(chart, found, entry.key, checks[entry.key], system)
        for entry in properties_of(found.world)
        if entry.key in checks
    )
    spun = Review(
        order=chart.order,
        chart=chart,
        handoff_id=HANDOFF_ID,
        fallback_transfer_delay_ms=0.0,
        configurations=found.states,
        transitions=found.transitions,
        verdicts=verdicts,
        seconds=found.seconds,
        system=system,
    )
    return spun, found


def _verdict(
    chart: CompiledChart, found: SpinRun, key: Key, check: SpinCheck, system: System | None
) -> Verdict:
    if check is SpinCheck.LTL:
        states = found.liveness_states[key]
        # Alone, the environment's calls are fair; with workers, a calm run only delivers.
        fairness = " (fair round robin)" if system is None else ""
        summary = f"Spin: LTL {key.value} over {states:,} states{fairness}"
    else:
        states = found.states
        summary = f"Spin: assertion over {states:,} states"
    if key not in found.broken:
        return Verdict(prop(key), states, 0, summary=summary)
    trail = found.trails.get(key)
    if trail is None:
        return Verdict(prop(key), states, 1, summary=summary, notes=(UNREAD,))
    if system is None:
        confirmation = confirm(chart, key, trail)
    else:
        confirmation = confirm_system(chart, system, key, trail)
    finding = confirmation.finding or UNCONFIRMED
    if trail.crash is not None:
        finding = f"{finding}; Spin: the adapter's assertion '{trail.crash}' fired"
    example = Counterexample(
        confirmation.steps, f"{finding} (Spin trail, replayed)", shortest=False
    )
    return Verdict(prop(key), states, 1, example, summary=summary)

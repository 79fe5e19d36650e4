"""`handoff review --engine spin`: the same review, judged by Spin, in the review's format.

Each property Spin mirrors gets a verdict; a failing one shows Spin's trail as the review's
calls, replayed through the real coordinator, with the finding the review's own monitors
make of it.  A trail the real coordinator does not confirm fails the cross-check.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TextIO

from handoff import _cli
from handoff._review.environment import HANDOFF_ID
from handoff._review.explore import OrderReview
from handoff._review.properties import PROPERTIES, Key, SpinCheck, prop
from handoff._review.report import exit_status
from handoff._review.spin.properties import MIRRORED, NOT_MIRRORED
from handoff._review.spin.replay import confirm
from handoff._review.spin.run import SpinRun, SpinUnavailableError, run_spin
from handoff._review.verdict import Counterexample, Verdict
from handoff._table import CompiledChart, compiled

__all__ = ["run", "spin_review"]

UNCONFIRMED = "the real coordinator does not confirm Spin's trail"


def run(args: argparse.Namespace, out: TextIO, text: Callable[[Sequence[OrderReview]], str]) -> int:
    """Cross-check the chosen charts (`--chart`, else `--order`) with Spin; exits as the review."""
    if args.format != "text":
        raise _cli.UsageError("--engine spin reports as text only: drop --format")
    charts = (
        [named.table for named in args.chart] if args.chart else list(map(compiled, args.order))
    )
    try:
        reviews = [spin_review(chart) for chart in charts]
    except SpinUnavailableError as error:
        raise _cli.CommandError(str(error)) from None
    version = reviews[0][1].version
    out.write(text([review for review, _ in reviews]))
    out.write(
        f"checked by {version}; not mirrored: {', '.join(key.value for key in NOT_MIRRORED)}\n"
    )
    found = [review for review, _ in reviews]
    return exit_status(found, safety_only=getattr(args, "safety_only", False))


def spin_review(chart: CompiledChart) -> tuple[OrderReview, SpinRun]:
    """Spin's verdicts on `chart` as an `OrderReview` (mirrored properties only)."""
    found = run_spin(chart)
    verdicts = tuple(
        _verdict(chart, found, entry.key) for entry in PROPERTIES if entry.key in MIRRORED
    )
    review = OrderReview(
        order=chart.order,
        chart=chart,
        handoff_id=HANDOFF_ID,
        fallback_transfer_delay_ms=0.0,
        configurations=found.states,
        transitions=found.transitions,
        verdicts=verdicts,
        seconds=found.seconds,
    )
    return review, found


def _verdict(chart: CompiledChart, found: SpinRun, key: Key) -> Verdict:
    if MIRRORED[key] is SpinCheck.LTL:
        states = found.liveness_states[key]
        summary = f"Spin: LTL {key.value} over {states:,} states (fair round robin)"
    else:
        states = found.states
        summary = f"Spin: assertion over {states:,} states"
    trail = found.trails[key]
    if trail is None:
        return Verdict(prop(key), states, 0, summary=summary)
    confirmation = confirm(chart, key, trail)
    finding = confirmation.finding or UNCONFIRMED
    if trail.crash is not None:
        finding = f"{finding}; Spin: the adapter's assertion '{trail.crash}' fired"
    example = Counterexample(confirmation.steps, f"{finding} (Spin trail, replayed)")
    return Verdict(prop(key), states, 1, example, summary=summary)

"""The review's properties, as judges of one replayed run.

`handoff replay` lives in the runs wing, which cannot see the review; the command line hands
it `judge` so that every replayed run is judged by the review's own rules.  Along the run:
the safety monitors (S1-S5, S7, C1, R1, R2, P1, Q1), S6 from the coordinator's configuration
before and after a call the SPEC refuses or drops, C2 from the lifecycle at each completion,
Errors from any exception but `HandoffError`, and Bound from the actions issued and the
growth without progress.  After the last call, L1 and L2 from an exploration of everything
reachable from the run's last configuration; when that exploration is stopped by its guard
on configurations, neither is judged, as a review cut short judges neither, and the run
says so instead of failing them.  Coverage and Table judge a
whole chart, never one run: they are the review's alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

from handoff._review.environment import Rules
from handoff._review.explore import Review, explore_ahead, review_chart, review_order
from handoff._review.graph import cancellation, progress
from handoff._review.monitors import judge_edge
from handoff._review.verdict import Verdict
from handoff._review.watch import Watch
from handoff._runs.replay import CallResult, Unjudged, Violation
from handoff._runs.trace import Trace
from handoff._system.call import Call
from handoff._system.properties import PROPERTIES, Family, Finding, Judged, Key, prop
from handoff._values.errors import HandoffError
from handoff._values.values import HandoffOrder

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "NOT_ALONG_A_RUN",
    "RunJudge",
    "judge",
    "judge_system_run",
    "review_alone",
]

NOT_ALONG_A_RUN = tuple(entry.key for entry in PROPERTIES if entry.judged is Judged.CHART)
"""Properties of a whole chart, which no single run can show."""


class RunJudge:
    """Every property one run can show, judged call by call and then at the run's end."""

    def __init__(self, rules: Rules, guard: int | None = None) -> None:
        self.rules = rules
        self.guard = guard
        """The most configurations the look-ahead explores (None: the review's guard)."""
        self.watch = Watch()
        self.stalls = 0
        self.unusable = False
        """A payload the SPEC refuses, or defers, was taken: L1 does not apply from here."""
        self.endless = False
        """The run was judged one that never ends (Bound): what lies ahead is not explored."""
        self.last: CallResult | None = None

    def see(self, call: Call, answer: CallResult) -> Iterator[Finding]:
        """What `call` broke, answered as `answer` says."""
        self.last = answer
        error = answer.error
        if error is not None and not isinstance(error, HandoffError):
            yield Finding.of(Key.ERRORS, f"{call} raised {type(error).__name__}: {error}")
            return
        assert answer.before is not None
        assert answer.after is not None
        verdict = judge_edge(
            self.rules, self.watch, self.stalls, call, answer.before, answer.after,
            answer.issued, error,
        )  # fmt: skip
        self.watch, self.stalls = verdict.observation.watch, verdict.stalls
        for key, text in verdict.findings:
            self.unusable |= key is Key.PAYLOADS and text is not None
            if text is not None:
                yield Finding.of(key, text)
        self.unusable |= verdict.observation.deferred
        if verdict.overrun is not None:
            self.endless = True
            yield Finding.of(Key.BOUND, verdict.overrun)

    def end(self) -> Iterator[Finding | Unjudged]:
        """L1 and L2, judged over everything reachable from the run's last configuration, or
        not judged when the guard stopped that exploration before every run's end."""
        if self.last is None or self.last.after is None or self.endless:
            return
        graph, cut = explore_ahead(self.last.after, self.watch, self.rules, self.guard)
        if cut:
            ahead = f"from the run's last configuration, {cut}"
            unjudged = (Key.CANCELLATION,) if self.unusable else (Key.PROGRESS, Key.CANCELLATION)
            for key in unjudged:
                yield Unjudged(key, prop(key).title, ahead)
            return
        if not self.unusable:
            yield from _ahead(progress(prop(Key.PROGRESS), graph))
        yield from _ahead(cancellation(prop(Key.CANCELLATION), graph))


def judge(trace: Trace, guard: int | None = None) -> RunJudge:
    """A fresh judge of one run of `trace`: what `handoff replay` hands every replay (`guard`:
    the most configurations its look-ahead explores; None: the review's)."""
    rules = Rules(trace.order, trace.handoff_id, trace.fallback_transfer_delay_ms)
    return RunJudge(rules, guard)


def _ahead(verdict: Verdict) -> Iterator[Finding]:
    """A liveness verdict over what lies ahead of a run, as a finding of that run."""
    example = verdict.counterexample
    if verdict.holds or example is None:
        return
    text = f"from the run's last configuration, {example.finding}"
    if example.steps:
        calls = ", ".join(str(step.call) for step in example.steps)
        text += f" (reached by {len(example.steps)} more calls: {calls})"
    yield Finding(verdict.prop.key, verdict.prop.title, text)


def judge_system_run(trace: Trace, allowed: Collection[str] = ()) -> tuple[Violation, ...]:
    """Replay a run of the chart with its workers; what it broke, first broken first.  Only
    the contracts and properties of one's own named in `allowed` are imported."""
    from handoff._review.system_replay import replay_system_run  # the system world, when asked for

    replayed = replay_system_run(trace, allowed)
    return replayed.findings


def review_alone(
    chart: type[HandoffChart] | None, order: HandoffOrder, guard: int | None = None
) -> tuple[bool, str]:
    """The review of `chart` alone (None: `order`'s shipped chart), every run of it explored,
    for `handoff simulate`, which samples runs and judges only what its workers show: whether
    a safety property of the chart's own fails, and the verdict in words (`SourceFirst, every
    run reviewed (119 configurations): every safety property holds`).  `guard`: the most
    configurations explored (None: the review's)."""
    if chart is None:
        return _said_alone(review_order(order, guard=guard))
    return _said_alone(review_chart(chart, guard=guard))


def _said_alone(review: Review) -> tuple[bool, str]:
    failing = [v.prop for v in review.failures() if v.prop.family is Family.SAFETY]
    if failing:
        words = "UNSAFE: " + ", ".join(f"{p.key.value} ({p.title})" for p in failing)
    elif review.cut_short:
        words = f"CUT SHORT: {review.cut_short}, no safety property failed in what was explored"
    else:
        words = "every safety property holds"
    # A review its guard stopped did not see every run: it says only what it explored.
    every = "reviewed alone" if review.cut_short else "every run reviewed"
    seen = f"({review.configurations:,} configurations)"
    return bool(failing), f"{review.name}, {every} {seen}: {words}"

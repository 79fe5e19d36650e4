"""The review's safety monitors, as judges of a replayed trace.

`handoff replay` lives in the runs wing, which cannot see the review; the command line hands
it `safety` so that every replayed run is judged by the same monitors the review uses on its
own runs.  A trace carries no lifecycle, so L3 (judged against the coordinator's records) is
left to the review.
"""

from __future__ import annotations

from handoff._review.environment import Rules
from handoff._review.monitors import RunMonitor
from handoff._review.properties import PROPERTIES, Key
from handoff._runs.call import Call
from handoff._runs.replay import Answer, Monitor, MonitorFactory
from handoff._runs.trace import Trace

__all__ = ["SAFETY", "judge_of", "property_words"]


def judge_of(key: Key) -> MonitorFactory:
    """The monitor factory of one property: replay then reports each property's first break."""

    def make(trace: Trace) -> Monitor:
        rules = Rules(trace.order, trace.handoff_id, trace.fallback_transfer_delay_ms)
        monitor = RunMonitor(rules)

        def judge(call: Call, answer: Answer) -> str | None:
            found = monitor.observe(call, answer.issued, answer.error)
            mine = [violation for violation in found if violation.key is key]
            return f"{property_words(key)}: {mine[0].finding}" if mine else None

        return judge

    return make


SAFETY = tuple(judge_of(prop.key) for prop in PROPERTIES)
"""A judge per property: what `handoff replay` runs over every replayed run."""


def property_words(key: Key) -> str:
    """`S1 (title)`: how a verdict names a property."""
    prop = next(prop for prop in PROPERTIES if prop.key is key)
    return f"{key.value} ({prop.title})"

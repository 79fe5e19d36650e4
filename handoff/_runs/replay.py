"""Replaying a trace on a fresh coordinator: divergences from its expectations, monitors' verdicts.

`replay` makes every call of a trace and compares each answer with what the trace expects;
the first difference is the run's `Divergence`.  Monitors judge the run as it goes: a monitor
factory is given the trace and returns a fresh `Monitor`, which sees every call with its
`CallResult` (the coordinator's configuration before it, a copy of the coordinator after it) and
may report `Finding`s, then judges the run once more at its end, where it may also say that
it could not judge a property (`Unjudged`: what it looked at was cut short).  Each property's
first finding is a `Violation`.  `record` fills in a trace's expectations from a replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

import attrs

from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._coordinator.probe import Configuration
from handoff._runs.trace import Entry, Trace
from handoff._system.call import Call
from handoff._system.properties import Finding, PropertyName
from handoff._values.errors import HandoffError
from handoff._values.messages import IssuedHandoffAction

__all__ = [
    "CallResult",
    "Divergence",
    "Monitor",
    "MonitorFactory",
    "Replay",
    "Unjudged",
    "Violation",
    "record",
    "recorded",
    "replay",
]


@attrs.frozen
class CallResult:
    """What a call returned, or what it raised, and the coordinator around it."""

    issued: tuple[IssuedHandoffAction, ...] = ()
    error: Exception | None = None
    before: Configuration | None = attrs.field(default=None, eq=False)
    """The coordinator's configuration before the call."""
    after: HandoffCoordinatorCore | None = attrs.field(default=None, eq=False)
    """A copy of the coordinator after the call, for judges that look ahead."""

    @classmethod
    def of(cls, call: Call, coordinator: HandoffCoordinatorCore) -> CallResult:
        """Make `call` and keep its answer; any exception is kept, never raised."""
        before = probe.configuration(coordinator)
        try:
            issued = tuple(call.send(coordinator))
        except MemoryError:  # the replay's own limit, not the chart's crash
            raise
        except Exception as error:  # a broken chart's crash is part of what replay reports
            return cls(error=error, before=before, after=coordinator.fork())
        return cls(issued, before=before, after=coordinator.fork())

    def describe(self) -> str:
        """The answer in words: the issued actions, the error, or the crash."""
        if isinstance(self.error, HandoffError):
            return f"error {str(self.error)!r}"
        if self.error is not None:
            return f"crash {type(self.error).__name__}: {self.error}"
        return _actions(self.issued)


class Monitor(Protocol):
    """A judge of one run: sees each call and its answer, in order, then the run's end."""

    def see(self, call: Call, answer: CallResult) -> Iterable[Finding]:
        """What this call broke."""

    def end(self) -> Iterable[Finding | Unjudged]:
        """What the run as a whole broke, judged after its last call, and what could not be
        judged."""


MonitorFactory = Callable[[Trace], Monitor]
"""Makes a fresh monitor for one replayed run of the trace given."""


@attrs.frozen
class Unjudged:
    """A property a monitor could not judge over the run: neither holds nor is broken."""

    key: PropertyName
    title: str
    why: str
    """Why it was not judged, in words."""


@attrs.frozen
class Divergence:
    """Where a replay first answered differently from the trace."""

    line: int
    call: Call
    chart_state: str
    """The chart state before the call."""
    expected: str
    actual: str


@attrs.frozen
class Violation:
    """A trace line judged as breaking a property: a call a monitor judged (at the end: the
    run's last call), or a system run's move, which may make no call."""

    line: int
    call: Call | None
    """The call (None: a worker's move, or a fault's, that calls no coordinator)."""
    chart_state: str
    """The chart state before the call (at the end: after the last call)."""
    finding: Finding
    at_end: bool = False
    """Judged over the whole run after its last call, rather than at this call."""

    @property
    def message(self) -> str:
        """The finding in words, naming the property."""
        return str(self.finding)


@attrs.frozen
class Replay:
    """The verdict of one replay."""

    calls: int
    divergence: Divergence | None
    """The first call answered differently from the trace, if any."""
    violations: tuple[Violation, ...]
    """Each property's first violation, in the order they happened."""
    unjudged: tuple[Unjudged, ...] = ()
    """The properties a monitor could not judge over the run: not OK, and not violated."""

    @property
    def ok(self) -> bool:
        """No divergence, no violation, and every property judged."""
        return self.divergence is None and not self.violations and not self.unjudged


def replay(
    trace: Trace,
    monitors: Sequence[MonitorFactory] = (),
    coordinator: HandoffCoordinatorCore | None = None,
    entries: Iterable[Entry] | None = None,
) -> Replay:
    """Replay `trace` on `coordinator` (a fresh one for the trace by default), to the end.

    Every call is made even after a divergence, so that the monitors judge the whole run.
    `entries` are the calls, when they are read as the replay goes (`stream_trace`) rather
    than held in `trace`: the replay keeps none of them but the last.
    """
    coordinator = trace.coordinator() if coordinator is None else coordinator
    judges = [make(trace) for make in monitors]
    divergence: Divergence | None = None
    violations: dict[PropertyName, Violation] = {}
    line = 1
    last: Entry | None = None
    calls = 0
    for number, entry in enumerate(trace.entries if entries is None else entries, start=2):
        last, calls = entry, calls + 1
        line = entry.line or number
        state = coordinator.chart_state
        answer = CallResult.of(entry.call, coordinator)
        if divergence is None and _diverges(entry, answer):
            divergence = Divergence(line, entry.call, state, _expected(entry), answer.describe())
        for judge in judges:
            for finding in judge.see(entry.call, answer):
                violations.setdefault(finding.key, Violation(line, entry.call, state, finding))
    unjudged: dict[PropertyName, Unjudged] = {}
    if last is not None:
        state = coordinator.chart_state
        for judge in judges:
            for found in judge.end():
                if isinstance(found, Unjudged):
                    unjudged.setdefault(found.key, found)
                    continue
                violations.setdefault(found.key, Violation(line, last.call, state, found, True))
    return Replay(calls, divergence, tuple(violations.values()), tuple(unjudged.values()))


def record(trace: Trace, coordinator: HandoffCoordinatorCore | None = None) -> Trace:
    """`trace` with every call's expectation filled in from a fresh replay.

    A call that raises something other than a `HandoffError` is not an answer a trace can
    expect: it propagates.
    """
    return attrs.evolve(trace, entries=tuple(recorded(trace, trace.entries, coordinator)))


def recorded(
    trace: Trace, entries: Iterable[Entry], coordinator: HandoffCoordinatorCore | None = None
) -> Iterator[Entry]:
    """Each of `entries` (the calls of `trace`) with its expectation filled in, made on a
    fresh coordinator as it is asked for; see `record`."""
    coordinator = trace.coordinator() if coordinator is None else coordinator
    for entry in entries:
        try:
            issued = tuple(entry.call.send(coordinator))
        except HandoffError as error:
            yield Entry(entry.call, expect_error=str(error), line=entry.line)
        else:
            yield Entry(entry.call, expect=issued, line=entry.line)


def _diverges(entry: Entry, answer: CallResult) -> bool:
    if entry.expect_error is not None:
        return not isinstance(answer.error, HandoffError) or str(answer.error) != entry.expect_error
    if answer.error is not None:
        return True
    return entry.expect is not None and answer.issued != entry.expect


def _expected(entry: Entry) -> str:
    if entry.expect_error is not None:
        return f"error {entry.expect_error!r}"
    if entry.expect is None:
        return "no error"
    return _actions(entry.expect)


def _actions(actions: Sequence[IssuedHandoffAction]) -> str:
    return "[" + ", ".join(f"#{item.id} {item.action!r}" for item in actions) + "]"

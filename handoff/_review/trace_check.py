"""`handoff.check_trace`: judge a recorded run against a chart, property by property.

The public face of replay's judging, for a user's own tests: it reads a trace, replays it
through a fresh coordinator of the chart given (or the shipped chart of the trace's order)
and returns one `PropertyVerdict` per property a run can show.  Loaded on first use, like
`handoff.wire`, so `import handoff` stays light.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from handoff._compile.lookup import NotGiven, find_chart, shipped_chart
from handoff._compile.table import CompiledChart, compiled
from handoff._public import exported
from handoff._review.judge import NOT_ALONG_A_RUN, judge
from handoff._runs.replay import replay
from handoff._runs.trace import Trace, TraceError, read_trace
from handoff._system.properties import WorldKind, properties_of

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = ["PropertyVerdict", "TraceCheck", "check_trace"]

_ALONG_A_RUN = {
    world: tuple(prop for prop in properties_of(world) if prop.key not in NOT_ALONG_A_RUN)
    for world in WorldKind
}
"""The properties a single run shows, alone and with workers."""


@attrs.frozen(repr=False)
class PropertyVerdict:
    """One property's verdict on one replayed run; `str()` is the sentence to show.

    `holds` says whether it held; a broken one also has `line`, `call` and `message`, one
    that could not be judged (L1 and L2, when the look-ahead from the run's end was stopped
    by its guard) has `unjudged`, why, and does not hold either (docs/traces.md, "Judging a
    trace from Python").
    """

    key: str
    """The property's short name: "S1", "L2", "Bound", …"""
    title: str
    holds: bool
    line: int | None = None
    """The trace line of the call that broke it (for L1 and L2: the last call)."""
    call: str | None = None
    """That call, in words."""
    message: str | None = None
    """What broke it."""
    unjudged: str | None = None
    """Why it was not judged (None: it was)."""

    def __str__(self) -> str:
        name = f"{self.key} ({self.title})"
        if self.holds:
            return f"{name} holds"
        if self.unjudged is not None:
            return f"{name} not judged: {self.unjudged}"
        return f"{name} violated at line {self.line}, {self.call}: {self.message}"

    def __repr__(self) -> str:
        if self.holds:
            return f"<PropertyVerdict {self.key} holds>"
        if self.unjudged is not None:
            return f"<PropertyVerdict {self.key} not judged: {self.unjudged}>"
        return f"<PropertyVerdict {self.key} violated at line {self.line}: {self.message}>"


@attrs.frozen(repr=False)
class TraceCheck:
    """What replaying one trace showed: a verdict per property, and any divergence.

    `ok` is true when every property held; `violated` and `unjudged` list those broken and
    those not judged; `verdict(key="S1")` gives one `PropertyVerdict`;
    `divergence` names the first call answered otherwise than the trace expects, or is None.
    """

    trace: Path
    chart: str
    """The title of the chart the run was replayed on."""
    calls: int
    verdicts: tuple[PropertyVerdict, ...]
    divergence: str | None
    """The first call answered otherwise than the trace expects, in words (None: none)."""

    @property
    def ok(self) -> bool:
        """Whether every property holds along the run (expectations aside)."""
        return all(verdict.holds for verdict in self.verdicts)

    @property
    def violated(self) -> tuple[PropertyVerdict, ...]:
        """The verdicts of the properties the run breaks."""
        return tuple(v for v in self.verdicts if not v.holds and v.unjudged is None)

    @property
    def unjudged(self) -> tuple[PropertyVerdict, ...]:
        """The verdicts of the properties that could not be judged (the look-ahead from the
        run's end was stopped by its guard): the check is then not `ok`, and nothing is
        violated by it."""
        return tuple(verdict for verdict in self.verdicts if verdict.unjudged is not None)

    def verdict(self, key: str) -> PropertyVerdict:
        """The verdict of property `key` ("S1", "Bound", …); KeyError for any other name."""
        for verdict in self.verdicts:
            if verdict.key == key:
                return verdict
        if key in {k.value for k in NOT_ALONG_A_RUN}:
            raise KeyError(f"{key} is judged over a whole chart, not one run: run `handoff review`")
        known = ", ".join(verdict.key for verdict in self.verdicts)
        raise KeyError(f"no property {key!r}: a run shows {known}")

    def __repr__(self) -> str:
        broken = ", ".join(verdict.key for verdict in self.violated) or "none"
        diverged = "" if self.divergence is None else ", diverged"
        unjudged = ", ".join(verdict.key for verdict in self.unjudged)
        cut = f", not judged: {unjudged}" if unjudged else ""
        return (
            f"<TraceCheck {self.trace.name} on {self.chart}: {self.calls} calls, "
            f"violated: {broken}{cut}{diverged}>"
        )


def check_trace(
    trace: str | os.PathLike[str],
    *,
    chart: type[HandoffChart] | str | None = None,
    workers: Iterable[str] = (),
    properties: Iterable[str] = (),
    runtimes: Iterable[str] = (),
) -> TraceCheck:
    """Replay the trace file `trace` and judge every property a single run can show.

    `chart` is a `HandoffChart` subclass, or its name as `"MODULE:CLASS"` (imported from the
    current directory or the Python path); None replays on the shipped chart of the trace's
    order, which a trace made on a chart of one's own refuses.  A trace is data: nothing it
    names is imported.  A run with workers naming a contract or property of one's own
    replays only if its `"MODULE:NAME"` is in `workers` or `properties` (a runtime profile
    of one's own: in `runtimes`).  Raises
    `HandoffError` for a file that is not a trace, a chart that does not fit it or a name it
    holds that was not given, `ValueError` for a name given that finds no chart.
    """
    path = Path(trace)
    recorded = read_trace(path)
    if recorded.snapshot is not None:
        raise TraceError(
            f"{path}: the trace starts from a snapshot, mid-run, and the properties judge a "
            "run from its start: replay it with `handoff replay`, which checks its answers"
        )
    rules = find_chart(chart, tables=True).rules if isinstance(chart, str) else chart
    if rules is None and recorded.chart is not None:
        shipped = shipped_chart(recorded.chart)
        if shipped is None:
            raise TraceError(
                f"{path}: the trace was made on chart {recorded.chart}: pass chart='MODULE:CLASS' "
                "naming it (or the chart class itself); a trace's names are data, never "
                "imported"
            )
        rules = shipped.rules
    table = (
        None if rules is None else rules if isinstance(rules, CompiledChart) else compiled(rules)
    )
    if table is not None and table.order is not recorded.order:
        raise TraceError(
            f"{path}: chart {table.name} runs {table.order.value}, "
            f"the trace says {recorded.order.value}"
        )
    if recorded.workers is not None:
        allowed = (*_names(workers), *_names(properties), *_names(runtimes))
        return _check_system_run(path, attrs.evolve(recorded, rules=rules), table, allowed)
    result = replay(attrs.evolve(recorded, rules=rules), (judge,))
    broken = {
        found.finding.key.value: (found.line, str(found.call), found.finding.message)
        for found in result.violations
    }
    unjudged = {one.key.value: one.why for one in result.unjudged}
    divergence = result.divergence
    return TraceCheck(
        trace=path,
        chart=(table or compiled(recorded.order)).name,
        calls=result.calls,
        verdicts=_verdicts(WorldKind.CHART, broken, unjudged),
        divergence=None
        if divergence is None
        else f"line {divergence.line}, {divergence.call}: expected {divergence.expected}, "
        f"answered {divergence.actual}",
    )


def _names(given: Iterable[str]) -> tuple[str, ...]:
    """The names given, one name alone taken as one (not as its letters)."""
    return (given,) if isinstance(given, str) else tuple(given)


def _check_system_run(
    path: Path, recorded: Trace, table: CompiledChart | None, allowed: Collection[str]
) -> TraceCheck:
    """A run of the chart with its workers, replayed move by move and judged."""
    from handoff._review.system_replay import replay_system_run  # the system world, when asked for

    try:
        replayed = replay_system_run(recorded, allowed)
    except NotGiven as refusal:
        keyword = {"worker contract": "workers", "runtime": "runtimes"}.get(
            refusal.what, "properties"
        )
        raise TraceError(f"{path}: {refusal.allow(f'pass {keyword}=[{refusal.name!r}]')}") from None
    broken = {
        found.finding.key.value: (found.line, f"move {found.line}", found.finding.message)
        for found in replayed.findings
    }
    return TraceCheck(
        trace=path,
        chart=(table or compiled(recorded.order)).name,
        calls=replayed.moves,
        verdicts=_verdicts(WorldKind.SYSTEM, broken),
        divergence=None,
    )


def _verdicts(
    world: WorldKind,
    broken: dict[str, tuple[int, str, str]],
    unjudged: dict[str, str] | None = None,
) -> tuple[PropertyVerdict, ...]:
    """Each property a run in `world` can show: not judged where `unjudged` has its key (with
    why), broken where `broken` has it (with the line, the call or move there, and what broke
    it), else held."""
    verdicts = []
    for prop in _ALONG_A_RUN[world]:
        key = prop.key.value
        if unjudged and key in unjudged:
            verdicts.append(PropertyVerdict(key, prop.title, False, unjudged=unjudged[key]))
            continue
        found = broken.get(key)
        verdicts.append(PropertyVerdict(key, prop.title, found is None, *(found or ())))
    return tuple(verdicts)


# `handoff.check_trace` and its results name the public module, as every exported name does.
exported(PropertyVerdict, TraceCheck, check_trace)

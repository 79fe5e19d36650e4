"""A chart compiled into a dense table: (state, event) → the step the chart would take.

A table is read mechanically off a python-statemachine chart class (`compile_chart`), so it
cannot drift from the chart.  `compiled` hands out one table per chart class, built on first
use: every tool runs it.  Only the coordinator's start-up path, `HandoffCoordinatorCore(id,
order)`, reads the shipped orders' tables ready-made from a generated module
(`startup_table`), so running handoffs of those orders needs neither python-statemachine nor
the chart classes.
"""

from __future__ import annotations

import enum
import functools
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from handoff._chart.vocabulary import (
    IGNORE,
    JOURNAL_REFUSALS,
    ChartEvent,
    Check,
    Effect,
    EventKind,
    Refusal,
)
from handoff._values.values import HandoffCompletion, HandoffOrder

if TYPE_CHECKING:
    from statemachine import State

    from handoff._chart.base import HandoffChart

__all__ = [
    "GENERATED_HEADER",
    "GENERATED_TABLES",
    "TABLES_HINT",
    "CompiledChart",
    "Step",
    "StepKind",
    "chart_rules",
    "compile_chart",
    "compiled",
    "decode",
    "default_step",
    "generated_source",
    "runtime_table",
    "stale_tables",
    "startup_table",
    "write_tables",
]


class StepKind(enum.StrEnum):
    """What a step does; each value equals the word it was once spelled with."""

    REFUSED = "refused"
    """The call raises and nothing changes."""
    IGNORED = "ignored"
    """Nothing changes and nothing is journaled."""
    MOVES = "moves"
    """The handoff goes to another state, or issues actions."""
    STAYS = "stays"
    """An acknowledgement is journaled in place."""


_REFUSALS = {refusal.callback: refusal for refusal in Refusal}


@attrs.frozen
class Step:
    """What a chart does with one event in one state."""

    source: int
    event: ChartEvent
    target: int
    refusal: Refusal | None = None
    """Set when the state refuses the event: the call raises and nothing changes."""
    ignored: bool = False
    """Set when the state drops the event: nothing changes and nothing is journaled."""
    checks: tuple[Check, ...] = ()
    """Payload checks run, in order, before anything changes."""
    effects: tuple[Effect, ...] = ()
    """Actions issued, in order, when the step is taken."""

    @property
    def kind(self) -> StepKind:
        """What the step does."""
        if self.refusal is not None:
            return StepKind.REFUSED
        if self.ignored:
            return StepKind.IGNORED
        if self.target != self.source or self.effects:
            return StepKind.MOVES
        return StepKind.STAYS

    @property
    def completion(self) -> HandoffCompletion | None:
        """The completion this step records, if it completes the handoff."""
        for effect in self.effects:
            if effect.completion is not None:
                return effect.completion
        return None


@attrs.frozen
class CompiledChart:
    """One chart as a table; state ids index `states`, events index rows."""

    name: str
    """The chart's title: what reports, diagrams and traces call it."""
    order: HandoffOrder
    """Which lifecycle a success must record."""
    states: tuple[str, ...]
    """State ids in definition order; `states[0]` is the initial state."""
    names: tuple[str, ...]
    """Human names of the states, for traces and diagrams."""
    rows: tuple[tuple[Step, ...], ...]
    """`rows[state][event.index]`: every pair has exactly one step."""
    complete: frozenset[int]
    """States in which the handoff is complete."""

    def step(self, state: int, event: ChartEvent) -> Step:
        """The step the chart takes for `event` in `state`."""
        return self.rows[state][event.index]

    def index(self, state_id: str) -> int:
        """The table index of a state id."""
        return self.states.index(state_id)

    def steps(self) -> Iterator[Step]:
        """Every step of the table, state by state in event order."""
        for row in self.rows:
            yield from row


_K = TypeVar("_K")
_V = TypeVar("_V")


def first_stored(build: Callable[[_K], _V]) -> Callable[[_K], _V]:
    """`build`, cached per argument so that every caller gets the one value stored first.

    Threads making their first coordinators at once may each build a table (`functools.cache`
    stores the last one built, and hands each racing thread its own); the tools compare
    tables by identity, so here the losers of the race drop theirs and take the winner's."""
    cache: dict[_K, _V] = {}

    @functools.wraps(build)
    def stored(key: _K) -> _V:
        found = cache.get(key, cache)
        if found is cache:
            found = cache.setdefault(key, build(key))
        return cast("_V", found)

    return stored


@first_stored
def compiled(chart: HandoffOrder | type[HandoffChart]) -> CompiledChart:
    """The table compiled from a chart class, or from an order's shipped chart class (built
    on first use; the one stored first is everyone's): what every tool runs, so an edited
    chart is what it judges."""
    if isinstance(chart, HandoffOrder):
        from handoff._chart.shipped import CHARTS

        return compiled(CHARTS[chart])
    return compile_chart(chart)


@first_stored
def startup_table(order: HandoffOrder) -> CompiledChart:
    """The table of `order`'s shipped chart as generated into `_compile/generated_tables.py`:
    the coordinator's start-up path, which needs neither python-statemachine nor the chart
    classes (`stale_tables` says when the module no longer matches the charts)."""
    from handoff._compile.generated_tables import TABLES

    return decode(TABLES[order.value], order.value)


def runtime_table(rules: HandoffOrder | type[HandoffChart]) -> CompiledChart:
    """The table a coordinator built from `rules` runs: the start-up table for a shipped
    order (no python-statemachine needed), the compiled class for a chart of one's own."""
    return startup_table(rules) if isinstance(rules, HandoffOrder) else compiled(rules)


def chart_rules(
    order: HandoffOrder | None, chart: type[HandoffChart] | None
) -> HandoffOrder | type[HandoffChart]:
    """What a coordinator is compiled from: `chart` when given, else `order`'s shipped chart
    (an order given with a chart must be the chart's)."""
    if chart is None:
        if not isinstance(order, HandoffOrder):
            raise TypeError(f"order must be a HandoffOrder, got {order!r}")
        return order
    from handoff._chart.base import HandoffChart

    if not (isinstance(chart, type) and issubclass(chart, HandoffChart) and chart.states):
        raise TypeError(f"chart must be a HandoffChart subclass with states, got {chart!r}")
    if order is not None and order is not chart.order:
        raise ValueError(
            f"order {order!r} differs from the order of chart {chart.title}: {chart.order!r}"
        )
    return chart


def compile_chart(chart: type[HandoffChart]) -> CompiledChart:
    """Read `chart`'s states and transitions into a `CompiledChart` (anew on every call).

    A (state, event) pair the chart does not mention gets its event kind's default.  The
    table is flat: its states are those a handoff can be in, and a group's rules reach the
    states inside it (see `handoff._chart.groups`)."""
    # Compiling a class is the tools' work, never the start-up's: its helpers load here.
    from handoff._chart.groups import entered, leaves

    initial = chart.initial_state
    assert initial is not None, "a chart with states has an initial state"
    first = entered(initial)
    states: list[State] = sorted(leaves(chart.states), key=lambda state: state is not first)
    index = {state.id: position for position, state in enumerate(states)}
    complete = frozenset(index[state.id] for state in states if any(_words(state.enter, Effect)))
    rows = tuple(
        tuple(_step(state, event, index, index[state.id] in complete) for event in ChartEvent)
        for state in states
    )
    return CompiledChart(
        name=chart.title,
        order=chart.order,
        states=tuple(state.id for state in states),
        names=tuple(str(state.name) for state in states),
        rows=rows,
        complete=complete,
    )


def default_step(source: int, event: ChartEvent, *, complete: bool) -> Step:
    """What a state does with an event its chart does not mention (see `EventKind`)."""
    if complete or event.kind in (EventKind.FACT, EventKind.DUPLICATE):
        return Step(source, event, source, ignored=True)
    if event.kind is EventKind.JOURNAL_ERROR:
        return Step(source, event, source, refusal=JOURNAL_REFUSALS[event])
    return Step(source, event, source)


def _step(state: State, event: ChartEvent, index: dict[str, int], complete: bool) -> Step:
    from handoff._chart.groups import entered, rule_for

    transition = rule_for(state, event.value)
    if transition is None:
        return default_step(index[state.id], event, complete=complete)
    (declared,) = transition.targets
    target = entered(declared)
    effects = list(_words(transition.on, Effect))
    if not transition.internal:
        effects += _words(target.enter, Effect)
    validators = [spec.attr_name for spec in transition.validators if not spec.is_convention]
    refusals = [_REFUSALS[name] for name in validators if name in _REFUSALS]
    return Step(
        source=index[state.id],
        event=event,
        target=index[target.id],
        refusal=refusals[0] if refusals else None,
        ignored=any(spec.attr_name == IGNORE for spec in transition.on if not spec.is_convention),
        checks=tuple(_words(transition.validators, Check)),
        effects=tuple(effects),
    )


def _words(specs: Any, vocabulary: type[Effect] | type[Check]) -> list[Any]:
    names = {member.value: member for member in vocabulary}
    return [names[spec.attr_name] for spec in specs if spec.attr_name in names]


# -- the generated module of the shipped charts' tables ------------------------------------

GENERATED_TABLES = os.path.join(os.path.dirname(__file__), "generated_tables.py")
"""Where `generated_source` is kept."""

GENERATED_HEADER = (
    "# AUTOGENERATED from the charts of handoff._chart.shipped by `./dev generate` — do not edit."
)

TABLES_HINT = (
    "the coordinator's start-up table differs from the shipped charts; regenerate it with "
    "`./dev generate` (or `handoff._compile.table.write_tables()`; no extra needed)"
)
"""What to do about a stale `handoff/_compile/generated_tables.py`."""


def stale_tables(path: str = GENERATED_TABLES) -> str | None:
    """None when the generated module at `path` matches the shipped charts; otherwise one
    line naming it, whether it is stale or missing, and how to regenerate it."""
    try:
        with open(path, encoding="utf-8") as file:
            if file.read() == generated_source():
                return None
        status = "stale"
    except FileNotFoundError:
        status = "missing"
    return f"{status}: {path}: {TABLES_HINT}"


def write_tables(path: str = GENERATED_TABLES) -> bool:
    """Regenerate the module at `path` from the shipped charts; True when it changed."""
    # The writer (pathlib, secrets) stays off the coordinator's import path: only this loads it.
    from pathlib import Path

    from handoff import _files

    if stale_tables(path) is None:
        return False
    _files.write_text(Path(path), generated_source())  # whole or not at all
    return True


# One string per state: its id, then each event's step in `ChartEvent` order, separated by
# " | ".  A step is its target ("=" for the same state) followed by marks: "!" a refusal,
# "~" ignored, "?" a check, "+" an effect; members are named as in their enums.
_SEPARATOR = " | "


def generated_source() -> str:
    """The text of `_compile/generated_tables.py`: the shipped charts' tables, as compiled now."""
    from handoff._chart.shipped import CHARTS

    lines = [
        GENERATED_HEADER,
        '"""The compiled tables of the shipped charts, read by `handoff._compile.table`."""',
        "",
        "# ruff: noqa: E501",
        "# fmt: off",
        "TABLES: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {",
    ]
    for order, chart in CHARTS.items():
        table = compile_chart(chart)
        lines.append(f"    {order.value!r}: (")
        lines.append(f"        {table.name!r},")
        complete = " ".join(table.states[state] for state in sorted(table.complete))
        lines.append(f"        {complete!r},")
        lines.append("        (")
        lines.extend(f"            {name!r}," for name in table.names)
        lines.append("        ),")
        lines.append("        (")
        lines.extend(f"            {_encode_row(table, row)!r}," for row in table.rows)
        lines.append("        ),")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _encode_row(table: CompiledChart, row: tuple[Step, ...]) -> str:
    state = table.states[row[0].source]
    return f"{state}: " + _SEPARATOR.join(_encode_step(table, step) for step in row)


def _encode_step(table: CompiledChart, step: Step) -> str:
    words = ["=" if step.target == step.source else table.states[step.target]]
    if step.refusal is not None:
        words.append(f"!{step.refusal.name}")
    if step.ignored:
        words.append("~")
    words += [f"?{check.name}" for check in step.checks]
    words += [f"+{effect.name}" for effect in step.effects]
    return " ".join(words)


def decode(entry: tuple[str, str, tuple[str, ...], tuple[str, ...]], order: str) -> CompiledChart:
    """The table of `order` from its generated form (see `generated_source`)."""
    name, complete, names, rows = entry
    states = tuple(row.partition(": ")[0] for row in rows)
    index = {state: position for position, state in enumerate(states)}
    return CompiledChart(
        name=name,
        order=HandoffOrder(order),
        states=states,
        names=names,
        rows=tuple(_decode_row(position, row, index) for position, row in enumerate(rows)),
        complete=frozenset(index[state] for state in complete.split()),
    )


def _decode_row(source: int, row: str, index: dict[str, int]) -> tuple[Step, ...]:
    tokens = row.partition(": ")[2].split(_SEPARATOR)
    return tuple(
        _decode_step(source, event, token.split(), index)
        for event, token in zip(ChartEvent, tokens, strict=True)
    )


def _decode_step(source: int, event: ChartEvent, words: list[str], index: dict[str, int]) -> Step:
    target = source if words[0] == "=" else index[words[0]]
    marks = words[1:]
    refusals = [Refusal[word[1:]] for word in marks if word[0] == "!"]
    return Step(
        source=source,
        event=event,
        target=target,
        refusal=refusals[0] if refusals else None,
        ignored="~" in marks,
        checks=tuple(Check[word[1:]] for word in marks if word[0] == "?"),
        effects=tuple(Effect[word[1:]] for word in marks if word[0] == "+"),
    )

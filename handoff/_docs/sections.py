"""The generated tables of the docs: ordering rules, lifecycle milestones, the error catalogue.

Each section is Markdown read off the compiled charts, the journal's vocabulary and the
error hierarchy, so the docs cannot drift from the code.  `handoff._docs.generated` puts
them in place between their markers.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Mapping

import handoff
import handoff._values.errors
from handoff._chart.vocabulary import IGNORE, ChartEvent, Check, Effect, EventKind, Refusal
from handoff._compile.table import CompiledChart, Step, compiled
from handoff._coordinator.binding import ACKNOWLEDGEMENTS, FACT_EVENTS, LIFECYCLE
from handoff._docs.diagram import file_stem
from handoff._values.errors import (
    AdapterRefusal,
    ConcurrentCallError,
    ConformanceError,
    HandoffError,
)
from handoff._values.lifecycle import NormalizedHandoffEvent, expected_normalized_handoff
from handoff._values.messages import HandoffAction
from handoff._values.values import HandoffCompletion, HandoffOrder

__all__ = [
    "NON_CHART_PHRASES",
    "acknowledged",
    "chart_words",
    "error_catalogue",
    "error_classes",
    "ignored",
    "lifecycle_of",
    "lifecycle_tables",
    "ordering_rules",
    "phrases",
    "refusals",
    "transitions",
    "transitions_table",
]

NON_CHART_PHRASES: tuple[tuple[str, type[HandoffError]], ...] = (
    *((refusal.phrase, refusal.error) for refusal in AdapterRefusal),
    ("the coordinator is already running a call", ConcurrentCallError),
    ("normalized handoff order mismatch", ConformanceError),
    ("normalized handoff lifecycle mismatch", ConformanceError),
    ("normalized handoff output/completion counts do not match the fixture", ConformanceError),
    ("normalized handoff destination KV visibility is invalid", ConformanceError),
    ("normalized handoff did not drain", ConformanceError),
)
"""Error phrases raised outside the charts (the contract's transfer delay, coordinator and
conformance sections), with the class raising each."""


def ordering_rules() -> dict[str, str]:
    """The sections of `docs/ordering-rules.md`: the events, then each order's rule tables."""
    found = {"events": _events()}
    for order in HandoffOrder:
        stem = file_stem(order)
        chart = compiled(order)
        found[f"{stem}.transitions"] = transitions_table(chart)
        found[f"{stem}.refusals"] = _refusals(chart)
        found[f"{stem}.ignored"] = _ignored(chart)
        found[f"{stem}.acknowledged"] = _acknowledged(chart)
    return found


def lifecycle_tables() -> dict[str, str]:
    """The tables of `docs/lifecycle.md` (its diagrams are the diagram files themselves)."""
    return {"lifecycle.milestones": _milestones(), "lifecycle.expected": _expected_lifecycles()}


def error_catalogue() -> dict[str, str]:
    """The section of `docs/errors.md`."""
    return {"errors": _errors()}


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    heading = list(header)
    lines = ["| " + " | ".join(heading) + " |", "|" + "---|" * len(heading)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _code(words: Iterable[str]) -> str:
    return ", ".join(f"`{word}`" for word in words) or "—"


# Which call makes each event, for the events that no journal table names.
_OTHER_CALLS: Mapping[ChartEvent, str] = {
    ChartEvent.START: "`start()`",
    ChartEvent.UNKNOWN_ACTION: "an outcome for an id the journal does not hold",
    ChartEvent.CONFLICTING_OUTCOME: "an outcome that differs from the one already journaled",
    ChartEvent.CLEANUP_ACTION_FAILED: "`failed(…)` for `CancelSource` or `CancelDestination`",
    ChartEvent.MISMATCHED_OUTCOME: "an outcome that does not fit its action",
    ChartEvent.DUPLICATE_OUTCOME: "the outcome already journaled for that id, again",
}


def _calls(event: ChartEvent) -> str:
    facts = [f"`{fact.__name__}`" for fact, made in FACT_EVENTS.items() if made is event]
    if facts:
        return "`on_fact(…)` with " + " or ".join(facts)
    kinds: dict[type, list[str]] = {}
    for (action, kind), made in ACKNOWLEDGEMENTS.items():
        if made is event:
            kinds.setdefault(action, []).append(
                "failed(…)" if kind.name == "FAILED" else kind.value
            )
    actions: dict[tuple[str, ...], list[str]] = {}
    for action, names in kinds.items():
        actions.setdefault(tuple(names), []).append(f"`{action.__name__}`")
    if actions:
        return "`on_action_outcome(…)`: " + "; ".join(
            " or ".join(f"`{name}`" for name in names) + " for " + ", ".join(acting)
            for names, acting in actions.items()
        )
    return _OTHER_CALLS[event]


def _events() -> str:
    """Every chart event, its kind and the call that makes it."""
    rows = [[f"`{event.value}`", event.kind.value, _calls(event)] for event in ChartEvent]
    return _table(["Event", "Kind", "Made by"], rows)


def lifecycle_of(step: Step) -> list[NormalizedHandoffEvent]:
    """The lifecycle events `step` records."""
    recorded = [LIFECYCLE[step.event]] if step.event in LIFECYCLE else []
    if step.completion is HandoffCompletion.SUCCESS:
        recorded.append(NormalizedHandoffEvent.COMPLETED)
    return recorded


def _lifecycle_of(step: Step) -> str:
    return _code(event.value for event in lifecycle_of(step))


def transitions_table(chart: CompiledChart) -> str:
    """Every step that moves or issues something, state by state."""
    rows = [
        [
            chart.names[step.source],
            f"`{step.event.value}`",
            _code(check.value for check in step.checks),
            chart.names[step.target],
            _code(effect.value for effect in step.effects),
            _lifecycle_of(step),
        ]
        for step in transitions(chart)
    ]
    header = ["State", "Event", "Check", "Next state", "Actions issued", "Lifecycle event"]
    return _table(header, rows)


def transitions(chart: CompiledChart) -> Iterator[Step]:
    """The steps the transition table lists: those that move or issue an action."""
    return _steps(chart, "moves")


def refusals(chart: CompiledChart) -> dict[tuple[ChartEvent, Refusal], list[int]]:
    """The states refusing each (event, refusal), in table order."""
    grouped: dict[tuple[ChartEvent, Refusal], list[int]] = {}
    for step in _steps(chart, "refused"):
        assert step.refusal is not None
        grouped.setdefault((step.event, step.refusal), []).append(step.source)
    return dict(sorted(grouped.items(), key=lambda item: item[0][0].index))


def _refusals(chart: CompiledChart) -> str:
    rows = [
        [
            f"`{event.value}`",
            ", ".join(chart.names[state] for state in states),
            f"`{refusal.phrase}`",
            f"`{refusal.error.__name__}`",
        ]
        for (event, refusal), states in refusals(chart).items()
    ]
    return _table(["Event", "Refused in", "Error phrase", "Error class"], rows)


def ignored(chart: CompiledChart) -> dict[int, list[ChartEvent]]:
    """The events each state drops without a trace."""
    return _by_state(chart, "ignored")


def acknowledged(chart: CompiledChart) -> dict[int, list[ChartEvent]]:
    """The acknowledgements each state journals without moving or issuing anything."""
    return _by_state(chart, "stays")


def _ignored(chart: CompiledChart) -> str:
    return _state_list(chart, ignored(chart), lambda event: f"`{event.value}`")


def _acknowledged(chart: CompiledChart) -> str:
    def describe(event: ChartEvent) -> str:
        recorded = LIFECYCLE.get(event)
        suffix = f" (records `{recorded.value}`)" if recorded is not None else ""
        return f"`{event.value}`{suffix}"

    return _state_list(chart, acknowledged(chart), describe)


def _state_list(
    chart: CompiledChart,
    by_state: Mapping[int, list[ChartEvent]],
    describe: Callable[[ChartEvent], str],
) -> str:
    return "\n".join(
        f"- **{chart.names[state]}**: " + ", ".join(describe(event) for event in events)
        for state, events in by_state.items()
    )


def _steps(chart: CompiledChart, kind: str) -> Iterator[Step]:
    """The steps of `chart` of one `Step.kind`, in table order."""
    return (step for step in chart.steps() if step.kind == kind)


def _by_state(chart: CompiledChart, kind: str) -> dict[int, list[ChartEvent]]:
    grouped: dict[int, list[ChartEvent]] = {}
    for step in _steps(chart, kind):
        grouped.setdefault(step.source, []).append(step.event)
    return grouped


def _expected_lifecycles() -> str:
    rows = [
        [f"`{order.name}`", " → ".join(f"`{e.value}`" for e in expected_normalized_handoff(order))]
        for order in HandoffOrder
    ]
    return _table(["Order", "`expected_normalized_handoff(order)`"], rows)


def _milestones() -> str:
    rows = [
        [f"`{milestone.value}`", f"`{event.value}` is taken ({_calls(event)})"]
        for event, milestone in LIFECYCLE.items()
    ]
    rows.append(
        [f"`{NormalizedHandoffEvent.COMPLETED.value}`", "the handoff completes with `SUCCESS`"]
    )
    return _table(["Milestone", "Recorded when"], rows)


# -- the words a chart is written in ------------------------------------------------------


def chart_words() -> dict[str, str]:
    """The sections of `docs/writing-a-chart.md`: every word a chart may use, and the events."""
    return {"chart.words": _words(), "chart.events": _event_kinds()}


def _words() -> str:
    rows = []
    for effect in Effect:
        if effect.completion is None:
            action = "".join(part.title() for part in effect.value.split("_"))
            assert hasattr(HandoffAction, action), effect  # the action an effect is named after
            rows.append([f"`{effect.value}`", "`on=`", f"issues `{action}`"])
        else:
            said = f"issues `Complete` and completes `{effect.completion.name}`"
            rows.append([f"`{effect.value}`", "`enter=` of a state", said])
    for check in Check:
        rows.append([f"`{check.value}`", "`validators=`", _CHECKS[check]])
    for refusal in Refusal:
        said = f"raises `{refusal.error.__name__}`: {refusal.phrase}"
        rows.append([f"`refused(Refusal.{refusal.name}, …)`", "an event's rules", said])
    rows.append([f"`ignored(…)` (`on={IGNORE!r}`)", "an event's rules", "drops the call"])
    rows.append(["`acknowledged(…)`", "an event's rules", "journals the outcome, stays put"])
    return _table(["Word", "Written as", "Does"], rows)


_CHECKS = {
    Check.TRANSFER_TIMING_IS_VALID: "refuses a `SourceHeld` whose bandwidth is NaN, infinite or "
    "negative, or whose full-prompt delay overflows",
    Check.TRANSFER_DELAY_IS_VALID: "refuses the fact that makes `StartTransfer` due when its "
    "delay is not finite and non-negative",
}


def _event_kinds() -> str:
    rows = [
        [
            kind.value,
            _code(event.value for event in ChartEvent if event.kind is kind),
            _UNSAID[kind],
        ]
        for kind in EventKind
    ]
    return _table(["Kind", "Events", "Where the chart says nothing"], rows)


_UNSAID = {
    EventKind.FACT: "dropped (a repeat, or too late to matter)",
    EventKind.ACKNOWLEDGEMENT: "journaled without moving; dropped once complete",
    EventKind.JOURNAL_ERROR: "refused with the journal's error while live; dropped once complete",
    EventKind.DUPLICATE: "dropped",
}


# -- the error catalogue ------------------------------------------------------------------


def error_classes() -> list[type[HandoffError]]:
    """`HandoffError` and every subclass defined in `handoff._values.errors` or a public module.

    Public modules (`handoff.wire`, …) are found on disk, so the catalogue does not depend
    on what happens to have been imported.
    """
    public = sorted(
        info.name
        for info in pkgutil.iter_modules(handoff.__path__)
        if not info.name.startswith("_")
    )
    modules = [handoff._values.errors] + [
        importlib.import_module(f"handoff.{name}") for name in public
    ]
    found = {
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, HandoffError)
        and value.__module__ in ("handoff", module.__name__)
    }
    return sorted(found, key=lambda cls: (cls is not HandoffError, cls.__name__))


def phrases(error: type[HandoffError]) -> list[str]:
    """The phrases `error` is raised with: chart refusals first, then the others."""
    found = [refusal.phrase for refusal in Refusal if refusal.error is error]
    return found + [phrase for phrase, raised in NON_CHART_PHRASES if raised is error]


def _first_paragraph(error: type[HandoffError]) -> str:
    return " ".join((inspect.getdoc(error) or "").split("\n\n")[0].split())


def _errors() -> str:
    rows = [
        [f"`{error.__name__}`", _first_paragraph(error), _code(phrases(error))]
        for error in error_classes()
    ]
    return _table(["Error", "Raised when", "Message phrases"], rows)

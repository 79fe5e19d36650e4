"""The properties a model review checks, its verdicts, and the judgments over the whole graph.

Most properties are judged call by call while the review explores (the monitors of
`handoff._review.environment`, counted in a `Tally`). Three need the whole explored graph: L1
and L2 walk it backwards from the completions, and Coverage compares what ran with what the
chart declares.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence

import attrs

from handoff._messages import IssuedHandoffAction
from handoff._review.environment import MAX_ACTIONS, Call, CallKind, Phase, Watch, fits
from handoff._table import CompiledChart, Step
from handoff._vocabulary import EventKind

__all__ = [
    "PROPERTIES",
    "Counterexample",
    "Edge",
    "Graph",
    "Parents",
    "Property",
    "Tag",
    "Tally",
    "TraceStep",
    "Verdict",
    "cancellation",
    "coverage",
    "progress",
    "tag",
]


@attrs.frozen
class Property:
    """One property the review checks: `title` for tables, `words` for the report."""

    key: str
    title: str
    words: str
    unit: str
    """What the `checked` count of a verdict counts."""


PROPERTIES = (
    Property(
        "S1",
        "activate only after the transfer completed",
        "`ActivateDestination` is issued only after the environment reported `TransferCompleted` "
        "for a transfer it had acknowledged `SCHEDULED`.",
        "ActivateDestination",
    ),
    Property(
        "S2",
        "release only after the activation applied",
        "`ReleaseSource` is issued only after `ActivateDestination` was acknowledged `APPLIED`.",
        "ReleaseSource",
    ),
    Property(
        "S3",
        "transfer only when held, reserved, finite",
        "`StartTransfer` is issued only once the source is held (`SourceHeld` after "
        "`SubmitPrefill` was acknowledged `SUBMITTED`) and the destination reserved "
        "(`DestinationReserved` after `ReserveDestination` was acknowledged `ACCEPTED`), with a "
        "finite, non-negative delay.",
        "StartTransfer",
    ),
    Property(
        "S4",
        "one Complete per completion",
        "Each completion issues one `Complete`; after it nothing is issued except the "
        "`CancelDestination` of a cleanup reopened by a terminal fact after success, and that "
        "cleanup's own `Complete`.",
        "calls at or after a completion",
    ),
    Property(
        "S5",
        "no leaked KV or slot on cancel",
        "When a handoff completes CANCELED, every `SubmitPrefill` got a `ReleaseSource` or "
        "`CancelSource`, and every `ReserveDestination` a `CancelDestination`, issued and "
        "acknowledged `APPLIED` or `NOOP`.",
        "CANCELED completions",
    ),
    Property(
        "S6",
        "refused calls change nothing",
        "A call that raises `HandoffError` leaves the coordinator's configuration unchanged.",
        "refused calls",
    ),
    Property(
        "S7",
        "action ids count up by one",
        "Issued action ids are 0, 1, 2, … in issue order, each one more than the last.",
        "actions",
    ),
    Property(
        "L1",
        "a cooperative environment completes",
        "From every reachable configuration a completion is reachable when the environment "
        "cooperates: it acknowledges actions with fitting outcomes and reports `SourceHeld`, "
        "`DestinationReserved` and `TransferCompleted` with usable payloads (no deadlock, no "
        "livelock).  Configurations reachable only through an accepted unusable payload are "
        "left to L2 and counted apart.",
        "configurations",
    ),
    Property(
        "L2",
        "a terminal fact leads to CANCELED",
        "From every configuration that has not completed CANCELED, each terminal fact "
        "(`Failed`, `TimedOut`, `Canceled`) followed by fitting acknowledgements alone reaches a "
        "CANCELED completion, including after a success (the reopened cleanup).",
        "configurations",
    ),
    Property(
        "L3",
        "success records the expected lifecycle",
        "Every SUCCESS completion has recorded exactly `expected_normalized_handoff(order)`.",
        "SUCCESS completions",
    ),
    Property(
        "Coverage",
        "every state and declared transition runs",
        "Every chart state is reached and every transition the chart declares (a move, an issuing "
        "step or a refusal) is taken by some run; a dead one is a failure.",
        "states and transitions",
    ),
    Property(
        "Bound",
        f"every run issues at most {MAX_ACTIONS} actions",
        f"No run issues more than {MAX_ACTIONS} actions, so the exploration above is exhaustive.",
        "actions at most in one run",
    ),
    Property(
        "Errors",
        "only HandoffError escapes",
        "Every call returns actions or raises `HandoffError`; any other exception is a failure.",
        "calls",
    ),
)


# -- results -------------------------------------------------------------------------------


@attrs.frozen
class TraceStep:
    """One call of a counterexample and what it did."""

    call: Call
    state: str
    """The chart state id after the call."""
    issued: tuple[IssuedHandoffAction, ...] = ()
    error: str | None = None
    """The message of the exception the call raised, if it raised."""


@attrs.frozen
class Counterexample:
    """A shortest run that breaks a property."""

    steps: tuple[TraceStep, ...]
    finding: str


@attrs.frozen
class Verdict:
    """One property's result for one chart."""

    prop: Property
    checked: int
    violations: int
    counterexample: Counterexample | None = None
    summary: str = ""
    """What was checked, when a count and the property's unit do not say it well."""
    notes: tuple[str, ...] = ()
    """What a reviewer should know besides the verdict (e.g. the dead transitions)."""

    @property
    def holds(self) -> bool:
        """Whether the property holds."""
        return self.violations == 0


# -- counting checks -----------------------------------------------------------------------

Parents = Sequence[tuple[int, TraceStep] | None]
"""For each configuration, the configuration and the call that first reached it (None: root)."""


def _path(parents: Parents, node: int) -> list[TraceStep]:
    """The run that first reached configuration `node`."""
    steps: list[TraceStep] = []
    link = parents[node]
    while link is not None:
        node, edge = link
        steps.append(edge)
        link = parents[node]
    steps.reverse()
    return steps


@attrs.define
class Tally:
    """How often one property was checked and broken, and its first (so shortest) violation."""

    checked: int = 0
    violations: int = 0
    first: Counterexample | None = None

    def note(
        self, finding: str | None, parents: Parents, node: int, edge: TraceStep | None = None
    ) -> None:
        """Count a check at `node` (after `edge`, if any); keep the first failure."""
        self.checked += 1
        if finding is None:
            return
        self.violations += 1
        if self.first is None:
            run = _path(parents, node) + ([edge] if edge is not None else [])
            self.first = Counterexample(tuple(run), finding)

    def verdict(
        self,
        prop: Property,
        *,
        checked: int | None = None,
        summary: str = "",
        notes: tuple[str, ...] = (),
    ) -> Verdict:
        """The verdict these checks give `prop`; `checked` overrides the count of checks."""
        checked = self.checked if checked is None else checked
        return Verdict(prop, checked, self.violations, self.first, summary, notes)


# -- the explored graph, and the liveness properties ---------------------------------------


class Tag(enum.IntFlag):
    """What kind of environment move an edge is, for the liveness properties."""

    NONE = 0
    COOPERATIVE = enum.auto()
    ACKNOWLEDGEMENT = enum.auto()
    TERMINAL = enum.auto()
    UNUSABLE = enum.auto()
    """An unusable payload the coordinator accepted."""


Edge = tuple[TraceStep, int, Tag]
"""What a call did, the configuration it led to (-1: cut off or crashed) and its tags."""


def tag(call: Call, watch: Watch, *, accepted: bool) -> Tag:
    """The kind of move `call` is from a configuration the environment saw as `watch`."""
    if call.kind is CallKind.OUTCOME:
        assert call.outcome is not None
        if fits(watch.action(call.action_id), call.outcome):
            return Tag.COOPERATIVE | Tag.ACKNOWLEDGEMENT
        return Tag.NONE
    if call.terminal:
        return Tag.TERMINAL
    if not call.usable:
        return Tag.UNUSABLE if accepted and call.fact is not None else Tag.NONE
    return Tag.COOPERATIVE


@attrs.frozen
class Graph:
    """Every explored configuration (by what the environment saw) and the moves between them."""

    watches: Sequence[Watch]
    edges: Sequence[Sequence[Edge]]
    """`edges[node]`: every call the environment may make from configuration `node`."""
    parents: Parents


def progress(prop: Property, graph: Graph) -> Verdict:
    """L1: cooperation completes from every configuration reached with usable payloads."""
    done = [watch.phase in (Phase.DONE, Phase.DONE_AGAIN) for watch in graph.watches]
    can_complete = _backward(graph, done, Tag.COOPERATIVE)
    order, parents = _usable_reach(graph)
    tally = Tally()
    for node in order:
        finding = None
        if not can_complete[node]:
            finding = "from here no cooperative continuation reaches a completion"
        tally.note(finding, parents, node)
    summary = f"{len(order):,} of {len(graph.watches):,} configurations"
    notes: tuple[str, ...] = ()
    apart = len(graph.watches) - len(order)
    if apart:
        notes = (
            f"{apart} configurations reachable only through an accepted unusable payload "
            "wait for a terminal fact; L2 covers them",
        )
    return tally.verdict(prop, summary=summary, notes=notes)


def cancellation(prop: Property, graph: Graph) -> Verdict:
    """L2: a terminal fact, then acknowledgements alone, reach a CANCELED completion."""
    canceled = [watch.completed_canceled for watch in graph.watches]
    can_cancel = _backward(graph, canceled, Tag.ACKNOWLEDGEMENT)
    tally = Tally()
    for node, edges in enumerate(graph.edges):
        if canceled[node]:
            continue
        stuck = [
            edge
            for edge, target, tags in edges
            if tags & Tag.TERMINAL and not (target >= 0 and can_cancel[target])
        ]
        if stuck:
            finding = f"after {stuck[0].call} no acknowledgements lead to a CANCELED completion"
            tally.note(finding, graph.parents, node, stuck[0])
        else:
            tally.note(None, graph.parents, node)
    return tally.verdict(prop)


def _backward(graph: Graph, targets: list[bool], tag: Tag) -> list[bool]:
    """Which configurations reach a target along edges carrying `tag`."""
    incoming: list[list[int]] = [[] for _ in graph.watches]
    for source, edges in enumerate(graph.edges):
        for _edge, target, tags in edges:
            if tags & tag and target >= 0 and target != source:
                incoming[target].append(source)
    reached = list(targets)
    queue = deque(node for node, hit in enumerate(targets) if hit)
    while queue:
        for source in incoming[queue.popleft()]:
            if not reached[source]:
                reached[source] = True
                queue.append(source)
    return reached


def _usable_reach(graph: Graph) -> tuple[list[int], list[tuple[int, TraceStep] | None]]:
    """Configurations reachable without accepted unusable payloads, breadth-first."""
    parents: list[tuple[int, TraceStep] | None] = [None] * len(graph.watches)
    order = [0]
    visited = {0}
    for node in order:  # grows while it is walked: breadth-first
        for edge, target, tags in graph.edges[node]:
            if target >= 0 and target not in visited and not tags & Tag.UNUSABLE:
                visited.add(target)
                parents[target] = (node, edge)
                order.append(target)
    return order, parents


# -- coverage ------------------------------------------------------------------------------


def coverage(
    prop: Property,
    chart: CompiledChart,
    covered_states: set[int],
    covered_steps: set[tuple[int, int]],
) -> Verdict:
    """Coverage: every state was reached and every declared transition taken.

    `covered_steps` holds the (state, event index) cells some accepted or refused call took.
    """
    states = range(len(chart.states))
    dead = [f"state {chart.states[s]}" for s in states if s not in covered_states]
    transitions = _transitions(chart).values()
    unused: list[str] = []
    for cells in transitions:
        missed = [cell for cell in cells if (cell.source, cell.event.index) not in covered_steps]
        if len(missed) == len(cells):
            dead.append(_describe(chart, cells))
        else:
            unused += [f"{chart.states[cell.source]} {cell.event.value}" for cell in missed]
    covered = len(transitions) - len(dead) + len(states) - len(covered_states)
    summary = (
        f"{len(covered_states)}/{len(states)} states, {covered}/{len(transitions)} transitions"
    )
    notes = []
    if dead:
        notes.append("dead: " + ", ".join(dead))
    if unused:
        notes.append("cells taken only through a sibling event: " + ", ".join(unused))
    checked = len(states) + len(transitions)
    return Verdict(prop, checked, len(dead), None, summary, tuple(notes))


def _transitions(chart: CompiledChart) -> dict[tuple[object, ...], list[Step]]:
    """The transitions the chart declares, each with the table cells it fills.

    One declared transition may carry several events (`terminated = action_failed = …`):
    it fills one cell per event, all with the same behaviour, and is taken when any is.
    """
    transitions: dict[tuple[object, ...], list[Step]] = {}
    for step in chart.steps():
        if _declared(step):
            behaviour = (step.source, step.target, step.refusal, step.checks, step.effects)
            transitions.setdefault(behaviour, []).append(step)
    return transitions


def _declared(step: Step) -> bool:
    """A step the chart states itself, as opposed to its event kind's default."""
    if step.kind == "refused":
        return step.event.kind is EventKind.FACT
    # Not `step.kind == "moves"`: a hand-written ignored step that moves, issues or checks is
    # of kind "ignored", yet the chart declared it.
    return step.target != step.source or bool(step.effects) or bool(step.checks)


def _describe(chart: CompiledChart, cells: Sequence[Step]) -> str:
    step = cells[0]
    source, target = chart.states[step.source], chart.states[step.target]
    events = "|".join(cell.event.value for cell in cells)
    if step.kind == "refused":
        return f"{source} refuses {events}"
    return f"{source} --{events}--> {target}"

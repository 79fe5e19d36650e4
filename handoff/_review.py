"""Model review: explore every reachable configuration of a coordinator and check it.

The environment is nondeterministic.  From every configuration it may call `start()`, report
any fact (with a usable payload, with an unusable one, or for another handoff) and acknowledge
every action id issued so far, and one never issued, with every kind of outcome.  A
configuration is the coordinator's `_configuration()` together with a `Watch`: what the
environment itself has seen.  The safety monitors read only the watch, the call and the
actions it issued, never the coordinator's records, so a broken chart cannot vouch for itself.

The space is finite because a run of the real charts issues at most eight actions (five
steps, `Complete`, a reopened `CancelDestination` and its `Complete`); runs issuing more than
`MAX_ACTIONS` are cut off and reported (property "Bound"), so a review never claims more than
it explored.  Exploration is breadth-first, so each counterexample is a shortest one.
"""

from __future__ import annotations

import enum
import math
import time
import uuid
from collections import deque
from collections.abc import Iterator, Sequence

import attrs

from handoff._conformance import expected_normalized_handoff
from handoff._coordinator import HandoffCoordinatorCore
from handoff._errors import HandoffError
from handoff._journal import FACT_EVENTS
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._table import CompiledChart, Step, compiled
from handoff._timing import HandoffTransferTiming
from handoff._values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
    OutcomeKind,
)
from handoff._vocabulary import ChartEvent, EventKind

__all__ = [
    "HANDOFF_ID",
    "MAX_ACTIONS",
    "PROPERTIES",
    "Call",
    "CallKind",
    "Counterexample",
    "Environment",
    "Finding",
    "OrderReview",
    "Phase",
    "Property",
    "Seen",
    "TraceStep",
    "Verdict",
    "Watch",
    "environment",
    "fits",
    "observe",
    "replay",
    "review",
    "review_order",
]

MAX_ACTIONS = 16
"""Runs issuing more actions than this are cut off (the real charts issue at most nine)."""

_MAX_CONFIGURATIONS = 200_000
"""A last guard against a chart whose space is far larger than any handoff needs."""

HANDOFF_ID = HandoffId(uuid.UUID(int=1))
_OTHER_HANDOFF_ID = HandoffId(uuid.UUID(int=2))

# DESTINATION_MISSING mode with a vanishing bandwidth: one missing token is modelled at 1e298 ms
# (finite, so usable), while 2**64 - 1 missing tokens overflow the delay to inf.
_TIMING = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 1, 1, 1e-304)
_BAD_BANDWIDTH = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 1, 1, -1.0)
_TOKENS = 1
_OVERFLOWING_TOKENS = 2**64 - 1

_A = HandoffAction
_O = HandoffActionOutcome
_OUTCOMES = (_O.SUBMITTED, _O.ACCEPTED, _O.SCHEDULED, _O.APPLIED, _O.NOOP, _O.failed("x"))
_TERMINAL = (HandoffFact.Failed, HandoffFact.TimedOut, HandoffFact.Canceled)
_CANCELS = (_A.CancelSource, _A.CancelDestination)


# -- the properties ------------------------------------------------------------------------


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

# -- the environment -----------------------------------------------------------------------


class CallKind(enum.Enum):
    """Which coordinator method a call invokes."""

    START = "start"
    FACT = "fact"
    OUTCOME = "outcome"


@attrs.frozen
class Call:
    """One thing the environment does to a coordinator."""

    kind: CallKind
    label: str
    fact: HandoffFact | None = None
    action_id: HandoffActionId | None = None
    outcome: HandoffActionOutcome | None = None
    usable: bool = True
    """Whether a cooperating environment would report this payload."""
    terminal: bool = False
    """A `Failed`, `TimedOut` or `Canceled` fact for this handoff."""

    def send(self, coordinator: HandoffCoordinatorCore) -> list[IssuedHandoffAction]:
        """Make the call; returns what the coordinator issued (or raises)."""
        if self.fact is not None:
            return coordinator.on_fact(self.fact)
        if self.outcome is not None:
            assert self.action_id is not None
            return coordinator.on_action_outcome(self.action_id, self.outcome)
        return coordinator.start()

    def __str__(self) -> str:
        return self.label


@attrs.frozen
class Environment:
    """Every call the environment may make, for one handoff id."""

    handoff_id: HandoffId
    start: Call
    facts: tuple[Call, ...]
    outcomes: tuple[tuple[Call, ...], ...]
    """`outcomes[action_id]`: that id acknowledged with each kind of outcome."""

    def calls(self, next_id: int) -> Iterator[Call]:
        """The calls from a configuration whose next action id is `next_id`."""
        yield self.start
        yield from self.facts
        for action_id in range(min(next_id, MAX_ACTIONS) + 1):
            yield from self.outcomes[action_id]


def environment(handoff_id: HandoffId = HANDOFF_ID) -> Environment:
    """The nondeterministic environment of one handoff."""
    facts = (
        _fact(HandoffFact.SourceHeld(handoff_id, _TIMING), "SourceHeld(valid timing)"),
        _fact(
            HandoffFact.SourceHeld(handoff_id, _BAD_BANDWIDTH),
            "SourceHeld(bandwidth -1.0 GB/s)",
            usable=False,
        ),
        _fact(
            HandoffFact.DestinationReserved(handoff_id, _TOKENS), f"DestinationReserved({_TOKENS})"
        ),
        _fact(
            HandoffFact.DestinationReserved(handoff_id, _OVERFLOWING_TOKENS),
            f"DestinationReserved({_OVERFLOWING_TOKENS}: the delay overflows)",
            usable=False,
        ),
        _fact(HandoffFact.TransferCompleted(handoff_id), "TransferCompleted"),
        *(_fact(kind(handoff_id), kind.__name__, terminal=True) for kind in _TERMINAL),
        _fact(HandoffFact.Failed(_OTHER_HANDOFF_ID), "Failed(another handoff)", usable=False),
    )
    outcomes = tuple(
        tuple(
            Call(
                CallKind.OUTCOME,
                f"on_action_outcome({action_id}, {outcome})",
                action_id=HandoffActionId(action_id),
                outcome=outcome,
            )
            for outcome in _OUTCOMES
        )
        for action_id in range(MAX_ACTIONS + 1)
    )
    return Environment(handoff_id, Call(CallKind.START, "start()"), facts, outcomes)


def _fact(fact: HandoffFact, label: str, *, usable: bool = True, terminal: bool = False) -> Call:
    return Call(CallKind.FACT, f"on_fact({label})", fact=fact, usable=usable, terminal=terminal)


# -- what the environment has seen, and the safety monitors ---------------------------------


class Seen(enum.Flag):
    """What the environment has established by its own calls."""

    NOTHING = 0
    SUBMITTED = enum.auto()
    SOURCE_HELD = enum.auto()
    ACCEPTED = enum.auto()
    RESERVED = enum.auto()
    SCHEDULED = enum.auto()
    TRANSFERRED = enum.auto()
    ACTIVATED = enum.auto()
    SOURCE_FREED = enum.auto()
    DESTINATION_FREED = enum.auto()
    CANCELING = enum.auto()
    """A terminal fact or a failure was accepted: the next completion must be CANCELED."""


class Phase(enum.Enum):
    """Where the handoff is, judged by the `Complete` actions the environment received."""

    LIVE = "live"
    DONE = "done"
    REOPENED = "reopened"
    DONE_AGAIN = "done again"


@attrs.frozen
class Watch:
    """The environment's own record of a run: enough to judge every issued action."""

    issued: tuple[tuple[int, type[HandoffAction]], ...] = ()
    seen: Seen = Seen.NOTHING
    phase: Phase = Phase.LIVE
    succeeded: bool = False
    """The first completion was a success (nothing had been canceled)."""
    reopened: int | None = None
    """The id of the `CancelDestination` that reopened a successful handoff."""

    @property
    def next_id(self) -> int:
        """The id the next issued action must carry."""
        return self.issued[-1][0] + 1 if self.issued else 0

    def action(self, action_id: HandoffActionId | None) -> type[HandoffAction] | None:
        """The kind of action the environment received under `action_id`, if any."""
        for known, action in self.issued:
            if action_id is not None and known == action_id.value:
                return action
        return None

    @property
    def completed_canceled(self) -> bool:
        """The latest completion the environment received was CANCELED."""
        return self.phase is Phase.DONE_AGAIN or (self.phase is Phase.DONE and not self.succeeded)


_DONE = (OutcomeKind.APPLIED, OutcomeKind.NOOP)
_ACKNOWLEDGED: dict[tuple[type[HandoffAction], OutcomeKind], Seen] = {
    (_A.SubmitPrefill, OutcomeKind.SUBMITTED): Seen.SUBMITTED,
    (_A.ReserveDestination, OutcomeKind.ACCEPTED): Seen.ACCEPTED,
    (_A.StartTransfer, OutcomeKind.SCHEDULED): Seen.SCHEDULED,
    (_A.ActivateDestination, OutcomeKind.APPLIED): Seen.ACTIVATED,
    **{(_A.ReleaseSource, kind): Seen.SOURCE_FREED for kind in _DONE},
    **{(_A.CancelSource, kind): Seen.SOURCE_FREED for kind in _DONE},
    **{(_A.CancelDestination, kind): Seen.DESTINATION_FREED for kind in _DONE},
}
"""What a fitting acknowledgement establishes; these pairs are exactly the fitting ones."""

_REPORTED: dict[type[HandoffFact], tuple[Seen, Seen]] = {
    HandoffFact.SourceHeld: (Seen.SUBMITTED, Seen.SOURCE_HELD),
    HandoffFact.DestinationReserved: (Seen.ACCEPTED, Seen.RESERVED),
    HandoffFact.TransferCompleted: (Seen.SCHEDULED, Seen.TRANSFERRED),
}
"""A fact establishes the second sign when reported after the first was established."""

_NEEDS: dict[type[HandoffAction], tuple[str, tuple[tuple[Seen, str], ...]]] = {
    _A.ActivateDestination: ("S1", ((Seen.TRANSFERRED, "a scheduled transfer was reported done"),)),
    _A.ReleaseSource: ("S2", ((Seen.ACTIVATED, "ActivateDestination was acknowledged APPLIED"),)),
    _A.StartTransfer: (
        "S3",
        (
            (Seen.SOURCE_HELD, "the source was held"),
            (Seen.RESERVED, "the destination was reserved"),
        ),
    ),
}
"""The property guarding an action, and what the environment must have established first."""

Finding = tuple[str, str | None]
"""A property key and what broke it, or None when the property was checked and held."""


def fits(action: type[HandoffAction] | None, outcome: HandoffActionOutcome) -> bool:
    """Whether a cooperating environment would acknowledge `action` with `outcome`."""
    return action is not None and (action, outcome.kind) in _ACKNOWLEDGED


def observe(
    watch: Watch, call: Call, issued: Sequence[IssuedHandoffAction]
) -> tuple[Watch, list[Finding]]:
    """Judge what an accepted `call` issued; returns the new watch and every check made."""
    watch = attrs.evolve(watch, seen=_learn(watch, call))
    findings: list[Finding] = []
    if watch.phase is not Phase.LIVE:
        findings.append(("S4", None))
    for item in issued:
        findings += _judge(watch, call, item)
        watch = _record(watch, call, item)
    return watch, findings


def _learn(watch: Watch, call: Call) -> Seen:
    seen = watch.seen
    if call.terminal:
        if watch.phase is Phase.LIVE or (watch.phase is Phase.DONE and watch.succeeded):
            seen |= Seen.CANCELING
        return seen
    if watch.phase in (Phase.DONE, Phase.DONE_AGAIN):
        return seen
    if call.fact is not None:
        needed, gained = _REPORTED.get(type(call.fact), (Seen.NOTHING, Seen.NOTHING))
        return seen | gained if needed and needed in seen else seen
    action = watch.action(call.action_id)
    if call.outcome is None or action is None:
        return seen
    kind = call.outcome.kind
    seen |= _ACKNOWLEDGED.get((action, kind), Seen.NOTHING)
    if kind is OutcomeKind.FAILED and action not in _CANCELS and watch.phase is Phase.LIVE:
        seen |= Seen.CANCELING
    return seen


def _next_phase(watch: Watch, call: Call, action: HandoffAction) -> Phase | None:
    """The phase after `action` is issued, or None when S4 forbids issuing it."""
    completes = isinstance(action, _A.Complete)
    if watch.phase is Phase.LIVE:
        return Phase.DONE if completes else Phase.LIVE
    if watch.phase is Phase.DONE:
        reopens = isinstance(action, _A.CancelDestination) and watch.succeeded and call.terminal
        return Phase.REOPENED if reopens else None
    if watch.phase is Phase.REOPENED and completes:
        acknowledged = call.action_id is not None and call.action_id.value == watch.reopened
        if acknowledged and call.outcome is not None and call.outcome.kind in _DONE:
            return Phase.DONE_AGAIN
    return None


def _judge(watch: Watch, call: Call, item: IssuedHandoffAction) -> Iterator[Finding]:
    action = item.action
    name = type(action).__name__
    ok = item.id.value == watch.next_id
    yield "S7", None if ok else f"{name} got id {item.id.value}, expected {watch.next_id}"
    if isinstance(action, _A.Complete):
        yield "S4", None
    if _next_phase(watch, call, action) is None:
        yield "S4", f"{name} issued after the handoff completed"
    if type(action) in _NEEDS:
        yield _prerequisite(watch, action)
    if isinstance(action, _A.Complete) and Seen.CANCELING in watch.seen:
        yield "S5", _leak(watch)


def _prerequisite(watch: Watch, action: HandoffAction) -> Finding:
    key, needs = _NEEDS[type(action)]
    absent = [words for sign, words in needs if sign not in watch.seen]
    if absent:
        return key, f"{type(action).__name__} issued before {' and '.join(absent)}"
    if isinstance(action, _A.StartTransfer) and not 0 <= action.delay_ms < math.inf:
        return key, f"StartTransfer issued with a delay of {action.delay_ms} ms"
    return key, None


def _leak(watch: Watch) -> str | None:
    leaks = []
    for action_id, action in watch.issued:
        if action is _A.SubmitPrefill and Seen.SOURCE_FREED not in watch.seen:
            leaks.append(f"SubmitPrefill #{action_id} was never released or canceled (KV leaked)")
        if action is _A.ReserveDestination and Seen.DESTINATION_FREED not in watch.seen:
            leaks.append(f"ReserveDestination #{action_id} was never canceled (slot leaked)")
    return "; ".join(leaks) or None


def _record(watch: Watch, call: Call, item: IssuedHandoffAction) -> Watch:
    issued = (*watch.issued, (item.id.value, type(item.action)))
    phase = _next_phase(watch, call, item.action)
    if phase is None or phase is watch.phase:
        return attrs.evolve(watch, issued=issued)
    if phase is Phase.DONE:
        succeeded = Seen.CANCELING not in watch.seen
        return attrs.evolve(watch, issued=issued, phase=phase, succeeded=succeeded)
    reopened = item.id.value if phase is Phase.REOPENED else watch.reopened
    return attrs.evolve(watch, issued=issued, phase=phase, reopened=reopened)


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


@attrs.frozen
class OrderReview:
    """The review of one chart: how much was explored and each property's verdict."""

    order: HandoffOrder
    chart: CompiledChart
    handoff_id: HandoffId
    fallback_transfer_delay_ms: float
    configurations: int
    transitions: int
    verdicts: tuple[Verdict, ...]
    seconds: float

    @property
    def holds(self) -> bool:
        """Whether every property holds."""
        return all(verdict.holds for verdict in self.verdicts)

    def verdict(self, key: str) -> Verdict:
        """The verdict of the property named `key` ("S1", "L2", "Coverage", …)."""
        return next(verdict for verdict in self.verdicts if verdict.prop.key == key)

    def failures(self) -> tuple[Verdict, ...]:
        """The verdicts of the properties that do not hold."""
        return tuple(verdict for verdict in self.verdicts if not verdict.holds)


def replay(
    chart: CompiledChart,
    calls: Sequence[Call],
    *,
    handoff_id: HandoffId = HANDOFF_ID,
    fallback_transfer_delay_ms: float = 0.0,
) -> tuple[TraceStep, ...]:
    """Run `calls` on a fresh coordinator for `chart`, recording each call's effect."""
    coordinator = HandoffCoordinatorCore._for_chart(handoff_id, chart, fallback_transfer_delay_ms)
    steps = []
    for call in calls:
        try:
            issued, error = tuple(call.send(coordinator)), None
        except Exception as raised:  # a crash is part of the story a counterexample tells
            issued, error = (), _error(raised)
        steps.append(TraceStep(call, coordinator.chart_state, issued, error))
    return tuple(steps)


def review_order(order: HandoffOrder, fallback_transfer_delay_ms: float = 0.0) -> OrderReview:
    """Review the real chart of `order`."""
    return review(compiled(order), fallback_transfer_delay_ms=fallback_transfer_delay_ms)


def review(
    chart: CompiledChart,
    *,
    fallback_transfer_delay_ms: float = 0.0,
    handoff_id: HandoffId = HANDOFF_ID,
) -> OrderReview:
    """Explore every reachable configuration of a coordinator driven by `chart`; check it."""
    began = time.perf_counter()
    explorer = _Explorer(chart, environment(handoff_id), fallback_transfer_delay_ms)
    explorer.explore()
    verdicts = explorer.verdicts()
    return OrderReview(
        order=chart.order,
        chart=chart,
        handoff_id=handoff_id,
        fallback_transfer_delay_ms=fallback_transfer_delay_ms,
        configurations=len(explorer.watches),
        transitions=explorer.transitions,
        verdicts=verdicts,
        seconds=time.perf_counter() - began,
    )


# -- the exploration -----------------------------------------------------------------------


class _Tag(enum.IntFlag):
    """What kind of environment move an edge is, for the liveness properties."""

    NONE = 0
    COOPERATIVE = enum.auto()
    ACKNOWLEDGEMENT = enum.auto()
    TERMINAL = enum.auto()
    UNUSABLE = enum.auto()
    """An unusable payload the coordinator accepted."""


_Edge = tuple[TraceStep, int, _Tag]
"""What a call did, the configuration it led to (-1: cut off or crashed) and its tags."""


@attrs.define
class _Tally:
    checked: int = 0
    violations: int = 0
    first: tuple[tuple[TraceStep, ...], str] | None = None
    """The run and the finding of the first (so shortest) violation."""


class _Explorer:
    """Breadth-first exploration of one chart, keeping what the verdicts need."""

    def __init__(self, chart: CompiledChart, env: Environment, fallback: float) -> None:
        self.chart = chart
        self.env = env
        self.fallback = fallback
        self.state_index = {state: index for index, state in enumerate(chart.states)}
        self.expected = expected_normalized_handoff(chart.order)
        root = HandoffCoordinatorCore._for_chart(env.handoff_id, chart, fallback)
        self.coordinators = [root]
        self.configurations = [root._configuration()]
        self.watches = [Watch()]
        self.parents: list[tuple[int, TraceStep] | None] = [None]
        self.index = {(self.configurations[0], self.watches[0]): 0}
        self.edges: list[list[_Edge]] = []
        self.tallies = {prop.key: _Tally() for prop in PROPERTIES}
        self.covered_states = {self.state_index[root.chart_state]}
        self.covered_steps: set[tuple[int, int]] = set()
        self.transitions = 0
        self.longest_run = 0
        self.l1_notes: tuple[str, ...] = ()
        self.l1_summary = ""

    # -- walking --

    def explore(self) -> None:
        node = 0
        while node < len(self.watches):
            next_id = self.watches[node].next_id
            self.edges.append([self._try(node, call) for call in self.env.calls(next_id)])
            node += 1

    def _try(self, node: int, call: Call) -> _Edge:
        self.transitions += 1
        coordinator = self.coordinators[node]
        twin = coordinator._fork()
        step = self._step(coordinator, call)
        try:
            issued = tuple(call.send(twin))
        except HandoffError as error:
            return self._refused(
                node, TraceStep(call, twin.chart_state, (), _error(error)), twin, step
            )
        except Exception as error:
            edge = TraceStep(call, twin.chart_state, (), _error(error))
            self._note(node, edge, "Errors", edge.error)
            return edge, -1, _Tag.NONE
        edge = TraceStep(call, twin.chart_state, issued)
        self._note(node, edge, "Errors", None)
        if step is not None and step.refusal is None:
            self.covered_steps.add((step.source, step.event.index))
        watch = self.watches[node]
        after, findings = observe(watch, call, issued)
        for key, finding in findings:
            self._note(node, edge, key, finding)
        self._check_lifecycle(node, edge, twin, watch, after)
        tags = self._tags(call, watch, accepted=True)
        return edge, self._reach(node, edge, twin, after), tags

    def _refused(
        self, node: int, edge: TraceStep, twin: HandoffCoordinatorCore, step: Step | None
    ) -> _Edge:
        self._note(node, edge, "Errors", None)
        if step is not None and step.refusal is not None:
            self.covered_steps.add((step.source, step.event.index))
        changed = twin._configuration() != self.configurations[node]
        self._note(
            node, edge, "S6", "the refused call changed the coordinator" if changed else None
        )
        tags = self._tags(edge.call, self.watches[node], accepted=False)
        if not changed:
            return edge, node, tags
        return edge, self._reach(node, edge, twin, self.watches[node]), tags

    def _reach(self, node: int, edge: TraceStep, twin: HandoffCoordinatorCore, watch: Watch) -> int:
        """The index of the configuration (twin, watch), added when new; -1 when cut off."""
        issued = len(watch.issued)
        self.longest_run = max(self.longest_run, issued)
        if issued > MAX_ACTIONS or len(self.watches) >= _MAX_CONFIGURATIONS:
            self._note(node, edge, "Bound", f"cut off: {issued} actions issued in one run")
            return -1
        configuration = twin._configuration()
        key = (configuration, watch)
        found = self.index.get(key)
        if found is not None:
            return found
        self.index[key] = len(self.watches)
        self.coordinators.append(twin)
        self.configurations.append(configuration)
        self.watches.append(watch)
        self.parents.append((node, edge))
        self.covered_states.add(self.state_index[twin.chart_state])
        return len(self.watches) - 1

    def _step(self, coordinator: HandoffCoordinatorCore, call: Call) -> Step | None:
        """The table step the call will take, for coverage (None: refused before the chart)."""
        event = _chart_event(coordinator, call, self.env.handoff_id)
        if event is None:
            return None
        return self.chart.step(self.state_index[coordinator.chart_state], event)

    def _tags(self, call: Call, watch: Watch, *, accepted: bool) -> _Tag:
        if call.kind is CallKind.OUTCOME:
            assert call.outcome is not None
            if fits(watch.action(call.action_id), call.outcome):
                return _Tag.COOPERATIVE | _Tag.ACKNOWLEDGEMENT
            return _Tag.NONE
        if call.terminal:
            return _Tag.TERMINAL
        if not call.usable:
            return _Tag.UNUSABLE if accepted and call.fact is not None else _Tag.NONE
        return _Tag.COOPERATIVE

    def _check_lifecycle(
        self, node: int, edge: TraceStep, twin: HandoffCoordinatorCore, before: Watch, after: Watch
    ) -> None:
        if not any(isinstance(item.action, _A.Complete) for item in edge.issued):
            return
        seen_success = before.phase is Phase.LIVE and after.phase is not Phase.LIVE
        seen_success = seen_success and after.succeeded
        if not (seen_success or twin.completion is HandoffCompletion.SUCCESS):
            return
        lifecycle = twin.lifecycle
        finding = None
        if lifecycle != self.expected:
            finding = f"lifecycle {_events(lifecycle)}, expected {_events(self.expected)}"
        self._note(node, edge, "L3", finding)

    def _note(
        self,
        node: int,
        edge: TraceStep | None,
        key: str,
        finding: str | None,
        parents: Sequence[tuple[int, TraceStep] | None] | None = None,
    ) -> None:
        """Count a check of `key` at `node` (after `edge`, if any); keep the first failure."""
        tally = self.tallies[key]
        tally.checked += 1
        if finding is None:
            return
        tally.violations += 1
        if tally.first is None:
            run = self.path(node, parents) + ([edge] if edge is not None else [])
            tally.first = (tuple(run), finding)

    def path(
        self, node: int, parents: Sequence[tuple[int, TraceStep] | None] | None = None
    ) -> list[TraceStep]:
        """The run that first reached configuration `node`."""
        parents = self.parents if parents is None else parents
        steps: list[TraceStep] = []
        link = parents[node]
        while link is not None:
            node, edge = link
            steps.append(edge)
            link = parents[node]
        steps.reverse()
        return steps

    # -- judging --

    def verdicts(self) -> tuple[Verdict, ...]:
        self._liveness()
        self._progress()
        verdicts = []
        for prop in PROPERTIES:
            tally = self.tallies[prop.key]
            if prop.key == "Coverage":
                verdicts.append(self._coverage(prop))
                continue
            checked = tally.checked
            example = None if tally.first is None else Counterexample(*tally.first)
            summary, notes = ("", ()) if prop.key != "L1" else (self.l1_summary, self.l1_notes)
            if prop.key == "Bound":
                checked = self.longest_run
                summary = f"longest run: {checked} of {MAX_ACTIONS} actions"
            verdicts.append(Verdict(prop, checked, tally.violations, example, summary, notes))
        return tuple(verdicts)

    def _liveness(self) -> None:
        """L2: a terminal fact, then acknowledgements alone, reach a CANCELED completion."""
        canceled = [watch.completed_canceled for watch in self.watches]
        can_cancel = self._backward(canceled, _Tag.ACKNOWLEDGEMENT)
        for node, edges in enumerate(self.edges):
            if canceled[node]:
                continue
            stuck = [
                edge
                for edge, target, tags in edges
                if tags & _Tag.TERMINAL and not (target >= 0 and can_cancel[target])
            ]
            if stuck:
                finding = f"after {stuck[0].call} no acknowledgements lead to a CANCELED completion"
                self._note(node, stuck[0], "L2", finding)
            else:
                self._note(node, None, "L2", None)

    def _progress(self) -> None:
        """L1: cooperation completes from every configuration reached with usable payloads."""
        done = [watch.phase in (Phase.DONE, Phase.DONE_AGAIN) for watch in self.watches]
        can_complete = self._backward(done, _Tag.COOPERATIVE)
        order, parents = self._usable_reach()
        for node in order:
            finding = None
            if not can_complete[node]:
                finding = "from here no cooperative continuation reaches a completion"
            self._note(node, None, "L1", finding, parents)
        self.l1_summary = f"{len(order):,} of {len(self.watches):,} configurations"
        apart = len(self.watches) - len(order)
        if apart:
            self.l1_notes = (
                f"{apart} configurations reachable only through an accepted unusable payload "
                "wait for a terminal fact; L2 covers them",
            )

    def _backward(self, targets: list[bool], tag: _Tag) -> list[bool]:
        """Which configurations reach a target along edges carrying `tag`."""
        incoming: list[list[int]] = [[] for _ in self.watches]
        for source, edges in enumerate(self.edges):
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

    def _usable_reach(self) -> tuple[list[int], list[tuple[int, TraceStep] | None]]:
        """Configurations reachable without accepted unusable payloads, breadth-first."""
        parents: list[tuple[int, TraceStep] | None] = [None] * len(self.watches)
        order = [0]
        visited = {0}
        for node in order:  # grows while it is walked: breadth-first
            for edge, target, tags in self.edges[node]:
                if target >= 0 and target not in visited and not tags & _Tag.UNUSABLE:
                    visited.add(target)
                    parents[target] = (node, edge)
                    order.append(target)
        return order, parents

    def _coverage(self, prop: Property) -> Verdict:
        chart = self.chart
        states = range(len(chart.states))
        dead = [f"state {chart.states[s]}" for s in states if s not in self.covered_states]
        transitions = _transitions(chart).values()
        unused: list[str] = []
        for cells in transitions:
            missed = [
                cell for cell in cells if (cell.source, cell.event.index) not in self.covered_steps
            ]
            if len(missed) == len(cells):
                dead.append(_describe(chart, cells))
            else:
                unused += [f"{chart.states[cell.source]} {cell.event.value}" for cell in missed]
        covered = len(transitions) - len(dead) + len(states) - len(self.covered_states)
        summary = (
            f"{len(self.covered_states)}/{len(states)} states, "
            f"{covered}/{len(transitions)} transitions"
        )
        notes = []
        if dead:
            notes.append("dead: " + ", ".join(dead))
        if unused:
            notes.append("cells taken only through a sibling event: " + ", ".join(unused))
        checked = len(states) + len(transitions)
        return Verdict(prop, checked, len(dead), None, summary, tuple(notes))


def _error(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def _chart_event(
    coordinator: HandoffCoordinatorCore, call: Call, handoff_id: HandoffId
) -> ChartEvent | None:
    """The event `call` makes in the coordinator's chart (None: refused before the chart)."""
    if call.fact is not None:
        return FACT_EVENTS[type(call.fact)] if call.fact.handoff_id == handoff_id else None
    if call.outcome is None or call.action_id is None:
        return ChartEvent.START
    # Which event an outcome makes depends on the journal: the coordinator classifies it.
    return tuple(ChartEvent)[coordinator._outcome_event(call.action_id, call.outcome)]


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
    if step.refusal is not None:
        return step.event.kind is EventKind.FACT
    return step.target != step.source or bool(step.effects) or bool(step.checks)


def _describe(chart: CompiledChart, cells: Sequence[Step]) -> str:
    step = cells[0]
    source, target = chart.states[step.source], chart.states[step.target]
    events = "|".join(cell.event.value for cell in cells)
    if step.refusal is not None:
        return f"{source} refuses {events}"
    return f"{source} --{events}--> {target}"


def _events(lifecycle: Sequence[object]) -> str:
    return "[" + ", ".join(getattr(event, "value", str(event)) for event in lifecycle) + "]"

"""Scenarios: one handoff driven through a real coordinator, recorded as it crosses the lanes.

`run_scenario(chart, scenario)` drives a coordinator of that chart the way a well-behaved
runtime would (see `Scenario` for the named runs and the spelling of an explicit list of
calls), and records the messages that cross the lanes and the move each call makes.  The
messages are drawn as a sequence diagram (`handoff._docs.mermaid.mermaid_sequence`), the
moves over the state diagram (`handoff._docs.highlight.run_graph`).  Pure and deterministic,
like the state diagrams in `handoff._docs.diagram`.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from handoff._chart.shipped import CHARTS
from handoff._compile.table import compiled
from handoff._coordinator.binding import FACTS, Reporter
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._docs.highlight import RunMove
from handoff._system.call import HANDOFF_ID
from handoff._system.runtime import Workload, acknowledgement
from handoff._values.errors import HandoffError
from handoff._values.lifecycle import NormalizedHandoffEvent
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import HandoffActionOutcome, HandoffOrder, KvTransferTimingMode

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "LANES",
    "SCENARIOS",
    "Arrow",
    "Scenario",
    "ScenarioError",
    "ScenarioRun",
    "SequenceLine",
    "run_scenario",
    "sequence",
]

SOURCE = "Source"
COORDINATOR = "Coordinator"
DESTINATION = "Destination"
RUNTIME = "Runtime"
LANES = (SOURCE, COORDINATOR, DESTINATION, RUNTIME)
"""The participants of a scenario's sequence diagram, left to right."""

_ACTION_LANES: dict[type[HandoffAction], str] = {
    HandoffAction.SubmitPrefill: SOURCE,
    HandoffAction.ReserveDestination: DESTINATION,
    HandoffAction.StartTransfer: SOURCE,
    HandoffAction.ActivateDestination: DESTINATION,
    HandoffAction.ReleaseSource: SOURCE,
    HandoffAction.CancelSource: SOURCE,
    HandoffAction.CancelDestination: DESTINATION,
}
"""Who performs each action (`Complete` concerns everyone: it is drawn as a note)."""

_REPORTERS = {Reporter.SOURCE: SOURCE, Reporter.DESTINATION: DESTINATION, Reporter.RUNTIME: RUNTIME}
_FACT_LANES: dict[type[HandoffFact], str] = {
    fact: _REPORTERS[bound.reporter] for fact, bound in FACTS.items()
}
"""Who reports each fact (`handoff._coordinator.binding.FACTS`): the workers report progress;
the runtime around the coordinator reports the terminal facts (a client's cancel, a failure, a
deadline)."""

_HANDOFF = HANDOFF_ID
_WORKLOAD = Workload(
    HandoffTransferTiming(
        mode=KvTransferTimingMode.DESTINATION_MISSING,
        full_prompt_tokens=1024,
        kv_bytes_per_token=None,
        bandwidth_gb_s=None,
    ),
    transferable_prompt_tokens=1024,
)
"""What the drawn runtime reports (no bandwidth: the drawings show no delay)."""


class Arrow(enum.Enum):
    """How a sequence-diagram line is drawn."""

    FACT = "fact"
    """A fact, reported by a lane to the coordinator."""
    ACTION = "action"
    """An action, issued by the coordinator to the lane that performs it."""
    OUTCOME = "outcome"
    """An acknowledgement of an action, from the lane back to the coordinator."""
    REFUSAL = "refusal"
    """A call the coordinator refused, answered back to the lane that made it."""
    NOTE = "note"
    """A note over `lane` (one lane, or two joined by a comma), or over both workers
    (`lane` empty)."""


@attrs.frozen
class SequenceLine:
    """One line of a sequence diagram; a newline in `text` is a line break."""

    arrow: Arrow
    lane: str
    text: str
    boxed: bool = False
    """Drawn in a red box: the messages of the call that broke a property."""
    peer: str = COORDINATOR
    """The arrow's other end: a fact or an outcome goes from `lane` to `peer`, an action or
    a refusal from `peer` to `lane`.  Unused by a note."""


class ScenarioError(ValueError):
    """A scenario that cannot be run: an unknown name, or a call that cannot be spelled."""


SCENARIOS = {
    "success": "a successful handoff",
    "cancel": "canceled once reserved",
    "reopen": "timed out after success",
    "fail:ACTION": "ACTION fails",
}
"""The named scenarios and their titles (`fail:` takes an action, as `fail:StartTransfer`)."""

_FACTS = {fact.__name__: fact for fact in _FACT_LANES}
_ACTIONS = {action.__name__: action for action in _ACTION_LANES}
_CLEANUP = frozenset(
    {HandoffAction.CancelSource.__name__, HandoffAction.CancelDestination.__name__}
)
"""Actions issued only once a handoff is canceled: `fail:` one of them cancels first."""
_LIMIT = 200
"""Calls a scenario makes at most: a chart that never settles is drawn up to here."""


@attrs.frozen
class Scenario:
    """What a runtime does around one coordinator.

    A name of `SCENARIOS`, or an explicit list of calls separated by commas, semicolons or
    newlines: `start`; a fact by name (`SourceHeld`, `DestinationReserved`,
    `TransferCompleted`, `Canceled`, `Failed`, `TimedOut`), with the payload a cooperative
    runtime reports; `ok` or `ok ACTION` to acknowledge the oldest pending action (or the
    oldest of that kind) with its fitting outcome; `fail` or `fail ACTION` to report it failed.
    """

    spec: str
    calls: tuple[tuple[str, str], ...] = ()
    """The explicit calls, each (verb, argument); empty for a named scenario."""

    @classmethod
    def parse(cls, text: str) -> Scenario:
        """The scenario `text` spells; raises `ScenarioError` saying what would be right."""
        words = " ".join(text.split())
        if words in ("success", "cancel", "reopen") or words.startswith("fail:"):
            if words.startswith("fail:") and words[5:].strip() not in _ACTIONS:
                raise ScenarioError(
                    f"unknown action {words[5:].strip()!r} in {words!r}: expected "
                    f"fail:ACTION with ACTION one of {', '.join(_ACTIONS)}"
                )
            return cls(words)
        tokens = [t.strip() for t in text.replace(";", ",").replace("\n", ",").split(",")]
        calls = tuple(_call(token) for token in tokens if token)
        if not calls:
            raise ScenarioError(f"no scenario given: expected {_NAMED} or a list of calls")
        spelled = (
            argument if verb == "fact" else f"{verb} {argument}".strip() for verb, argument in calls
        )
        return cls(", ".join(spelled), calls)

    @property
    def title(self) -> str:
        """What the scenario is, in words."""
        if self.calls:
            return self.spec
        if self.spec.startswith("fail:"):
            action = self.spec[5:].strip()
            if action in _CLEANUP:
                return f"canceled once reserved, {action} fails"
            return f"{action} fails"
        return SCENARIOS[self.spec]


_NAMED = "success, cancel, reopen, fail:ACTION"


def _call(token: str) -> tuple[str, str]:
    verb, _, argument = token.partition(" ")
    argument = argument.strip()
    if verb == "start" and not argument:
        return ("start", "")
    if verb in _FACTS and not argument:
        return ("fact", verb)
    if verb in ("ok", "fail") and (not argument or argument in _ACTIONS):
        return (verb, argument)
    raise ScenarioError(
        f"cannot read the call {token!r}: expected start, a fact ({', '.join(_FACTS)}), "
        "ok [ACTION] or fail [ACTION]; or a named scenario: " + _NAMED
    )


@attrs.frozen
class ScenarioRun:
    """What a scenario did: the messages across the lanes, and the move of each call."""

    title: str
    messages: tuple[SequenceLine, ...]
    moves: tuple[RunMove, ...]


def run_scenario(
    chart: HandoffOrder | type[HandoffChart], scenario: Scenario | str = "success"
) -> ScenarioRun:
    """Drive a coordinator of `chart` through `scenario` and record what happened.

    A call the coordinator refuses is recorded as refused and changes nothing (every call is
    atomic); the runtime carries on.
    """
    if isinstance(scenario, str):
        scenario = Scenario.parse(scenario)
    runtime = _Runtime(chart)
    if scenario.calls:
        _explicit(runtime, scenario.calls)
    else:
        _named(runtime, scenario.spec)
    return ScenarioRun(scenario.title, tuple(runtime.messages), tuple(runtime.moves))


def sequence(
    order: HandoffOrder | type[HandoffChart], *, cancel_after_reservation: bool = False
) -> tuple[SequenceLine, ...]:
    """The messages of one handoff in `order` (or on a chart class): `success`, or with
    `cancel_after_reservation` the `cancel` scenario."""
    return run_scenario(order, "cancel" if cancel_after_reservation else "success").messages


def _named(runtime: _Runtime, name: str) -> None:
    """The runtime acknowledges every action with its fitting outcome, first issued first,
    and reports the fact each acknowledged action leads to (`handoff._system.runtime`).  In
    `cancel`, the request is canceled as soon as the destination's reservation is accepted;
    the runtime then acknowledges the cleanup actions only.  In `fail:ACTION`, the first
    ACTION is answered failed (a cleanup action, `CancelSource` or `CancelDestination`, once
    the handoff is canceled as in `cancel`); an ACTION the run never issues is refused.  In
    `reopen`, a deadline passes once the handoff succeeded."""
    failed = name[5:].strip() if name.startswith("fail:") else ""
    failing = _ACTIONS.get(failed)
    cancel = name == "cancel" or failed in _CLEANUP
    reopen = name == "reopen"
    runtime.call(runtime.core.start, "start()")
    while runtime.pending and len(runtime.moves) < _LIMIT:
        if cancel and _RESERVED in runtime.core.lifecycle:
            runtime.cancel()
            cancel = False
            continue
        item = runtime.pending.popleft()
        if failing is not None and isinstance(item.action, failing):
            runtime.acknowledge(item, failed=True)
            failing = None
            continue
        runtime.acknowledge(item)
        runtime.report_fact_after(item)
        if reopen and not runtime.pending and runtime.core.is_complete:
            runtime.report(HandoffFact.TimedOut(_HANDOFF))
            reopen = False
    if failing is not None:
        raise ScenarioError(
            f"{name}: this chart's run never issues {failed}, so it cannot be answered failed"
        )


def _explicit(runtime: _Runtime, calls: tuple[tuple[str, str], ...]) -> None:
    for verb, argument in calls:
        if verb == "start":
            runtime.call(runtime.core.start, "start()")
        elif verb == "fact":
            runtime.report(_fact(_FACTS[argument]))
        else:
            item = runtime.take(_ACTIONS[argument] if argument else None)
            if item is None:
                wanted = argument or "action"
                runtime.messages.append(
                    SequenceLine(Arrow.NOTE, "", f"no pending {wanted} to {verb}")
                )
            else:
                runtime.acknowledge(item, failed=verb == "fail")


def _fact(kind: type[HandoffFact]) -> HandoffFact:
    if kind is HandoffFact.SourceHeld:
        return HandoffFact.SourceHeld(_HANDOFF, _WORKLOAD.timing)
    if kind is HandoffFact.DestinationReserved:
        return HandoffFact.DestinationReserved(_HANDOFF, _WORKLOAD.transferable_prompt_tokens)
    return kind(_HANDOFF)  # type: ignore[call-arg]


_RESERVED = NormalizedHandoffEvent.DESTINATION_RESERVED


class _Runtime:
    """A well-behaved runtime around one coordinator, recording what crosses the lanes."""

    def __init__(self, order: HandoffOrder | type[HandoffChart]) -> None:
        chart = CHARTS[order] if isinstance(order, HandoffOrder) else order
        self.core = HandoffCoordinatorCore(_HANDOFF, chart=chart)
        self.chart = compiled(order)
        self.messages = [SequenceLine(Arrow.NOTE, COORDINATOR, self._state_name())]
        self.moves: list[RunMove] = []
        self.pending: deque[IssuedHandoffAction] = deque()

    def call(
        self,
        call: Callable[[], list[IssuedHandoffAction]],
        label: str = "",
        *,
        lane: str = RUNTIME,
        move: str = "",
    ) -> None:
        """Make one call; note where it moved the chart and what it recorded, then issue.

        `label` starts the note; `move` names the call on its move (`label` if empty).
        """
        state, recorded = self.core.chart_state, len(self.core.lifecycle)
        try:
            issued = call()
        except HandoffError as error:
            self.messages.append(SequenceLine(Arrow.REFUSAL, lane, f"refused: {error}"))
            self.moves.append(RunMove(state, state, f"{move or label} (refused)"))
            return
        self.moves.append(RunMove(state, self.core.chart_state, move or label))
        note = f"{label} → {self._state_name()}" if self.core.chart_state != state else label
        lifecycle = ", ".join(event.value for event in self.core.lifecycle[recorded:])
        if lifecycle:
            note = f"{note}\nlifecycle: {lifecycle}" if note else f"lifecycle: {lifecycle}"
        if note:
            self.messages.append(SequenceLine(Arrow.NOTE, COORDINATOR, note.strip()))
        for item in issued:
            self._issue(item)

    def _issue(self, item: IssuedHandoffAction) -> None:
        text = f"{type(item.action).__name__} [{item.id.value}]"
        if isinstance(item.action, HandoffAction.Complete):
            completion = self.core.completion
            assert completion is not None
            self.messages.append(SequenceLine(Arrow.NOTE, "", f"{text}: {completion.name}"))
            return
        self.messages.append(SequenceLine(Arrow.ACTION, _ACTION_LANES[type(item.action)], text))
        self.pending.append(item)

    def take(self, kind: type[HandoffAction] | None) -> IssuedHandoffAction | None:
        """The oldest pending action (of `kind`), taken off the queue."""
        for item in self.pending:
            if kind is None or isinstance(item.action, kind):
                self.pending.remove(item)
                return item
        return None

    def acknowledge(self, item: IssuedHandoffAction, *, failed: bool = False) -> None:
        if failed:
            outcome = HandoffActionOutcome.failed(f"{type(item.action).__name__} failed")
        else:
            outcome = acknowledgement(item.action)
        lane = _ACTION_LANES[type(item.action)]
        text = f"{outcome} [{item.id.value}]"
        self.messages.append(SequenceLine(Arrow.OUTCOME, lane, text))
        self.call(lambda: self.core.on_action_outcome(item.id, outcome), lane=lane, move=text)

    def report_fact_after(self, item: IssuedHandoffAction) -> None:
        fact = _WORKLOAD.fact_after(item.action)
        if fact is not None:
            self.report(fact)

    def cancel(self) -> None:
        overtaken = [f"{type(item.action).__name__} [{item.id.value}]" for item in self.pending]
        self.pending.clear()
        self.report(HandoffFact.Canceled(_HANDOFF))
        if overtaken:
            text = f"cleanup does not wait for {', '.join(overtaken)}"
            self.messages.append(SequenceLine(Arrow.NOTE, "", text))

    def report(self, fact: HandoffFact) -> None:
        lane = _FACT_LANES[type(fact)]
        name = type(fact).__name__
        self.messages.append(SequenceLine(Arrow.FACT, lane, name))
        self.call(lambda: self.core.on_fact(fact), lane=lane, move=name)

    def _state_name(self) -> str:
        return self.chart.names[self.chart.index(self.core.chart_state)]

"""The calls a conformance check makes, and the chart's answer to each, as protocol lines.

The suite is the review's exploration (`handoff._review.explore.explore_from`) made into
handoffs: for every reachable configuration, breadth-first, the shortest run of calls that
reaches it followed by each call the review's environment makes from it, every refusal, dropped
repeat and unusable payload included.  A call that leaves the configuration as it was (refused
or dropped) is followed by what a cooperating runtime says next, to the end of the handoff: a
refusal that kept part of its effect answers one of those calls differently.  Calls JSON cannot
carry (a NaN or infinite bandwidth, which the wire writes as `null`) are left out: no
implementation could receive them.  `PAYLOADS` then runs one cooperative handoff for each class
of payload the contract's arithmetic tells apart (contract §3), and random walks make calls the
chart chooses, mostly cooperative ones, from a seed.

Every handoff of a check has its own id.  The calls and answers are worked out once for the
review's handoff and spelled for each handoff by replacing that handoff's id in the text: the
id appears nowhere else, and the foreign fact names another one.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import attrs

from handoff import wire
from handoff._compile.table import CompiledChart, StepKind
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.conform.protocol import Answer, CallRequest, Open, Opened, Reply, write
from handoff._review.environment import HANDOFF_ID, Call, Environment, Rules, environment
from handoff._review.explore import explore_from
from handoff._review.graph import coverage
from handoff._review.watch import Watch
from handoff._system.properties import Key, prop
from handoff._system.runtime import CANCELS, Workload, acknowledgement
from handoff._values.messages import HandoffAction, HandoffFact
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import (
    HandoffActionId,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
)

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "CONTINUATION",
    "PAYLOADS",
    "WALK_LENGTH",
    "ChartCrashed",
    "Model",
    "Payload",
    "Probe",
    "Run",
    "Suite",
    "build_suite",
    "carried",
    "cooperative_call",
    "handoff_id",
    "run_of",
    "walk",
    "worded",
]

_TEMPLATE = str(HANDOFF_ID)
_FIRST_ID = 0x100
"""Handoffs of a check are numbered from here: clear of the review's own and foreign ids."""
WALK_LENGTH = 40
"""Calls in one random walk: past the longest run of the real charts, refusals included."""
CONTINUATION = 16
"""Calls a cooperating runtime makes at most after a refused or dropped call, or in a payload's
run: past the longest cooperative run of the real charts (a reopened cleanup included)."""


def handoff_id(serial: int) -> HandoffId:
    """The id of the `serial`-th handoff a check opens."""
    return HandoffId(uuid.UUID(int=_FIRST_ID + serial))


class ChartCrashed(Exception):
    """The chart itself raised something other than a refusal: it must be reviewed first."""


@attrs.frozen
class Model:
    """The chart an implementation is held to, and how its handoffs are opened."""

    order: HandoffOrder
    rules: type[HandoffChart] | None = None
    """A chart of one's own (None: the order's shipped chart)."""
    spec: str | None = None
    """How the chart of one's own was named, `MODULE:CLASS`, for traces."""
    fallback_transfer_delay_ms: float = 0.0

    @property
    def name(self) -> str:
        """The chart, as reports name it."""
        return self.order.value if self.spec is None else f"chart {self.spec}"

    def coordinator(self, handoff: HandoffId) -> HandoffCoordinatorCore:
        """A fresh coordinator of the chart (the class, compiled now: tools judge edits)."""
        from handoff._chart.shipped import CHARTS

        chart = self.rules or CHARTS[self.order]
        return HandoffCoordinatorCore(
            handoff, self.order, self.fallback_transfer_delay_ms, chart=chart
        )

    def open(self, handoff: HandoffId) -> Open:
        """The request that opens a handoff of the chart."""
        return Open(handoff, self.order, self.fallback_transfer_delay_ms)


@attrs.frozen
class Run:
    """One handoff a check opens: the request lines, and the chart's answer line to each.

    The first request opens the handoff; each one after it is a call.
    """

    handoff_id: HandoffId
    requests: tuple[str, ...]
    expected: tuple[str, ...]
    continued: int = 0
    """The place in `requests` where what a cooperating runtime says after a refused or
    dropped call begins (0: the run has no such continuation)."""
    said: tuple[Call, ...] = ()
    """The calls with their words, when the run was made from calls (`run_of`)."""

    @property
    def calls(self) -> int:
        """How many calls the run makes."""
        return len(self.requests) - 1


@attrs.frozen
class _Step:
    """One call from one configuration, spelled for the review's handoff."""

    request: str
    reply: str


@attrs.frozen
class Suite:
    """Every reachable configuration's shortest run, then each call from it, breadth-first."""

    model: Model
    configurations: int
    steps: tuple[_Step, ...]
    cases: tuple[tuple[tuple[int, ...], int, tuple[int, ...]], ...]
    """Each case's run (the steps that reach its configuration), its call (a step), and what a
    cooperating runtime says next when that call left the configuration as it was (steps)."""
    covered: str
    """How much of the chart the calls take: `13/13 states, 40/40 transitions`."""
    probes: tuple[Probe, ...] = ()
    """One cooperative handoff for each payload class (`PAYLOADS`), sent after the cases."""

    @property
    def calls(self) -> int:
        """How many calls the suite makes, the runs that reach each configuration included."""
        cases = sum(len(path) + 1 + len(tail) for path, _, tail in self.cases)
        return cases + sum(len(made.calls) for made in self.probes)

    @property
    def handoffs(self) -> int:
        """How many handoffs the suite opens: one a case, one a payload probe."""
        return len(self.cases) + len(self.probes)

    def runs(self, first: int) -> Iterator[Run]:
        """Each case as a handoff of its own, numbered from `first` (see `handoff_id`)."""
        opened = write(Opened(HANDOFF_ID))
        opening = write(self.model.open(HANDOFF_ID))
        for serial, (path, last, tail) in enumerate(self.cases, start=first):
            steps = [self.steps[index] for index in (*path, last, *tail)]
            own = str(handoff_id(serial))
            yield Run(
                handoff_id(serial),
                tuple(
                    text.replace(_TEMPLATE, own) for text in [opening] + [s.request for s in steps]
                ),
                tuple(text.replace(_TEMPLATE, own) for text in [opened] + [s.reply for s in steps]),
                len(path) + 2 if tail else 0,
            )

    def probe_runs(self, first: int) -> Iterator[tuple[Model, Run]]:
        """Each payload probe as a handoff of its own, numbered from `first`, with the model
        (its fallback delay) it is judged by."""
        for serial, made in enumerate(self.probes, start=first):
            yield made.model, run_of(made.model, made.calls, handoff_id(serial))

    def all_runs(self, first: int) -> Iterator[tuple[Model, Run]]:
        """The cases, then the payload probes, numbered from `first`."""
        yield from ((self.model, run) for run in self.runs(first))
        yield from self.probe_runs(first + len(self.cases))


@attrs.frozen
class Payload:
    """A class of payload the contract's arithmetic tells apart (contract §3): what a
    cooperating runtime reports, and the fallback delay the handoff is opened with."""

    words: str
    timing: HandoffTransferTiming
    tokens: int
    fallback_transfer_delay_ms: float = 0.0

    def workload(self) -> Workload:
        """The runtime's workload that reports this payload."""
        return Workload(self.timing, self.tokens)


_FULL, _MISSING = KvTransferTimingMode.FULL_PROMPT, KvTransferTimingMode.DESTINATION_MISSING
_MAX = 2**64 - 1


def _payloads() -> tuple[Payload, ...]:
    def timing(mode: KvTransferTimingMode, per_token: int | None, bandwidth: float | None,
               per_request: int = 0, prompt: int = 4096) -> HandoffTransferTiming:  # fmt: skip
        return HandoffTransferTiming(mode, prompt, per_token, bandwidth, per_request)

    unmodelled = [  # no modelled delay: the fallback applies, zero or not
        ("no bandwidth", timing(_FULL, 131_072, None)),
        ("bandwidth 0", timing(_FULL, 131_072, 0.0)),
        ("bandwidth -0.0", timing(_FULL, 131_072, -0.0)),
        ("no kv_bytes_per_token, no per-request bytes", timing(_FULL, None, 50.0)),
    ]
    modelled = [
        ("full prompt, 50 GB/s", timing(_FULL, 131_072, 50.0), 4000),
        ("destination missing, 50 GB/s", timing(_MISSING, 131_072, 50.0), 4000),
        ("per-request bytes, no kv_bytes_per_token", timing(_FULL, None, 50.0, 1 << 20), 4000),
        ("per-token and per-request bytes", timing(_MISSING, 131_072, 12.5, 3 << 20), 4000),
        ("full prompt of 0 tokens", timing(_FULL, 131_072, 50.0, 0, 0), 4000),
        ("0 tokens missing", timing(_MISSING, 131_072, 50.0), 0),
        ("full prompt of 2**64-1 tokens", timing(_FULL, 1, 50.0, 0, _MAX), 4000),
        ("2**64-1 tokens missing", timing(_MISSING, 1, 50.0), _MAX),
        (
            "a tiny bandwidth: the missing tokens' delay overflows",
            timing(_MISSING, 1, 5e-324, 0, 0),
            1,
        ),
    ]
    return (
        *(Payload(words, made, 4000, fallback) for words, made in unmodelled
          for fallback in (0.0, 2.5)),
        *(Payload(words, made, tokens) for words, made, tokens in modelled),
        Payload("no bandwidth, fallback 1e300", timing(_MISSING, 131_072, None), 4000, 1e300),
    )  # fmt: skip


PAYLOADS = _payloads()
"""The payload classes a check sends, each in a cooperative handoff of each order: every branch
of `delay_ms` and of the timing checks the review's own payloads leave out."""


@attrs.frozen
class Probe:
    """One payload class's cooperative handoff: the calls, and the model that judges them."""

    payload: Payload
    model: Model
    calls: tuple[Call, ...]


def build_suite(model: Model) -> Suite:
    """The suite of `model`'s chart; `ChartCrashed` if the chart raises on some call."""
    root = model.coordinator(HANDOFF_ID)
    rules = Rules(model.order, HANDOFF_ID, model.fallback_transfer_delay_ms)
    graph = explore_from(root, Watch(), rules)
    table = probe.table(root)
    index = {state: number for number, state in enumerate(table.states)}
    coordinators = {0: root}
    paths: dict[int, tuple[int, ...]] = {0: ()}
    steps: list[_Step] = []
    cases: list[tuple[tuple[int, ...], int, tuple[int, ...]]] = []
    tails: dict[int, tuple[int, ...]] = {}
    states, cells = {index[root.chart_state]}, set()
    queue = deque([0])
    while queue:  # breadth-first over the calls an implementation can receive
        node = queue.popleft()
        coordinator = coordinators[node]
        for edge in graph.edges[node]:
            call = edge.step.call
            assert call is not None  # the chart alone: every move is a call
            if not carried(call):
                continue
            twin = coordinator.fork()
            answer = _answer(call, twin, len(paths[node]))
            cell = _cell(table, index, coordinator, call, refused=answer.error is not None)
            cells.update(cell)
            last = len(steps)
            steps.append(
                _Step(write(CallRequest(HANDOFF_ID, call)), write(Reply(HANDOFF_ID, answer)))
            )
            tail: tuple[int, ...] = ()
            if edge.target == node or answer.error is not None:  # the call changed nothing
                if node not in tails:  # what follows is the same whatever call changed nothing
                    tails[node] = _continue(coordinator.fork(), steps, len(paths[node]) + 1)
                tail = tails[node]
            cases.append((paths[node], last, tail))
            if edge.target >= 0 and edge.target not in coordinators:
                coordinators[edge.target] = twin
                paths[edge.target] = (*paths[node], last)
                states.add(index[twin.chart_state])
                queue.append(edge.target)
    covered = coverage(prop(Key.COVERAGE), table, states, cells).summary
    probes = tuple(_probe(model, payload) for payload in PAYLOADS)
    return Suite(model, len(coordinators), tuple(steps), tuple(cases), covered, probes)


@functools.cache
def _usable() -> Workload:
    """The review's own usable payloads, as a cooperating runtime reports them."""
    facts = [call.fact for call in _environment().facts if call.usable]
    held = next(fact for fact in facts if isinstance(fact, HandoffFact.SourceHeld))
    reserved = next(fact for fact in facts if isinstance(fact, HandoffFact.DestinationReserved))
    return Workload(held.transfer_timing, reserved.transferable_prompt_tokens)


def _continue(
    coordinator: HandoffCoordinatorCore, steps: list[_Step], after: int
) -> tuple[int, ...]:
    """What a cooperating runtime says next from `coordinator`, to the end of the handoff, as
    steps appended to `steps`; the review's own usable payloads."""
    made: list[int] = []
    reported: set[type] = set()
    while len(made) < CONTINUATION:
        call = cooperative_call(coordinator, _usable(), reported)
        if call is None:
            break
        answer = _answer(call, coordinator, after + len(made))
        made.append(len(steps))
        steps.append(_Step(write(CallRequest(HANDOFF_ID, call)), write(Reply(HANDOFF_ID, answer))))
    return tuple(made)


def cooperative_call(
    coordinator: HandoffCoordinatorCore, workload: Workload, reported: set[type]
) -> Call | None:
    """What a cooperating runtime says next to `coordinator` (None: nothing is left to say):
    `start()`, then the fitting outcome for each action not yet acknowledged, first issued
    first, then the fact an acknowledged action leads to that the handoff still waits for.
    Each kind of fact is said once (`reported` keeps which were)."""
    if coordinator.is_complete:
        return None
    configuration = probe.configuration(coordinator)
    if configuration.next_id == 0:
        return Call.start()
    issued = configuration.issued
    answered = dict(configuration.outcomes)
    for key, action in issued:
        if key not in answered and not isinstance(action, HandoffAction.Complete):
            return Call.of_outcome(HandoffActionId(key), acknowledgement(action))
    if any(isinstance(action, CANCELS) for _, action in issued):
        return None  # cleaning up: every fact is dropped
    for _, action in issued:
        fact = workload.fact_after(action)
        if fact is None or type(fact) in reported or not _awaited(fact, configuration, issued):
            continue
        reported.add(type(fact))
        return Call.of_fact(fact)
    return None


def _awaited(
    fact: HandoffFact,
    configuration: probe.Configuration,
    issued: tuple[tuple[int, HandoffAction], ...],
) -> bool:
    if isinstance(fact, HandoffFact.SourceHeld):
        return configuration.timing is None
    if isinstance(fact, HandoffFact.DestinationReserved):
        return configuration.tokens is None
    return not any(isinstance(action, HandoffAction.ActivateDestination) for _, action in issued)


def _probe(model: Model, payload: Payload) -> Probe:
    """`payload`'s cooperative handoff of `model`'s chart, opened with its fallback delay."""
    opened = attrs.evolve(model, fallback_transfer_delay_ms=payload.fallback_transfer_delay_ms)
    coordinator = opened.coordinator(HANDOFF_ID)
    workload = payload.workload()
    calls: list[Call] = []
    reported: set[type] = set()
    while len(calls) < CONTINUATION:
        call = cooperative_call(coordinator, workload, reported)
        if call is None:
            break
        _answer(call, coordinator, len(calls))
        if isinstance(call.fact, HandoffFact.SourceHeld):
            call = Call.of_fact(call.fact, f"on_fact(SourceHeld({payload.words}))")
        calls.append(call)
    return Probe(payload, opened, tuple(calls))


def worded(handoff: HandoffId) -> dict[Call, Call]:
    """The facts of the review's environment for `handoff`, each with its words
    (`on_fact(SourceHeld(bandwidth -1.0 GB/s))`), keyed by the bare call."""
    return {call: call for call in environment(handoff).facts}


def _answer(call: Call, coordinator: HandoffCoordinatorCore, after: int) -> Answer:
    try:
        return Answer.of(call, coordinator)
    except Exception as error:  # a chart of one's own may crash: say so, do not judge by it
        raise ChartCrashed(
            f"the chart raised {type(error).__name__} ({error}) on {call} after "
            f"{after} calls: `handoff review` shows where"
        ) from None


def _cell(
    table: CompiledChart,
    index: dict[str, int],
    coordinator: HandoffCoordinatorCore,
    call: Call,
    *,
    refused: bool,
) -> set[tuple[int, int]]:
    """The table cell `call` takes from `coordinator`, for coverage (as the review counts it)."""
    event = probe.classify(coordinator, call.fact, call.action_id, call.outcome)
    if event is None:
        return set()
    step = table.step(index[coordinator.chart_state], event)
    return {(step.source, event.index)} if (step.kind is StepKind.REFUSED) == refused else set()


_CARRIED: dict[Call, bool] = {}


def carried(call: Call) -> bool:
    """Whether `call` reaches an implementation as it is: its fact survives the wire."""
    if call.fact is None:
        return True
    known = _CARRIED.get(call)
    if known is None:
        known = wire.loads(wire.dumps(call.fact), HandoffFact) == call.fact
        _CARRIED[call] = known
    return known


# -- random walks ----------------------------------------------------------------------------


@functools.cache
def _environment() -> Environment:
    """The review's environment, built once: its calls are the keys `carried` remembers."""
    return environment(HANDOFF_ID)


def walk(model: Model, rng: random.Random, length: int = WALK_LENGTH) -> tuple[Call, ...]:
    """A run of `length` calls of the review's environment: half of them what a cooperating
    runtime would say next (a fitting outcome, a usable fact), half any call at all."""
    coordinator = model.coordinator(HANDOFF_ID)
    env = _environment()
    usable = [call for call in env.facts if call.usable and not call.terminal]
    calls: list[Call] = []
    for _ in range(length):
        configuration = probe.configuration(coordinator)
        answered = {key for key, _ in configuration.outcomes}
        unanswered = [
            Call.of_outcome(HandoffActionId(key), acknowledgement(action))
            for key, action in configuration.issued
            if key not in answered
        ]
        if rng.random() < 0.5:
            call = rng.choice(unanswered + usable)
        else:
            call = rng.choice([call for call in env.calls(configuration.next_id) if carried(call)])
        _answer(call, coordinator, len(calls))
        calls.append(call)
    return tuple(calls)


def run_of(model: Model, calls: Sequence[Call], handoff: HandoffId) -> Run:
    """`calls` (made for the review's handoff) as a run of the handoff `handoff`."""
    coordinator = model.coordinator(HANDOFF_ID)
    requests = [write(model.open(HANDOFF_ID))]
    expected = [write(Opened(HANDOFF_ID))]
    for made, call in enumerate(calls):
        requests.append(write(CallRequest(HANDOFF_ID, call)))
        expected.append(write(Reply(HANDOFF_ID, _answer(call, coordinator, made))))
    own = str(handoff)
    return Run(
        handoff,
        tuple(text.replace(_TEMPLATE, own) for text in requests),
        tuple(text.replace(_TEMPLATE, own) for text in expected),
        said=tuple(calls),
    )

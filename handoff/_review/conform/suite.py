"""The calls a conformance check makes, and the chart's answer to each, as protocol lines.

The suite is the review's exploration (`handoff._review.explore.explore_from`) made into
handoffs: for every reachable configuration, breadth-first, the shortest run of calls that
reaches it followed by each call the review's environment makes from it, every refusal, dropped
repeat and unusable payload included.  Calls JSON cannot carry (a NaN or infinite bandwidth,
which the wire writes as `null`) are left out: no implementation could receive them.  Random
walks then make calls the chart chooses, mostly cooperative ones, from a seed.

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
from handoff._system.runtime import acknowledgement
from handoff._values.messages import HandoffFact
from handoff._values.values import HandoffActionId, HandoffId, HandoffOrder

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "WALK_LENGTH",
    "ChartCrashed",
    "Model",
    "Run",
    "Suite",
    "build_suite",
    "carried",
    "handoff_id",
    "run_of",
    "walk",
]

_TEMPLATE = str(HANDOFF_ID)
_FIRST_ID = 0x100
"""Handoffs of a check are numbered from here: clear of the review's own and foreign ids."""
WALK_LENGTH = 40
"""Calls in one random walk: past the longest run of the real charts, refusals included."""


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
    cases: tuple[tuple[tuple[int, ...], int], ...]
    """Each case's run (the steps that reach its configuration) and its last call (a step)."""
    covered: str
    """How much of the chart the calls take: `13/13 states, 40/40 transitions`."""

    @property
    def calls(self) -> int:
        """How many calls the suite makes, the runs that reach each configuration included."""
        return sum(len(path) + 1 for path, _ in self.cases)

    def runs(self, first: int) -> Iterator[Run]:
        """Each case as a handoff of its own, numbered from `first` (see `handoff_id`)."""
        opened = write(Opened(HANDOFF_ID))
        opening = write(self.model.open(HANDOFF_ID))
        for serial, (path, last) in enumerate(self.cases, start=first):
            steps = [self.steps[index] for index in (*path, last)]
            own = str(handoff_id(serial))
            yield Run(
                handoff_id(serial),
                tuple(
                    text.replace(_TEMPLATE, own) for text in [opening] + [s.request for s in steps]
                ),
                tuple(text.replace(_TEMPLATE, own) for text in [opened] + [s.reply for s in steps]),
            )


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
    cases: list[tuple[tuple[int, ...], int]] = []
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
            cases.append((paths[node], len(steps)))
            steps.append(
                _Step(write(CallRequest(HANDOFF_ID, call)), write(Reply(HANDOFF_ID, answer)))
            )
            if edge.target >= 0 and edge.target not in coordinators:
                coordinators[edge.target] = twin
                paths[edge.target] = (*paths[node], len(steps) - 1)
                states.add(index[twin.chart_state])
                queue.append(edge.target)
    covered = coverage(prop(Key.COVERAGE), table, states, cells).summary
    return Suite(model, len(coordinators), tuple(steps), tuple(cases), covered)


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
    )

"""The moves of the system world (`handoff._review.system`) and the pieces they are made of:
what a call does to a coordinator in one configuration, what a worker does with one message,
and the words of what a move broke.  The world works each piece out once, for the numbers
that decide it, and a move made again only puts the pieces together.

The world's moves are written in layers, each a class that inherits the one below, so that
each method is written once and every layer sees the ones below it: the runtime's side
(`system_runtime.RuntimeMoves`), the world's fields and its calls into coordinators
(`WorldMoves`, here), the runtime's duties (`system_duties.RuntimeDuties`), the injected
faults (`system_faults.FaultMoves`), and the exploration with its workers' reactions
(`system.SystemWorld`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, NamedTuple

from handoff._compile.codec_table import sample
from handoff._compile.table import CompiledChart
from handoff._coordinator import probe as probe
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._coordinator.probe import Configuration
from handoff._review.environment import Rules
from handoff._review.monitors import Checked
from handoff._review.system_runtime import RuntimeMoves
from handoff._review.system_state import (
    Codes,
    Flight,
    SystemState,
    SystemWatch,
    _Node,
    _Raw,
    _Reaction,
    _replaced,
)
from handoff._review.verdict import MoveKind, TraceStep
from handoff._review.world import error_words
from handoff._system.call import TERMINAL_FACTS, Call
from handoff._system.config import System
from handoff._system.faults import NETWORK
from handoff._system.judgments import serving, told_while_held, transferred
from handoff._system.properties import Key
from handoff._system.runtime import (
    DEMO_WORKLOAD,
    Workload,
    call_of,
    carried,
    kept_in_flight,
    tells_freed,
)
from handoff._system.worker_state import Worker, WorkerState
from handoff._system.workers import (
    ContractTable,
    Message,
    Role,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    task_of,
)
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffFact

_SLOT_FREED = Key.NO_SLOT_AFTER_FREED
_ONLY_ISSUED = Key.ONLY_ISSUED_WORK
_ONE_SLOT = Key.ONE_SLOT_PER_REQUEST
_TERMINAL_MOVES = (MoveKind.FAULT, MoveKind.LOSS, MoveKind.TIMER, MoveKind.DEADLINE)
"""Moves after which the handoff must end CANCELED (W5): a terminal fact, a loss's timeout."""
_START = len(TERMINAL_FACTS)
"""The terminal facts (`TERMINAL_FACTS`) are the calls numbered before it: a run suffers each
as a fault reported to the coordinator, at any time."""
_TIMEOUT = _START + 1
_DELIVERY = -1
"""The calls of `WorldMoves._call` besides the `n`th terminal fact: a start, a loss's
timeout, a delivery (its message says which call)."""
_new: Any = tuple.__new__
"""A named tuple made with every field given, as `_make` does, without its Python-level
`__new__`: the moves make four a move."""


class _Transition(NamedTuple):
    """What one call does to a coordinator in one configuration."""

    coordinator: HandoffCoordinatorCore | None
    """The coordinator afterwards (unchanged when it refused the call; None: it crashed)."""
    configuration: int
    step: TraceStep
    """The move, as a run shows it."""
    sent: tuple[int, ...] = ()
    """The issued actions as messages in flight, by number (and their acknowledgements, on
    send)."""
    issued_bits: int = 0
    error: str | None = None
    early: bool = False
    """Refused as early (`OutOfOrderFactError`)."""


def _checked(call: bool, worker: bool, transfer: bool, destination: bool) -> Iterator[Key]:
    """The properties a move is checked for: Errors when it made a call, W3 and W6 when it
    was a worker's, W2 always; W8 and W9 when the source performed a transfer, W10 when the
    destination took an action."""
    if call:
        yield Key.ERRORS
    if worker:
        yield from (_ONLY_ISSUED, _ONE_SLOT)
    yield _SLOT_FREED
    if transfer:
        yield from (Key.SLOT_OWNED_ONCE, Key.KV_INTO_OWN_SLOT)
    if destination:
        yield Key.ACTIVATED_SERVES


CHECKS = {
    flags: tuple((key, None) for key in _checked(*flags))
    for flags in itertools.product((False, True), repeat=4)
}
"""The checks of a move that broke nothing, by whether it made a call, was a worker's, the
source performed a transfer and the worker was the destination (`_checked`)."""


class _Owned(NamedTuple):
    """What one worker reaction means for whose a slot is and what it does (the tail of
    `_Reaction`)."""

    checks: tuple[Checked, ...]
    broken: tuple[Checked, ...]
    transfers: bool
    took: int


def ownership(
    table: ContractTable,
    message: Message,
    handoff: int,
    memories: tuple[WorkerState, WorkerState],
    reaction: WorkerReaction,
) -> _Owned:
    """The checks of a worker taking `message` of `handoff` with `reaction` (its memory
    `memories` before and after), W10's finding, whether the source performed a transfer
    (W8 and W9 are judged where its KV goes) and the destination slots it took."""
    _before, after = memories
    task, destination = task_of(message.action), message.role is Role.DESTINATION
    done = reaction.reply is WorkerReply.DONE  # a failed work's reply is FAILED
    transfers = done and task is WorkerTask.TRANSFER and not destination
    checks = CHECKS[False, True, transfers, destination]
    if not destination:
        return _Owned(checks, (), transfers, 0)
    old, new = (state.find(handoff) for state in memories)
    was = table.initial(Role.DESTINATION) if old is None else old.memory
    served, serves = (table.serves(memory) for memory in (was, reaction.memory))
    activated = done and task is WorkerTask.ACTIVATE
    words = serving(message, activated, served, serves, after.slots(handoff))
    broken: tuple[Checked, ...] = () if words is None else ((Key.ACTIVATED_SERVES, words),)
    took = 0 if new is None else new.where & ~(0 if old is None else old.where)
    return _Owned(checks, broken, transfers, took)


def transfer_findings(destination: WorkerState, target: int, message: Message) -> Iterator[Checked]:
    """W8 and W9 as the source performs the transfer `message` carries: whose is the
    destination slot `target` its request's reservation took (0: slots not told apart)."""
    handoff = 0 if message.handoff is None else message.handoff
    holder = destination.holder(target) if target else None
    held = destination.slots(handoff)
    yield from transferred(message, held, holder, told_apart=bool(target))


class WorldMoves(RuntimeMoves):
    """The system world's fields and its calls into its coordinators, each call worked out
    once (see the module); the layers above put the runtime's duties, the faults and the
    workers' reactions together from them."""

    timeout_call = _TIMEOUT  # the call a timer's `TimedOut` is (`_made`)

    def __init__(
        self,
        chart: CompiledChart,
        system: System,
        rules: Rules,
        *,
        workload: Workload = DEMO_WORKLOAD,
    ) -> None:
        self.chart = chart
        self.system = system
        self.contract = ContractTable(system.contract)
        shared = system.concurrency > 1  # only then may a slot be another request's (W8)
        self.workers = {role: Worker(self.contract, role, system.slots, shared) for role in Role}
        self.rules = rules
        self.workload = workload
        self.several = system.concurrency > 1
        source, destination = (self.workers[role].remembers is not None for role in Role)
        self.codes = Codes((source, destination))
        """The messages and memories the configurations hold by number; `codes.ordered` says
        whether the order of the requests each worker remembers idle matters."""
        coupled = system.fifo or system.one_at_a_time
        self.reduce = self.several and system.symmetry and not system.properties and not coupled
        """Whether to explore commuting moves in one order (a property of one's own may
        look at anything, so it sees every order; with FIFO delivery, two handoffs' messages
        queued on one channel do not commute, nor, with one action at a time, a worker's
        reply to one handoff and the next action it takes for another)."""
        self.symmetric = self.several and system.symmetry
        self._fences = system.restart.refuses_unvouched
        """Whether the destination refuses a KV write its restart left unvouched
        (`runtime.fenced`): only then does a handoff's watch keep its `Vouch`."""
        self._runtime_setup(system)
        self._message_faults = tuple(f for f in NETWORK if f.strike.message)
        self._struck_workers = tuple(f for f in NETWORK if f.strike.forgets)
        self._configurations: dict[Configuration, int] = {}
        self._transitions: dict[tuple[int, int], _Transition] = {}
        """What each call does in each coordinator configuration (the call by `_code`)."""
        self._reactions: dict[tuple[int, int, int, int], tuple[_Reaction, ...]] = {}
        """What a worker remembering a memory does with a message (or fails it), with the
        chart state of the handoff's coordinator: by their numbers."""
        self._keys: dict[SystemState, tuple[SystemState, tuple[int, ...] | None]] = {}
        """Each configuration reached, and its key (`canonical`)."""
        if system.one_at_a_time or system.drains_transfers:  # else the deliveries of before
            self._deliverable = self._gated  # type: ignore[method-assign]
        self.answers_again = system.answers_again > 0
        """Whether the destination answers a repeated action from its cache of outcomes."""
        self._busy: dict[Flight, tuple[frozenset[int], frozenset[int]]] = {}
        self._freeing: dict[int, bool] = {}
        """Whether each message tells its coordinator its worker freed the slot."""
        self.terminal_facts = tuple(
            sample(kind, handoff_id=rules.handoff_id) for kind in TERMINAL_FACTS
        )

    def _deliver(self, node: _Node, code: int, flight: Flight) -> _Raw:
        """The runtime gives an acknowledgement or a fact to its handoff's coordinator (or
        drops it: its session ended outside the chart)."""
        handoff = self.codes.handoff[code]
        if node.state.watches[handoff].abandoned:
            return self._dropped(node, code, flight)
        return self._call(node, handoff, MoveKind.TO_COORDINATOR, code, _DELIVERY, flight)

    def _perform(self, node: _Node, code: int, flight: Flight, *, fail: bool) -> Iterator[_Raw]:
        """A worker gets an action and reacts in each way its contract allows (or fails it:
        a fault): the system world's own (`SystemWorld._perform`), offered by its faults too."""
        raise NotImplementedError

    def _call(
        self, node: _Node, handoff: int, kind: MoveKind, code: int | None, call: int, flight: Flight
    ) -> _Raw:
        """The runtime makes a call to a coordinator and puts what it issued in flight: the
        delivery of message `code`, or `call`, a start, the `call`th terminal fact or a
        timeout."""
        coordinators, state, _codes = node
        fault = kind is MoveKind.FAULT
        old = state.watches[handoff]
        terminated = old.terminated or kind in _TERMINAL_MOVES
        spent = state.spent
        if fault:
            spent = spent._replace(faults=spent.faults + 1)
        done = self._transition(
            coordinators[handoff], state.coordinators[handoff], handoff, kind, code, call
        )
        if done.error is not None:
            step = done.step
            if done.coordinator is None:  # a crash is a finding, not a reason to stop reviewing
                return _Raw(step, None, ((Key.ERRORS, f"the call raised {done.error}"),), fault)
            if done.early and code is not None:  # kept in flight: `kept_in_flight`
                behind = self._set_aside(state, flight, code)
                if behind is not None:
                    after = state._replace(flight=behind)
                    return _Raw(step, _Node(coordinators, after, self.codes), (), fault)
                return _Raw(step, node, (), fault, loop=True)
            # (held back instead: `_moves` leaves the loop out, `runtime.held_back`)
            watch = old._replace(started=True, terminated=terminated)
            after = SystemState(
                state.coordinators,
                state.source,
                state.destination,
                self._send(flight, done.sent),  # a failed cancel sent again: `retried`
                _replaced(state.watches, handoff, watch),
                spent,
            )
            return _Raw(step, _Node(coordinators, after, self.codes), (), fault)
        assert done.coordinator is not None
        findings: tuple[Checked, ...] = ()
        told = old.told
        if code is not None and self._frees(code):
            message = self.codes.messages[code]
            told = told | {message.role}
            if self.codes.workers[state.worker(message.role)].slots(handoff):
                findings = ((_SLOT_FREED, told_while_held(message)),)
        _started, issued, performed_bits, _told, _ended, abandoned, answers, target, vouch = old
        issued |= done.issued_bits
        watch = _new(
            SystemWatch,
            (True, issued, performed_bits, told, terminated, abandoned, answers, target, vouch),
        )
        after = _new(
            SystemState,
            (
                _replaced(state.coordinators, handoff, done.configuration),
                state.source,
                state.destination,
                self._send(flight, done.sent),
                _replaced(state.watches, handoff, watch),
                spent,
            ),
        )
        moved = _new(_Node, (_replaced(coordinators, handoff, done.coordinator), after, self.codes))
        raw: _Raw = _new(_Raw, (done.step, moved, findings, fault, False, None))
        return raw

    def _frees(self, code: int) -> bool:
        found = self._freeing.get(code)
        if found is None:
            found = self._freeing[code] = tells_freed(self.codes.messages[code])
        return found

    @staticmethod
    def _transition_key(
        configuration: int, handoff: int, code: int | None, call: int
    ) -> tuple[int, int]:
        """What a call's result is kept under: the coordinator's configuration and the call
        (the delivery of message `code`, else `call` made to handoff `handoff`)."""
        return configuration, code if code is not None else -1 - call - 8 * handoff

    def _transition(
        self,
        coordinator: HandoffCoordinatorCore,
        configuration: int,
        handoff: int,
        kind: MoveKind,
        code: int | None,
        call: int,
    ) -> _Transition:
        """What a call does to a coordinator in `configuration`: worked out once, since a
        coordinator's configuration decides everything it does (kept under
        `_transition_key`)."""
        key = self._transition_key(configuration, handoff, code, call)
        found = self._transitions.get(key)
        if found is not None:
            return found
        tag = self._tag(handoff)
        message = None if code is None else self.codes.messages[code]
        made = self._made(message, call)
        twin = coordinator.fork()
        try:
            issued = tuple(made.send(twin))
        except HandoffError as error:
            early = kept_in_flight(error)
            words = error_words(error)
            retry, numbers = self._retry(message)
            step = TraceStep(
                made, twin.chart_state, error=words, kind=kind, message=message, sent=retry,
                handoff=tag,
            )  # fmt: skip
            found = _Transition(coordinator, configuration, step, numbers, error=words, early=early)
        except MemoryError:  # the review's own limit, not the chart's crash
            raise
        except Exception as error:  # a crash is a finding, not a reason to stop reviewing
            words = error_words(error)
            step = TraceStep(
                made, twin.chart_state, error=words, kind=kind, message=message, handoff=tag
            )
            found = _Transition(None, configuration, step, error=words)
        else:
            bits = 0
            for item in issued:
                bits |= 1 << item.id.value
            sent = carried(issued, self.system.acknowledge, tag)
            step = TraceStep(
                made, twin.chart_state, issued, kind=kind, message=message, sent=sent, handoff=tag
            )
            numbers = tuple(self.codes.message(item) for item in sent)
            found = _Transition(twin, self._intern(twin), step, numbers, bits)
        self._transitions[key] = found
        return found

    def _made(self, message: Message | None, call: int) -> Call:
        """The call the runtime makes: the delivery of `message`, else a start, the `call`th
        terminal fact or a timeout."""
        if message is not None:
            return call_of(message)
        if call == _START:
            return Call.start()
        if call == _TIMEOUT:
            return Call.of_fact(HandoffFact.TimedOut(self.rules.handoff_id))
        return Call.of_fact(self.terminal_facts[call])

    def _intern(self, coordinator: HandoffCoordinatorCore) -> int:
        """The number of `coordinator`'s configuration: equal configurations, one number."""
        configuration = probe.configuration(coordinator)
        return self._configurations.setdefault(configuration, len(self._configurations))

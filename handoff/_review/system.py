"""The second world: coordinators, the two workers they share and the messages in flight.

A system configuration is each handoff's coordinator configuration (`System.concurrency` of
them, live at once), what each worker remembers of each request and the slots it holds for it
(`handoff._system.worker_state`), the messages in flight and what the runtime has seen.  The
runtime carries each issued action to its worker as a message, and each acknowledgement and
fact back to the coordinator as another; any message in flight may be delivered next (or, with
`fifo`, the first of each worker's channel in each direction).  Besides deliveries, the system
may suffer up to `faults` faults in a run (`handoff._system.faults` names them): a terminal fact
(`Failed`, `TimedOut`, `Canceled`) reported to the coordinator, or a worker failing the work
it was given (acknowledged as failed, memory unchanged).

With `System.injected` (`--faults`), each up to `System.budget` times a handoff (a restart,
which strikes every handoff at once, up to that many times a run: `Spent`), offered after
every other move so that a review without them is the review of before: a delivery that
leaves a copy of its message in flight, a message lost (the runtime reports `TimedOut`), a
worker restarting (forgetting the request).  With `Acknowledge.ON_SEND` the runtime puts the
fitting acknowledgement of `SubmitPrefill`, `ReserveDestination` and `StartTransfer` in flight
as it sends the work; the worker then reports only the work's fact, or `Failed`.

The runtime's one policy: a fact the coordinator refuses as early (its acknowledgement is still
in flight) stays in flight and is delivered again later; any other refused message is dropped.
`Complete` is the runtime's own: it goes to no worker.

W1 is judged for each complete handoff with nothing of its own in flight, W2, W3 and W6 at
each move, W8 and W9 where the source performs a transfer, W10 at each destination move,
properties of one's own (`System.properties`) at each configuration, W4, W5 and W7 over the
explored graph under the fairness that every message in flight is eventually
delivered: a run that suffers no further fault then ends once nothing is in flight, so every
such end must complete every handoff (W4), after a terminal fact its handoff CANCELED (W5), and
from the first configuration with no fault at all, every handoff SUCCESS (W7).  With several
handoffs, configurations that differ only by which handoff is which are one (`canonical`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence

from handoff._coordinator import probe as probe
from handoff._review.graph import Liveness, Tag
from handoff._review.monitors import Checked
from handoff._review.system_duties import deadline_when_stuck
from handoff._review.system_faults import FaultMoves
from handoff._review.system_moves import _START, CHECKS, _new, ownership, transfer_findings
from handoff._review.system_runtime import _freeing
from handoff._review.system_state import (
    Flight,
    Spent,
    SystemState,
    SystemWatch,
    _failed,
    _Node,
    _Raw,
    _Reaction,
    _replaced,
    _without,
    canonical,
    judge_own,
)
from handoff._review.verdict import MoveKind, TraceStep, Verdict
from handoff._review.world import Explored, Judge, Move, WorldBase
from handoff._system.faults import Fault
from handoff._system.judgments import (
    after_abandoned,
    at_completion,
    held_after_freed,
    performed,
    two_slots,
)
from handoff._system.properties import AnyKey, Key, Property, WorldKind, prop
from handoff._system.runtime import REFUSED_WRITE, Vouch, answered, fenced
from handoff._system.worker_state import WorkerState
from handoff._system.workers import (
    RUNTIME_OWN,
    Message,
    MessageKind,
    Role,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
    role_of,
    task_of,
)

__all__ = ["Spent", "SystemState", "SystemWatch", "SystemWorld", "canonical"]


_SLOT_FREED = Key.NO_SLOT_AFTER_FREED
_ONE_SLOT = Key.ONE_SLOT_PER_REQUEST
_FAILABLE = (WorkerTask.TAKE, WorkerTask.TRANSFER, WorkerTask.ACTIVATE)
_CANCEL = WorkerTask.CANCEL
_FAILED_WORK = Fault.FAILED_OUTCOME.outcome
_WORKER_MOVES = (MoveKind.TO_WORKER, MoveKind.WORKER_FAILS)
_FAULTY_TERMINAL = (MoveKind.FAULT, MoveKind.LOSS)
"""The moves after which the handoff must end CANCELED (W5) that are faults (the timer's
timeout is the runtime's own, made in every run)."""
_REFUSED = 2
"""How `_perform` has the source take a transfer whose KV write the destination refuses (1,
or True: the worker fails the work, a fault)."""
_PERFORMED_FINE: tuple[Checked, ...] = ()


class SystemWorld(FaultMoves, WorldBase):
    """The moves of the system around `concurrency` coordinators driven by `chart`, sharing
    two workers, judged as they are made, and the liveness of the whole graph.

    What a move does depends on few numbers (a coordinator's configuration and the call; a
    worker's memory and the message), so each is worked out once, step and messages sent
    included, and a move made again only puts the pieces together (`system_moves`)."""

    kind = WorldKind.SYSTEM

    @property
    def properties(self) -> tuple[Property, ...]:
        return (*super().properties, *self.system.properties)

    def root(self) -> tuple[_Node, Hashable]:
        """Every coordinator before `start()`, both workers knowing nothing, nothing in flight."""
        rules = self.rules
        coordinator = probe.for_table(
            rules.handoff_id, self.chart, rules.fallback_transfer_delay_ms
        )
        count = self.system.concurrency
        channels = (4 if self.system.fifo else 1) + (self._timer is not None)
        nothing = self.codes.worker(WorkerState())
        state = SystemState(
            (self._intern(coordinator),) * count,
            nothing,
            nothing,
            ((),) * channels,
            (SystemWatch(),) * count,
            Spent.first(
                count, any(fault in self.system.injected for fault in self._message_faults)
            ),
        )
        coordinators = (coordinator, *(coordinator.fork() for _ in range(count - 1)))
        return _Node(coordinators, state, self.codes), state

    def checks(self, node: _Node) -> Iterable[Checked]:
        """W1 for each handoff complete (or whose session ended) with nothing of its own in
        flight; the properties of one's own."""
        coordinators, state, _codes = node
        for handoff, coordinator in enumerate(coordinators):
            watch = state.watches[handoff]
            complete = watch.started and coordinator.is_complete
            if not (complete or watch.abandoned) or not node.quiet_for(handoff):
                continue
            source, destination = (node.memory(role).slots(handoff) for role in Role)
            whose = "the handoff" if not self.several else f"h{handoff + 1}"
            if complete:
                restarted = Role.DESTINATION in state.spent.restarted
                completion = coordinator.completion
                words = at_completion(source, destination, completion, restarted, whose)
            else:
                words = after_abandoned(source, destination, whose)
            yield Key.SLOTS_AT_COMPLETION, words
        if self.system.properties:
            view = self.view(node)
            for entry in self.system.properties:
                yield entry.key, judge_own(entry, view)

    def moves(self, node: _Node) -> Iterator[Move]:
        """Every move from `node`, in a fixed order: starts, deliveries, then faults (with
        several handoffs and `symmetry`, only one handoff's when they commute with the rest:
        `_alone`); a deadline fires where nothing else would (`deadline_when_stuck`)."""
        if self.system.deadline is not None:
            yield from deadline_when_stuck(list(self._all_moves(node)))
            return
        yield from self._all_moves(node)

    def _all_moves(self, node: _Node) -> Iterator[Move]:
        state = node.state
        if not self.reduce:
            for raw in self._moves(node):
                yield self._judged(raw)
            return
        groups = []
        for handoff in range(len(state.watches)):
            raws = list(self._moves(node, only=handoff))
            if self._alone(state, handoff, raws):
                for raw in raws:
                    yield self._judged(raw)
                return
            groups.append(raws)
        for raws in groups:
            for raw in raws:
                yield self._judged(raw)
        for raw in self._worker_faults(node):
            yield self._judged(raw)

    def _alone(self, state: SystemState, handoff: int, raws: Sequence[_Raw]) -> bool:
        """Whether the moves `raws` of `handoff` can all be explored first, the others'
        after (a partial-order reduction).

        They can when each changes only what is the handoff's own (its coordinator, its
        messages, its memory on a worker whose other requests it does not compete with:
        `Worker.local`), so that it commutes with every other handoff's move, and nothing
        another handoff does makes a further move of it possible (with FIFO delivery, each of
        its messages is first in its channel), and one of them is fault-free.  Then every run
        is explored in some order with the same moves, every configuration where runs end is
        reached, and every property, each judged on what is its handoff's own, is judged the
        same (the exploration has no cycles: each move spends a budget, issues an action or
        consumes a message).  A restart touches every request at once: while one may come,
        only moves that leave the workers alone are explored first."""
        watch = state.watches[handoff]
        if not watch.started:
            return True
        codes = self.codes
        if self.system.fifo:
            for channel in state.flight:
                if any(codes.handoff[code] == handoff for code in channel[1:]):
                    return False
        restart = any(
            self.system.allows(fault, state.spent.of(fault)) for fault in self._struck_workers
        )
        if restart and self._inbox_struck:
            return False  # a restart changes what is in flight: no move commutes with it
        cooperative = False
        for raw in raws:
            step = raw.step
            if step.kind in _WORKER_MOVES or (
                step.kind in (MoveKind.DUPLICATE, MoveKind.EXPIRE) and step.reaction is not None
            ):
                if restart or raw.node is None:
                    return False
                role = step.message.role if step.message is not None else step.worker
                assert role is not None
                worker = self.workers[role]
                before = codes.workers[state.worker(role)]
                after = codes.workers[raw.node.state.worker(role)]
                if not worker.local(before, after, handoff):
                    return False
            if not (raw.fault or raw.loop):
                cooperative = True
        return cooperative

    def _moves(self, node: _Node, *, only: int | None = None) -> Iterator[_Raw]:
        coordinators, state, _codes = node
        for handoff, watch in enumerate(state.watches):
            if not watch.started and only in (None, handoff):
                yield self._call(node, handoff, MoveKind.START, None, _START, state.flight)
        faults_left = state.spent.faults < self.system.faults
        failures = faults_left and self.system.worker_failures
        messages = self.codes.messages
        for channel, code in self._deliverable(state, only):
            flight = _without(state.flight, channel, code)
            message = messages[code]
            if message.kind is MessageKind.ACTION:
                yield from self._perform(node, code, flight, fail=False)
                if failures and task_of(message.action) in _FAILABLE:
                    yield from self._perform(node, code, flight, fail=True)
            else:
                raw = self._deliver(node, code, flight)
                if not (raw.loop and self._holds(raw)):
                    yield raw
        if self._timer is not None:
            yield from self._resends(node, only)
        for handoff, watch in enumerate(state.watches):
            if watch.started and faults_left and only in (None, handoff):
                if self.system.abandons:  # the runtime ends the session instead
                    if not (watch.abandoned or coordinators[handoff].is_complete):
                        yield self._abandon(node, handoff, state.flight)
                    continue
                for number in range(len(self.terminal_facts)):
                    yield self._call(node, handoff, MoveKind.FAULT, None, number, state.flight)
        if self.system.expires:
            yield from self._expiries(node, only)
        if self.system.injected:
            yield from self._injected(node, only)
        if self.system.deadline is not None:
            yield from self._deadlines(node, only)

    # -- moves -------------------------------------------------------------------------

    def _perform(self, node: _Node, code: int, flight: Flight, *, fail: bool) -> Iterator[_Raw]:
        """A worker gets an action and reacts in each way its contract allows (or fails it: a
        fault)."""
        coordinators, state, codes = node
        message = codes.messages[code]
        role, handoff = message.role, codes.handoff[code]
        source = role is Role.SOURCE
        before = state.source if source else state.destination
        watch = state.watches[handoff]
        how = fail or _REFUSED * (self._fences and fenced(message, Vouch(watch.vouch)))
        key = (state.coordinators[handoff], before, code, how)
        reactions = self._reactions.get(key)
        if reactions is None:
            chart_state = coordinators[handoff].chart_state
            reactions = self._reactions[key] = tuple(self._reaction(chart_state, before, code, how))
        found = _PERFORMED_FINE
        bit = 1 << message.action_id
        cache = self.answers_again and role is Role.DESTINATION and not fail
        if cache and watch.performed & bit:
            cached = next((sent for done, sent in watch.answers if done == message.action_id), None)
            if cached is not None:
                yield self._answered_again(node, code, flight, cached)
                return
        twice = watch.performed & bit and not message.copy
        own = message.action_id == RUNTIME_OWN
        if own:
            pass  # the runtime's own cleanup: no coordinator issued it (`runtime.abandoned`)
        elif not watch.issued & bit or twice or role_of(message.action) is not role:
            found = tuple(performed(watch.issued, watch.performed, message))
        told_of = watch.told
        if own and any(_freeing(reaction) for reaction in reactions):
            told_of = told_of | {role}  # the runtime's own cleanup freed it: no slot after
        watch = watch._replace(performed=watch.performed | bit, told=told_of)
        watches = _replaced(state.watches, handoff, watch)
        spent = state.spent
        if fail:
            spent = spent._replace(faults=spent.faults + 1)
        told = role in watch.told
        for reaction in reactions:
            findings = found
            # A cancel the worker failed was not performed: its retry is no second time.
            seen = watches if reaction.done else state.watches
            slots = reaction.slots
            if slots and told:
                freed = held_after_freed(role, message, watch.abandoned)
                findings = (*findings, (_SLOT_FREED, freed))
            if slots > 1:
                findings = (*findings, (_ONE_SLOT, two_slots(role, message, slots)))
            if reaction.broken:
                findings = (*findings, *reaction.broken)
            if reaction.transfers:
                landed = transfer_findings(codes.workers[state.destination], watch.target, message)
                findings = (*findings, *landed)
            if reaction.took and not watch.target:
                seen = _replaced(seen, handoff, seen[handoff]._replace(target=reaction.took))
            if self._fences and not source:
                seen = _vouched(seen, handoff, message, reaction)
            after = _new(
                SystemState,
                (
                    state.coordinators,
                    reaction.memory if source else state.source,
                    state.destination if source else reaction.memory,
                    self._send(flight, reaction.sent),
                    self._cached(seen, handoff, message, reaction) if cache else seen,
                    spent,
                ),
            )
            node = _new(_Node, (coordinators, after, codes))
            yield _new(_Raw, (reaction.step, node, findings, fail, False, reaction.checks))

    def _reaction(self, chart_state: str, before: int, code: int, fail: int) -> Iterator[_Reaction]:
        """Each way the worker remembering memory `before` takes the message `code` (or fails
        it; `_REFUSED`: the source's transfer, whose KV write the destination refuses,
        `runtime.fenced`), as `_perform` puts it together: worked out once."""
        codes = self.codes
        message = codes.messages[code]
        role, action, handoff = message.role, message.action, codes.handoff[code]
        worker = self.workers[role]
        memory = codes.workers[before]
        if fail:
            reactions: tuple[tuple[WorkerState, WorkerReaction], ...] = (
                (
                    worker.fail(memory, handoff, message.action_id),
                    _failed(worker.memory(memory, handoff)),
                ),
            )
        else:
            reactions = worker.react(memory, handoff, message.action_id, task_of(action))
        tag = message.handoff
        refused = fail == _REFUSED  # not a fault: the destination's fence (`runtime.fenced`)
        kind = MoveKind.WORKER_FAILS if fail and not refused else MoveKind.TO_WORKER
        failed = REFUSED_WRITE if refused else _FAILED_WORK if fail else None
        acknowledge = self.system.acknowledge
        for memory_after, reaction in reactions:
            owned = ownership(self.contract, message, handoff, (memory, memory_after), reaction)
            slots = memory_after.slots(handoff)
            sent = answered(message, reaction.reply, self.workload, acknowledge, failed=failed)
            step = TraceStep(
                None,
                chart_state,
                kind=kind,
                message=message,
                reaction=reaction,
                sent=sent,
                handoff=tag,
            )
            numbers = tuple(codes.message(item) for item in sent)
            done = not (reaction.reply is WorkerReply.FAILED and task_of(action) is _CANCEL)
            yield _Reaction(codes.worker(memory_after), numbers, step, slots, *owned, done)

    def _judged(self, raw: _Raw) -> Move:
        """A move as the explorer takes it: every property it was checked for, its tags, and
        the key of where it leads (handoffs interchangeable, with `symmetry`)."""
        step, after = raw.step, raw.node
        kind = step.kind
        checks = raw.checks or CHECKS[step.call is not None, kind in _WORKER_MOVES, False, False]
        if raw.findings:
            broken = dict(raw.findings)
            checks = tuple((key, broken.get(key)) for key, _none in checks)
        if kind in _FAULTY_TERMINAL:
            tags = Tag.TERMINAL
        else:
            tags = Tag.NONE if raw.fault or raw.loop else Tag.COOPERATIVE
        if after is None:
            return Move(step, checks, None, tags=tags)
        if self.symmetric:
            state = after.state
            known = self._keys.get(state)
            if known is None:
                known = self._keys[state] = canonical(state, self.codes, self._queues)
            key, renamed = known
            move: Move = _new(Move, (step, checks, after, key, tags, raw.loop, None, renamed))
            return move
        return Move(step, checks, after, after.state, tags, raw.loop)

    # -- judging over the graph --------------------------------------------------------

    def judges(self, explored: Explored) -> dict[AnyKey, Judge]:
        liveness = Liveness(explored.nodes, explored.edges, explored.parents)
        return {
            Key.DELIVERIES_COMPLETE: liveness.deliveries_complete,
            Key.TERMINAL_CANCELS: liveness.terminal_cancels,
            Key.EVERY_HANDOFF_SUCCEEDS: liveness.every_handoff_succeeds,
            Key.BOUND: lambda: _bound(explored),
        }


def _vouched(
    watches: tuple[SystemWatch, ...], handoff: int, message: Message, reaction: _Reaction
) -> tuple[SystemWatch, ...]:
    """`watches` once the destination took `message` of `handoff` with `reaction`: a
    reservation taken stamps its generation (`Vouch.taken`)."""
    watch = watches[handoff]
    assert reaction.step.reaction is not None
    vouch = Vouch(watch.vouch).taken(message, reaction.step.reaction.reply)
    return (
        watches
        if vouch == watch.vouch
        else _replaced(watches, handoff, watch._replace(vouch=vouch))
    )


def _bound(explored: Explored) -> Verdict:
    count = len(explored.nodes)
    summary = f"{count:,} configurations, every run to its end"
    if explored.cut:
        summary = f"{count:,} configurations; some runs were cut off"
    tally = explored.tallies[Key.BOUND]
    return tally.verdict(prop(Key.BOUND), checked=count, summary=summary)

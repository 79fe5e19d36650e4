"""The runtime's duties beyond carrying messages, as moves of the system world
(`handoff._review.system`): a cancel its worker fails (`--faults cleanup-failure`), a lost
message waiting on the runtime's timer and sent again (`--resend`), what a restart does to
the actions on their way to the worker (`--restart`), a deadline per handoff (`--deadline`).
Each is written once in `handoff._system` (`runtime.resent`, `runtime.retried`,
`Worker.restarted`) and put together here, a layer of `SystemWorld`'s moves
(`system_moves`)."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from handoff._review.graph import Tag
from handoff._review.system_moves import WorldMoves
from handoff._review.system_state import Flight, _failed, _Node, _Raw, _silent, _without
from handoff._review.verdict import MoveKind, TraceStep
from handoff._review.world import Move
from handoff._system.faults import Fault
from handoff._system.runtime import Vouch, cleanup_failed, refused_unvouched, resent
from handoff._system.worker_state import WorkerState
from handoff._system.workers import Message, MessageKind, Role, Slots, WorkerTask, task_of

__all__ = ["RuntimeDuties", "deadline_when_stuck"]


class RuntimeDuties(WorldMoves):
    """The system world's moves for the runtime's duties (see the module)."""

    def _deadlines(self, node: _Node, only: int | None) -> Iterator[_Raw]:
        """Each handoff's deadline, firing before the handoff completes: the runtime reports
        `TimedOut` (once: not after a terminal fact, not counted against `--failures`), and
        what is in flight still arrives.  Not a move every run makes (`moves` says when)."""
        coordinators, state, _codes = node
        for handoff, watch in enumerate(state.watches):
            if only not in (None, handoff) or not watch.started or watch.terminated:
                continue
            if coordinators[handoff].is_complete:
                continue
            kind = MoveKind.DEADLINE
            raw = self._call(node, handoff, kind, None, self.timeout_call, state.flight)
            yield raw._replace(step=attrs.evolve(raw.step, kind=kind), fault=True)

    def _lost(self, fault: Fault, node: _Node, code: int, flight: Flight) -> _Raw:
        """The message `code` is lost and the runtime will send it again (`resent`): it waits
        on the runtime's timer, and no `TimedOut` is reported."""
        state = node.state
        message = self.codes.messages[code]
        handoff = self.codes.handoff[code]
        after = state._replace(
            flight=self._park(flight, code), spent=state.spent.plus(fault, handoff)
        )
        return self._aside(node, handoff, after, MoveKind.LOST, fault=True, message=message)

    def _park(self, flight: Flight, code: int) -> Flight:
        """`flight` with the lost message `code` on the runtime's timer."""
        assert self._timer is not None
        timer = tuple(sorted((*flight[self._timer], code), key=self.codes.order.__getitem__))
        return (*flight[: self._timer], timer)

    def _resends(self, node: _Node, only: int | None) -> Iterator[_Raw]:
        """The runtime's timer fires for a lost message: it goes out again, behind what is in
        flight on its channel, or, for one its policy does not re-send (lost with a worker's
        inbox), the runtime reports `TimedOut` for its handoff.  A cooperative move: the
        timer fires in every run."""
        assert self._timer is not None
        state, codes = node.state, self.codes
        for code in dict.fromkeys(state.flight[self._timer]):
            handoff = codes.handoff[code]
            if only not in (None, handoff):
                continue
            message = codes.messages[code]
            rest = _without(state.flight, self._timer, code)
            if not resent(message, self.system.resend):
                raw = self._call(node, handoff, MoveKind.TIMER, None, self.timeout_call, rest)
                step = attrs.evolve(raw.step, kind=MoveKind.TIMER, message=message)
                yield raw._replace(step=step)
                continue
            after = state._replace(flight=self._send(rest, (code,)))
            resend, sent = MoveKind.RESEND, (message,)
            yield self._aside(node, handoff, after, resend, fault=False, message=message, sent=sent)

    def _cleanup_fails(
        self, fault: Fault, node: _Node, code: int, flight: Flight
    ) -> Iterator[_Raw]:
        """The cancel `code` reaches its worker, which fails it: it remembers nothing of it,
        holds what it held, and acknowledges it as failed (the runtime's retry, if any, is
        made when the coordinator refuses that: `retried`; at once for its own cleanup).  A
        cancel the worker did already (a copy) is answered as before, and has no chance to
        fail, as in the simulation."""
        _coordinators, state, codes = node
        message = codes.messages[code]
        if (
            message.kind is not MessageKind.ACTION
            or task_of(message.action) is not WorkerTask.CANCEL
        ):
            return
        role, handoff = message.role, codes.handoff[code]
        remembered = codes.workers[state.worker(role)]
        entry = remembered.find(handoff)
        if entry is not None and entry.done & 1 << message.action_id:
            return
        memory = self.workers[role].memory(remembered, handoff)
        system = self.system
        sent = cleanup_failed(message, self.workload, system.acknowledge, system.retry)
        numbers = tuple(codes.message(item) for item in sent)
        spent = state.spent.plus(fault, handoff)
        after = state._replace(flight=self._send(flight, numbers), spent=spent)
        fails, reaction = MoveKind.WORKER_FAILS, _failed(memory)
        yield self._aside(
            node, handoff, after, fails, fault=True, message=message, reaction=reaction, sent=sent
        )

    def _restart(self, node: _Node, role: Role, fault: Fault) -> _Raw:
        """The worker of `role` restarts: it forgets every request and frees every slot, or
        as `System.restart` says (`Worker.restarted`, `_inbox`).

        The coordinators are not told: a restart is seen only in what the worker does next."""
        coordinators, state, _codes = node
        spent = state.spent.plus(fault)
        spent = spent._replace(restarted=spent.restarted | {role})
        restart, worker = self.system.restart, self.workers[role]
        kept = worker.restarted(
            self.codes.workers[state.worker(role)].entries,
            keeps_slots=restart.keeps_slots,
            durable=restart.durable_tombstones,
        )
        forgotten = self.codes.worker(WorkerState(kept))
        flight, refusals, lost = self._inbox(state.flight, role)
        watches = state.watches
        if restart.refuses_unvouched and role is Role.DESTINATION:  # `runtime.fenced`
            watches = tuple(w._replace(vouch=Vouch(w.vouch).restarted()) for w in watches)
        after = state._replace(
            source=forgotten if role is Role.SOURCE else state.source,
            destination=forgotten if role is Role.DESTINATION else state.destination,
            flight=flight,
            watches=watches,
            spent=spent,
        )
        reaction = _silent(worker.initial, Slots.KEEP if restart.keeps_slots else Slots.FREE)
        where = ", ".join(coordinator.chart_state for coordinator in coordinators)
        step = TraceStep(
            None,
            where,
            kind=MoveKind.RESTART,
            reaction=reaction,
            sent=refusals,
            worker=role,
            lost=lost,
        )
        return _Raw(step, _Node(coordinators, after, self.codes), (), fault=True)

    def _inbox(
        self, flight: Flight, role: Role
    ) -> tuple[Flight, tuple[Message, ...], tuple[Message, ...]]:
        """What becomes of the actions on their way to the worker of `role` as it restarts:
        lost with it (`Restart.loses_inbox`: those the runtime re-sends wait on its timer),
        or, sent before the restart, the work among them refused as failed
        (`Restart.refuses_unvouched`: the worker answers them as soon as they arrive, which
        the review makes the restart's own move).  The other messages stay as they were.
        Also says what was refused and what was lost."""
        restart = self.system.restart
        if not (restart.loses_inbox or restart.refuses_unvouched):
            return flight, (), ()
        codes, acknowledge = self.codes, self.system.acknowledge
        refusals: list[Message] = []
        lost: list[Message] = []
        for channel, messages in enumerate(flight):
            if channel == self._timer:
                continue
            for code in messages:
                message = codes.messages[code]
                if message.kind is not MessageKind.ACTION or message.role is not role:
                    continue
                if restart.loses_inbox:  # the runtime's timer will notice: `_resends`
                    lost.append(message)
                    flight = self._park(_without(flight, channel, code), code)
                    continue
                refused = refused_unvouched(message, self.workload, acknowledge)
                if refused is not None:
                    flight = _without(flight, channel, code)
                    refusals.extend(refused)
        numbers = tuple(codes.message(item) for item in refusals)
        return self._send(flight, numbers), tuple(refusals), tuple(lost)


def deadline_when_stuck(moves: list[Move]) -> list[Move]:
    """`moves`, a handoff's deadline made a move every run makes where nothing else is: the
    deadline may fire at any moment (a fault-like move, so W7's runs without faults do not
    take it), and where the run would otherwise end, it fires, so W4 and W5 judge what
    follows it."""
    deadline = MoveKind.DEADLINE
    if any(m.tags & Tag.COOPERATIVE for m in moves if m.step.kind is not deadline):
        return moves
    return [m._replace(tags=Tag.COOPERATIVE) if m.step.kind is deadline else m for m in moves]

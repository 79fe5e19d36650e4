"""The faults `--faults` injects, as moves of the system world (`handoff._review.system`):
each as its `Strike` says (`handoff._system.faults`), on every message in flight, then on each
worker, within each handoff's budget and after every other move, so that a review without them
makes exactly the moves it made before.  A layer of `SystemWorld`'s moves
(`system_moves`)."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from handoff._review.system_duties import RuntimeDuties
from handoff._review.system_state import _Node, _Raw, _without
from handoff._review.verdict import MoveKind
from handoff._system.faults import NETWORK, Fault, strike_message
from handoff._system.runtime import resent
from handoff._system.workers import MessageKind, Role
from handoff._values.messages import HandoffFact

__all__ = ["FaultMoves"]

_FAULT_MOVES = {fault: MoveKind(fault.shown.move) for fault in NETWORK}
"""How a run shows each injected fault's move (`Fault.shown`)."""


class FaultMoves(RuntimeDuties):
    """The system world's moves for injected faults (see the module)."""

    def _injected(self, node: _Node, only: int | None) -> Iterator[_Raw]:
        """The faults `--faults` asks for, each within its budget, after every other move (so
        a review without them makes exactly the moves it made before): each as its `Strike`
        says, on every message in flight, then on each worker."""
        system, spent = self.system, node.state.spent
        struck = [fault for fault in self._message_faults if fault in system.injected]
        if struck:
            numbers = self.codes.handoff
            for channel, code in self._deliverable(node.state, only):
                for fault in struck:
                    if system.allows(fault, spent.of(fault, numbers[code])):
                        yield from self._strike(fault, node, channel, code)
        if only is None:
            # With the moves grouped by handoff (`moves`), restarts come after every group.
            yield from self._worker_faults(node)

    def _worker_faults(self, node: _Node) -> Iterator[_Raw]:
        state = node.state
        for fault in self._struck_workers:
            if self.system.allows(fault, state.spent.of(fault)):
                for role in Role:
                    if state.worker(role):
                        yield self._restart(node, role, fault)

    def _strike(self, fault: Fault, node: _Node, channel: int, code: int) -> Iterator[_Raw]:
        """`fault` strikes the message `code`: as `strike_message` says, a copy of it is sent
        again behind what is in flight, it is delivered, held back, or lost, and the runtime
        notices a loss by its timer's fact (reported in the same move: a run in which other
        messages are delivered between the loss and its notice is explored as those
        deliveries first)."""
        codes = self.codes
        message = codes.messages[code]
        flight = _without(node.state.flight, channel, code)
        if fault.strike.fails_cleanup:
            yield from self._cleanup_fails(fault, node, code, flight)
            return
        struck = strike_message(fault, message, message._replace(copy=True))
        sent = () if struck.again is None else (struck.again,)
        flight = self._send(flight, tuple(codes.message(again) for again in sent))
        kind, handoff = _FAULT_MOVES[fault], codes.handoff[code]
        if struck.now:
            if message.kind is MessageKind.ACTION:
                raws = list(self._perform(node, code, flight, fail=False))
            else:
                raws = [self._deliver(node, code, flight)]
        elif not struck.lost:  # held back: in flight again, and nobody gets it now
            state = node.state
            after = state._replace(flight=flight, spent=state.spent.plus(fault, handoff))
            yield self._aside(node, handoff, after, kind, fault=True, message=message, sent=sent)
            return
        elif resent(message, self.system.resend):
            yield self._lost(fault, node, code, flight)
            return
        elif self.system.abandons:  # the transport error ends the session, untold
            raws = [self._abandon(node, handoff, flight, lost=True)]
        else:
            assert struck.notice is HandoffFact.TimedOut, fault  # the timer's fact
            raws = [self._call(node, handoff, kind, None, self.timeout_call, flight)]
        for raw in raws:
            if struck.now and (raw.node is None or raw.loop):
                # A crash is already the delivery's own finding; a refused early fact stays in
                # flight anyway, so a copy of it adds nothing.
                continue
            step = attrs.evolve(raw.step, kind=kind, message=message, sent=(*raw.step.sent, *sent))
            if raw.node is None:
                yield _Raw(step, None, raw.findings, fault=True)
                continue
            after = raw.node.state
            spent = after.spent.plus(fault, handoff)
            moved = _Node(raw.node.coordinators, after._replace(spent=spent), codes)
            yield _Raw(step, moved, raw.findings, fault=True)

"""Holding an implementation to the chart: send the runs, compare every answer, shrink.

Runs are sent many at a time (`Implementation.exchange`) and judged in order, so the first
divergence of the breadth-first suite is a shortest one.  A random walk that diverges is
shrunk: cut after its first divergent call, then calls are deleted while it still diverges.
An answer that is not the protocol, or names another handoff, is `Broken`: no answer to judge.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterable, Iterator, Sequence

import attrs

from handoff._review.conform import protocol
from handoff._review.conform.child import Implementation, Misbehaved, quoted
from handoff._review.conform.suite import Model, Run, Suite, handoff_id, run_of, walk, worded
from handoff._review.environment import HANDOFF_ID
from handoff._runs.replay import record
from handoff._runs.trace import Entry, Trace
from handoff._system.call import Call
from handoff._values.errors import HandoffError
from handoff._values.values import HandoffId
from handoff._wire.json_text import WireRefusal, parse

__all__ = ["Broken", "Checker", "ImplementationDivergence"]

_BATCH = 4_000
"""Request lines in flight at once: enough that neither side waits for the other."""


class Broken(Exception):
    """The implementation broke the protocol; the message names the request it broke it at."""


@attrs.frozen
class ImplementationDivergence:
    """The first call of a run the implementation answered differently from the chart."""

    model: Model
    run: Run
    index: int
    """The call's place in the run's requests (1: the first call)."""
    expected: protocol.Reply
    actual: protocol.Reply | None
    """What the implementation answered (None: a reply no chart could give, see `unread`)."""
    shrunk: bool = False
    """Shrunk: found by a random walk, or past a refused or dropped call of the suite (else
    by the suite, breadth-first: a shortest run)."""
    chart_known: bool = True
    """Whether the chart is known (not when the run came from test vectors)."""
    past_refusal: bool = False
    """Found past a refused or dropped call of the suite (then shrunk)."""
    unread: str = ""
    """A reply the wire can spell but no chart gives (a `null` delay), quoted, and why."""

    def answered(self) -> str:
        """What the implementation answered, in words."""
        if self.actual is None:
            return self.unread
        return self.actual.describe()

    @property
    def calls(self) -> tuple[Call, ...]:
        """The calls of the run up to and including the divergent one, in the words of the
        review's environment (`on_fact(SourceHeld(bandwidth -1.0 GB/s))`)."""
        made = [_call(line) for line in self.run.requests[1 : self.index + 1]]
        if self.run.said:  # the calls' own words, for the run's own handoff
            return tuple(
                attrs.evolve(call, label=said.describe())
                for call, said in zip(made, self.run.said, strict=False)
            )
        words = worded(self.run.handoff_id)
        return tuple(words.get(call, call) for call in made)

    def template_calls(self) -> tuple[Call, ...]:
        """`calls` as made for the review's handoff, as runs are built (`run_of`)."""
        own, template = str(self.run.handoff_id), str(HANDOFF_ID)
        lines = self.run.requests[1 : self.index + 1]
        words = worded(HANDOFF_ID)
        made = (_call(line.replace(own, template)) for line in lines)
        return tuple(words.get(call, call) for call in made)

    def trace(self) -> Trace:
        """The calls as a trace that expects the chart's answers (`handoff replay` reads it)."""
        model = self.model
        bare = Trace(
            handoff_id=self.run.handoff_id,
            order=model.order,
            fallback_transfer_delay_ms=model.fallback_transfer_delay_ms,
            entries=tuple(Entry(call) for call in self.calls),
            chart=model.spec,
            rules=model.rules,
        )
        return record(bare)

    def chart_state(self) -> str:
        """The chart state before the divergent call."""
        coordinator = self.model.coordinator(self.run.handoff_id)
        for call in self.calls[:-1]:
            try:
                call.send(coordinator)
            except HandoffError:  # a refusal changes nothing
                continue
        return coordinator.chart_state


class Checker:
    """Speaks to one implementation process: the handshake, then runs, numbered throughout."""

    def __init__(self, implementation: Implementation) -> None:
        self.implementation = implementation
        self.opened = 0
        self.calls = 0
        """Calls sent so far."""
        self.sent = 0
        """Runs sent by the last batch of runs."""
        self.waited = 0.0
        """Seconds spent sending requests and waiting for their answers."""
        self.closing = False
        """Whether each handoff is closed after its run (protocol version 2)."""
        self.unreported: frozenset[str] = frozenset()
        """What of `protocol.REPORTED` the implementation does not report: not compared."""

    def hello(self) -> protocol.Hello:
        """The handshake; `Broken` unless the implementation speaks a version this side does."""
        request = protocol.write(protocol.Hello(protocol.VERSION, "handoff conform"))
        try:
            (line,) = self.implementation.exchange([request])
        except Misbehaved as error:
            raise _broken(error, _name(request)) from None
        answer = _read(line, _name(request))
        if not isinstance(answer, protocol.Hello):
            raise Broken(f"the implementation answered the hello line with {quoted(line)}")
        if answer.version not in protocol.VERSIONS:
            raise Broken(
                f"the implementation speaks protocol version {answer.version}; "
                f"handoff conform speaks versions {' and '.join(map(str, protocol.VERSIONS))}"
            )
        self.closing = answer.version >= 2
        self.unreported = frozenset(protocol.REPORTED) - set(answer.reported)
        return answer

    def suite(self, suite: Suite) -> ImplementationDivergence | None:
        """Send every case of `suite`, then its payload probes; the first divergence,
        breadth-first (so a shortest), shrunk when it lies past a refused or dropped call."""
        first = self.opened
        self.opened += suite.handoffs
        found = self._first(suite.all_runs(first))
        if found is None or not found.run.continued or found.index < found.run.continued:
            return found
        shrunk = self._shrink(found.model, found.template_calls(), found)
        return attrs.evolve(shrunk, past_refusal=True)

    def walks(
        self, model: Model, seed: int, count: int
    ) -> tuple[int, int, ImplementationDivergence | None]:
        """`count` random walks from `seed`: the walks and calls sent (all of them, or up to
        the batch that showed a divergence), and a shrunk divergence if any."""
        rng = random.Random(seed)
        paths = [walk(model, rng) for _ in range(count)]
        runs = [run_of(model, calls, self._next_id()) for calls in paths]
        before = self.calls
        found = self._first((model, run) for run in runs)
        made = self.calls - before
        sent = self.sent
        if found is None:
            return sent, made, None
        return sent, made, self._shrink(model, paths[runs.index(found.run)], found)

    def replay(self, runs: Sequence[tuple[Model, Run]]) -> ImplementationDivergence | None:
        """Send `runs` (read from test vectors) as they are; the first divergence."""
        return self._first(runs)

    def _shrink(
        self, model: Model, calls: Sequence[Call], found: ImplementationDivergence
    ) -> ImplementationDivergence:
        """`found`, the divergence of `calls`, with every call deleted that it does not need.

        The calls are cut after the divergent one; then each round sends every run one call
        shorter at once, and keeps the first that still diverges, cut likewise; it ends when
        none does.
        """
        calls = calls[: found.index]
        while True:
            candidates = [(*calls[:cut], *calls[cut + 1 :]) for cut in range(len(calls))]
            runs = [run_of(model, candidate, self._next_id()) for candidate in candidates]
            shorter = self._first((model, run) for run in runs)
            if shorter is None:
                return attrs.evolve(found, shrunk=True)
            found = shorter
            calls = candidates[runs.index(shorter.run)][: shorter.index]

    def _next_id(self) -> HandoffId:
        self.opened += 1
        return handoff_id(self.opened - 1)

    def _first(self, runs: Iterable[tuple[Model, Run]]) -> ImplementationDivergence | None:
        """Send `runs` a batch at a time; the first divergence (`sent` counts the runs sent)."""
        self.sent = 0
        closing = 1 if self.closing else 0
        for batch in _batches(runs):
            answers = self._exchange([run for _, run in batch])
            self.sent += len(batch)
            start = 0
            for model, run in batch:
                found = self._judge(model, run, answers[start : start + len(run.requests)])
                start += len(run.requests)
                if found is not None:
                    return found
                if closing:
                    self._closed(run, answers[start])
                start += closing
            extra = self.implementation.unasked()
            if extra is not None:
                last = _name(batch[-1][1].requests[-1]).removeprefix("to ")
                raise Broken(
                    f"the implementation wrote a line nobody asked for after {last}: {extra}"
                )
        return None

    def _exchange(self, batch: Sequence[Run]) -> list[bytes]:
        requests = [
            line for run in batch for line in (*run.requests, *_closing(run, closing=self.closing))
        ]
        self.calls += sum(run.calls for run in batch)
        began = time.perf_counter()
        try:
            return self.implementation.exchange(requests)
        except Misbehaved as error:
            raise _broken(error, _name(requests[error.index])) from None
        finally:
            self.waited += time.perf_counter() - began

    def _spelled(self, expected: str) -> bytes:
        """`expected` as the reference spells it without what the implementation does not
        report (a reply's `completion` and `lifecycle` come last, in that order)."""
        if self.unreported:
            for key in self.unreported:
                expected = _REPORTED_KEYS[key].sub("", expected)
        return expected.encode()

    def _closed(self, run: Run, line: bytes) -> None:
        where = f"to the closing of handoff {run.handoff_id}"
        if line == protocol.write(protocol.Closed(run.handoff_id)).encode():
            return
        answer = _read(line, where)
        if answer != protocol.Closed(run.handoff_id):
            raise Broken(f"the implementation answered {quoted(line)} {where}")

    def _judge(
        self, model: Model, run: Run, answers: Sequence[bytes]
    ) -> ImplementationDivergence | None:
        for index, (request, expected, line) in enumerate(
            zip(run.requests, run.expected, answers, strict=True)
        ):
            if line == self._spelled(expected):  # the reference's own spelling: no need to read
                continue
            where = _name(request)
            chart = protocol.read(expected)
            try:
                answer = protocol.read(line)
            except protocol.ProtocolError as error:
                unread = _unreadable_reply(line, run.handoff_id)
                if unread is None or not isinstance(chart, protocol.Reply):
                    raise _not_protocol(error, line, where) from None
                return ImplementationDivergence(model, run, index, chart, None, unread=unread)
            if not isinstance(answer, type(chart)):
                raise Broken(f"the implementation answered {quoted(line)} {where}")
            if (
                isinstance(answer, protocol.Opened | protocol.Reply)
                and answer.handoff_id != run.handoff_id
            ):
                raise Broken(f"the implementation answered for handoff {answer.handoff_id} {where}")
            if isinstance(answer, protocol.Reply) and isinstance(chart, protocol.Reply):
                found = self._compare(model, run, index, chart, answer, where)
                if found is not None:
                    return found
        return None

    def _compare(
        self,
        model: Model,
        run: Run,
        index: int,
        chart: protocol.Reply,
        answer: protocol.Reply,
        where: str,
    ) -> ImplementationDivergence | None:
        """A divergence if `answer` differs from `chart` in what the implementation reports."""
        missing = sorted(answer.left_out - self.unreported)
        if missing:
            raise Broken(
                f"the implementation left out {missing[0]!r}, which its hello says it "
                f"reports, {where}"
            )
        if self.unreported:
            chart, answer = chart.without(self.unreported), answer.without(self.unreported)
        return (
            None if answer == chart else ImplementationDivergence(model, run, index, chart, answer)
        )


def _closing(run: Run, *, closing: bool) -> tuple[str, ...]:
    return (protocol.write(protocol.Close(run.handoff_id)),) if closing else ()


def _batches(runs: Iterable[tuple[Model, Run]]) -> Iterator[list[tuple[Model, Run]]]:
    batch: list[tuple[Model, Run]] = []
    lines = 0
    for model, run in runs:
        batch.append((model, run))
        lines += len(run.requests)
        if lines >= _BATCH:
            yield batch
            batch, lines = [], 0
    if batch:
        yield batch


def _broken(error: Misbehaved, where: str) -> Broken:
    """What `error` means, said at the request `where` (`to start() of handoff …`)."""
    if error.before:
        where = "before answering " + where.removeprefix("to ")
    return Broken(f"the implementation {error.reason} {where}")


def _read(line: bytes, where: str) -> protocol.ProtocolLine:
    try:
        return protocol.read(line)
    except protocol.ProtocolError as error:
        raise _not_protocol(error, line, where) from None


def _not_protocol(error: protocol.ProtocolError, line: bytes, where: str) -> Broken:
    return Broken(
        f"the implementation printed what is not the protocol {where}: "
        f"{quoted(str(error).encode())}: {quoted(line)}"
    )


_REPORTED_KEYS = {
    "completion": re.compile(r',"completion":(?:null|"[A-Za-z]+")(?=,"lifecycle"|}$)'),
    "lifecycle": re.compile(r',"lifecycle":\[[^\]]*\](?=}$)'),
}
"""Each reported key of a reply as `protocol.write` spells it, where it spells it."""

_REPLY_KEYS = frozenset(("handoff", "issued", "error", "complete", "completion", "lifecycle"))


def _unreadable_reply(line: bytes, handoff: HandoffId) -> str | None:
    """For a reply to `handoff` that has the reply's shape but a value no chart answers (a
    delay of `null`, which is how the wire spells an infinite one), the reply quoted with
    why it is wrong; None for anything else (a reply that reads, or no reply at all)."""
    try:
        data = parse(line)
    except WireRefusal:
        return None
    if not isinstance(data, dict) or not _REPLY_KEYS.issuperset(data):
        return None
    if data.get("handoff") != str(handoff) or ("issued" in data) == ("error" in data):
        return None
    try:
        protocol.read_message(data)
    except WireRefusal as refusal:
        why = f"{refusal.path}: {refusal.reason}"
    except protocol.ProtocolError as error:
        why = str(error)
    else:
        return None
    return f"{quoted(line)}, which no chart answers ({why})"


def _call(line: str) -> Call:
    request = protocol.read(line)
    assert isinstance(request, protocol.CallRequest)
    return request.call


def _name(request: str) -> str:
    """The request in words, as a report names it: `to on_fact(Canceled) of handoff …`."""
    message = protocol.read(request)
    if isinstance(message, protocol.CallRequest):
        return f"to {message.call} of handoff {message.handoff_id}"
    if isinstance(message, protocol.Open):
        return f"to the opening of handoff {message.handoff_id}"
    if isinstance(message, protocol.Close):
        return f"to the closing of handoff {message.handoff_id}"
    return "to the hello line"

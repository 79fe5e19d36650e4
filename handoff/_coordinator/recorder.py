"""A coordinator that writes every call down as a trace, for replaying a production run.

`record(coordinator, file)` wraps a fresh coordinator; the wrapper answers every call exactly as
the coordinator does and writes, line by line, the trace `handoff replay` and
`handoff.check_trace` read (docs/traces.md): the header when it is made, one call line with
the call's answer (`expect`) or its `HandoffError` message (`expect_error`) per call, and the
end line when it is closed.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    NamedTuple,
    NoReturn,
    Protocol,
    SupportsIndex,
    cast,
    runtime_checkable,
)

from handoff import _files
from handoff._coordinator import probe
from handoff._coordinator.core import Call, HandoffCoordinatorCore, Progress, hold, release
from handoff._coordinator.snapshot import written_by_dumps
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffActionId, HandoffActionOutcome, HandoffOrder
from handoff._wire.json_text import format_f64, write_string
from handoff._wire.registry import write

if TYPE_CHECKING:
    from handoff._values.lifecycle import NormalizedHandoffEvent
    from handoff._values.values import HandoffCompletion, HandoffId

__all__ = ["HandoffCoordinator", "RecordingCoordinator", "record"]


def record(
    coordinator: HandoffCoordinatorCore, file: IO[str] | str | os.PathLike[str]
) -> RecordingCoordinator:
    """Wrap `coordinator` so that every call made through the wrapper is written to `file`.

    `file` is a text stream opened for writing (left open when the recorder closes) or a path
    (created or truncated, and closed with the recorder). A coordinator that has already moved
    (one restored from a snapshot, say) is written into the trace's header as its snapshot, and
    the trace replays from there. Make every call through the wrapper (a call made on the
    coordinator itself is written too, while the recorder is open), and close it (`with
    handoff.record(coordinator, path) as recorded: …`) so the trace gets its end line; a trace
    left without one is refused by `handoff replay` until `handoff replay --record` declares it
    complete. Each line is flushed as it is written, before the coordinator takes the call's
    step.

    Raises `ValueError` for a coordinator another recorder is recording, `TypeError` for one
    running a compiled table of its own (only the shipped orders and chart classes can be
    replayed), `ConcurrentCallError` for one another thread is calling.
    """
    return RecordingCoordinator(coordinator, file)


@runtime_checkable
class HandoffCoordinator(Protocol):
    """A coordinator or its recorder: what a runtime calls, whichever of the two it holds.

    `HandoffCoordinatorCore` and `RecordingCoordinator` are both one, so a runtime written
    against `HandoffCoordinator` runs recorded or not: `def drive(coordinator:
    handoff.HandoffCoordinator) -> None: …`.  `isinstance` checks the calls are there.
    """

    @property
    def handoff_id(self) -> HandoffId:
        """The handoff the coordinator moves."""

    @property
    def order(self) -> HandoffOrder:
        """The coordinator's order."""

    @property
    def is_complete(self) -> bool:
        """Whether the handoff has completed."""

    @property
    def completion(self) -> HandoffCompletion | None:
        """The latest completion, or None before the first."""

    @property
    def lifecycle(self) -> tuple[NormalizedHandoffEvent, ...]:
        """The normalized lifecycle events recorded so far."""

    @property
    def chart_name(self) -> str:
        """The title of the coordinator's chart."""

    @property
    def chart_state(self) -> str:
        """The id of the chart state the handoff is in."""

    @property
    def fallback_transfer_delay_ms(self) -> float:
        """The transfer delay used when the timing models none."""

    def start(self) -> list[IssuedHandoffAction]:
        """Issue the first action of the order (see `HandoffCoordinatorCore.start`)."""

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        """Take a fact reported by the runtime (see `HandoffCoordinatorCore.on_fact`)."""

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        """Take an acknowledgement (see `HandoffCoordinatorCore.on_action_outcome`)."""


def _read_through(name: str, doc: str) -> Any:
    """A read-only property of the recorder that answers with its coordinator's `name`,
    annotated (for the reference docs) as the coordinator's own."""

    def read(recorder: RecordingCoordinator) -> Any:
        return getattr(recorder.coordinator, name)

    own = getattr(HandoffCoordinatorCore, name).fget
    read.__annotations__["return"] = own.__annotations__["return"]
    return property(read, doc=doc)


class RecordingCoordinator:
    """A coordinator's stand-in that writes each call, and its answer, as a trace line.

    It has the coordinator's calls (`start`, `on_fact`, `on_action_outcome`) and properties,
    answering exactly as the coordinator does; `coordinator` is the wrapped coordinator and
    `close()` (or leaving a `with` block) writes the end line. A call whose arguments are of the
    wrong type raises `TypeError` and is not written; neither is a `ConcurrentCallError`.

    A call's line is written before the coordinator takes the step: a write that fails (a full
    disk raises `OSError`) leaves the coordinator as it was, and a file the recorder opened as
    it was too (the line's start is cut off again), so the call can be made again later.
    """

    def __init__(
        self, coordinator: HandoffCoordinatorCore, file: IO[str] | str | os.PathLike[str]
    ) -> None:
        if type(coordinator) is not HandoffCoordinatorCore:
            raise TypeError(f"coordinator must be a HandoffCoordinatorCore, got {coordinator!r}")
        if probe.witness(coordinator) is not None:
            raise ValueError("the coordinator is already being recorded: one recorder at a time")
        self.coordinator = coordinator
        self._header = _header(coordinator)
        self._closed = False
        self._mark = _Mark(0, 0)
        self._pending: tuple[Progress, _Mark] | None = None
        self._file: IO[str] | io.FileIO
        if not isinstance(file, str | os.PathLike):
            self._file, self._owned = file, False
            self._write(self._header)
        else:
            self._create(file)
        probe.set_witness(coordinator, self._witnessed)

    def _create(self, file: str | os.PathLike[str]) -> None:
        # Until the header is written nobody holds the recorder: whatever stops it (a full
        # disk, a Ctrl-C even as the file is made) closes the file, and removes it if this
        # recorder made it; a file that was there before is never removed.  The file is written
        # unbuffered, so that a line that fails half way can be cut off again.
        made = not os.path.lexists(file)
        try:
            self._file = open(file, "wb", buffering=0)  # noqa: SIM115
            self._owned = True
            self._write(self._header)
        except BaseException:
            with contextlib.suppress(AttributeError, OSError):
                self._file.close()
            if made:
                _files.discard(file)
            raise

    # -- the coordinator's face --------------------------------------------------------

    # Read through to the coordinator, as it answers them.
    handoff_id: HandoffId = _read_through("handoff_id", "The handoff the coordinator moves.")
    order: HandoffOrder = _read_through("order", "The coordinator's order.")
    is_complete: bool = _read_through("is_complete", "Whether the handoff has completed.")
    completion: HandoffCompletion | None = _read_through(
        "completion", "The coordinator's latest completion."
    )
    lifecycle: tuple[NormalizedHandoffEvent, ...] = _read_through(
        "lifecycle", "The coordinator's lifecycle events so far."
    )
    chart_name: str = _read_through("chart_name", "The title of the coordinator's chart.")
    chart_state: str = _read_through("chart_state", "The id of the chart state the handoff is in.")
    fallback_transfer_delay_ms: float = _read_through(
        "fallback_transfer_delay_ms", "The coordinator's fallback transfer delay."
    )

    @property
    def calls(self) -> int:
        """How many calls have been written."""
        return self._mark.calls

    def __repr__(self) -> str:
        return f"<RecordingCoordinator of {self.coordinator!r}, {self._mark.calls} calls written>"

    def start(self) -> list[IssuedHandoffAction]:
        """`HandoffCoordinatorCore.start`, written down."""
        return self._open().start()

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        """`HandoffCoordinatorCore.on_fact`, written down."""
        return self._open().on_fact(fact)

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        """`HandoffCoordinatorCore.on_action_outcome`, written down."""
        return self._open().on_action_outcome(action_id, outcome)

    # -- writing -----------------------------------------------------------------------

    def _open(self) -> HandoffCoordinatorCore:
        if self._closed:
            raise ValueError("the recorder is closed: its trace has ended")
        return self.coordinator

    def _witnessed(
        self, call: Call, answer: list[IssuedHandoffAction] | HandoffError, after: Progress | None
    ) -> None:
        """Write a call and its answer; the coordinator commits the step only once it returns."""
        self._settle()
        fact, action_id, outcome = call
        if fact is not None:
            spelled = f'"call":"fact","fact":{write(fact)}'
        elif action_id is not None:
            spelled = f'"call":"outcome","id":{write(action_id)},"outcome":{write(outcome)}'
        else:
            spelled = '"call":"start"'
        if isinstance(answer, HandoffError):
            spelled += f',"expect_error":{write_string(str(answer))}'
        else:
            spelled += ',"expect":' + write(answer)
        if after is not None:  # set before the write: see `_settle`
            self._pending = (after, self._mark)
        self._write("{" + spelled + "}", 1)

    def _settle(self) -> None:
        """Drop the last line if an interrupt kept its step from being committed.

        An interrupt can land between a line's write and its step's commit; the next call (or
        the end) finds the coordinator without that step, and the line is cut off a file the
        recorder opened, so that the trace holds exactly the steps the coordinator took."""
        pending = self._pending
        if (
            pending is not None
            and self._owned
            and probe.progress(self.coordinator) is not pending[0]
        ):
            self._mark = pending[1]
        self._pending = None

    def _write(self, line: str, calls: int = 0) -> None:
        """Write `line` after what `_mark` counts, which then counts it (and its `calls`)."""
        mark = self._mark
        if not self._owned:
            self._file.write(line + "\n")  # type: ignore[arg-type]
            self._file.flush()
            self._mark = _Mark(0, mark.calls + calls)
            return
        data, written = (line + "\n").encode(), 0
        file = cast("io.FileIO", self._file)
        # What a failed write left of its line is cut off at once, so that the trace on disk
        # stays whole; what an interrupt left there, before the next line.
        if file.tell() != mark.size:
            _cut(file, mark.size)
        try:
            while written < len(data):
                written += file.write(data[written:]) or 0
        except BaseException:
            with contextlib.suppress(OSError):
                _cut(file, mark.size)
            raise
        self._mark = _Mark(mark.size + written, mark.calls + calls)

    def close(self) -> None:
        """Write the end line (once) and close the file if the recorder opened it.

        From then on the coordinator's calls are no longer written.  While another thread is
        inside a call it raises `ConcurrentCallError`, changing nothing."""
        me: list[None] = []
        try:
            try:
                hold(self.coordinator, me)
                self._end()
            finally:
                release(self.coordinator, me)
        finally:  # an interrupt landing on the release above, before it ran
            release(self.coordinator, me)

    def _end(self) -> None:
        if self._closed:
            return
        self._settle()
        self._closed = True
        probe.set_witness(self.coordinator, None)
        try:
            self._write(f'{{"end":{{"calls":{self._mark.calls}}}}}')
        finally:  # a Ctrl-C in the write still closes the file
            if self._owned:
                self._file.close()

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise TypeError(
            "a RecordingCoordinator cannot be copied or pickled: it writes one trace to one "
            "file; copy or snapshot its coordinator instead (recorder.coordinator, "
            "handoff.wire.dumps(recorder)) and record the copy to a file of its own"
        )

    def __enter__(self) -> RecordingCoordinator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _cut(file: io.FileIO, size: int) -> None:
    """Cut `file` back to its first `size` bytes, and write on from there."""
    os.ftruncate(file.fileno(), size)
    file.seek(size)


class _Mark(NamedTuple):
    """How far the trace is written: its bytes (in a file the recorder opened) and calls.

    One value, replaced whole after each line, so that no interrupt parts the two."""

    size: int
    calls: int


def _header(coordinator: HandoffCoordinatorCore) -> str:
    from handoff._compile.table import runtime_table

    rules = probe.rules(coordinator)
    if runtime_table(rules) is not probe.table(coordinator):
        raise TypeError("a coordinator running a compiled table of its own cannot be recorded")
    chart = "" if isinstance(rules, HandoffOrder) else f',"chart":{write_string(rules.title)}'
    now = probe.progress(coordinator)
    moved = now.state or now.next_id or now.lifecycle
    fresh = not moved and now.timing is None and now.tokens is None
    # A coordinator that has moved (restored from a snapshot, say) starts its trace from there.
    snapshot = "" if fresh else f',"snapshot":{written_by_dumps(coordinator)}'
    return (
        f'{{"handoff_id":{write(coordinator.handoff_id)},'
        f'"order":{write(coordinator.order)}{chart},'
        f'"fallback_transfer_delay_ms":{format_f64(coordinator.fallback_transfer_delay_ms)}'
        f"{snapshot}}}"
    )


# Exported from `handoff`: tracebacks and reprs name the public module.
for _exported in (HandoffCoordinator, RecordingCoordinator, record):
    _exported.__module__ = "handoff"

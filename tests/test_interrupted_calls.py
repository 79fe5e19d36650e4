"""An interrupt anywhere inside a call: the coordinator is as it was before the call, or as
the completed call left it, and its gate is free; a recorder's trace holds exactly the steps
the coordinator took.

The interrupt is a `KeyboardInterrupt` raised by a trace function at the k-th event (call,
line, return) of a call, for every k until the call runs to its end untouched: as a Ctrl-C
lands between two lines.  Inside python-statemachine (an interpreted coordinator) a call has
hundreds of events, so there every seventh is tried.
"""

from __future__ import annotations

import copy
import io
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from walks import HID, MAKERS, SF, Call, answer, random_call

import handoff
from handoff import HandoffCoordinatorCore
from handoff._coordinator import probe
from handoff._coordinator.core import _HELD

# An interrupt raised inside a finalizer (python-statemachine's, run by the collector in the
# middle of a call) is dropped by Python, as a Ctrl-C landing there is, and reported as an
# unraisable exception: not a failure of the call.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def _interrupted(call: Callable[[], object], k: int) -> bool:
    """Run `call`, raising `KeyboardInterrupt` at its k-th traced event; whether it had one.

    An interrupt raised inside a finalizer is dropped: the call then runs on to its end."""
    seen = 0

    def trace(frame: Any, event: str, arg: object) -> Any:
        nonlocal seen
        seen += 1
        if seen == k:
            raise KeyboardInterrupt
        return trace

    previous = sys.gettrace()  # a coverage run's tracer, given back afterwards
    sys.settrace(trace)
    try:
        call()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(previous)
    return seen >= k


def _walk(name: str, seed: int, length: int) -> list[Call]:
    """A walk of calls as a runtime could make them (some refused), from a fresh coordinator."""
    rng, coordinator, calls = random.Random(f"{name}-{seed}"), MAKERS[name](), []
    for _ in range(length):
        call = random_call(rng, coordinator)
        if call is HandoffCoordinatorCore.start:
            call = _start  # a recorder's too
        answer(call, coordinator)
        calls.append(call)
    return calls


def _start(coordinator: HandoffCoordinatorCore) -> object:
    return coordinator.start()


def _injections(interpreted: bool) -> Iterator[int]:
    k = 1
    while True:
        yield k
        k += 7 if interpreted else 1


def _check_every_interrupt(reached: HandoffCoordinatorCore, call: Call, interpreted: bool) -> int:
    """Interrupt `call` on copies of `reached` at every event; returns how many were tried."""
    done = copy.deepcopy(reached)
    expected = answer(call, done)
    before, after = probe.configuration(reached), probe.configuration(done)
    for tried, k in enumerate(_injections(interpreted)):
        coordinator = copy.deepcopy(reached)
        if not _interrupted(lambda: answer(call, coordinator), k):  # noqa: B023
            assert probe.configuration(coordinator) == after
            return tried
        now = probe.configuration(coordinator)
        assert now in (before, after), (k, now)
        assert coordinator not in _HELD, k
        # It goes on: the call made again (if it was not taken) answers as it would have.
        if now == before:
            assert answer(call, coordinator) == expected, k
        assert probe.configuration(coordinator) == after, k
    raise AssertionError("unreachable")  # pragma: no cover


@pytest.mark.parametrize("name", MAKERS)
def test_an_interrupt_anywhere_in_a_call_leaves_before_or_after(name: str) -> None:
    coordinator, tried = MAKERS[name](), 0
    for call in _walk(name, 0, 14):
        tried += _check_every_interrupt(coordinator, call, interpreted=False)
        answer(call, coordinator)
    assert tried > 14 * 30  # every call was interrupted at each of its events


def test_an_interrupt_anywhere_in_an_interpreted_call_leaves_before_or_after() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF, 1.5, interpreted=True)
    for call in _walk("SourceFirst", 1, 4):
        _check_every_interrupt(coordinator, call, interpreted=True)
        answer(call, coordinator)


def test_an_interrupt_anywhere_in_a_snapshot_leaves_the_gate_free() -> None:
    coordinator = MAKERS["user chart"]()
    coordinator.start()
    whole = handoff.wire.dumps(coordinator)
    k = 1
    while _interrupted(lambda: handoff.wire.dumps(coordinator), k):
        assert coordinator not in _HELD, k
        k += 1
    assert k > 20
    assert handoff.wire.dumps(coordinator) == whole


# -- recording -------------------------------------------------------------------------------


def test_an_interrupt_anywhere_in_a_recorded_call_keeps_the_trace_whole(tmp_path: Path) -> None:
    calls = _walk("SourceFirst", 2, 6)
    with handoff.record(MAKERS["SourceFirst"](), tmp_path / "whole.jsonl") as recorder:
        for call in calls:
            answer(call, recorder)  # type: ignore[arg-type]
    whole = (tmp_path / "whole.jsonl").read_text(encoding="utf-8")
    assert handoff.check_trace(tmp_path / "whole.jsonl").divergence is None
    for index, call in enumerate(calls):
        for k in range(1, 10_000):
            path = tmp_path / f"run-{index}-{k}.jsonl"
            recorder = handoff.record(MAKERS["SourceFirst"](), path)
            for earlier in calls[:index]:
                answer(earlier, recorder)  # type: ignore[arg-type]
            before, written = probe.configuration(recorder.coordinator), recorder.calls
            twin = copy.deepcopy(recorder.coordinator)
            answer(call, twin)
            moves = probe.configuration(twin) != before
            fired = _interrupted(lambda: answer(call, recorder), k)  # type: ignore[arg-type]  # noqa: B023
            assert recorder.coordinator not in _HELD
            # Made again unless it was taken: a step that moves the coordinator is taken when
            # it is committed (a line written without its step is cut off again), one that
            # moves nothing once its line is written.
            if probe.configuration(recorder.coordinator) == before and (
                moves or recorder.calls == written
            ):
                answer(call, recorder)  # type: ignore[arg-type]
            for later in calls[index + 1 :]:
                answer(later, recorder)  # type: ignore[arg-type]
            recorder.close()
            assert path.read_text(encoding="utf-8") == whole, (index, k)
            path.unlink()
            if not fired:
                break


class _FullDisk(io.StringIO):
    """A stream on a full disk: every write fails, having written nothing."""

    def write(self, text: str) -> int:
        if self.full:
            raise OSError(28, "No space left on device")
        return super().write(text)

    full = False


@pytest.mark.parametrize("interpreted", [False, True])
def test_a_recorder_on_a_full_disk_moves_nothing(interpreted: bool) -> None:
    stream = _FullDisk()
    recorder = handoff.record(HandoffCoordinatorCore(HID, SF, interpreted=interpreted), stream)
    before = probe.configuration(recorder.coordinator)
    stream.full = True
    with pytest.raises(OSError, match="No space"):
        recorder.start()
    assert probe.configuration(recorder.coordinator) == before
    assert recorder.calls == 0
    stream.full = False
    (submit,) = recorder.start()  # still startable, and the trace goes on whole
    assert type(submit.action).__name__ == "SubmitPrefill"
    assert recorder.start() == []
    recorder.close()
    assert stream.getvalue().count("\n") == 4  # header, two calls, end


# A full disk, made by a file-size limit: the header fits, the first call's line only in part.
_FULL_DISK = """
import resource, signal, sys, uuid
import handoff
from handoff import HandoffCoordinatorCore, HandoffId, HandoffOrder

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
path = sys.argv[1]
coordinator = HandoffCoordinatorCore(HandoffId(uuid.UUID(int=1)), HandoffOrder.SOURCE_FIRST)
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
recorder = handoff.record(coordinator, path)
header = open(path).read()
resource.setrlimit(resource.RLIMIT_FSIZE, (len(header) + 40, hard))
try:
    recorder.start()
except OSError as error:
    print("refused:", error.strerror)
assert coordinator.chart_state == "idle", coordinator.chart_state
assert open(path).read() == header, "a part of the line stayed"
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
(submit,) = recorder.start()
recorder.close()
print(type(submit.action).__name__, handoff.check_trace(path).ok)
"""


def test_a_recorder_on_a_full_disk_cuts_off_what_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ran = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(path)], capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "refused: File too large\nSubmitPrefill True\n"

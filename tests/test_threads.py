"""Coordinators and threads: the first coordinators made by several threads at once are like
any other, and a snapshot taken while another thread is inside a call is refused as a
concurrent call, never torn."""

from __future__ import annotations

import copy
import io
import pickle
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from walks import FACTS, HID, SF

import handoff
from handoff import ConcurrentCallError, HandoffActionOutcome, HandoffCoordinatorCore, wire
from handoff._coordinator import probe

TESTS = Path(__file__).parent

# Each build of a table sleeps, so that the four threads are all inside it at once: every one
# of them misses the cache and builds its own table.
_FIRST_COORDINATORS = """
import copy, io, pickle, sys, threading, time, uuid
sys.path.insert(0, {tests!r})
import user_charts
import handoff
from handoff import HandoffCoordinatorCore, HandoffId, HandoffOrder, wire
from handoff._compile import table

for name in ("decode", "compile_chart"):
    def slow(*args, build=getattr(table, name)):
        time.sleep(0.2)
        return build(*args)
    setattr(table, name, slow)

MAKE = {{
    "order": lambda hid: HandoffCoordinatorCore(hid, HandoffOrder.SOURCE_FIRST),
    "chart": lambda hid: HandoffCoordinatorCore(hid, chart=user_charts.FreesBoth),
}}[sys.argv[1]]
barrier, made = threading.Barrier(4), []

def first(n):
    barrier.wait()
    made.append(MAKE(HandoffId(uuid.UUID(int=n + 1))))

threads = [threading.Thread(target=first, args=(n,)) for n in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
for coordinator in made:
    text = wire.dumps(coordinator)
    given = wire.loads(text, HandoffCoordinatorCore, charts=[user_charts.FreesBoth])
    assert given.chart_name == coordinator.chart_name
    copy.copy(coordinator), copy.deepcopy(coordinator), pickle.dumps(coordinator)
    handoff.record(coordinator, io.StringIO()).close()
print(len(made), "made, each snapshots, copies, pickles and records")
"""


@pytest.mark.parametrize("kind", ["order", "chart"])
def test_the_first_coordinators_made_by_four_threads_at_once_are_whole(kind: str) -> None:
    script = _FIRST_COORDINATORS.format(tests=str(TESTS))
    ran = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), kind],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "4 made, each snapshots, copies, pickles and records\n"


class _Parked(io.StringIO):
    """A trace stream whose next write waits until it is let go: a call held inside."""

    def __init__(self) -> None:
        super().__init__()
        self.park, self.parked, self.go = False, threading.Event(), threading.Event()

    def write(self, text: str) -> int:
        if self.park:
            self.parked.set()
            assert self.go.wait(30)
        return super().write(text)


def test_a_snapshot_during_another_threads_call_is_a_concurrent_call_error() -> None:
    stream = _Parked()
    recorder = handoff.record(HandoffCoordinatorCore(HID, SF), stream)
    coordinator = recorder.coordinator
    before = wire.dumps(coordinator)
    stream.park = True
    caller = threading.Thread(target=recorder.start)
    caller.start()
    assert stream.parked.wait(30)  # the other thread is inside start(), its step not committed
    refusing = (wire.dumps, copy.copy, copy.deepcopy, pickle.dumps, HandoffCoordinatorCore.start)
    for refused in (*refusing, lambda _: wire.dumps(recorder)):
        with pytest.raises(ConcurrentCallError, match="one caller at a time"):
            refused(coordinator)
    stream.park = False
    stream.go.set()
    caller.join(30)
    assert wire.dumps(coordinator) != before
    assert coordinator.chart_state == "prefill_submitting"


def test_snapshots_taken_while_threads_call_are_whole_or_refused() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    (submit,) = coordinator.start()
    barrier = threading.Barrier(3)
    taken: list[str] = []
    refused: list[None] = []
    seen = [probe.configuration(coordinator)]  # each configuration the calling thread left

    def call() -> None:
        barrier.wait()
        for index in range(3000):
            try:
                if index % 2:
                    coordinator.on_fact(FACTS[index // 2 % len(FACTS)])
                else:
                    for key, _ in coordinator.issued_actions() or [(submit.id, None)]:
                        coordinator.on_action_outcome(key, HandoffActionOutcome.SUBMITTED)
            except ConcurrentCallError:
                refused.append(None)
            except handoff.HandoffError:
                pass
            seen.append(probe.configuration(coordinator))

    def snapshot() -> None:
        barrier.wait()
        for _ in range(3000):
            try:
                taken.append(wire.dumps(coordinator))
            except ConcurrentCallError:
                refused.append(None)
            time.sleep(0)  # lets the calling thread finish a call it was switched out of

    threads = [threading.Thread(target=call), threading.Thread(target=snapshot)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switched often: mostly in the middle of a call
    try:
        for thread in threads:
            thread.start()
        barrier.wait()
        for thread in threads:
            thread.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert taken
    for text in set(taken):  # a torn snapshot is refused by loads, or is none of these
        assert probe.configuration(wire.loads(text, HandoffCoordinatorCore)) in seen

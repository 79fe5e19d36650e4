"""`handoff.record`: a production run written as a trace that replays, and the asyncio runtime
of docs/integrating.md, run as written (with tombstones, then with forgetful workers)."""

from __future__ import annotations

import asyncio
import copy
import io
import os
import random
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import user_charts

import handoff
from handoff import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffError,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    KvTransferTimingMode,
)
from handoff._runs.trace import read_trace, trace_text

ROOT = Path(__file__).parent.parent
HANDOFF = str(Path(sys.executable).with_name("handoff"))
HID = HandoffId(uuid.UUID(int=11))
TIMING = HandoffTransferTiming(
    mode=KvTransferTimingMode.FULL_PROMPT,
    full_prompt_tokens=64,
    kv_bytes_per_token=None,
    bandwidth_gb_s=None,
)
FACTS = (
    HandoffFact.SourceHeld(handoff_id=HID, transfer_timing=TIMING),
    HandoffFact.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=10),
    HandoffFact.TransferCompleted(handoff_id=HID),
    HandoffFact.TimedOut(handoff_id=HID),
)
OUTCOMES = (
    HandoffActionOutcome.SUBMITTED,
    HandoffActionOutcome.ACCEPTED,
    HandoffActionOutcome.SCHEDULED,
    HandoffActionOutcome.APPLIED,
    HandoffActionOutcome.NOOP,
    HandoffActionOutcome.failed(reason="line\u2028break"),
)


def _drive(recorded: Any, twin: HandoffCoordinatorCore, seed: int) -> None:
    """The same random calls on the recorder and on a twin: the answers must agree."""
    rng = random.Random(seed)
    for _ in range(30):
        choice = rng.random()
        calls: tuple[Any, Any]
        if choice < 0.1:
            calls = (recorded.start, twin.start)
            args: tuple[Any, ...] = ()
        elif choice < 0.45:
            calls, args = (recorded.on_fact, twin.on_fact), (rng.choice(FACTS),)
        else:
            action_id = HandoffActionId(rng.randrange(7))
            calls = (recorded.on_action_outcome, twin.on_action_outcome)
            args = (action_id, rng.choice(OUTCOMES))
        answers = []
        for call in calls:
            try:
                answers.append(call(*args))
            except HandoffError as error:
                answers.append(str(error))
        assert answers[0] == answers[1]
        assert recorded.chart_state == twin.chart_state


@pytest.mark.parametrize("seed", range(6))
def test_a_recorded_run_replays_ok(tmp_path: Path, seed: int) -> None:
    order = HandoffOrder.SOURCE_FIRST if seed % 2 else HandoffOrder.DESTINATION_FIRST
    path = tmp_path / f"run{seed}.jsonl"
    with handoff.record(HandoffCoordinatorCore(HID, order, 2.5), path) as recorded:
        _drive(recorded, HandoffCoordinatorCore(HID, order, 2.5), seed)
        assert recorded.fallback_transfer_delay_ms == 2.5
        assert recorded.calls == 30
    check = handoff.check_trace(path)
    assert check.divergence is None
    assert check.calls == 30
    # The recorder writes what the trace writer writes for the same run, byte for byte.
    assert path.read_text(encoding="utf-8") == trace_text(read_trace(path))


def test_recorded_traces_replay_with_the_command(tmp_path: Path) -> None:
    paths = []
    for seed in range(3):
        path = tmp_path / f"run{seed}.jsonl"
        with handoff.record(HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), path) as c:
            _drive(c, HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), seed)
        paths.append(str(path))
    ran = subprocess.run([HANDOFF, "replay", *paths], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.count("OK ") == 3


def test_a_run_on_a_chart_of_ones_own_names_it(tmp_path: Path) -> None:
    path = tmp_path / "own.jsonl"
    coordinator = HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth)
    with handoff.record(coordinator, path) as recorded:
        _drive(recorded, HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth), 3)
    assert '"chart":"FreesBoth"' in path.read_text(encoding="utf-8").splitlines()[0]
    assert handoff.check_trace(path, chart=user_charts.FreesBoth).divergence is None


def test_a_stream_is_written_line_by_line_and_left_open() -> None:
    stream = io.StringIO()
    recorded = handoff.record(HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), stream)
    recorded.start()
    assert stream.getvalue().count("\n") == 2  # the header and the call, before any close
    with pytest.raises(TypeError):
        recorded.on_fact("Canceled")  # type: ignore[arg-type]
    recorded.close()
    recorded.close()
    lines = stream.getvalue().splitlines()
    assert lines[-1] == '{"end":{"calls":1}}'
    assert not stream.closed
    with pytest.raises(ValueError, match="the recorder is closed"):
        recorded.start()


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def test_a_recorder_interrupted_before_it_is_handed_out_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import handoff._coordinator.recorder as recorder

    path = tmp_path / "run.jsonl"

    def made_then_interrupted(*args: Any, **kwargs: Any) -> Any:
        open(*args, **kwargs).close()  # the file exists, nobody holds it
        raise KeyboardInterrupt

    for stage in ("open", "header"):
        with monkeypatch.context() as patch:
            if stage == "open":
                patch.setattr(recorder, "open", made_then_interrupted, raising=False)
            else:
                patch.setattr(recorder.RecordingCoordinator, "_write", _interrupt)
            with pytest.raises(KeyboardInterrupt):
                handoff.record(HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), path)
        assert list(tmp_path.iterdir()) == [], stage
    # A file that was there before is the user's: it is never removed, whatever happens.
    path.write_text("kept\n")
    path.chmod(0o444)
    monkeypatch.setattr(recorder.RecordingCoordinator, "_write", _interrupt)
    coordinator = HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST)
    with pytest.raises(PermissionError if os.geteuid() else KeyboardInterrupt):
        handoff.record(coordinator, path)
    assert path.exists()


def test_a_recorder_interrupted_as_it_closes_still_closes_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = handoff.record(
        HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), tmp_path / "run.jsonl"
    )
    recorded.start()
    monkeypatch.setattr(type(recorded), "_write", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        recorded.close()
    assert recorded._file.closed
    # The trace has no end line: `handoff replay` refuses it until told it is complete.
    assert (tmp_path / "run.jsonl").read_text().count("\n") == 2


def test_a_coordinator_that_moved_is_recorded_from_its_snapshot() -> None:
    coordinator = HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST)
    coordinator.start()
    stream = io.StringIO()
    handoff.record(coordinator, stream).close()
    header = stream.getvalue().splitlines()[0]
    assert header.endswith(f',"snapshot":{handoff.wire.dumps(coordinator)}}}')
    with pytest.raises(TypeError, match="must be a HandoffCoordinatorCore"):
        handoff.record(object(), io.StringIO())  # type: ignore[arg-type]


# -- the example runtime of docs/integrating.md --------------------------------------------


def _example() -> dict[str, Any]:
    text = (ROOT / "docs" / "integrating.md").read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    assert "asyncio.run(main())" in example
    namespace: dict[str, Any] = {"__name__": "integrating_example"}
    exec(compile(example.replace("print(asyncio.run(main()))", ""), "integrating.md", "exec"),
         namespace)  # fmt: skip
    return namespace


def test_the_example_runtime_runs_without_leaks() -> None:
    example = _example()
    summary = asyncio.run(example["main"]())
    assert summary["handoffs"] == 400
    assert 0 < summary["succeeded"] < 400


def test_the_example_runtime_leaks_with_forgetful_workers() -> None:
    example = _example()
    worker = example["Worker"]

    def forgetful(self: Any, handoff_id: HandoffId) -> HandoffActionOutcome:
        if handoff_id in self.held:
            self.held.discard(handoff_id)
            return HandoffActionOutcome.APPLIED
        return HandoffActionOutcome.NOOP  # and no tombstone: a late submission will run

    worker.free = forgetful
    with pytest.raises(AssertionError, match="source slots leaked"):
        asyncio.run(example["main"]())


# -- recording and snapshots -----------------------------------------------------------------


def _replay(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HANDOFF, "replay", str(path)], capture_output=True, text=True, check=False
    )


def test_a_recorder_snapshots_as_its_coordinator() -> None:
    recorded = handoff.record(HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), io.StringIO())
    recorded.start()
    assert handoff.wire.dumps(recorded) == handoff.wire.dumps(recorded.coordinator)
    restored = handoff.wire.loads(handoff.wire.dumps(recorded), HandoffCoordinatorCore)
    assert restored.chart_state == "prefill_submitting"


def test_a_restored_coordinator_is_recorded_from_its_snapshot(tmp_path: Path) -> None:
    moved = HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST, 2.5)
    (submit,) = moved.start()
    moved.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    text = handoff.wire.dumps(moved)
    restored = handoff.wire.loads(text, HandoffCoordinatorCore)
    path = tmp_path / "moved.jsonl"
    with handoff.record(restored, path) as recorded:
        _drive(recorded, handoff.wire.loads(text, HandoffCoordinatorCore), 3)
    header = path.read_text(encoding="utf-8").splitlines()[0]
    assert header.endswith(f',"fallback_transfer_delay_ms":2.5,"snapshot":{text}}}')
    trace = read_trace(path)
    assert trace.snapshot == text
    assert trace_text(trace) == path.read_text(encoding="utf-8")
    ran = _replay(path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith(f"OK {path}")
    assert "starts from a snapshot, so its properties are not judged" in ran.stdout
    # A snapshot another run could not reach is refused in the trace's words.
    path.write_text(path.read_text(encoding="utf-8").replace('"next_id":1', '"next_id":0', 1))
    ran = _replay(path)
    assert ran.returncode == 2
    assert ran.stderr == (
        f"handoff replay: error: {path}: the header's snapshot: $.issued[0][0]: an id not yet "
        "issued (next_id is 0)\n"
    )
    assert "Traceback" not in ran.stderr


def test_a_trace_from_a_snapshot_replays_against_its_answers(tmp_path: Path) -> None:
    moved = HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST)
    moved.start()
    path = tmp_path / "moved.jsonl"
    with handoff.record(moved, path) as recorded:
        recorded.start()  # answers [] from the snapshot, where a fresh one would submit
    ran = _replay(path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].replace(',"snapshot":', ',"ignored":').rpartition(',"ignored":')[0] + "}"
    path.write_text("\n".join([header, *lines[1:]]) + "\n")
    ran = _replay(path)
    assert ran.returncode == 1
    assert "DIVERGED" in ran.stdout
    with handoff.record(moved, path):
        pass
    with pytest.raises(handoff.TraceError, match="starts from a snapshot, mid-run"):
        handoff.check_trace(path)


def test_a_recorder_is_not_copied_or_pickled() -> None:
    import pickle

    recorded = handoff.record(HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), io.StringIO())
    for refused in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot be copied or pickled: it writes one trace"):
            refused(recorded)


def test_one_type_names_a_coordinator_or_its_recorder() -> None:
    def drive(coordinator: handoff.HandoffCoordinator) -> str:
        coordinator.start()
        return coordinator.chart_state

    plain = HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST)
    recorded = handoff.record(HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST), io.StringIO())
    assert drive(plain) == drive(recorded) == "prefill_submitting"
    assert isinstance(plain, handoff.HandoffCoordinator)
    assert isinstance(recorded, handoff.HandoffCoordinator)
    assert not isinstance(object(), handoff.HandoffCoordinator)


def test_a_second_recorder_of_one_coordinator_is_refused() -> None:
    coordinator = HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST)
    first = handoff.record(coordinator, io.StringIO())
    with pytest.raises(ValueError, match="already being recorded"):
        handoff.record(coordinator, io.StringIO())
    first.close()
    handoff.record(coordinator, io.StringIO()).close()  # once closed, another may record it


_MAIN_CHART = """
import warnings, uuid
import handoff
from handoff import HandoffCoordinatorCore, HandoffId, SourceFirstChart

class Mine(SourceFirstChart):
    pass

coordinator = HandoffCoordinatorCore(HandoffId(uuid.UUID(int=1)), chart=Mine)
copy_of = __import__("copy").deepcopy(coordinator)  # a copy stays in the process: no warning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    text = handoff.wire.dumps(coordinator)
print(text.split(",")[1])
print(caught[0].category.__name__, caught[0].filename, caught[0].message)
"""


def test_a_snapshot_of_a_chart_defined_in_main_warns_what_to_do(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(_MAIN_CHART, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "-W", "error", str(script)], capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr
    chart, warning = ran.stdout.splitlines()
    assert chart == '"chart":"__main__:Mine"'
    assert warning.startswith(f"UserWarning {script} chart Mine is defined in __main__")
    assert "define the chart in a module of its own" in warning


def test_a_restored_coordinator_of_ones_own_chart_replays_from_its_snapshot(
    tmp_path: Path,
) -> None:
    import attrs

    from handoff._runs.replay import replay

    moved = HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth)
    moved.start()
    text = handoff.wire.dumps(moved)
    restored = handoff.wire.loads(text, HandoffCoordinatorCore, charts=[user_charts.FreesBoth])
    path = tmp_path / "mine.jsonl"
    with handoff.record(restored, path) as recorded:
        _drive(recorded, copy.deepcopy(restored), 4)
    trace = attrs.evolve(read_trace(path), rules=user_charts.FreesBoth)
    assert trace.coordinator().chart_state == moved.chart_state
    assert replay(trace).ok

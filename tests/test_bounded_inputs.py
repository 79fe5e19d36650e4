"""Inputs that outlast their limits: `handoff replay` reads a trace's calls as it replays them,
so the memory a replay takes does not grow with the trace, and a command that runs out of
memory (a review of a world too big for it) says so in one line, with its own exit status."""

from __future__ import annotations

import resource
import tracemalloc
from pathlib import Path

import pytest
from hostile import Sandbox, failure

from handoff import HandoffCoordinatorCore
from handoff.__main__ import main
from handoff._cli import OUT_OF_MEMORY
from handoff._runs import replay_cli

_ID = "00000000-0000-0000-0000-00000000000a"
_HEADER = f'{{"handoff_id":"{_ID}","order":"SourceFirst","fallback_transfer_delay_ms":0.0}}\n'
_START = (
    '{"call":"start","expect":[{"id":0,"action":{"SubmitPrefill":{"handoff_id":"' + _ID + '"}}}]}\n'
)
_REFUSED = (
    '{"call":"outcome","id":0,"outcome":"Accepted","expect_error":"invalid handoff action '
    'outcome Accepted (SubmitPrefill expects Submitted, got Accepted)"}\n'
)


def _long_trace(folder: Path, calls: int) -> Path:
    """A run of `calls` calls: the start, then the same refused outcome again and again."""
    path = folder / f"long{calls}.jsonl"
    with path.open("w") as file:
        file.write(_HEADER + _START)
        file.writelines(_REFUSED for _ in range(calls - 1))
        file.write(f'{{"end":{{"calls":{calls}}}}}\n')
    return path


def _peak(path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> int:
    """The most memory, in bytes, that replaying `path` held at once."""
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    assert main(["replay", *options, str(path)]) == 0
    peak = tracemalloc.get_traced_memory()[1] - start
    assert capsys.readouterr().out.startswith(f"{'RECORDED' if options else 'OK'} {path} (")
    return peak


@pytest.mark.parametrize("options", [(), ("--record",)], ids=["replay", "record"])
def test_a_replay_takes_no_more_memory_for_a_longer_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...]
) -> None:
    short, long = _long_trace(tmp_path, 1_000), _long_trace(tmp_path, 4_000)
    tracemalloc.start()
    try:
        _peak(_long_trace(tmp_path, 10), capsys, *options)  # what the first replay loads
        peaks = [_peak(short, capsys, *options), _peak(long, capsys, *options)]
    finally:
        tracemalloc.stop()
    # Held whole, the 3,000 calls more took 250 bytes each even here, where every line is
    # the same (754 kB more in all); read as they are replayed, none of them is kept.
    assert peaks[1] - peaks[0] < 100_000, peaks
    if options:
        assert long.read_text().endswith('{"end":{"calls":4000}}\n')


def test_running_out_of_memory_is_one_line_and_its_own_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def exhausted(*_: object) -> int:
        raise MemoryError

    monkeypatch.setattr(replay_cli, "_replay", exhausted)
    assert main(["replay", str(_long_trace(tmp_path, 10))]) == OUT_OF_MEMORY == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("handoff replay: error: out of memory: ")
    assert "`ulimit -v`" in err


def test_a_review_too_big_for_its_memory_is_one_line_and_its_own_status(tmp_path: Path) -> None:
    def at_most_120_mb() -> None:  # the world below needs far more
        resource.setrlimit(resource.RLIMIT_AS, (120 << 20, 120 << 20))

    world = ("--workers", "tombstone", "--concurrency", "4", "--faults", "duplicate,lose")
    box = Sandbox(tmp_path)
    ran = box.run("review", "--order", "SourceFirst", *world, limit=at_most_120_mb)
    failure(ran, OUT_OF_MEMORY, "out of memory: ", "`ulimit -v`", "review a smaller world")


@pytest.mark.parametrize("command", ["replay", "review"])
def test_memory_running_out_inside_a_call_is_not_judged_a_crash_of_the_chart(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    def exhausted(*_: object) -> None:
        raise MemoryError

    monkeypatch.setattr(HandoffCoordinatorCore, "start", exhausted)
    argv = [str(_long_trace(tmp_path, 10))] if command == "replay" else ["--order", "SourceFirst"]
    assert main([command, *argv]) == OUT_OF_MEMORY
    out, err = capsys.readouterr()
    assert "Errors" not in out
    assert "VIOLATED" not in out
    assert err.startswith(f"handoff {command}: error: out of memory: ")

"""Replay memory: a trace's calls read as they are replayed, side by side with the trace held whole.

Run: `./dev python benchmarks/bench_replay.py [--calls N]`.

Writes traces of N and 4N calls (the start, then one refused call again and again, each
expecting its refusal), replays each with `handoff replay`'s own path (its calls streamed, every
property judged) and with the trace read whole first (`read_trace`, then `replay`), and prints
the peak memory each took (tracemalloc) and the ratio of the 4N peak to the N peak: about 1 when
memory does not grow with the trace.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from handoff.__main__ import main
from handoff._review.judge import judge
from handoff._runs.replay import replay
from handoff._runs.trace import read_trace

_ID = "00000000-0000-0000-0000-00000000000a"
_HEADER = f'{{"handoff_id":"{_ID}","order":"SourceFirst","fallback_transfer_delay_ms":0.0}}\n'
_START = (
    '{"call":"start","expect":[{"id":0,"action":{"SubmitPrefill":{"handoff_id":"' + _ID + '"}}}]}\n'
)
_REFUSED = (
    '{"call":"outcome","id":0,"outcome":"Accepted","expect_error":"invalid handoff action '
    'outcome Accepted (SubmitPrefill expects Submitted, got Accepted)"}\n'
)


def write(folder: Path, calls: int) -> Path:
    path = folder / f"trace{calls}.jsonl"
    with path.open("w") as file:
        file.write(_HEADER + _START)
        file.writelines(_REFUSED for _ in range(calls - 1))
        file.write(f'{{"end":{{"calls":{calls}}}}}\n')
    return path


def streamed(path: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["replay", str(path)]) == 0


def whole(path: Path) -> None:
    assert replay(read_trace(path), (judge,)).ok


def peak(run: Callable[[Path], None], path: Path) -> tuple[int, float]:
    """The most memory `run(path)` held at once, in bytes, and its time in seconds."""
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    began = time.perf_counter()
    run(path)
    return tracemalloc.get_traced_memory()[1] - start, time.perf_counter() - began


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="N (default 10,000)")
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory() as folder:
        small, large = write(Path(folder), calls), write(Path(folder), 4 * calls)
        tracemalloc.start()
        for run in (streamed, whole):  # what a first replay loads, loaded
            run(write(Path(folder), 10))
        print(f"{'':10} {f'{calls:,} calls':>16} {f'{4 * calls:,} calls':>16} {'ratio':>7}")
        for name, run in (("streamed", streamed), ("whole", whole)):
            (one, _), (four, seconds) = peak(run, small), peak(run, large)
            print(f"{name:10} {one / 1e6:13.2f} MB {four / 1e6:13.2f} MB {four / one:6.2f}x"
                  f"   ({4 * calls / seconds:,.0f} calls/s under tracemalloc)")  # fmt: skip
        tracemalloc.stop()


if __name__ == "__main__":
    main_()

"""Compiled vs. interpreted vs. hand-written coordinators, side by side in one process.

Run: `./dev python benchmarks/bench_coordinator.py [--rounds N] [--quick]`.

Rounds are interleaved (every implementation runs once per round, in turn, every other round
in the reverse order) so that drift of the machine, and the warm caches one implementation
leaves the next, hit all alike; medians over rounds are reported, then the ratios the targets
are stated in.  Memory is measured with tracemalloc over 100,000 live coordinators parked
mid-handoff; import time in fresh interpreters.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import re
import statistics
import subprocess
import sys
import textwrap
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from floor import FloorCoordinator

import handoff._coordinator.core
from handoff import (
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    KvTransferTimingMode,
)

HID = HandoffId(uuid.UUID(int=1))
TIMING = HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 4096, 131_072, 50.0)
HELD = HandoffFact.SourceHeld(HID, TIMING)
RESERVED = HandoffFact.DestinationReserved(HID, 4000)
TRANSFERRED = HandoffFact.TransferCompleted(HID)
CANCELED = HandoffFact.Canceled(HID)
SUBMITTED = HandoffActionOutcome.SUBMITTED
ACCEPTED = HandoffActionOutcome.ACCEPTED
SCHEDULED = HandoffActionOutcome.SCHEDULED
APPLIED = HandoffActionOutcome.APPLIED

Make = Callable[[HandoffId, HandoffOrder], Any]


def _unguarded() -> type[HandoffCoordinatorCore]:
    """The compiled coordinator without its one-caller gate, to measure what the gate costs.

    Built from the real step's source with the gate's lines taken out (taking it, and the
    two releases), in a subclass whose calls reach it, so that the two differ in the gate alone.
    """
    source = textwrap.dedent(inspect.getsource(HandoffCoordinatorCore._take))
    # Taking the gate: the `if` and its two lines; each release: the `if` and what it runs.
    source = re.sub(r"( *)if _HELD\.setdefault.*\n.*\n.*\n", "", source)
    source = re.sub(r"( *)if me is not None and _HELD\.get.*\n(\1    .*\n)+", r"\1pass\n", source)
    assert "_HELD" not in source, source
    namespace = dict(vars(handoff._coordinator.core))
    exec(compile(source, "<unguarded take>", "exec"), namespace)
    return type(
        "Unguarded", (HandoffCoordinatorCore,), {"__slots__": (), "_take": namespace["_take"]}
    )


IMPLEMENTATIONS: dict[str, Make] = {
    "hand-written": FloorCoordinator,
    "compiled": HandoffCoordinatorCore,
    "unguarded": _unguarded(),
    "interpreted": lambda hid, order: HandoffCoordinatorCore(hid, order, interpreted=True),
}


def source_first_success(make: Make) -> Any:
    c = make(HID, HandoffOrder.SOURCE_FIRST)
    c.on_action_outcome(c.start()[0].id, SUBMITTED)
    c.on_action_outcome(c.on_fact(HELD)[0].id, ACCEPTED)
    c.on_action_outcome(c.on_fact(RESERVED)[0].id, SCHEDULED)
    release = c.on_action_outcome(c.on_fact(TRANSFERRED)[0].id, APPLIED)
    c.on_action_outcome(release[0].id, APPLIED)
    return c


def destination_first_success(make: Make) -> Any:
    c = make(HID, HandoffOrder.DESTINATION_FIRST)
    c.on_action_outcome(c.start()[0].id, ACCEPTED)
    c.on_action_outcome(c.on_fact(RESERVED)[0].id, SUBMITTED)
    c.on_action_outcome(c.on_fact(HELD)[0].id, SCHEDULED)
    release = c.on_action_outcome(c.on_fact(TRANSFERRED)[0].id, APPLIED)
    c.on_action_outcome(release[0].id, APPLIED)
    return c


def destination_first_canceled(make: Make) -> Any:
    c = make(HID, HandoffOrder.DESTINATION_FIRST)
    c.on_action_outcome(c.start()[0].id, ACCEPTED)
    c.on_action_outcome(c.on_fact(RESERVED)[0].id, SUBMITTED)
    for cancel in c.on_fact(CANCELED):
        c.on_action_outcome(cancel.id, APPLIED)
    return c


SCENARIOS = {
    "SOURCE_FIRST success (9 calls)": (source_first_success, 9),
    "DESTINATION_FIRST success (9 calls)": (destination_first_success, 9),
    "DESTINATION_FIRST canceled (7 calls)": (destination_first_canceled, 7),
}


def time_per_run(scenario: Callable[[Make], Any], make: Make, runs: int) -> float:
    """Seconds per scenario run, over `runs` back-to-back runs."""
    started = time.perf_counter()
    for _ in range(runs):
        scenario(make)
    return (time.perf_counter() - started) / runs


def bench_lifecycles(rounds: int, runs: int) -> dict[str, dict[str, float]]:
    medians: dict[str, dict[str, float]] = {}
    for name, (scenario, _) in SCENARIOS.items():
        for make in IMPLEMENTATIONS.values():  # every implementation must complete it
            assert scenario(make).is_complete
        samples: dict[str, list[float]] = {impl: [] for impl in IMPLEMENTATIONS}
        order = list(IMPLEMENTATIONS.items())
        for _ in range(rounds):
            # Every other round in the reverse order: whichever runs after another has its
            # callees warmer, and no implementation should always be the one that does.
            for impl, make in order:
                n = max(runs // 100, 5) if impl == "interpreted" else runs
                samples[impl].append(time_per_run(scenario, make, n))
            order.reverse()
        medians[name] = {impl: statistics.median(times) for impl, times in samples.items()}
    return medians


def bytes_per_live_coordinator(make: Make, count: int) -> float:
    """Memory held per coordinator parked mid-handoff (transfer in flight)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    live = []
    for index in range(count):
        hid = HandoffId(uuid.UUID(int=index + 1))
        c = make(hid, HandoffOrder.SOURCE_FIRST)
        c.on_action_outcome(c.start()[0].id, SUBMITTED)
        c.on_action_outcome(c.on_fact(HandoffFact.SourceHeld(hid, TIMING))[0].id, ACCEPTED)
        c.on_action_outcome(c.on_fact(HandoffFact.DestinationReserved(hid, 4000))[0].id, SCHEDULED)
        live.append(c)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # The handoff id belongs to the caller (one per request either way): not counted.
    per_id = sys.getsizeof(HID) + sys.getsizeof(HID.uuid) + sys.getsizeof(HID.uuid.int)
    del live
    return grown / count - per_id


def import_seconds(samples: int) -> float:
    code = "import time; t = time.perf_counter(); import handoff; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(samples)
    ]
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=2000, help="runs per round")
    parser.add_argument("--live", type=int, default=100_000, help="coordinators for memory")
    parser.add_argument("--quick", action="store_true", help="few rounds, for a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.runs, args.live = 3, 200, 10_000

    print(f"Python {sys.version.split()[0]}; {args.rounds} interleaved rounds x {args.runs} runs")
    print()
    medians = bench_lifecycles(args.rounds, args.runs)
    header = f"{'scenario':38} {'hand-written':>13} {'compiled':>10} {'interpreted':>12}"
    print(header + f" {'compiled/hand':>14} {'interp/compiled':>16}")
    worst_floor, worst_interp, worst_gate = 0.0, float("inf"), 0.0
    for name, row in medians.items():
        floor, fast, slow = row["hand-written"], row["compiled"], row["interpreted"]
        worst_floor = max(worst_floor, fast / floor)
        worst_interp = min(worst_interp, slow / fast)
        worst_gate = max(worst_gate, fast / row["unguarded"])
        print(
            f"{name:38} {floor * 1e6:11.2f}µs {fast * 1e6:8.2f}µs {slow * 1e6:10.1f}µs"
            f" {fast / floor:14.2f} {slow / fast:16.1f}"
        )
    print()
    for name, row in medians.items():
        gate = row["compiled"] / row["unguarded"]
        print(f"one-caller gate, {name:38} compiled / unguarded {gate:.3f}")
    print()
    for name, (_, calls) in SCENARIOS.items():
        row = medians[name]
        per_call = "  ".join(f"{impl} {row[impl] / calls * 1e6:.2f}µs" for impl in row)
        print(f"per call, {name:38} {per_call}")
    print()
    memory = {
        impl: bytes_per_live_coordinator(IMPLEMENTATIONS[impl], args.live)
        for impl in ("hand-written", "compiled")
    }
    for impl, size in memory.items():
        print(f"memory per live coordinator mid-handoff ({impl}, {args.live:,} live): {size:.0f} B")
    imported = import_seconds(5)
    print(f"import handoff (fresh interpreter, median of 5): {imported * 1000:.1f} ms")
    print()
    targets = [
        ("compiled / hand-written <= 1.25 (worst scenario)", worst_floor, worst_floor <= 1.25),
        ("interpreted / compiled >= 50 (worst scenario)", worst_interp, worst_interp >= 50),
        (
            "one-caller gate: compiled / unguarded <= 1.03 (worst scenario)",
            worst_gate,
            worst_gate <= 1.03,
        ),
        ("<= 1024 B per live compiled coordinator", memory["compiled"], memory["compiled"] <= 1024),
        ("import handoff < 150 ms", imported * 1000, imported < 0.150),
    ]
    for label, value, met in targets:
        print(f"{'MET ' if met else 'MISS'} {label}: {value:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Coordinator snapshots: size, write and restore time, side by side with replaying the calls.

Run: `./dev python benchmarks/bench_snapshot.py [--rounds N] [--runs N]`.

Each scenario parks a coordinator mid-handoff (the largest journal of each order, and a
reopened cleanup after success), then measures, in interleaved rounds: `wire.dumps` (write),
`wire.loads(text, HandoffCoordinatorCore)` (restore, the snapshot validated whole), and, for
scale, a fresh coordinator driven through the same calls (replay).  Medians over rounds; the
targets are < 1 KB per snapshot and a restore under 20 µs.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
import uuid
from collections.abc import Callable

from handoff import (
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    KvTransferTimingMode,
    wire,
)

HID = HandoffId(uuid.UUID(int=1))
TIMING = HandoffTransferTiming(
    mode=KvTransferTimingMode.DESTINATION_MISSING,
    full_prompt_tokens=4096,
    kv_bytes_per_token=131_072,
    bandwidth_gb_s=50.0,
)
HELD = HandoffFact.SourceHeld(handoff_id=HID, transfer_timing=TIMING)
RESERVED = HandoffFact.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=4000)
SUBMITTED, ACCEPTED = HandoffActionOutcome.SUBMITTED, HandoffActionOutcome.ACCEPTED
SCHEDULED, APPLIED = HandoffActionOutcome.SCHEDULED, HandoffActionOutcome.APPLIED


def source_first_transferring() -> HandoffCoordinatorCore:
    c = HandoffCoordinatorCore(HID, HandoffOrder.SOURCE_FIRST)
    c.on_action_outcome(c.start()[0].id, SUBMITTED)
    c.on_action_outcome(c.on_fact(HELD)[0].id, ACCEPTED)
    c.on_action_outcome(c.on_fact(RESERVED)[0].id, SCHEDULED)
    return c


def destination_first_cleaning_up() -> HandoffCoordinatorCore:
    c = HandoffCoordinatorCore(HID, HandoffOrder.DESTINATION_FIRST)
    c.on_action_outcome(c.start()[0].id, ACCEPTED)
    c.on_action_outcome(c.on_fact(RESERVED)[0].id, SUBMITTED)
    c.on_fact(HELD)
    c.on_fact(HandoffFact.TimedOut(handoff_id=HID))
    return c


def source_first_reopened() -> HandoffCoordinatorCore:
    c = source_first_transferring()
    [activate] = c.on_fact(HandoffFact.TransferCompleted(handoff_id=HID))
    [release] = c.on_action_outcome(activate.id, APPLIED)
    c.on_action_outcome(release.id, APPLIED)
    c.on_fact(HandoffFact.Canceled(handoff_id=HID))
    return c


SCENARIOS: dict[str, Callable[[], HandoffCoordinatorCore]] = {
    "SOURCE_FIRST transferring": source_first_transferring,
    "DESTINATION_FIRST cleaning up": destination_first_cleaning_up,
    "SOURCE_FIRST reopened": source_first_reopened,
}


def per_run(work: Callable[[], object], runs: int) -> float:
    started = time.perf_counter()
    for _ in range(runs):
        work()
    return (time.perf_counter() - started) / runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; {args.rounds} interleaved rounds x {args.runs} runs")
    print()
    print(f"{'scenario':32} {'bytes':>6} {'pickle':>7} {'write':>9} {'restore':>9} {'replay':>9}"
          f" {'restore/replay':>15}")  # fmt: skip
    worst_size, worst_restore = 0, 0.0
    for name, build in SCENARIOS.items():
        coordinator = build()
        text = wire.dumps(coordinator)
        restored = wire.loads(text, HandoffCoordinatorCore)  # explores the chart once
        assert wire.dumps(restored) == text
        size = len(text.encode())
        samples: dict[str, list[float]] = {"write": [], "restore": [], "replay": []}
        for _ in range(args.rounds):
            samples["write"].append(per_run(lambda c=coordinator: wire.dumps(c), args.runs))
            samples["restore"].append(
                per_run(lambda t=text: wire.loads(t, HandoffCoordinatorCore), args.runs)
            )
            samples["replay"].append(per_run(build, args.runs))
        write, restore, replay = (statistics.median(samples[key]) for key in samples)
        worst_size, worst_restore = max(worst_size, size), max(worst_restore, restore)
        print(
            f"{name:32} {size:6} {len(pickle.dumps(coordinator)):7} {write * 1e6:7.2f}µs"
            f" {restore * 1e6:7.2f}µs {replay * 1e6:7.2f}µs {restore / replay:15.2f}"
        )
    print()
    targets = [
        ("< 1024 B per snapshot (largest)", worst_size, worst_size < 1024),
        ("restore < 20 µs (slowest)", worst_restore * 1e6, worst_restore < 20e-6),
    ]
    for label, value, met in targets:
        print(f"{'MET ' if met else 'MISS'} {label}: {value:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

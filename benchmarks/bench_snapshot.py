"""Coordinator snapshots: size, write and restore time, side by side with replaying the calls.

Run: `./dev python benchmarks/bench_snapshot.py [--rounds N] [--runs N]`.

Each scenario parks coordinators mid-handoff (the largest journal of each order, and a
reopened cleanup after success), 64 of them with their own handoff ids and prompt lengths, as
a store holds them, then measures, in interleaved rounds: `wire.dumps` (write),
`wire.loads(text, HandoffCoordinatorCore)` (restore, the snapshot validated whole, cycling
through the 64), the general reader alone (what the first restore of a layout costs: every
field parsed and looked up in the reachable set), and, for scale, a fresh coordinator driven
through the same calls (replay).  Medians over rounds; the targets are < 1 KB per snapshot
and a restore under 20 µs.
"""

from __future__ import annotations

import argparse
import itertools
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
from handoff._coordinator import snapshot

VARIANTS = 64
TIMING = HandoffTransferTiming(
    mode=KvTransferTimingMode.DESTINATION_MISSING,
    full_prompt_tokens=4096,
    kv_bytes_per_token=131_072,
    bandwidth_gb_s=50.0,
)
SUBMITTED, ACCEPTED = HandoffActionOutcome.SUBMITTED, HandoffActionOutcome.ACCEPTED
SCHEDULED, APPLIED = HandoffActionOutcome.SCHEDULED, HandoffActionOutcome.APPLIED


def held(hid: HandoffId) -> HandoffFact.SourceHeld:
    return HandoffFact.SourceHeld(handoff_id=hid, transfer_timing=TIMING)


def reserved(hid: HandoffId, tokens: int) -> HandoffFact.DestinationReserved:
    return HandoffFact.DestinationReserved(handoff_id=hid, transferable_prompt_tokens=tokens)


def source_first_transferring(hid: HandoffId, tokens: int) -> HandoffCoordinatorCore:
    c = HandoffCoordinatorCore(hid, HandoffOrder.SOURCE_FIRST)
    c.on_action_outcome(c.start()[0].id, SUBMITTED)
    c.on_action_outcome(c.on_fact(held(hid))[0].id, ACCEPTED)
    c.on_action_outcome(c.on_fact(reserved(hid, tokens))[0].id, SCHEDULED)
    return c


def destination_first_cleaning_up(hid: HandoffId, tokens: int) -> HandoffCoordinatorCore:
    c = HandoffCoordinatorCore(hid, HandoffOrder.DESTINATION_FIRST)
    c.on_action_outcome(c.start()[0].id, ACCEPTED)
    c.on_action_outcome(c.on_fact(reserved(hid, tokens))[0].id, SUBMITTED)
    c.on_fact(held(hid))
    c.on_fact(HandoffFact.TimedOut(handoff_id=hid))
    return c


def source_first_reopened(hid: HandoffId, tokens: int) -> HandoffCoordinatorCore:
    c = source_first_transferring(hid, tokens)
    [activate] = c.on_fact(HandoffFact.TransferCompleted(handoff_id=hid))
    [release] = c.on_action_outcome(activate.id, APPLIED)
    c.on_action_outcome(release.id, APPLIED)
    c.on_fact(HandoffFact.Canceled(handoff_id=hid))
    return c


SCENARIOS: dict[str, Callable[[HandoffId, int], HandoffCoordinatorCore]] = {
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
    print(f"{'scenario':32} {'bytes':>6} {'pickle':>7} {'write':>9} {'restore':>9} {'first':>9}"
          f" {'replay':>9} {'restore/replay':>15}")  # fmt: skip
    worst_size, worst_restore = 0, 0.0
    for name, build in SCENARIOS.items():
        made = [build(HandoffId(uuid.UUID(int=0x1000 + i)), 3000 + 17 * i) for i in range(VARIANTS)]
        texts = [wire.dumps(coordinator) for coordinator in made]
        assert len(set(texts)) == VARIANTS
        for text in texts:  # the first restore of the layout explores the chart once
            assert wire.dumps(wire.loads(text, HandoffCoordinatorCore)) == text
        coordinator, text = made[0], texts[0]
        size = max(len(text.encode()) for text in texts)
        keys = ("write", "restore", "first", "replay")
        samples: dict[str, list[float]] = {key: [] for key in keys}
        for _ in range(args.rounds):
            samples["write"].append(per_run(lambda c=coordinator: wire.dumps(c), args.runs))
            texts_ = itertools.cycle(texts).__next__
            samples["restore"].append(
                per_run(lambda t=texts_: wire.loads(t(), HandoffCoordinatorCore), args.runs)
            )
            samples["first"].append(per_run(lambda t=texts_: snapshot._read(t()), args.runs))
            samples["replay"].append(
                per_run(lambda b=build, h=coordinator.handoff_id: b(h, 4000), args.runs)
            )
        write, restore, first, replay = (statistics.median(samples[key]) for key in keys)
        worst_size, worst_restore = max(worst_size, size), max(worst_restore, restore)
        print(
            f"{name:32} {size:6} {len(pickle.dumps(coordinator)):7} {write * 1e6:7.2f}µs"
            f" {restore * 1e6:7.2f}µs {first * 1e6:7.2f}µs {replay * 1e6:7.2f}µs"
            f" {restore / replay:15.2f}"
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

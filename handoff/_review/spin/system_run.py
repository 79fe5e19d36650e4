"""Spin's verdict on the system model (`handoff._review.spin.system_model`), beside the explorer's.

One `pan` per chart and contract: a safety search for the assertions (W1, W2, W3, Bound,
Errors) and one acceptance-cycle search per LTL formula (W4, W5).  `cross_check` reviews the
same system with the explorer and says whether both break exactly the same properties.  Spin
mirrors messages delivered in any order only (not `--fifo`), and its trails are not replayed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import attrs

from handoff._review.spin.run import _build, _count, _first_errors, _run, spin_version
from handoff._review.spin.system_model import system_model
from handoff._review.system import SystemReview, review_system
from handoff._review.system_state import SystemKey, SystemOptions
from handoff._table import CompiledChart

__all__ = ["MIRRORED", "SystemAgreement", "SystemSpinRun", "cross_check", "run_system_spin"]

MIRRORED = (
    SystemKey.SLOTS_AT_COMPLETION,
    SystemKey.NO_SLOT_AFTER_FREED,
    SystemKey.ONLY_ISSUED_WORK,
    SystemKey.DELIVERIES_COMPLETE,
    SystemKey.TERMINAL_CANCELS,
    SystemKey.BOUND,
    SystemKey.ERRORS,
)
"""Every system property; W4 and W5 as LTL formulas, the others as assertions."""

_LTL = (SystemKey.DELIVERIES_COMPLETE, SystemKey.TERMINAL_CANCELS)


@attrs.frozen
class SystemSpinRun:
    """What Spin found: the properties it broke, and the states each search stored."""

    version: str
    states: int
    liveness_states: dict[SystemKey, int]
    broken: frozenset[SystemKey]
    seconds: float


def run_system_spin(
    chart: CompiledChart, options: SystemOptions, workdir: Path | None = None
) -> SystemSpinRun:
    """Generate the system model of `chart` with `options`, and verify it with Spin."""
    if options.fifo:
        raise ValueError("Spin mirrors messages delivered in any order only, not FIFO")
    version = spin_version()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="handoff-spin-system-") as scratch:
        folder = Path(scratch) if workdir is None else workdir
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.pml").write_text(system_model(chart, options), encoding="utf-8")
        _build(folder)
        output = _run(["./pan", "-n", "-c0", "-E"], folder)
        broken = set(_first_errors(output))
        liveness: dict[SystemKey, int] = {}
        for key in _LTL:
            found = _run(["./pan", "-n", "-a", "-A", "-N", key.value], folder)
            liveness[key] = _count(r"(\d+) states, stored", found)
            if _count(r"errors: (\d+)", found):
                broken.add(key)
    return SystemSpinRun(
        version,
        _count(r"(\d+) states, stored", output),
        liveness,
        frozenset(broken),
        time.perf_counter() - began,
    )


@attrs.frozen
class SystemAgreement:
    """The explorer's and Spin's verdicts on one system."""

    review: SystemReview
    spin: SystemSpinRun

    @property
    def explorer_broken(self) -> frozenset[SystemKey]:
        """The mirrored properties the explorer found broken."""
        return frozenset(v.prop.key for v in self.review.failures() if v.prop.key in MIRRORED)

    @property
    def agrees(self) -> bool:
        """Whether both broke exactly the same properties."""
        return self.explorer_broken == self.spin.broken


def cross_check(chart: CompiledChart, options: SystemOptions) -> SystemAgreement:
    """Review the system with the explorer and with Spin."""
    return SystemAgreement(review_system(chart, options), run_system_spin(chart, options))

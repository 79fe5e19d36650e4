"""The cross-check: the review and Spin judge the same charts, and must agree.

For each chart, the review's explorer and Spin (`handoff._review.spin.cli.spin_review`) give
their verdicts on every mirrored property; they agree when they fail the same mirrored
properties and the real coordinator confirms every Spin trail.  Charts are checked side by
side in worker processes, since most of Spin's time is spent compiling and searching.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

import attrs

from handoff._compile.table import CompiledChart
from handoff._review.explore import Review, review
from handoff._review.spin.cli import UNCONFIRMED, spin_review
from handoff._review.spin.properties import mirrored
from handoff._review.spin.run import SpinUnavailableError
from handoff._review.verdict import Verdict
from handoff._system.properties import Key, WorldKind

if TYPE_CHECKING:
    from handoff._system.config import System

__all__ = ["Agreement", "agreement", "cross_check"]


@attrs.frozen
class Agreement:
    """What the review and Spin said of one chart."""

    name: str
    review_fails: frozenset[Key]
    """The mirrored properties the review fails."""
    spin_fails: frozenset[Key]
    """The mirrored properties Spin fails, of those the review judged (where a review cut
    some runs off, it does not judge what needs every run, so there is nothing to agree
    on)."""
    unconfirmed: frozenset[Key]
    """Properties whose Spin trail the real coordinator does not confirm."""
    configurations: int
    """Configurations the review explored."""
    states: int
    """States Spin's safety search stored."""
    liveness_states: dict[Key, int]
    seconds: float
    error: str | None = None
    """Why Spin could not judge the chart, if it could not."""
    review_seconds: float = 0.0
    """Of `seconds`, the review's (the rest is Spin's: generating, compiling, searching,
    replaying its trails)."""

    @property
    def agree(self) -> bool:
        """Same failing mirrored properties, every trail confirmed, no error."""
        same = self.review_fails == self.spin_fails
        return same and not self.unconfirmed and self.error is None

    def line(self) -> str:
        """One line of report."""
        head = f"{'agree' if self.agree else 'DISAGREE':8} {self.name:36}"
        if self.error is not None:
            return f"{head} {self.error}"
        unconfirmed = f"; unconfirmed {_names(self.unconfirmed)}" if self.unconfirmed else ""
        live = ", ".join(f"{key.value} {count:,}" for key, count in self.liveness_states.items())
        return (
            f"{head} review fails {_names(self.review_fails)} over {self.configurations:,} "
            f"configurations; Spin fails {_names(self.spin_fails)} over {self.states:,} "
            f"states ({live}){unconfirmed}; {self.seconds:.1f} s (explorer "
            f"{self.review_seconds:.1f} s, Spin {self.seconds - self.review_seconds:.1f} s)"
        )


def agreement(
    name: str, chart: CompiledChart, system: System | None = None, ours: Review | None = None
) -> Agreement:
    """Judge `chart`, alone or in `system`, with the review (`ours`, when it is made already)
    and with Spin."""
    if ours is None:
        ours = review(chart, system=system)
    reviewed = ours.seconds
    began = time.perf_counter()
    world = WorldKind.CHART if system is None else WorldKind.SYSTEM
    review_fails = frozenset(_shipped(ours.failures())) & set(mirrored(world))
    unjudged = frozenset(_shipped(ours.unjudged()))
    try:
        theirs, found = spin_review(chart, system)
    except SpinUnavailableError as error:
        nothing: frozenset[Key] = frozenset()
        return Agreement(name, review_fails, nothing, nothing, 0, 0, {}, 0.0, str(error))
    failing = theirs.failures()
    unconfirmed = frozenset(
        _shipped(
            v
            for v in failing
            if v.counterexample is None or UNCONFIRMED in v.counterexample.finding
        )
    )
    return Agreement(
        name=name,
        review_fails=review_fails,
        spin_fails=frozenset(_shipped(failing)) - unjudged,
        unconfirmed=unconfirmed,
        configurations=ours.configurations,
        states=found.states,
        liveness_states=found.liveness_states,
        seconds=reviewed + time.perf_counter() - began,
        review_seconds=reviewed,
    )


def _names(keys: frozenset[Key]) -> list[str]:
    """Property names as the report lists them: sorted by name."""
    return sorted(key.value for key in keys)


def _agreement(item: tuple[str, CompiledChart, System | None, Review | None]) -> Agreement:
    return agreement(*item)


def cross_check(
    charts: Mapping[str, CompiledChart],
    workers: int,
    systems: Mapping[str, System] | None = None,
    reviews: Mapping[str, Review] | None = None,
) -> list[Agreement]:
    """Judge every chart both ways (in the system `systems` names for it, if any, else alone),
    `workers` charts at a time, in the order given.

    A chart `reviews` names is judged by the review made already (`reviews[name]`); the
    workers review the others.
    """
    spawned = multiprocessing.get_context("spawn")
    given = systems or {}
    made = reviews or {}
    with ProcessPoolExecutor(workers, mp_context=spawned) as pool:
        waiting = [
            pool.submit(
                _agreement,
                (name, chart, given.get(name), made.get(name)),
            )
            for name, chart in charts.items()
        ]
        return [future.result() for future in waiting]


def _shipped(verdicts: Iterable[Verdict]) -> Iterator[Key]:
    """The shipped properties among `verdicts` (Spin mirrors no property of one's own)."""
    for verdict in verdicts:
        if isinstance(verdict.prop.key, Key):
            yield verdict.prop.key

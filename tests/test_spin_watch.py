"""The Promela watch: every run-level safety property of the review, judged by Spin too.

For each property mirrored as an assertion, the chart mutants meant for it fail it under
Spin, and Spin's trail, replayed through the real coordinator, breaks the property under the
review's own monitors; both shipped charts pass every mirrored property.  Spin runs once per
chart for the whole module.  Under CI a missing Spin fails these tests; elsewhere they are
skipped with the command that installs it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from review_mutants import MUTANTS
from support import spin_or_skip

from handoff import HandoffOrder
from handoff._errors import HandoffError, InvalidTransferTimingError, UnknownActionError
from handoff._review.promela import model
from handoff._review.promela_properties import MIRRORED, NOT_MIRRORED, Check
from handoff._review.promela_vocabulary import REFUSALS, refused_as
from handoff._review.spin import SpinRun, Trail, run_spin
from handoff._review.spin_replay import confirm
from handoff._table import compiled

WATCHED = ("S1", "S3", "S4", "S5", "S8", "R1", "R2", "P1", "Q1", "L3")
"""The properties this module's watch mirrors (S2 and S7 were mirrored before it)."""

SHIPPED = {order.value: compiled(order) for order in HandoffOrder}
MEANT = {
    mutant.name: (mutant.caught_by, mutant.compiled())
    for mutant in MUTANTS
    if mutant.adapter is None and mutant.caught_by in WATCHED
}
"""Each chart mutant meant for a watched property, with that property."""


@pytest.fixture(scope="module")
def spin_runs() -> dict[str, SpinRun]:
    """One Spin run per chart: the shipped ones and every mutant meant for a watched property."""
    spin_or_skip()
    charts = {**SHIPPED, **{name: chart for name, (_, chart) in MEANT.items()}}
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        runs = pool.map(run_spin, charts.values())
        return dict(zip(charts, runs, strict=True))


def test_every_watched_property_is_an_assertion_with_its_mutants() -> None:
    for key in WATCHED:
        assert MIRRORED[key] is Check.ASSERTION, key
        assert key not in NOT_MIRRORED, key
        assert any(meant == key for meant, _ in MEANT.values()), f"no mutant is meant for {key}"


@pytest.mark.parametrize("name", list(SHIPPED))
def test_the_shipped_charts_pass_every_mirrored_property(
    spin_runs: dict[str, SpinRun], name: str
) -> None:
    assert spin_runs[name].trails == dict.fromkeys(MIRRORED)


@pytest.mark.parametrize("name", list(MEANT))
def test_each_mutant_fails_its_property_and_the_trail_replays_to_it(
    spin_runs: dict[str, SpinRun], name: str
) -> None:
    key, chart = MEANT[name]
    trail = spin_runs[name].trails[key]
    assert trail is not None, f"Spin finds no violation of {key} in {name}"
    confirmation = confirm(chart, key, trail)
    assert confirmation.finding is not None, f"the real coordinator does not break {key}"
    # The trail is the path to the search's first violation of `key`: its last call breaks it.
    assert confirm(chart, key, Trail(trail.calls[:-1])).finding is None


# -- the model's words ---------------------------------------------------------------------


def test_a_refusal_is_named_by_its_class_and_phrase() -> None:
    assert refused_as(UnknownActionError("unknown handoff action 7")) == "UNKNOWN_ACTION"
    overflow = InvalidTransferTimingError("invalid handoff transfer delay inf: expected …")
    assert refused_as(overflow) == "INVALID_DELAY"
    early = HandoffError("the transfer was planned before the source and destination were")
    assert refused_as(early) == "UNPLANNED_TRANSFER"
    with pytest.raises(ValueError, match="no refusal of the model is HandoffError: odd"):
        refused_as(HandoffError("odd"))
    assert len({name for name, _, _ in REFUSALS}) == len(REFUSALS)


def test_the_model_judges_refusals_by_kind_and_payloads_by_the_spec() -> None:
    text = model(compiled(HandoffOrder.DESTINATION_FIRST))
    # The chart's refusals say which one; the adapter's timing check names each bad timing.
    assert "result = REFUSED; refusal = R_OWNERSHIP_NOT_ACCEPTED" in text
    assert "(t == 2 -> R_INVALID_BANDWIDTH : \\" in text
    assert "(t == 6 -> R_INVALID_DELAY : \\" in text
    # The SPEC's own view: the valid timing with 2**64 - 1 missing tokens overflows the delay.
    assert "#define spec_delay_unusable(t, n) ((t == 1 && n == 2))" in text
    # DESTINATION_FIRST issues ReserveDestination first, SubmitPrefill once reserved.
    assert "#define FIRST A_ReserveDestination" in text
    assert "#define READY seen_reserved" in text
    for key, check in MIRRORED.items():
        assert (f"assert(!{key}_broken);" in text) is (check is Check.ASSERTION), key

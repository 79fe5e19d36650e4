"""The Promela watch of the SPEC: the model's words for it, and what confirms a trail.

Spin's verdicts on both shipped charts and on every chart mutant, each property the watch
mirrors included, are checked against the review's in `tests/test_spin.py`, whose shared
cross-check also confirms every trail (the real coordinator breaks the property at the
trail's last call, not before).  This module checks the model's text and the confirmation
rule itself, without running Spin.
"""

from __future__ import annotations

import re
import typing

import pytest
from review_mutants import MUTANTS
from support import assert_contains

from handoff import HandoffOrder
from handoff._chart.vocabulary import Refusal
from handoff._compile.table import compiled
from handoff._review.environment import Call, Rules, environment
from handoff._review.explore import review
from handoff._review.spin.model import model
from handoff._review.spin.properties import MIRRORED, NOT_MIRRORED
from handoff._review.spin.replay import confirm
from handoff._review.spin.run import Trail
from handoff._review.spin.vocabulary import ACTIONS, REFUSALS, refused_as
from handoff._review.watch import (
    ACK_SIGNS,
    FACTS,
    ORDERED,
    Mode,
    Ordered,
    Refuse,
    Seen,
    SpecAnswer,
    Unordered,
    Watch,
    advance_rules,
    expected,
    fits,
    head,
    take,
)
from handoff._system.call import TERMINAL_FACTS
from handoff._system.properties import Key, SpinCheck
from handoff._values.errors import (
    HandoffError,
    InvalidTransferTimingError,
    OutOfOrderFactError,
    UnknownActionError,
)
from handoff._values.messages import AnyHandoffFact, HandoffAction, HandoffFact
from handoff._values.values import HandoffActionOutcome, OutcomeKind

WATCHED = ("S1", "S3", "S4", "S5", "C1", "R1", "R2", "P1", "Q1", "C2")
"""The properties this module's watch mirrors (S2 and S7 were mirrored before it)."""

ALL = {mutant.name: mutant.compiled() for mutant in MUTANTS if mutant.adapter is None}
MEANT = {
    mutant.name: (mutant.caught_by, mutant.compiled())
    for mutant in MUTANTS
    if mutant.adapter is None and mutant.caught_by in WATCHED
}
"""Each chart mutant meant for a watched property, with that property."""


def test_every_watched_property_is_an_assertion_with_its_mutants() -> None:
    for key in WATCHED:
        assert MIRRORED[Key(key)] is SpinCheck.ASSERTION, key
        assert Key(key) not in NOT_MIRRORED, key
        assert any(meant == key for meant, _ in MEANT.values()), f"no mutant is meant for {key}"


def test_a_trail_confirms_only_a_violation_at_its_last_call() -> None:
    chart = ALL["ReleaseOnSchedule"]
    example = review(chart).verdict("S2").counterexample
    assert example is not None
    calls = example.made
    assert confirm(chart, Key.RELEASE_AFTER_ACTIVATION, Trail(calls)).finding is not None
    # One call short, the release has not gone out: nothing to confirm.
    assert confirm(chart, Key.RELEASE_AFTER_ACTIVATION, Trail(calls[:-1])).finding is None
    # One call more, the coordinator broke S2 before the trail's end: Spin's first violation
    # would have been earlier, so the trail does not match the coordinator.
    assert confirm(chart, Key.RELEASE_AFTER_ACTIVATION, Trail((*calls, calls[0]))).finding is None


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
    # The chart's refusals say which one (a cell: refused, 1, with R_OWNERSHIP_NOT_ACCEPTED,
    # 3); the adapter's timing check names each bad timing.
    assert_contains(
        text,
        "#define R_OWNERSHIP_NOT_ACCEPTED 3",
        "CELL 0 2 1 3 0 0 0 0 0 0 0 0 0 0 0   idle, destination_reserved: refused, "
        '"destination reserved before ownership was accepted"',
        "result = REFUSED; refusal = cell[CF_REFUSAL]",
        "(t == 2 -> R_INVALID_BANDWIDTH : \\",
        "(t == 6 -> R_INVALID_DELAY : \\",
        # The SPEC's own view: the valid timing with 2**64 - 1 missing tokens overflows the delay.
        "#define spec_delay_unusable(t, n) ((t == 1 && n == 2))",
        # DESTINATION_FIRST issues ReserveDestination first, SubmitPrefill once reserved.
        "#define FIRST A_ReserveDestination",
        "#define READY seen_reserved",
    )
    for key, check in MIRRORED.items():
        assert (f"assert(!{key.value}_broken);" in text) is (check is SpinCheck.ASSERTION), key


# -- one table of ordering rules for both judges ---------------------------------------------


def _call_with(fact: type[HandoffFact]) -> Call:
    return next(call for call in environment().calls(0) if isinstance(call.fact, fact))


def test_both_judges_read_the_facts_ordering_from_one_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Change the table, and both the review's judge and the Promela model follow it."""
    later = Ordered(Seen.TRANSFERRED, Seen.ACTIVATED, Refusal.TRANSFER_NOT_SCHEDULED)
    monkeypatch.setitem(FACTS, HandoffFact.TransferCompleted, later)
    text = model(compiled(HandoffOrder.SOURCE_FIRST))
    assert_contains(
        text,
        ":: c_fact == F_TransferCompleted && !seen_transferred && !seen_activated ->\n"
        "       refuse(R_TRANSFER_NOT_SCHEDULED)",
    )
    assert "!seen_scheduled" not in text
    scheduled = Watch(seen=Seen.STARTED | Seen.SCHEDULED)
    answer = expected(
        Rules(HandoffOrder.SOURCE_FIRST), scheduled, _call_with(HandoffFact.TransferCompleted)
    )
    assert answer == Refuse(OutOfOrderFactError, "transfer completed before it was scheduled")


def test_the_judges_table_names_every_kind_of_fact_and_the_coordinators_terminal_ones() -> None:
    # A kind of fact the table forgot would be an error, never taken for terminal.
    assert list(FACTS) == list(typing.get_args(AnyHandoffFact))
    terminal = [fact for fact, rule in FACTS.items() if rule is Unordered.TERMINAL]
    assert terminal == list(TERMINAL_FACTS)
    assert list(ORDERED) == [fact for fact, rule in FACTS.items() if isinstance(rule, Ordered)]


def test_both_judges_drop_a_fact_the_table_calls_news_in_every_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(FACTS, HandoffFact.TransferCompleted, Unordered.NEWS)
    text = model(compiled(HandoffOrder.SOURCE_FIRST))
    assert_contains(text, ":: c_fact == F_TransferCompleted -> ans = ANS_DROP")
    assert_contains(text, ":: c_kind == K_FACT && c_fact == F_TransferCompleted -> skip")
    assert "seen_transferred = 1" not in text
    call, rules = _call_with(HandoffFact.TransferCompleted), Rules(HandoffOrder.SOURCE_FIRST)
    for mode in Mode:
        scheduled = Watch(mode=mode, seen=Seen.STARTED | Seen.SCHEDULED)
        assert expected(rules, scheduled, call) is SpecAnswer.DROP, mode
        assert take(scheduled, call) == scheduled, mode


def test_both_judges_read_what_an_acknowledgement_establishes_from_one_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(ACK_SIGNS, HandoffAction.CancelSource, (Seen.DESTINATION_FREED, None))
    text = model(compiled(HandoffOrder.SOURCE_FIRST))
    assert_contains(
        text, ":: c_out != O_Failed && A == A_CancelSource -> seen_destination_freed = 1"
    )
    assert "A == A_CancelSource -> seen_source_freed = 1" not in text


def test_the_model_names_each_ordering_rule_once_and_in_the_tables_order() -> None:
    for order in HandoffOrder:
        text = model(compiled(order))
        for fact, rule in ORDERED.items():
            refusal = f"refuse(R_{rule.refusal.name})"
            assert text.count(refusal) == 1, (order, fact)
        due = [
            line.split("due0 = ")[1].split(" ")[0]
            for line in text.splitlines()
            if line.startswith("  if :: due0 == 0 && ")
        ]
        first, second, _ = head(order)
        named = {first: "FIRST", second: "SECOND"}
        expected_due = [
            named.get(action, f"A_{action.__name__}") for _, action in advance_rules(order)
        ]
        assert due == [*expected_due, "A_Complete"], order


def test_the_promela_fits_agrees_with_the_reviews() -> None:
    """FITS (which outcome fits an action) is written in Promela beside the review's `fits`:
    the two must say the same of every action and outcome kind."""
    text = model(compiled(HandoffOrder.SOURCE_FIRST))
    macro = text[text.index("#define FITS(A, O)") :].split("\n#define", 1)[0]
    done = re.search(r"#define DONE\(O\) \((.*)\)\n", text)
    assert done is not None
    done_kinds = set(re.findall(r"O == O_(\w+)", done[1]))
    said = {(a, o) for a, o in re.findall(r"\(A == A_(\w+) && O == O_(\w+)\)", macro)}
    for group in re.findall(r"\(\(([^()]*)\) && DONE\(O\)\)", macro):
        said |= {(a, o) for a in re.findall(r"A == A_(\w+)", group) for o in done_kinds}
    outcomes = [
        getattr(HandoffActionOutcome, kind.name) for kind in OutcomeKind if kind.name != "FAILED"
    ]
    reviewed = {
        (action.__name__, outcome.kind.value)
        for action in ACTIONS
        for outcome in outcomes
        if fits(action, outcome)
    }
    assert said == reviewed

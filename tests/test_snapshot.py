"""Snapshots through the wire, and copies and pickles through them: a restored or copied
coordinator answers every call as the original, and shares nothing with it but the rule table."""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable

import pytest
import user_charts
from walks import CHARTS, DF, FACTS, HID, MAKERS, SF
from walks import answer as _answer
from walks import random_call as _random_call
from walks import walks as _walks

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    IssuedHandoffAction,
    WireError,
    wire,
)
from handoff._coordinator import probe

# -- snapshots -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "rng"), list(_walks(40)))
def test_a_restored_coordinator_answers_every_call_as_the_original(
    name: str, rng: random.Random
) -> None:
    original = MAKERS[name]()
    original.start()
    for _ in range(rng.randrange(12)):
        _answer(_random_call(rng, original), original)
    text = wire.dumps(original)
    restored = wire.loads(text, HandoffCoordinatorCore, charts=CHARTS)
    assert restored is not original
    assert wire.dumps(restored) == text
    for _ in range(15):
        call = _random_call(rng, original)
        assert _answer(call, restored) == _answer(call, original)
        assert wire.dumps(restored) == wire.dumps(original)
        assert (restored.chart_state, restored.lifecycle, restored.completion) == (
            original.chart_state,
            original.lifecycle,
            original.completion,
        )


def test_a_snapshot_mid_handoff_is_compact_and_names_its_chart() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    [submit] = coordinator.start()
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    [reserve] = coordinator.on_fact(FACTS[0])
    text = wire.dumps(coordinator)
    assert text.startswith('{"handoff_snapshot":1,"chart":"SourceFirst",')
    assert " " not in text.replace("full prompt", "")
    assert len(text.encode()) < 1024
    user = HandoffCoordinatorCore(HID, chart=user_charts.FreesBoth)
    assert '"chart":"user_charts:FreesBoth"' in wire.dumps(user)
    restored = wire.loads(text, HandoffCoordinatorCore, charts=CHARTS)
    assert restored.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED) == []


def _snapshot(**changes: str) -> str:
    coordinator = HandoffCoordinatorCore(HID, SF)
    [submit] = coordinator.start()
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    coordinator.on_fact(FACTS[0])
    text = wire.dumps(coordinator)
    for old, new in changes.items():
        assert old.replace("_", " ") in text.replace("_", " ") or old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ('"handoff_snapshot":1', '"handoff_snapshot":2', "$.handoff_snapshot"),
        # transferring is reached, but never with only two actions issued
        ('"state":"destination_reserving"', '"state":"transferring"', "$.next_id"),
        ('"state":"destination_reserving"', '"state":"nowhere"', "$.state"),
        ('"next_id":2', '"next_id":5', "$.next_id"),
        ('"next_id":2', '"next_id":1', "$.issued[1][0]"),
        ('[1,"ReserveDestination"]', '[1,"ActivateDestination"]', "$.issued"),
        ('[1,"ReserveDestination"]', '[1,"Teleport"]', "$.issued[1][1]"),
        ('"outcomes":[[0,"Submitted"]]', '"outcomes":[[0,"Applied"]]', "$.outcomes"),
        ('"outcomes":[[0,"Submitted"]]', '"outcomes":[[1,"Accepted"]]', "$.outcomes"),
        ('"outcomes":[[0,"Submitted"]]', '"outcomes":[[4,"Accepted"]]', "$.outcomes[0][0]"),
        ('"lifecycle":["SourceHeld"]', '"lifecycle":[]', "$.lifecycle"),
        ('"lifecycle":["SourceHeld"]', '"lifecycle":["Teleported"]', "$.lifecycle[0]"),
        ('"completion":null', '"completion":"Success"', "$.completion"),
        ('"tokens":null', '"tokens":12', "$.tokens"),
        ('"bandwidth_gb_s":50.0', '"bandwidth_gb_s":-1.0', "$.timing"),
        ('"chart":"SourceFirst"', '"chart":"no_such_module:Chart"', "$.chart"),
        ('"chart":"SourceFirst"', '"chart":"handoff:HandoffError"', "$.chart"),
        ('"chart":"SourceFirst"', '"chart":"Sideways"', "$.chart"),
        ('"fallback_transfer_delay_ms":0.0', '"fallback_transfer_delay_ms":-1', "$.fallback"),
        ('"tokens":null,', '"tokens":null,"extra":1,', "$.extra"),
        ('"tokens":null,', "", "$.tokens"),
        ('{"handoff_snapshot"', '[{"handoff_snapshot"', "$"),
    ],
)
def test_a_snapshot_no_run_reaches_is_refused_naming_its_field(
    old: str, new: str, path: str
) -> None:
    text = _snapshot(**{old: new})
    if not text.startswith("{"):
        text = text + "]"
    with pytest.raises(WireError) as refused:
        wire.loads(text, HandoffCoordinatorCore, charts=CHARTS)
    assert refused.value.path.startswith(path)


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_a_count_past_a_floats_range_is_named_as_such_not_as_null(number: str) -> None:
    text = _snapshot(**{'"next_id":2': f'"next_id":{number}'})
    with pytest.raises(WireError) as refused:
        wire.loads(text, HandoffCoordinatorCore)
    assert str(refused.value) == (
        "$.next_id: expected an unsigned 64-bit integer, got a number beyond a float's range"
    )


def test_a_transfer_delay_its_payloads_do_not_give_is_refused() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    [submit] = coordinator.start()
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    [reserve] = coordinator.on_fact(FACTS[0])
    coordinator.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED)
    [transfer] = coordinator.on_fact(FACTS[1])
    assert isinstance(transfer.action, HandoffAction.StartTransfer)
    text = wire.dumps(coordinator)
    delay = wire.dumps(transfer.action)[len('{"StartTransfer":{"handoff_id":"') + 36 + 13 : -2]
    assert float(delay) == transfer.action.delay_ms
    with pytest.raises(WireError) as refused:
        wire.loads(text.replace(f'"StartTransfer",{delay}]', '"StartTransfer",7.0]'),
                   HandoffCoordinatorCore)  # fmt: skip
    assert refused.value.path == "$.issued[2][2]"


def test_a_timing_read_before_never_stands_in_for_one_that_differs_in_type_or_sign() -> None:
    # Restores keep the timings they have read; `4096.0` is not the count `4096`, `true` not
    # `1`, and `-0.0` must come back as `-0.0`, however often the other was read first.
    coordinator = HandoffCoordinatorCore(HID, SF)
    [submit] = coordinator.start()
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    coordinator.on_fact(FACTS[0])
    text = wire.dumps(coordinator)
    timing = text[text.index('"timing":') + 9 : text.index(',"tokens"')]
    assert '"full_prompt_tokens":' in timing
    for _ in range(2):
        assert wire.dumps(wire.loads(text, HandoffCoordinatorCore, charts=CHARTS)) == text
    tokens = timing.split('"full_prompt_tokens":')[1].split(",")[0]
    for other in (f"{tokens}.0", "true" if tokens == "1" else f"{tokens}e0"):
        changed = text.replace(
            timing,
            timing.replace(f'"full_prompt_tokens":{tokens}', f'"full_prompt_tokens":{other}'),
        )
        with pytest.raises(WireError, match=r"\.timing\.full_prompt_tokens"):
            wire.loads(changed, HandoffCoordinatorCore)
    bandwidth = timing.split('"bandwidth_gb_s":')[1].rstrip("}")
    for zero in ("0.0", "-0.0", "0.0"):
        zeroed = text.replace(f'"bandwidth_gb_s":{bandwidth}', f'"bandwidth_gb_s":{zero}')
        assert wire.dumps(wire.loads(zeroed, HandoffCoordinatorCore)) == zeroed


def test_a_coordinator_on_a_chart_that_cannot_be_named_has_no_snapshot() -> None:
    class Local(user_charts.FreesBoth):
        title = "Local"

    with pytest.raises(TypeError, match="must be found by its module and name"):
        wire.dumps(HandoffCoordinatorCore(HID, chart=Local))


# -- copies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "duplicate",
    [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_a_copy_is_independent_and_shares_only_the_rule_table(
    duplicate: Callable[[HandoffCoordinatorCore], HandoffCoordinatorCore],
) -> None:
    original = HandoffCoordinatorCore(HID, SF)
    [submit] = original.start()
    twin = duplicate(original)
    assert twin._chart is original._chart  # the immutable table, compiled once
    assert probe.progress(twin).issued is not probe.progress(original).issued
    # The copy moves on; the original can still move, and says the same.
    assert twin.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED) == []
    assert twin.on_fact(FACTS[0])
    assert original.chart_state == "prefill_submitting"
    assert original.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED) == []
    assert original.on_fact(FACTS[0]) == [
        IssuedHandoffAction(
            id=HandoffActionId(1), action=HandoffAction.ReserveDestination(handoff_id=HID)
        )
    ]


def test_an_interpreted_coordinator_copies_as_interpreted() -> None:
    original = HandoffCoordinatorCore(HID, DF, interpreted=True)
    [reserve] = original.start()
    twin = pickle.loads(pickle.dumps(original))
    assert twin._interpreter is not None
    assert twin.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED) == []
    assert original.chart_state == "destination_reserving"


def test_the_pickle_is_the_snapshot_not_the_slots() -> None:
    coordinator = HandoffCoordinatorCore(HID, SF)
    coordinator.start()
    data = pickle.dumps(coordinator)
    assert len(data) < 1024
    assert b"_plans" not in data
    assert b"_chart" not in data

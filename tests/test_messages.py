"""Facts, actions and issued actions: variants, checks, equality, reprs and matching."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from support import BAD_COUNTS

from handoff import (
    AnyHandoffAction,
    AnyHandoffFact,
    HandoffAction,
    HandoffActionId,
    HandoffFact,
    HandoffId,
    HandoffTransferTiming,
    IssuedHandoffAction,
    KvTransferTimingMode,
    wire,
)
from handoff._compile.codec_table import FAMILIES, sample
from handoff._coordinator import binding
from handoff._system.call import TERMINAL_FACTS

ID = HandoffId(uuid.UUID(int=1))
OTHER_ID = HandoffId(uuid.UUID(int=2))
TIMING = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 1.5)

# Every variant, with the fields it carries besides `handoff_id`.
PAYLOADS: dict[str, dict[str, Any]] = {
    "SourceHeld": {"transfer_timing": TIMING},
    "DestinationReserved": {"transferable_prompt_tokens": 7},
}
"""The payloads chosen here; any other fact's is its sample's."""


def _payload(kind: type) -> dict[str, Any]:
    fact: Any = sample(kind)
    fields = (field.name for field in attrs.fields(kind) if field.name != "handoff_id")
    return PAYLOADS.get(kind.__name__, {name: getattr(fact, name) for name in fields})


FACTS: dict[str, dict[str, Any]] = {
    kind.__name__: _payload(kind) for kind in typing.get_args(AnyHandoffFact)
}
ACTIONS: dict[str, dict[str, Any]] = {
    "SubmitPrefill": {},
    "ReserveDestination": {},
    "StartTransfer": {"delay_ms": 2.5},
    "ActivateDestination": {},
    "ReleaseSource": {},
    "CancelSource": {},
    "CancelDestination": {},
    "Complete": {},
}
VARIANTS = [(HandoffFact, name, extra) for name, extra in FACTS.items()] + [
    (HandoffAction, name, extra) for name, extra in ACTIONS.items()
]
VARIANT_IDS = [name for _, name, _ in VARIANTS]


def make(base: type, name: str, extra: dict[str, Any], handoff_id: object = ID) -> Any:
    return getattr(base, name)(handoff_id=handoff_id, **extra)


@pytest.mark.parametrize(("base", "name", "extra"), VARIANTS, ids=VARIANT_IDS)
class TestEveryVariant:
    def test_is_a_base_instance_with_handoff_id_first(
        self, base: type, name: str, extra: dict[str, Any]
    ) -> None:
        made = make(base, name, extra)
        assert made.handoff_id == ID
        assert [field.name for field in attrs.fields(type(made))] == ["handoff_id", *extra]
        assert isinstance(made, base)

    def test_positional_construction(self, base: type, name: str, extra: dict[str, Any]) -> None:
        assert getattr(base, name)(ID, *extra.values()) == make(base, name, extra)

    def test_repr_names_the_namespace(self, base: type, name: str, extra: dict[str, Any]) -> None:
        fields = ", ".join(f"{key}={value!r}" for key, value in extra.items())
        expected = f"{base.__name__}.{name}(handoff_id={ID!r}" + (f", {fields})" if fields else ")")
        assert repr(make(base, name, extra)) == expected

    @pytest.mark.parametrize("bad_id", [uuid.UUID(int=1), str(ID), None, 1])
    def test_refuses_non_handoff_id(
        self, base: type, name: str, extra: dict[str, Any], bad_id: object
    ) -> None:
        with pytest.raises(TypeError, match=r"^handoff_id must be a HandoffId"):
            make(base, name, extra, handoff_id=bad_id)

    def test_equal_and_hashed_by_variant_and_fields(
        self, base: type, name: str, extra: dict[str, Any]
    ) -> None:
        made = make(base, name, extra)
        assert made == make(base, name, extra)
        assert hash(made) == hash(make(base, name, extra))
        assert made != make(base, name, extra, handoff_id=OTHER_ID)

    def test_frozen_and_slotted(self, base: type, name: str, extra: dict[str, Any]) -> None:
        made = make(base, name, extra)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            made.handoff_id = OTHER_ID
        assert not hasattr(made, "__dict__")

    def test_survives_pickling(self, base: type, name: str, extra: dict[str, Any]) -> None:
        made = make(base, name, extra)
        assert pickle.loads(pickle.dumps(made)) == made


def test_variants_of_one_id_are_all_distinct() -> None:
    made = [make(base, name, extra) for base, name, extra in VARIANTS]
    assert len(set(made)) == len(VARIANTS)


def test_facts_are_not_actions() -> None:
    assert not isinstance(HandoffFact.Failed(ID), HandoffAction)
    assert not isinstance(HandoffAction.Complete(ID), HandoffFact)


@pytest.mark.parametrize("base", [HandoffFact, HandoffAction])
def test_base_cannot_be_built_bare(base: type) -> None:
    with pytest.raises(TypeError, match="is abstract"):
        base()


def test_match_by_position_and_keyword() -> None:
    def describe(fact: HandoffFact) -> str:
        match fact:
            case HandoffFact.SourceHeld(_, transfer_timing=timing):
                return f"held {timing.full_prompt_tokens}"
            case HandoffFact.DestinationReserved(_, tokens):
                return f"reserved {tokens}"
            case HandoffFact.Failed() | HandoffFact.TimedOut() | HandoffFact.Canceled():
                return "stop"
        return "other"

    assert describe(HandoffFact.SourceHeld(ID, TIMING)) == "held 10"
    assert describe(HandoffFact.DestinationReserved(ID, 3)) == "reserved 3"
    assert describe(HandoffFact.TimedOut(ID)) == "stop"
    assert describe(HandoffFact.TransferCompleted(ID)) == "other"


class TestFactFields:
    @pytest.mark.parametrize("value", [None, "timing", attrs.asdict(TIMING)])
    def test_source_held_needs_a_timing(self, value: object) -> None:
        with pytest.raises(TypeError, match=r"^transfer_timing must be a HandoffTransferTiming"):
            HandoffFact.SourceHeld(ID, value)  # type: ignore[arg-type]

    @pytest.mark.parametrize("tokens", [0, 2**64 - 1])
    def test_reserved_tokens_boundaries(self, tokens: int) -> None:
        assert HandoffFact.DestinationReserved(ID, tokens).transferable_prompt_tokens == tokens

    @pytest.mark.parametrize(
        ("tokens", "error"),
        [*BAD_COUNTS, (3.0, TypeError)],
    )
    def test_reserved_tokens_refused(self, tokens: object, error: type[Exception]) -> None:
        with pytest.raises(error, match=r"^transferable_prompt_tokens must be an int"):
            HandoffFact.DestinationReserved(ID, tokens)  # type: ignore[arg-type]

    def test_payload_takes_part_in_equality(self) -> None:
        assert HandoffFact.DestinationReserved(ID, 1) != HandoffFact.DestinationReserved(ID, 2)


class TestStartTransfer:
    def test_int_delay_stored_as_float(self) -> None:
        made = HandoffAction.StartTransfer(ID, 3)
        assert type(made.delay_ms) is float
        assert made == HandoffAction.StartTransfer(ID, 3.0)
        assert hash(made) == hash(HandoffAction.StartTransfer(ID, 3.0))

    @pytest.mark.parametrize("delay", [float("inf"), -1.0, 0.0])
    def test_any_float_delay_is_carried(self, delay: float) -> None:
        assert HandoffAction.StartTransfer(ID, delay).delay_ms == delay

    @pytest.mark.parametrize("delay", [True, None, "2.5"])
    def test_delay_type_refused(self, delay: object) -> None:
        with pytest.raises(TypeError, match=r"^delay_ms must be a float"):
            HandoffAction.StartTransfer(ID, delay)  # type: ignore[arg-type]

    def test_delay_takes_part_in_equality(self) -> None:
        assert HandoffAction.StartTransfer(ID, 1.0) != HandoffAction.StartTransfer(ID, 2.0)


class TestIssuedHandoffAction:
    def test_fields(self) -> None:
        issued = IssuedHandoffAction(HandoffActionId(3), HandoffAction.Complete(ID))
        assert issued.id == HandoffActionId(3)
        assert issued.action == HandoffAction.Complete(ID)
        assert repr(issued) == (
            f"IssuedHandoffAction(id=HandoffActionId(3), action=HandoffAction.Complete("
            f"handoff_id={ID!r}))"
        )

    @pytest.mark.parametrize("action_id", [3, None, "3"])
    def test_id_must_be_an_action_id(self, action_id: object) -> None:
        with pytest.raises(TypeError, match=r"^id must be a HandoffActionId"):
            IssuedHandoffAction(action_id, HandoffAction.Complete(ID))  # type: ignore[arg-type]

    @pytest.mark.parametrize("action", [HandoffFact.Failed(ID), None, "Complete"])
    def test_action_must_be_an_action(self, action: object) -> None:
        with pytest.raises(TypeError, match=r"^action must be a HandoffAction"):
            IssuedHandoffAction(HandoffActionId(3), action)  # type: ignore[arg-type]

    def test_equal_by_id_and_action(self) -> None:
        def issued(value: int, action: AnyHandoffAction) -> IssuedHandoffAction:
            return IssuedHandoffAction(HandoffActionId(value), action)

        complete = HandoffAction.Complete(ID)
        assert issued(3, complete) == issued(3, complete)
        assert {issued(3, complete), issued(3, complete)} == {issued(3, complete)}
        assert issued(3, complete) != issued(4, complete)
        assert issued(3, complete) != issued(3, HandoffAction.ReleaseSource(ID))

    def test_frozen(self) -> None:
        issued = IssuedHandoffAction(HandoffActionId(3), HandoffAction.Complete(ID))
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            issued.id = HandoffActionId(4)  # type: ignore[misc]


def _rebuilt(value: object) -> object:
    names = {
        "HandoffAction": HandoffAction,
        "HandoffFact": HandoffFact,
        "HandoffId": HandoffId,
        "HandoffTransferTiming": HandoffTransferTiming,
        "KvTransferTimingMode": KvTransferTimingMode,
        "UUID": uuid.UUID,
    }
    return eval(repr(value), names)


@pytest.mark.parametrize(("base", "name", "extra"), VARIANTS, ids=VARIANT_IDS)
def test_repr_reads_as_the_call_that_builds_it(
    base: type, name: str, extra: dict[str, Any]
) -> None:
    made = make(base, name, extra)
    assert _rebuilt(made) == made


def test_repr_spelled_out() -> None:
    assert repr(HandoffFact.SourceHeld(ID, TIMING)) == (
        "HandoffFact.SourceHeld("
        "handoff_id=HandoffId(UUID('00000000-0000-0000-0000-000000000001')), "
        "transfer_timing=HandoffTransferTiming(mode=KvTransferTimingMode.FULL_PROMPT, "
        "full_prompt_tokens=10, kv_bytes_per_token=1024, bandwidth_gb_s=1.5, "
        "kv_bytes_per_request=0))"
    )
    assert repr(HandoffAction.StartTransfer(OTHER_ID, 2)) == (
        "HandoffAction.StartTransfer("
        "handoff_id=HandoffId(UUID('00000000-0000-0000-0000-000000000002')), delay_ms=2.0)"
    )


EXHAUSTIVE = """
from typing import assert_never

from handoff import AnyHandoffAction, AnyHandoffFact, HandoffAction, HandoffFact


def every_fact(fact: AnyHandoffFact) -> str:
    match fact:
        case HandoffFact.SourceHeld(transfer_timing=timing):
            return str(timing.full_prompt_tokens)
        case HandoffFact.DestinationReserved(transferable_prompt_tokens=tokens):
            return str(tokens)
        case HandoffFact.TransferCompleted() | HandoffFact.Failed() | HandoffFact.TimedOut():
            return "over"
        case HandoffFact.Canceled():
            return "canceled"
        case _:
            assert_never(fact)


def one_action(action: AnyHandoffAction) -> str:
    match action:
        case HandoffAction.StartTransfer(delay_ms=delay):
            return str(delay)
        case _:
            assert_never(action)  # the line mypy must flag
"""


def test_a_match_over_a_union_alias_is_checked_for_exhaustiveness(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(EXHAUSTIVE)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), program],
        capture_output=True,
        text=True,
        check=False,
    )
    flagged = EXHAUSTIVE.splitlines().index(
        "            assert_never(action)  # the line mypy must flag"
    )
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stdout
    assert errors[0].startswith(f"{program}:{flagged + 1}: error: ")
    for name in ACTIONS:
        assert (name in errors[0]) is (name != "StartTransfer"), name


def test_every_kind_of_fact_is_bound_once_in_the_unions_order() -> None:
    # The coordinator's event, the reporter drawn and the terminal facts all read this table.
    assert list(binding.FACTS) == list(typing.get_args(AnyHandoffFact))
    ended = {HandoffFact.Failed, HandoffFact.TimedOut, HandoffFact.Canceled}
    assert ended <= set(TERMINAL_FACTS)
    assert not {HandoffFact.SourceHeld, HandoffFact.TransferCompleted} & set(TERMINAL_FACTS)


@pytest.mark.parametrize("kind", [*FAMILIES[HandoffFact], *FAMILIES[HandoffAction]])
def test_a_sample_is_a_value_the_wire_carries_with_each_field_given_kept(kind: type) -> None:
    value: Any = sample(kind, handoff_id=ID)
    assert value.handoff_id == ID
    assert wire.loads(wire.dumps(value), kind) == value
    # Every field without a default is filled; a timing's payload passes its own checks.
    if kind is HandoffFact.SourceHeld:
        assert value.transfer_timing.full_prompt_delay_ms() is not None

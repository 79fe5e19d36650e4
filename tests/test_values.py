"""Identifiers, enums, action ids and outcomes: construction, checks, equality, text forms."""

from __future__ import annotations

import enum
import math
import re
import uuid

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import BAD_COUNTS

from handoff import (
    EngineType,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
    OutcomeKind,
)
from handoff._values import validators as validators
from handoff._values.validators import check_count

USIZE_MAX = 2**64 - 1


@attrs.frozen
class Counted:
    full_prompt_tokens: int = attrs.field(validator=check_count)


class TestCheckCount:
    @pytest.mark.parametrize("value", [0, 1, 2**32, USIZE_MAX])
    def test_accepts_usize_range(self, value: int) -> None:
        assert Counted(value).full_prompt_tokens == value

    @pytest.mark.parametrize(("value", "error"), BAD_COUNTS)
    def test_refuses_with_field_name(self, value: object, error: type[Exception]) -> None:
        with pytest.raises(error, match=r"^full_prompt_tokens must be an int in \[0, 2\*\*64\)"):
            Counted(value)  # type: ignore[arg-type]

    def test_message_says_what_arrived(self) -> None:
        with pytest.raises(TypeError) as caught:
            Counted(True)
        assert (
            str(caught.value) == "full_prompt_tokens must be an int in [0, 2**64), got True (bool)"
        )

    def test_huge_int_is_reported_by_size_not_digits(self) -> None:
        # Python refuses to format ints this long; the check must still raise ValueError.
        with pytest.raises(ValueError, match="an int of 16610 bits"):
            Counted(10**5000)


class TestHandoffId:
    ONE = uuid.UUID(int=1)

    def test_wraps_uuid(self) -> None:
        assert HandoffId(self.ONE).uuid == self.ONE

    def test_str_is_canonical_uuid_text(self) -> None:
        assert str(HandoffId(self.ONE)) == "00000000-0000-0000-0000-000000000001"

    def test_repr(self) -> None:
        text = "HandoffId(UUID('00000000-0000-0000-0000-000000000001'))"
        assert repr(HandoffId(self.ONE)) == text

    @given(st.uuids())
    def test_repr_rebuilds_it(self, value: uuid.UUID) -> None:
        handoff_id = HandoffId(value)
        assert eval(repr(handoff_id), {"HandoffId": HandoffId, "UUID": uuid.UUID}) == handoff_id

    @pytest.mark.parametrize("value", ["00000000-0000-0000-0000-000000000001", 1, None, b"x"])
    def test_refuses_non_uuid(self, value: object) -> None:
        with pytest.raises(TypeError, match=r"^uuid must be a uuid\.UUID"):
            HandoffId(value)  # type: ignore[arg-type]

    def test_new_is_random_version_4(self) -> None:
        first, second = HandoffId.new(), HandoffId.new()
        assert first.uuid.version == 4
        assert first != second

    def test_equal_and_hash_by_uuid(self) -> None:
        assert HandoffId(self.ONE) == HandoffId(uuid.UUID(int=1))
        assert len({HandoffId(self.ONE), HandoffId(uuid.UUID(int=1))}) == 1
        assert HandoffId(self.ONE) != HandoffId(uuid.UUID(int=2))

    @given(st.uuids(), st.uuids())
    def test_ordered_by_uuid(self, a: uuid.UUID, b: uuid.UUID) -> None:
        assert (HandoffId(a) < HandoffId(b)) == (a < b)

    def test_frozen(self) -> None:
        handoff_id = HandoffId(self.ONE)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            handoff_id.uuid = uuid.UUID(int=2)  # type: ignore[misc]


class TestEnums:
    @pytest.mark.parametrize(
        ("kind", "wire"),
        [
            (EngineType, {"VLLM": "vllm", "SGLANG": "sglang", "TRTLLM": "trtllm"}),
            (
                HandoffOrder,
                {"SOURCE_FIRST": "SourceFirst", "DESTINATION_FIRST": "DestinationFirst"},
            ),
            (
                KvTransferTimingMode,
                {"FULL_PROMPT": "full_prompt", "DESTINATION_MISSING": "destination_missing"},
            ),
            (HandoffCompletion, {"SUCCESS": "Success", "CANCELED": "Canceled"}),
            (
                OutcomeKind,
                {
                    "SUBMITTED": "Submitted",
                    "ACCEPTED": "Accepted",
                    "SCHEDULED": "Scheduled",
                    "APPLIED": "Applied",
                    "NOOP": "Noop",
                    "FAILED": "Failed",
                },
            ),
        ],
    )
    def test_values_match_the_wire(self, kind: type[enum.Enum], wire: dict[str, str]) -> None:
        assert {e.name: e.value for e in kind} == wire

    @pytest.mark.parametrize(
        "member",
        [*EngineType, *HandoffOrder, *KvTransferTimingMode, *HandoffCompletion, *OutcomeKind],
    )
    def test_a_member_reprs_as_it_is_spelled(self, member: enum.Enum) -> None:
        assert repr(member) == f"{type(member).__name__}.{member.name}"
        assert eval(repr(member), {type(member).__name__: type(member)}) is member

    def test_repr_spelled_out_and_str_is_the_wire_value(self) -> None:
        assert repr(HandoffOrder.SOURCE_FIRST) == "HandoffOrder.SOURCE_FIRST"
        assert str(HandoffOrder.SOURCE_FIRST) == "SourceFirst"
        assert f"{EngineType.SGLANG:>8}" == "  sglang"
        assert str(OutcomeKind.NOOP) == "Noop"

    @pytest.mark.parametrize(
        ("engine", "order"),
        [
            (EngineType.VLLM, HandoffOrder.SOURCE_FIRST),
            (EngineType.TRTLLM, HandoffOrder.SOURCE_FIRST),
            (EngineType.SGLANG, HandoffOrder.DESTINATION_FIRST),
        ],
    )
    def test_order_for_engine(self, engine: EngineType, order: HandoffOrder) -> None:
        assert HandoffOrder.for_engine(engine) is order

    @pytest.mark.parametrize("engine", ["vllm", None, HandoffOrder.SOURCE_FIRST])
    def test_order_for_engine_refuses_non_engine(self, engine: object) -> None:
        with pytest.raises(TypeError, match=r"^engine must be an EngineType"):
            HandoffOrder.for_engine(engine)  # type: ignore[arg-type]


class TestHandoffActionId:
    @pytest.mark.parametrize("value", [0, 3, USIZE_MAX])
    def test_accepts_counts(self, value: int) -> None:
        assert HandoffActionId(value).value == value

    @pytest.mark.parametrize(("value", "error"), BAD_COUNTS)
    def test_refuses_non_counts(self, value: object, error: type[Exception]) -> None:
        with pytest.raises(error, match=r"^value must be an int"):
            HandoffActionId(value)  # type: ignore[arg-type]

    def test_text_forms(self) -> None:
        assert repr(HandoffActionId(3)) == "HandoffActionId(3)"
        assert str(HandoffActionId(3)) == "3"

    @given(st.integers(0, USIZE_MAX), st.integers(0, USIZE_MAX))
    def test_ordered_and_hashed_by_value(self, a: int, b: int) -> None:
        assert (HandoffActionId(a) < HandoffActionId(b)) == (a < b)
        assert (HandoffActionId(a) == HandoffActionId(b)) == (a == b)
        if a == b:
            assert hash(HandoffActionId(a)) == hash(HandoffActionId(b))

    def test_frozen(self) -> None:
        action_id = HandoffActionId(3)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            action_id.value = 4  # type: ignore[misc]


CONSTANTS = {
    OutcomeKind.SUBMITTED: HandoffActionOutcome.SUBMITTED,
    OutcomeKind.ACCEPTED: HandoffActionOutcome.ACCEPTED,
    OutcomeKind.SCHEDULED: HandoffActionOutcome.SCHEDULED,
    OutcomeKind.APPLIED: HandoffActionOutcome.APPLIED,
    OutcomeKind.NOOP: HandoffActionOutcome.NOOP,
}


class TestHandoffActionOutcome:
    @pytest.mark.parametrize(("kind", "outcome"), CONSTANTS.items())
    def test_constants_carry_their_kind_and_no_reason(
        self, kind: OutcomeKind, outcome: HandoffActionOutcome
    ) -> None:
        assert outcome.kind is kind
        assert outcome.reason == ""
        assert not outcome.is_failed
        assert outcome == HandoffActionOutcome(kind)

    def test_constants_are_distinct(self) -> None:
        assert len(set(CONSTANTS.values())) == len(CONSTANTS)

    def test_failed_carries_reason(self) -> None:
        outcome = HandoffActionOutcome.failed("disk full")
        assert outcome.kind is OutcomeKind.FAILED
        assert outcome.reason == "disk full"
        assert outcome.is_failed

    def test_equal_by_kind_and_reason(self) -> None:
        assert HandoffActionOutcome.failed("disk full") == HandoffActionOutcome.failed("disk full")
        assert hash(HandoffActionOutcome.failed("a")) == hash(HandoffActionOutcome.failed("a"))
        assert HandoffActionOutcome.failed("disk full") != HandoffActionOutcome.failed("timeout")
        assert HandoffActionOutcome.failed("Applied") != HandoffActionOutcome.APPLIED
        assert HandoffActionOutcome.APPLIED != HandoffActionOutcome.NOOP

    def test_text_forms(self) -> None:
        assert str(HandoffActionOutcome.APPLIED) == "Applied"
        assert str(HandoffActionOutcome.NOOP) == "Noop"
        assert str(HandoffActionOutcome.failed("disk full")) == 'Failed("disk full")'
        assert str(HandoffActionOutcome.failed('say "hi"')) == r'Failed("say \"hi\"")'
        assert repr(HandoffActionOutcome.APPLIED) == "HandoffActionOutcome.APPLIED"
        assert (
            repr(HandoffActionOutcome.failed("disk full"))
            == "HandoffActionOutcome.failed('disk full')"
        )

    @given(st.text())
    def test_repr_of_failure_rebuilds_it(self, reason: str) -> None:
        outcome = HandoffActionOutcome.failed(reason)
        assert eval(repr(outcome), {"HandoffActionOutcome": HandoffActionOutcome}) == outcome

    @pytest.mark.parametrize("reason", [None, 3, b"disk full"])
    def test_failure_needs_a_str_reason(self, reason: object) -> None:
        with pytest.raises(TypeError, match=r"^reason must be a str for a FAILED outcome"):
            HandoffActionOutcome.failed(reason)  # type: ignore[arg-type]

    def test_only_failures_have_a_reason(self) -> None:
        with pytest.raises(
            ValueError,
            match=r"^reason must be empty \(or None\) for an outcome of kind APPLIED, got 'disk",
        ):
            HandoffActionOutcome(OutcomeKind.APPLIED, "disk full")
        with pytest.raises(TypeError) as wrong:
            HandoffActionOutcome(OutcomeKind.NOOP, 3)  # type: ignore[arg-type]
        assert str(wrong.value) == (
            "reason must be empty (or None) for an outcome of kind NOOP, got 3 (int)"
        )

    @pytest.mark.parametrize("kind", ["Applied", None, EngineType.VLLM])
    def test_refuses_non_kind(self, kind: object) -> None:
        with pytest.raises(TypeError, match=r"^kind must be an OutcomeKind"):
            HandoffActionOutcome(kind)  # type: ignore[arg-type]

    def test_frozen(self) -> None:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            HandoffActionOutcome.APPLIED.kind = OutcomeKind.NOOP  # type: ignore[misc]
        assert HandoffActionOutcome.APPLIED.kind is OutcomeKind.APPLIED


class TestSharedChecks:
    """The one set of field checks every value type, the timing and the coordinator use."""

    def test_a_wrong_kind_of_value_is_shown_with_its_type(self) -> None:
        error = validators.wrong_type("order", "a HandoffOrder", "SourceFirst")
        assert isinstance(error, TypeError)
        assert str(error) == "order must be a HandoffOrder, got 'SourceFirst' (str)"

    def test_a_wrong_value_is_shown_without_its_type(self) -> None:
        error = validators.wrong_value("tokens", "an int in [0, 2**64)", -1)
        assert isinstance(error, ValueError)
        assert str(error) == "tokens must be an int in [0, 2**64), got -1"

    def test_an_int_too_long_to_print_is_shown_by_its_size(self) -> None:
        # Python refuses to print an int of more than 4300 digits; 10**5000 has 5001.
        assert validators.shown(10**5000) == "an int of 16610 bits"
        assert validators.arrived(-(10**5000)) == "an int of 16610 bits (int)"
        assert validators.shown(2**256 - 1) == str(2**256 - 1)

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (0, True),
            (-0.0, True),
            (5e-324, True),
            (2**1023, True),
            (2**1024 - 2**970 - 1, True),
            (2**1024 - 2**970, False),
            pytest.param(10**5000, False, id="10**5000"),
            (-1, False),
            (-5e-324, False),
            (math.inf, False),
            (math.nan, False),
        ],
    )
    def test_finite_and_non_negative_never_overflows(self, value: float, expected: bool) -> None:
        assert validators.is_finite_non_negative(value) is expected

    def test_a_delay_in_range_comes_back_as_a_float(self) -> None:
        delay = validators.require_delay_ms("delay", 3)
        assert delay == 3.0
        assert type(delay) is float

    @pytest.mark.parametrize("value", [True, "1.0", None])
    def test_a_delay_that_is_no_number_is_a_type_error(self, value: object) -> None:
        with pytest.raises(TypeError, match=r"^wait must be a float, got "):
            validators.require_delay_ms("wait", value)

    @pytest.mark.parametrize(
        ("value", "shown"),
        [(-1, "-1"), (math.nan, "nan"), (-math.inf, "-inf"), (2**1024, "an int of 1025 bits")],
    )
    def test_a_delay_out_of_range_is_a_value_error(self, value: float, shown: str) -> None:
        expected = f"wait must be a finite, non-negative number of milliseconds, got {shown}"
        with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
            validators.require_delay_ms("wait", value)

    def test_a_float_field_refuses_an_int_past_the_float_range(self) -> None:
        @attrs.frozen
        class Rated:
            rate: float = attrs.field(
                converter=validators.to_float, validator=validators.check_float
            )

        assert type(Rated(2).rate) is float
        with pytest.raises(ValueError, match=r"^rate must be a number that fits in a float, got "):
            Rated(2**1024)
        with pytest.raises(TypeError, match=r"^rate must be a float, got True \(bool\)$"):
            Rated(True)

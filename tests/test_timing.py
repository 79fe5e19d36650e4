"""Transfer timing: construction checks, the delay formula bit for bit, and its validation."""

from __future__ import annotations

import math
import re
import struct
import sys
import uuid

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from support import BAD_COUNTS

from handoff import (
    HandoffCoordinatorCore,
    HandoffError,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    InvalidTransferTimingError,
    KvTransferTimingMode,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)

FULL = KvTransferTimingMode.FULL_PROMPT
MISSING = KvTransferTimingMode.DESTINATION_MISSING
USIZE_MAX = 2**64 - 1
INF = math.inf
NAN = math.nan


def timing(
    mode: KvTransferTimingMode = FULL,
    full_prompt_tokens: int = 1000,
    kv_bytes_per_token: int | None = 1_000_000,
    bandwidth_gb_s: float | None = 1.0,
    kv_bytes_per_request: int = 0,
) -> HandoffTransferTiming:
    return HandoffTransferTiming(
        mode, full_prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, kv_bytes_per_request
    )


def bits(value: float | None) -> bytes | None:
    return None if value is None else struct.pack("<d", value)


class TestConstruction:
    def test_fields_in_contract_order(self) -> None:
        made = HandoffTransferTiming(FULL, 10, 1024, 1.5, 7)
        assert attrs.astuple(made, recurse=False) == (FULL, 10, 1024, 1.5, 7)
        assert [field.name for field in attrs.fields(HandoffTransferTiming)] == [
            "mode",
            "full_prompt_tokens",
            "kv_bytes_per_token",
            "bandwidth_gb_s",
            "kv_bytes_per_request",
        ]

    def test_kv_bytes_per_request_defaults_to_zero(self) -> None:
        assert HandoffTransferTiming(FULL, 10, 1024, 1.5).kv_bytes_per_request == 0

    def test_optional_fields_take_none(self) -> None:
        made = timing(kv_bytes_per_token=None, bandwidth_gb_s=None)
        assert made.kv_bytes_per_token is None
        assert made.bandwidth_gb_s is None

    def test_count_boundaries(self) -> None:
        made = timing(
            full_prompt_tokens=USIZE_MAX, kv_bytes_per_token=0, kv_bytes_per_request=USIZE_MAX
        )
        assert made.full_prompt_tokens == USIZE_MAX
        assert made.kv_bytes_per_token == 0

    @pytest.mark.parametrize("field", ["full_prompt_tokens", "kv_bytes_per_request"])
    @pytest.mark.parametrize(
        ("value", "error"),
        [(None, TypeError), (True, TypeError), (2.0, TypeError), (-1, ValueError)],
    )
    def test_required_counts_refused(
        self, field: str, value: object, error: type[Exception]
    ) -> None:
        with pytest.raises(error, match=f"^{field} must be an int"):
            timing(**{field: value})  # type: ignore[arg-type]

    @pytest.mark.parametrize("field", ["full_prompt_tokens", "kv_bytes_per_token"])
    def test_count_above_usize_refused(self, field: str) -> None:
        with pytest.raises(ValueError, match=f"^{field} must be an int"):
            timing(**{field: 2**64})  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [False, 1.0, "1024"])
    def test_kv_bytes_per_token_type_refused(self, value: object) -> None:
        with pytest.raises(TypeError, match=r"^kv_bytes_per_token must be an int"):
            timing(kv_bytes_per_token=value)  # type: ignore[arg-type]

    def test_int_bandwidth_stored_as_float(self) -> None:
        made = timing(bandwidth_gb_s=2)
        assert type(made.bandwidth_gb_s) is float
        assert made == timing(bandwidth_gb_s=2.0)
        assert hash(made) == hash(timing(bandwidth_gb_s=2.0))

    @pytest.mark.parametrize("value", [NAN, INF, -INF, -1.0, 0.0, 5e-324])
    def test_any_float_bandwidth_accepted(self, value: float) -> None:
        assert bits(timing(bandwidth_gb_s=value).bandwidth_gb_s) == bits(value)

    @pytest.mark.parametrize("value", [True, "1.5", [1.5]])
    def test_bandwidth_type_refused(self, value: object) -> None:
        with pytest.raises(TypeError, match=r"^bandwidth_gb_s must be a float"):
            timing(bandwidth_gb_s=value)  # type: ignore[arg-type]

    def test_bandwidth_beyond_float_range_refused(self) -> None:
        # 10**400 needs ceil(400 * log2(10)) = 1329 bits.
        message = "bandwidth_gb_s must be a number that fits in a float, got an int of 1329 bits"
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            timing(bandwidth_gb_s=10**400)

    def test_largest_int_that_rounds_to_a_float_is_accepted(self) -> None:
        # Ints below 2**1024 - 2**970 round down to the largest float; from there on, up to inf.
        made = timing(bandwidth_gb_s=2**1024 - 2**970 - 1)
        assert made.bandwidth_gb_s == sys.float_info.max
        with pytest.raises(ValueError, match="fits in a float"):
            timing(bandwidth_gb_s=2**1024 - 2**970)

    @pytest.mark.parametrize("mode", ["full_prompt", None])
    def test_mode_type_refused(self, mode: object) -> None:
        with pytest.raises(TypeError, match=r"^mode must be a KvTransferTimingMode"):
            timing(mode=mode)  # type: ignore[arg-type]

    def test_frozen_and_hashable(self) -> None:
        made = timing()
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            made.bandwidth_gb_s = 2.0  # type: ignore[misc]
        assert {made, timing()} == {timing()}
        assert made != timing(kv_bytes_per_request=1)


class TestDelayExamples:
    """Values worked out by hand; every intermediate below is exactly representable."""

    def test_one_gigabyte_at_one_gigabyte_per_second_is_one_second(self) -> None:
        # 1000 tokens * 1e6 B = 1e9 B; 1e9 B / (1.0 * 1e9 B/s) = 1 s = 1000 ms.
        assert timing().delay_ms(0) == 1000.0

    def test_two_gigabytes_at_four_gigabytes_per_second(self) -> None:
        # 2000 * 1e6 = 2e9 B; 2e9 / 4e9 = 0.5 s (a power of two, exact) = 500 ms.
        assert timing(full_prompt_tokens=2000, bandwidth_gb_s=4.0).delay_ms(0) == 500.0

    def test_per_request_bytes_alone(self) -> None:
        # No per-token figure: only the 3e9 fixed bytes move; 3e9 / 1.5e9 = 2 s = 2000 ms.
        made = timing(kv_bytes_per_token=None, bandwidth_gb_s=1.5, kv_bytes_per_request=3 * 10**9)
        assert made.delay_ms(0) == 2000.0

    def test_per_token_and_per_request_bytes_add(self) -> None:
        # 100 * 1e7 = 1e9 B, plus 1e9 B fixed = 2e9 B; at 2e9 B/s that is 1 s = 1000 ms.
        made = timing(
            full_prompt_tokens=100,
            kv_bytes_per_token=10**7,
            bandwidth_gb_s=2.0,
            kv_bytes_per_request=10**9,
        )
        assert made.delay_ms(0) == 1000.0

    def test_evaluation_order_is_the_reference_one(self) -> None:
        # Found by search: multiplying by 1000 first, dividing by bandwidth then 1e9, or
        # dividing by bandwidth * 1e6 all round to 10873.81687288; only the reference order
        # gives the value one ulp above.
        made = timing(full_prompt_tokens=779246, kv_bytes_per_token=348857, bandwidth_gb_s=25.0)
        assert bits(made.delay_ms(0)) == bits(10873.816872880001)
        assert made.delay_ms(0) != 10873.81687288

    def test_zero_tokens_with_per_token_bytes_is_zero_not_none(self) -> None:
        assert timing(full_prompt_tokens=0).delay_ms(0) == 0.0

    def test_zero_per_token_bytes_is_a_figure_not_absence(self) -> None:
        # `Some(0)` is still a figure: only `None` with no fixed bytes means "nothing to model".
        assert timing(kv_bytes_per_token=0).delay_ms(0) == 0.0


class TestDelayTokenChoice:
    def test_full_prompt_mode_ignores_missing_tokens(self) -> None:
        assert timing(mode=FULL).delay_ms(5) == 1000.0
        assert timing(mode=FULL).delay_ms(0) == 1000.0

    def test_destination_missing_mode_uses_missing_tokens(self) -> None:
        # 500 tokens * 1e6 B at 1e9 B/s = 0.5 s.
        assert timing(mode=MISSING).delay_ms(500) == 500.0
        assert timing(mode=MISSING).delay_ms(0) == 0.0

    def test_full_prompt_delay_forces_full_prompt_mode(self) -> None:
        assert timing(mode=MISSING).full_prompt_delay_ms() == 1000.0
        assert timing(mode=FULL).full_prompt_delay_ms() == 1000.0

    @pytest.mark.parametrize("mode", list(KvTransferTimingMode))
    @pytest.mark.parametrize(
        ("value", "error"),
        BAD_COUNTS,
    )
    def test_missing_tokens_checked_in_every_mode(
        self, mode: KvTransferTimingMode, value: object, error: type[Exception]
    ) -> None:
        with pytest.raises(error, match=r"^destination_missing_tokens must be an int"):
            timing(mode=mode).delay_ms(value)  # type: ignore[arg-type]

    def test_missing_tokens_boundary_accepted(self) -> None:
        delay = timing(mode=MISSING, bandwidth_gb_s=1e30).delay_ms(USIZE_MAX)
        assert delay is not None
        assert math.isfinite(delay)


class TestDelayAbsent:
    def test_no_bandwidth(self) -> None:
        assert timing(bandwidth_gb_s=None).delay_ms(10) is None
        assert timing(bandwidth_gb_s=None).full_prompt_delay_ms() is None

    def test_no_per_token_bytes_and_no_per_request_bytes(self) -> None:
        assert timing(kv_bytes_per_token=None, kv_bytes_per_request=0).delay_ms(10) is None

    @pytest.mark.parametrize("bandwidth", [0.0, -0.0, -1.0, -INF, -5e-324])
    def test_bandwidth_not_positive(self, bandwidth: float) -> None:
        assert timing(bandwidth_gb_s=bandwidth).delay_ms(10) is None
        assert timing(bandwidth_gb_s=bandwidth).full_prompt_delay_ms() is None


class TestDelayExtremes:
    def test_overflow_gives_inf(self) -> None:
        made = timing(full_prompt_tokens=USIZE_MAX, kv_bytes_per_token=USIZE_MAX)
        assert attrs.evolve(made, bandwidth_gb_s=5e-324).delay_ms(0) == INF
        assert attrs.evolve(made, bandwidth_gb_s=1e-300).delay_ms(0) == INF

    def test_nothing_to_move_over_a_denormal_bandwidth_is_zero(self) -> None:
        assert timing(full_prompt_tokens=0, bandwidth_gb_s=5e-324).delay_ms(0) == 0.0

    def test_nan_bandwidth_gives_nan(self) -> None:
        delay = timing(bandwidth_gb_s=NAN).delay_ms(0)
        assert delay is not None
        assert math.isnan(delay)

    def test_infinite_bandwidth_gives_zero(self) -> None:
        assert timing(bandwidth_gb_s=INF).delay_ms(0) == 0.0


def reference_delay(made: HandoffTransferTiming, missing: int) -> float | None:
    """SPEC §3 written out literally, independent of the implementation's structure."""
    tokens = made.full_prompt_tokens if made.mode is FULL else missing
    bandwidth = made.bandwidth_gb_s
    if bandwidth is None:
        return None
    if made.kv_bytes_per_token is None and made.kv_bytes_per_request == 0:
        return None
    if bandwidth <= 0:
        return None
    per_token = made.kv_bytes_per_token or 0
    return (
        (float(tokens) * float(per_token) + float(made.kv_bytes_per_request))
        / (bandwidth * 1e9)
        * 1000.0
    )


counts = st.integers(0, USIZE_MAX) | st.integers(0, 10**6)
timings = st.builds(
    HandoffTransferTiming,
    mode=st.sampled_from(KvTransferTimingMode),
    full_prompt_tokens=counts,
    kv_bytes_per_token=st.none() | counts,
    bandwidth_gb_s=st.none() | st.floats() | st.floats(0.01, 1000.0),
    kv_bytes_per_request=st.just(0) | counts,
)


@given(timings, counts)
@example(timing(bandwidth_gb_s=5e-324, full_prompt_tokens=USIZE_MAX), 0)
@example(timing(bandwidth_gb_s=NAN), 0)
def test_delay_is_bit_identical_to_the_formula(made: HandoffTransferTiming, missing: int) -> None:
    expected = reference_delay(made, missing)
    assert bits(made.delay_ms(missing)) == bits(expected)
    full = reference_delay(attrs.evolve(made, mode=FULL), missing)
    assert bits(made.full_prompt_delay_ms()) == bits(full)


class TestValidateDelay:
    @pytest.mark.parametrize("delay", [None, 0.0, -0.0, 1.5, 1e300, 5e-324, 3])
    def test_valid(self, delay: float | None) -> None:
        validate_transfer_delay_ms(delay)

    @pytest.mark.parametrize(
        ("delay", "text"), [(NAN, "nan"), (INF, "inf"), (-INF, "-inf"), (-1.0, "-1.0")]
    )
    def test_invalid(self, delay: float, text: str) -> None:
        with pytest.raises(InvalidTransferTimingError) as caught:
            validate_transfer_delay_ms(delay)
        assert str(caught.value).startswith(f"invalid handoff transfer delay {text}")
        assert isinstance(caught.value, HandoffError)

    def test_smallest_negative_is_invalid(self) -> None:
        with pytest.raises(InvalidTransferTimingError, match=r"^invalid handoff transfer delay"):
            validate_transfer_delay_ms(-5e-324)

    @pytest.mark.parametrize(
        ("delay", "bits"), [(2**1024, 1025), (-(2**1024), 1025), (2**1024 - 2**970, 1024)]
    )
    def test_int_beyond_the_float_range_is_invalid_not_an_overflow(
        self, delay: int, bits: int
    ) -> None:
        # `math.isfinite` raises OverflowError for these; the delay is refused as any other.
        with pytest.raises(InvalidTransferTimingError) as caught:
            validate_transfer_delay_ms(delay)
        assert str(caught.value) == (
            f"invalid handoff transfer delay an int of {bits} bits: "
            "expected a finite, non-negative number of milliseconds"
        )

    def test_an_int_too_long_to_print_is_described_by_its_size(self) -> None:
        with pytest.raises(InvalidTransferTimingError, match="delay an int of 16610 bits"):
            validate_transfer_delay_ms(10**5000)

    def test_a_large_int_within_the_float_range_is_valid(self) -> None:
        validate_transfer_delay_ms(2**1023)

    @pytest.mark.parametrize("delay", ["1.0", True])
    def test_non_number_is_a_type_error(self, delay: object) -> None:
        with pytest.raises(TypeError, match=r"^delay must be a float"):
            validate_transfer_delay_ms(delay)  # type: ignore[arg-type]


class TestValidateTiming:
    @pytest.mark.parametrize(
        ("bandwidth", "text"), [(NAN, "nan"), (INF, "inf"), (-INF, "-inf"), (-1.0, "-1.0")]
    )
    def test_invalid_bandwidth(self, bandwidth: float, text: str) -> None:
        with pytest.raises(InvalidTransferTimingError) as caught:
            validate_transfer_timing(timing(bandwidth_gb_s=bandwidth))
        assert str(caught.value).startswith(f"invalid handoff transfer bandwidth {text}")

    def test_infinite_bandwidth_refused_even_with_nothing_to_model(self) -> None:
        # The bandwidth is checked on its own, before (and regardless of) any delay.
        made = timing(kv_bytes_per_token=None, bandwidth_gb_s=INF)
        assert made.full_prompt_delay_ms() is None
        with pytest.raises(
            InvalidTransferTimingError, match=r"^invalid handoff transfer bandwidth"
        ):
            validate_transfer_timing(made)

    @pytest.mark.parametrize("bandwidth", [None, 0.0, -0.0, 1.0, 5e-300])
    def test_valid_bandwidth(self, bandwidth: float | None) -> None:
        validate_transfer_timing(timing(bandwidth_gb_s=bandwidth))

    def test_zero_bandwidth_means_no_modelled_delay(self) -> None:
        made = timing(bandwidth_gb_s=0.0)
        validate_transfer_timing(made)
        assert made.full_prompt_delay_ms() is None

    def test_delay_checked_after_bandwidth(self) -> None:
        # A finite bandwidth so small that the full-prompt delay overflows.
        made = timing(full_prompt_tokens=USIZE_MAX, kv_bytes_per_token=USIZE_MAX)
        made = attrs.evolve(made, bandwidth_gb_s=5e-324)
        with pytest.raises(InvalidTransferTimingError) as caught:
            validate_transfer_timing(made)
        assert str(caught.value).startswith("invalid handoff transfer delay inf")

    def test_delay_checked_in_full_prompt_mode(self) -> None:
        # The destination-missing delay for 0 tokens is 0.0; the full prompt's overflows.
        made = timing(
            mode=MISSING,
            full_prompt_tokens=USIZE_MAX,
            kv_bytes_per_token=USIZE_MAX,
            bandwidth_gb_s=5e-324,
        )
        assert made.delay_ms(0) == 0.0
        with pytest.raises(
            InvalidTransferTimingError, match=r"^invalid handoff transfer delay inf"
        ):
            validate_transfer_timing(made)

    def test_non_timing_is_a_type_error(self) -> None:
        with pytest.raises(TypeError) as caught:
            validate_transfer_timing(None)  # type: ignore[arg-type]
        assert str(caught.value) == "timing must be a HandoffTransferTiming, got None (NoneType)"


class TestFallbackDelay:
    """The coordinator's fallback delay goes through the same check as a modelled delay."""

    HID = HandoffId(uuid.UUID(int=1))
    MUST = "fallback_transfer_delay_ms must be a finite, non-negative number of milliseconds"

    @pytest.mark.parametrize("fallback", [2**1024, 10**400, -(2**1024)])
    def test_an_int_beyond_the_float_range_is_a_value_error(self, fallback: int) -> None:
        with pytest.raises(ValueError, match=f"^{re.escape(self.MUST)}, got an int of \\d+ bits$"):
            HandoffCoordinatorCore(self.HID, HandoffOrder.SOURCE_FIRST, fallback)

    def test_new_with_fallback_refuses_it_too(self) -> None:
        with pytest.raises(ValueError, match=f"^{re.escape(self.MUST)}"):
            HandoffCoordinatorCore.new_with_fallback(self.HID, HandoffOrder.SOURCE_FIRST, 2**1024)

    def test_a_large_int_within_the_float_range_is_stored_as_a_float(self) -> None:
        coordinator = HandoffCoordinatorCore(self.HID, HandoffOrder.DESTINATION_FIRST, 2**1023)
        assert coordinator.start() != []

    @pytest.mark.parametrize(("fallback", "shown"), [(-1, "-1"), (math.nan, "nan")])
    def test_the_message_shows_what_arrived(self, fallback: float, shown: str) -> None:
        with pytest.raises(ValueError, match=f"^{re.escape(self.MUST)}, got {shown}$"):
            HandoffCoordinatorCore(self.HID, HandoffOrder.SOURCE_FIRST, fallback)

"""The modelled KV transfer delay, and the checks that keep it finite and non-negative."""

from __future__ import annotations

import attrs

from handoff._values.errors import AdapterRefusal, InvalidTransferTimingError
from handoff._values.validators import (
    check_count,
    check_float,
    check_instance,
    is_finite_non_negative,
    require_count,
    require_instance,
    shown,
    to_count,
    to_optional_count,
    to_optional_float,
    wrong_type,
)
from handoff._values.values import KvTransferTimingMode

__all__ = ["HandoffTransferTiming", "validate_transfer_delay_ms", "validate_transfer_timing"]


@attrs.frozen(cache_hash=True)
class HandoffTransferTiming:
    """What the source reports about a prompt's KV cache, enough to model the transfer delay.

    Any float is accepted for `bandwidth_gb_s`, NaN and infinities included; whether it makes
    sense is decided by `validate_transfer_timing`, which the coordinator applies.
    """

    mode: KvTransferTimingMode = attrs.field(
        validator=check_instance(KvTransferTimingMode, "a KvTransferTimingMode")
    )
    full_prompt_tokens: int = attrs.field(converter=to_count, validator=check_count)
    kv_bytes_per_token: int | None = attrs.field(
        converter=to_optional_count, validator=attrs.validators.optional(check_count)
    )
    bandwidth_gb_s: float | None = attrs.field(
        converter=to_optional_float, validator=attrs.validators.optional(check_float)
    )
    kv_bytes_per_request: int = attrs.field(default=0, converter=to_count, validator=check_count)

    def delay_ms(self, destination_missing_tokens: int) -> float | None:
        """Milliseconds the transfer is modelled to take, or None when there is nothing to model.

        `destination_missing_tokens` is used only in DESTINATION_MISSING mode; FULL_PROMPT mode
        uses `full_prompt_tokens`. The result may be inf or NaN; it never raises for a count.
        """
        require_count("destination_missing_tokens", destination_missing_tokens)
        if self.mode is KvTransferTimingMode.FULL_PROMPT:
            return self._delay_for(self.full_prompt_tokens)
        return self._delay_for(destination_missing_tokens)

    def full_prompt_delay_ms(self) -> float | None:
        """`delay_ms` as if the mode were FULL_PROMPT: what `validate_transfer_timing` checks."""
        return self._delay_for(self.full_prompt_tokens)

    def _delay_for(self, tokens: int) -> float | None:
        bandwidth = self.bandwidth_gb_s
        # NaN is deliberately not caught here: it flows through to a NaN delay, as in the
        # reference, and `validate_transfer_delay_ms` refuses it.
        if bandwidth is None or bandwidth <= 0.0:
            return None
        if self.kv_bytes_per_token is None and self.kv_bytes_per_request == 0:
            return None
        # The operation order is part of the contract: it must match the reference bit for bit.
        # Counts are below 2**64, so the byte total stays far below the float range; the
        # divisor is positive (a positive bandwidth times 1e9 cannot round to zero), so dividing
        # can overflow only to inf, never raise.
        total_bytes = float(tokens) * float(self.kv_bytes_per_token or 0) + float(
            self.kv_bytes_per_request
        )
        return total_bytes / (bandwidth * 1e9) * 1000.0


def validate_transfer_delay_ms(delay: float | None) -> None:
    """Refuse a delay that is NaN, infinite, negative or too large for a float; None (no
    modelled delay) is fine.

    Raises `InvalidTransferTimingError`, a `HandoffError`; `TypeError` for what is not a number.
    """
    if delay is None:
        return
    if isinstance(delay, bool) or not isinstance(delay, int | float):
        raise wrong_type("delay", "a float or None", delay)
    if not is_finite_non_negative(delay):
        raise InvalidTransferTimingError(
            f"{AdapterRefusal.INVALID_DELAY.phrase} {shown(delay)}: "
            "expected a finite, non-negative number of milliseconds"
        )


def validate_transfer_timing(timing: HandoffTransferTiming) -> None:
    """Refuse a bandwidth that is NaN, infinite or negative, then the full-prompt delay it implies.

    A bandwidth of exactly 0 is valid: it means no modelled delay. Raises
    `InvalidTransferTimingError`, a `HandoffError`.
    """
    require_instance("timing", timing, HandoffTransferTiming, "a HandoffTransferTiming")
    bandwidth = timing.bandwidth_gb_s
    if bandwidth is not None and not is_finite_non_negative(bandwidth):
        raise InvalidTransferTimingError(
            f"{AdapterRefusal.INVALID_BANDWIDTH.phrase} {bandwidth}: "
            "expected a finite, non-negative number of GB/s"
        )
    validate_transfer_delay_ms(timing.full_prompt_delay_ms())

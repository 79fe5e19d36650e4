"""SPEC.md §3 as the environment judges a payload: the timing's refusal, a transfer's delay.

The watch answers a fact with these; Spin's model classifies the environment's payloads with
the same words, so the two sides never disagree on what a payload is.
"""

from __future__ import annotations

import math

from handoff._values.errors import AdapterRefusal
from handoff._values.timing import HandoffTransferTiming

__all__ = ["timing_refusal", "transfer_delay", "usable_delay"]


def timing_refusal(timing: HandoffTransferTiming) -> AdapterRefusal | None:
    """SPEC.md §3 `validate_transfer_timing`: how it refuses `timing`, or None."""
    bandwidth = timing.bandwidth_gb_s
    if bandwidth is not None and not (math.isfinite(bandwidth) and bandwidth >= 0):
        return AdapterRefusal.INVALID_BANDWIDTH
    if not usable_delay(timing.full_prompt_delay_ms()):
        return AdapterRefusal.INVALID_DELAY
    return None


def transfer_delay(timing: HandoffTransferTiming, tokens: int, fallback: float) -> float:
    """SPEC.md §3: a transfer's delay for `tokens` under `timing` (`fallback`: unmodelled)."""
    delay = timing.delay_ms(tokens)
    return fallback if delay is None else delay


def usable_delay(delay: float | None) -> bool:
    """A delay SPEC.md lets a transfer carry: none, or finite and non-negative."""
    return delay is None or (math.isfinite(delay) and delay >= 0)

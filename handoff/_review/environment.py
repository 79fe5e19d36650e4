"""The review's environment: every call it may make to a coordinator, and the rules of the run.

The environment is nondeterministic.  From every configuration it may call `start()`, report
any fact (with a usable payload, with each kind of unusable one, or for another handoff) and
acknowledge every action id issued so far, and one never issued, with every kind of outcome.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any, cast

import attrs

from handoff._compile.codec_table import FAMILIES, sample
from handoff._system.bound import MAX_ACTIONS
from handoff._system.call import HANDOFF_ID, TERMINAL_FACTS, Call, CallKind
from handoff._values.messages import HandoffFact
from handoff._values.timing import HandoffTransferTiming
from handoff._values.values import (
    ONE_OF_EACH_OUTCOME,
    HandoffActionId,
    HandoffId,
    HandoffOrder,
    KvTransferTimingMode,
)

__all__ = [
    "HANDOFF_ID",
    "MAX_ACTIONS",
    "TERMINAL_FACTS",
    "Call",
    "CallKind",
    "Environment",
    "Rules",
    "environment",
]


_OTHER_HANDOFF_ID = HandoffId(uuid.UUID(int=2))

_MISSING = KvTransferTimingMode.DESTINATION_MISSING
_FULL = KvTransferTimingMode.FULL_PROMPT
_HUGE = 2**64 - 1
"""The largest count a timing or a reservation may carry."""

# DESTINATION_MISSING mode with a vanishing bandwidth: one missing token is modelled at 1e298 ms
# (finite, so usable), while 2**64 - 1 missing tokens overflow the delay to inf.
_TIMING = HandoffTransferTiming(_MISSING, 1, 1, 1e-304)
_TOKENS = 1
_UNUSABLE_TIMINGS = (
    (HandoffTransferTiming(_FULL, 1, 1, -1.0), "bandwidth -1.0 GB/s"),
    (HandoffTransferTiming(_FULL, 1, 1, math.nan), "bandwidth NaN"),
    (HandoffTransferTiming(_FULL, 1, 1, math.inf), "bandwidth inf"),
    (HandoffTransferTiming(_FULL, 1, 1, -math.inf), "bandwidth -inf"),
    (HandoffTransferTiming(_FULL, _HUGE, _HUGE, 1e-300), "full-prompt delay overflows"),
)
"""Timings `validate_transfer_timing` refuses: each kind of bad bandwidth, and an overflow."""

_OUTCOMES = ONE_OF_EACH_OUTCOME


@attrs.frozen
class Rules:
    """What a run is judged against besides the SPEC: the chart's order and the adapter's setup."""

    order: HandoffOrder
    handoff_id: HandoffId = HANDOFF_ID
    fallback_transfer_delay_ms: float = 0.0


@attrs.frozen
class Environment:
    """Every call the environment may make, for one handoff id."""

    handoff_id: HandoffId
    start: Call
    facts: tuple[Call, ...]
    outcomes: tuple[tuple[Call, ...], ...]
    """`outcomes[action_id]`: that id acknowledged with each kind of outcome."""

    def calls(self, next_id: int) -> Iterator[Call]:
        """The calls from a configuration whose next action id is `next_id`."""
        yield self.start
        yield from self.facts
        for action_id in range(min(next_id, MAX_ACTIONS) + 1):
            yield from self.outcomes[action_id]


def environment(handoff_id: HandoffId = HANDOFF_ID) -> Environment:
    """The nondeterministic environment of one handoff."""
    held, reserved = HandoffFact.SourceHeld, HandoffFact.DestinationReserved
    facts = (
        Call.of_fact(held(handoff_id, _TIMING), _words("SourceHeld(valid timing)")),
        *(
            Call.of_fact(held(handoff_id, timing), _words(f"SourceHeld({words})"), usable=False)
            for timing, words in _UNUSABLE_TIMINGS
        ),
        Call.of_fact(reserved(handoff_id, _TOKENS), _words(f"DestinationReserved({_TOKENS})")),
        Call.of_fact(
            reserved(handoff_id, _HUGE),
            _words(f"DestinationReserved({_HUGE}: the delay overflows)"),
            usable=False,
        ),
        *(_sampled(kind, handoff_id) for kind in _SAMPLED),
        Call.of_fact(
            HandoffFact.Failed(_OTHER_HANDOFF_ID), _words("Failed(another handoff)"), usable=False
        ),
    )
    outcomes = tuple(
        tuple(Call.of_outcome(HandoffActionId(action_id), outcome) for outcome in _OUTCOMES)
        for action_id in range(MAX_ACTIONS + 1)
    )
    return Environment(handoff_id, Call.start(), facts, outcomes)


_HAND_MADE = (HandoffFact.SourceHeld, HandoffFact.DestinationReserved)
"""The facts whose payloads are offered above, usable and each kind of unusable."""
_SAMPLED = tuple(kind for kind in FAMILIES[HandoffFact] if kind not in _HAND_MADE)
"""Every other kind of fact, in the union's order: offered once, with a sample payload."""


def _sampled(kind: type[HandoffFact], handoff_id: HandoffId) -> Call:
    fact = sample(kind, handoff_id=handoff_id)
    fields = attrs.fields(cast(Any, kind))
    payload = [f"{getattr(fact, f.name)}" for f in fields if f.name != "handoff_id"]
    if not payload:  # the handoff id alone
        return Call.of_fact(fact)
    return Call.of_fact(fact, _words(f"{kind.__name__}({', '.join(payload)})"))


def _words(payload: str) -> str:
    return f"on_fact({payload})"

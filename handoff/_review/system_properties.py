"""The system properties: what the system review judges, and the verdicts it gives them."""

from __future__ import annotations

import attrs

from handoff._review.properties import Family, Judged, Property, SpinCheck
from handoff._review.system_state import SystemKey, SystemStep

__all__ = [
    "MAX_CONFIGURATIONS",
    "SYSTEM_PROPERTIES",
    "SystemCounterexample",
    "SystemKey",
    "SystemProperty",
    "SystemVerdict",
]

MAX_CONFIGURATIONS = 500_000
"""A last guard: the shipped charts reach far fewer system configurations."""


SystemProperty = Property
"""A system property is a record of the review's one kind, in the safety family."""


def _p(
    key: SystemKey,
    title: str,
    words: str,
    unit: str,
    why: str,
    judged: Judged = Judged.EDGE,
    spin: SpinCheck = SpinCheck.ASSERTION,
) -> Property:
    return Property(key, title, words, unit, Family.SAFETY, why, judged, spin)


SYSTEM_PROPERTIES = (
    _p(
        SystemKey.SLOTS_AT_COMPLETION,
        "no slot held for a CANCELED handoff; after SUCCESS only the destination's",
        "At every completion, once every message in flight has been delivered, no worker "
        "holds a KV slot for a CANCELED handoff, and after a SUCCESS the destination holds "
        "the request's slot and the source none.",
        "quiet configurations after a completion",
        "a slot a worker still holds once the handoff has ended is KV cache lost or owned twice",
    ),
    _p(
        SystemKey.NO_SLOT_AFTER_FREED,
        "no slot held after the coordinator was told it is freed",
        "Once the coordinator has been told a worker freed the request's slot (a "
        "`ReleaseSource`, `CancelSource` or `CancelDestination` acknowledged `APPLIED` or "
        "`NOOP`), that worker never holds a slot for the request again.",
        "moves",
        "a slot the coordinator believes freed is one no cleanup will ever free again",
    ),
    _p(
        SystemKey.ONLY_ISSUED_WORK,
        "workers perform only what the coordinator issued",
        "Every action a worker performs was issued by the coordinator, is for that worker, "
        "and is performed once.",
        "actions performed",
        "work nobody issued takes a slot that no cleanup knows of",
    ),
    _p(
        SystemKey.DELIVERIES_COMPLETE,
        "delivering what is in flight completes the handoff",
        "From every reachable configuration, every run that suffers no further fault and "
        "delivers every message in flight (fairness) ends, once nothing is in flight, with "
        "the handoff complete.",
        "configurations",
        "a handoff that never completes keeps both owners' slots forever",
        Judged.GRAPH,
        SpinCheck.LTL,
    ),
    _p(
        SystemKey.TERMINAL_CANCELS,
        "a terminal fact leads to CANCELED",
        "After a terminal fact (`Failed`, `TimedOut`, `Canceled`) every run that delivers "
        "every message in flight ends with the handoff complete CANCELED, including after a "
        "success (the reopened cleanup).",
        "terminal facts reported",
        "a failed, timed-out or canceled request must free both owners, or its cache leaks",
        Judged.GRAPH,
        SpinCheck.LTL,
    ),
    _p(
        SystemKey.BOUND,
        "every run explored to its end",
        f"The exploration stays under its guard of {MAX_CONFIGURATIONS:,} configurations, "
        "so it is exhaustive.",
        "configurations explored",
        "an exploration cut short proves nothing of the runs it did not reach",
        Judged.GRAPH,
    ),
    _p(
        SystemKey.ERRORS,
        "only HandoffError escapes",
        "Every call returns actions or raises `HandoffError`; any other exception is a failure.",
        "calls",
        "a crash leaves the handoff's owners to no one",
    ),
)

_BY_KEY = {prop.key: prop for prop in SYSTEM_PROPERTIES}


@attrs.frozen
class SystemCounterexample:
    """A shortest system run that breaks a property."""

    steps: tuple[SystemStep, ...]
    finding: str


@attrs.frozen
class SystemVerdict:
    """One system property's result."""

    prop: SystemProperty
    checked: int
    violations: int
    counterexample: SystemCounterexample | None = None

    @property
    def holds(self) -> bool:
        """Whether the property holds."""
        return self.violations == 0

"""The review's properties, mirrored in Promela: monitors for safety, LTL for liveness.

The mirror is written from the properties' words (`handoff._system.properties.PROPERTIES`),
not derived from the Python monitors, so Spin gives a second opinion rather than an echo.
How each property is mirrored, or why it is not, is part of its record
(`Property.spin`, `Property.unmirrored`); `MIRRORED` and `NOT_MIRRORED` are read off it.
Adding a property to the mirror is marking its record and adding its monitor lines
(setting `<key>_broken`, in the model's `monitors.pml` section) or its LTL formula (in
`liveness.pml`).  The monitors judge against the
environment's watch of the run (`handoff._review.spin.watch`): the SPEC's answer to each
call and the actions due.
"""

from __future__ import annotations

from handoff._review.spin.text import filled, fixed
from handoff._review.spin.watch import watch
from handoff._system.properties import Key, SpinCheck, WorldKind, properties_of
from handoff._values.lifecycle import expected_normalized_handoff
from handoff._values.values import HandoffOrder

__all__ = [
    "MIRRORED",
    "NOT_MIRRORED",
    "liveness",
    "liveness_declarations",
    "make_call",
    "mirrored",
    "monitors",
    "not_mirrored",
]


def mirrored(world: WorldKind) -> dict[Key, SpinCheck]:
    """The properties Spin checks in `world`'s model, and how (read off each record)."""
    return {
        p.key: p.spin for p in properties_of(world) if p.spin is not None and isinstance(p.key, Key)
    }


def not_mirrored(world: WorldKind) -> dict[Key, str]:
    """The properties of `world` Spin does not check, and why."""
    return {
        p.key: p.unmirrored
        for p in properties_of(world)
        if p.spin is None and isinstance(p.key, Key)
    }


MIRRORED = mirrored(WorldKind.CHART)
"""The properties Spin checks for the chart alone, and how."""

NOT_MIRRORED = not_mirrored(WorldKind.CHART)
"""The properties of the chart alone Spin does not check, and why."""

_MONITORED = [key.value for key, check in MIRRORED.items() if check is SpinCheck.ASSERTION]
"""Every flag the monitors below set, each asserted at a call's end."""


def monitors(order: HandoffOrder, fallback_transfer_delay_ms: float = 0.0) -> str:
    """The environment's watch and the safety monitors over it."""
    expected = expected_normalized_handoff(order)
    return filled(
        "monitors",
        watch=watch(order, fallback_transfer_delay_ms),
        broken=", ".join(f"{key}_broken" for key in _MONITORED),
        nlife=len(expected),
        lifecycle=" && ".join(
            f"lifecycle[{k}] == L_{event.value}" for k, event in enumerate(expected)
        ),
    )


def make_call() -> str:
    """The inlines that make call `c` and let the coordinator take it, then judge the result."""
    return filled(
        "make_call",
        resets="; ".join(f"{key}_broken = 0" for key in _MONITORED),
        asserts=[f"assert(!{key}_broken);" for key in _MONITORED],
    )


def liveness_declarations() -> str:
    """The environment's modes for the liveness properties (entered only when `live`); the
    environment enters them as `handoff._review.spin.model` writes it."""
    return fixed("liveness_declarations")


def liveness() -> str:
    """The LTL formulas, with the fairness they assume."""
    return fixed("liveness")

"""The milestones a handoff records as it goes, and the order a successful one records them in."""

from __future__ import annotations

from handoff._values.validators import require_instance
from handoff._values.values import HandoffEnum, HandoffOrder

__all__ = ["NormalizedHandoffEvent", "expected_normalized_handoff"]


class NormalizedHandoffEvent(HandoffEnum):
    """A lifecycle milestone, recorded in the order it happened.

    A coordinator's `lifecycle` is a tuple of these; which call records which is contract §4,
    "The lifecycle". Each value is the member's name in CamelCase (`"SourceHeld"`).
    """

    SOURCE_HELD = "SourceHeld"
    DESTINATION_ACCEPTED = "DestinationAccepted"
    DESTINATION_RESERVED = "DestinationReserved"
    DESTINATION_ACTIVATED = "DestinationActivated"
    SOURCE_RELEASED = "SourceReleased"
    COMPLETED = "Completed"


_Event = NormalizedHandoffEvent

_EXPECTED_LIFECYCLE = {
    HandoffOrder.SOURCE_FIRST: (
        _Event.SOURCE_HELD,
        _Event.DESTINATION_ACCEPTED,
        _Event.DESTINATION_RESERVED,
        _Event.DESTINATION_ACTIVATED,
        _Event.SOURCE_RELEASED,
        _Event.COMPLETED,
    ),
    HandoffOrder.DESTINATION_FIRST: (
        _Event.DESTINATION_ACCEPTED,
        _Event.DESTINATION_RESERVED,
        _Event.SOURCE_HELD,
        _Event.DESTINATION_ACTIVATED,
        _Event.SOURCE_RELEASED,
        _Event.COMPLETED,
    ),
}


def expected_normalized_handoff(order: HandoffOrder) -> tuple[NormalizedHandoffEvent, ...]:
    """The lifecycle a successful handoff in `order` records, milestone by milestone.

    `expected_normalized_handoff(order=HandoffOrder.SOURCE_FIRST)` starts with `SOURCE_HELD`;
    a coordinator that completed with SUCCESS has exactly this `lifecycle`.
    """
    require_instance("order", order, HandoffOrder, "a HandoffOrder")
    return _EXPECTED_LIFECYCLE[order]

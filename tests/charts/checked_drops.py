"""Charts that drop a repeated fact yet check its payload: python-statemachine runs the
check and refuses a bad payload, a compiled table would drop the call unjudged.

Defining one is refused (`InvalidDefinition`), so each is built by a function; a test that
lets the definition through anyway shows the Table property catching the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handoff import DestinationFirstChart as DF
from handoff import HandoffChart, Refusal, refused
from handoff import SourceFirstChart as SF


def _itself(state: Any) -> Any:
    """`state.to.itself`, which python-statemachine leaves untyped."""
    return state.to.itself


# The charts are laid out as tables, one rule per line group; the formatter would fold them.
# fmt: off


def checked_repeated_hold() -> type[HandoffChart]:
    """SOURCE_FIRST that judges the timing of a repeated `SourceHeld`, then drops it."""

    class CheckedRepeatedHold(SF):
        source_held = (
            SF.prefill_running.to(
                SF.destination_reserving, validators="transfer_timing_is_valid",
                on="reserve_destination",
            )
            | refused(Refusal.PREFILL_NOT_SUBMITTED, SF.idle, SF.prefill_submitting)
            # The rule of this class: a check on a dropped repeat.
            | _itself(SF.destination_reserving)(
                internal=True, validators="transfer_timing_is_valid", on="ignore"
            )
        )

    return CheckedRepeatedHold


def checked_repeated_reservation() -> type[HandoffChart]:
    """DESTINATION_FIRST that judges the delay of a `SourceHeld` repeated mid-transfer, then
    drops it."""

    class CheckedRepeatedReservation(DF):
        source_held = (
            DF.prefill_running.to(
                DF.transfer_starting,
                validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
                on="start_transfer",
            )
            | refused(
                Refusal.PREFILL_NOT_SUBMITTED, DF.idle, DF.destination_reserving,
                DF.destination_accepted, DF.prefill_submitting,
            )
            # The rule of this class: checks on a dropped repeat.
            | _itself(DF.transfer_starting)(
                internal=True,
                validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
                on="ignore",
            )
        )

    return CheckedRepeatedReservation


CHECKED_DROPS: dict[Callable[[], type[HandoffChart]], str] = {
    checked_repeated_hold: "destination_reserving",
    checked_repeated_reservation: "transfer_starting",
}
"""Each chart of the class, by the function that defines it, and the state that drops."""

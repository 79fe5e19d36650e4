"""Charts written the way a statechart author would: renames, a final state, a changed rule.

The first three are SPEC-equal to `SourceFirstChart` and pass every property of the review;
`CancelsSourceOnly` changes one rule so that nothing enters `cancelling_both` any more, which
leaks the destination's reservation: the review fails S5 with a counterexample (and its
Coverage names `cancelling_both`, which rules still leave but nothing enters).
"""

from __future__ import annotations

from statemachine import State

from handoff import Refusal, SourceFirstChart, refused

S = SourceFirstChart
_BOTH = ["cancel_source", "cancel_destination"]


class TurningOn(SourceFirstChart):
    """`activating` is called `turning_on`: a new state replaces it in every rule naming it."""

    title = "TurningOn"
    turning_on = State("turning on")

    transfer_completed = S.transferring.to(turning_on, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        S.idle,
        S.prefill_submitting,
        S.prefill_running,
        S.destination_reserving,
        S.destination_accepted,
        S.transfer_starting,
    )
    destination_activated = turning_on.to(S.releasing, on="release_source")
    action_failed = S.cancelling_source.from_(
        S.prefill_submitting, S.prefill_running, on="cancel_source"
    ) | S.cancelling_both.from_(
        S.destination_reserving,
        S.destination_accepted,
        S.transfer_starting,
        S.transferring,
        turning_on,
        S.releasing,
        on=_BOTH,
    )
    terminated = (
        action_failed
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )


class CancellingOwners(SourceFirstChart):
    """The cleanup state `cancelling_both` is called `cancelling_owners`, in every rule."""

    title = "CancellingOwners"
    cancelling_owners = State("cancelling owners")

    source_released = (
        S.releasing.to(S.succeeded)
        | cancelling_owners.to(S.cancelling_destination)
        | S.cancelling_source.to(S.canceled)
    )
    action_failed = S.cancelling_source.from_(
        S.prefill_submitting, S.prefill_running, on="cancel_source"
    ) | cancelling_owners.from_(
        S.destination_reserving,
        S.destination_accepted,
        S.transfer_starting,
        S.transferring,
        S.activating,
        S.releasing,
        on=_BOTH,
    )
    terminated = (
        action_failed
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )
    source_canceled = cancelling_owners.to(S.cancelling_destination) | S.cancelling_source.to(
        S.canceled
    )
    destination_canceled = cancelling_owners.to(S.cancelling_source) | S.cancelling_destination.to(
        S.canceled
    )


class FinalCanceled(SourceFirstChart):
    """`canceled` marked the way a statechart author marks an end state."""

    title = "FinalCanceled"
    canceled = State("canceled", final=True, enter="complete_canceled")


class CancelsSourceOnly(SourceFirstChart):
    """Broken: a failure after the reservation cancels only the source, so nothing enters
    `cancelling_both` and the destination's reservation leaks."""

    title = "CancelsSourceOnly"

    action_failed = S.cancelling_source.from_(
        S.prefill_submitting,
        S.prefill_running,
        S.destination_reserving,
        S.destination_accepted,
        S.transfer_starting,
        S.transferring,
        S.activating,
        S.releasing,
        on="cancel_source",
    )
    terminated = (
        action_failed
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )


CORRECT = (TurningOn, CancellingOwners, FinalCanceled)
"""The natural charts that are SPEC-equal to `SourceFirstChart`."""

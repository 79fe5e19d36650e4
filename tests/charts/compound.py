"""Charts written with groups (python-statemachine's `State.Compound`), for every tool's tests.

`CompoundSourceFirst` is SOURCE_FIRST written from scratch, as docs/writing-a-chart.md
teaches: its groups nest, the rules between the states of the innermost group are written in
its body, the others in the chart's body, and each shared rule is written once on a group.
Its table is the shipped chart's, cell for cell.  `CancelDestinationOnly` derives from it
and changes one state inside a group in one line; `FlatCancelDestinationOnly` is the same
change on the flat shipped chart, which must list the group's other states instead.
"""

from __future__ import annotations

from statemachine import State

from charts.retrying_engine import RetryingEngine
from handoff import HandoffChart, HandoffOrder, Refusal, SourceFirstChart, ignored, refused

_BOTH = ["cancel_source", "cancel_destination"]


# Laid out as a table, like the shipped charts.
# fmt: off
class CompoundSourceFirst(HandoffChart):
    """SOURCE_FIRST with its groups declared: equal to the shipped chart in every cell."""

    order = HandoffOrder.SOURCE_FIRST

    idle = State("idle", initial=True)

    class prefill(State.Compound):
        prefill_submitting = State("prefill submitting", initial=True)
        prefill_running = State("prefill running")

    class both_engaged(State.Compound, name="both engaged"):
        class before_transfer(State.Compound, name="before the transfer"):
            destination_reserving = State("destination reserving", initial=True)
            destination_accepted = State("destination accepted")
            transfer_starting = State("transfer starting")
            ownership_accepted = destination_reserving.to(destination_accepted)
            destination_reserved = destination_accepted.to(
                transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
            ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, destination_reserving)

        transferring = State("transferring")
        activating = State("activating")
        releasing = State("releasing")

    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(prefill, on="submit_prefill")
    prefill_submitted = prefill.prefill_submitting.to(prefill.prefill_running)
    source_held = prefill.prefill_running.to(
        both_engaged, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill)
    destination_reserved = refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, prefill)
    transfer_scheduled = both_engaged.before_transfer.transfer_starting.to(
        both_engaged.transferring
    )
    transfer_completed = both_engaged.transferring.to(
        both_engaged.activating, on="activate_destination"
    ) | refused(Refusal.TRANSFER_NOT_SCHEDULED, idle, prefill, both_engaged.before_transfer)
    destination_activated = both_engaged.activating.to(both_engaged.releasing, on="release_source")
    source_released = (
        both_engaged.releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    action_failed = (
        cancelling_source.from_(prefill, on="cancel_source")
        | cancelling_both.from_(both_engaged, on=_BOTH)
    )
    terminated = (
        action_failed
        | idle.to(canceled)
        | succeeded.to(cancelling_destination, on="cancel_destination")
    )
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = (
        cancelling_both.to(cancelling_source) | cancelling_destination.to(canceled)
    )


C = CompoundSourceFirst


class CancelDestinationOnly(CompoundSourceFirst):
    """After a failed StartTransfer, cancel only the destination: one line on the group."""

    action_failed = (
        C.cancelling_source.from_(C.prefill, on="cancel_source")
        | C.cancelling_both.from_(C.both_engaged, on=_BOTH)
        | C.transfer_starting.to(C.cancelling_destination, on="cancel_destination")
    )


S = SourceFirstChart


class FlatCancelDestinationOnly(RetryingEngine):
    """The same change written on flat states, every other engaged state restated: the
    writer's chart of the drawing tests."""

    title = "CancelDestinationOnly"


class QuietReservation(CompoundSourceFirst):
    """A repeated-looking SourceHeld while both are engaged is dropped by the group, except
    in `destination_reserving`, whose own rule (a refusal) wins over the group's."""

    source_held = (
        C.prefill_running.to(
            C.both_engaged, validators="transfer_timing_is_valid", on="reserve_destination"
        )
        | refused(Refusal.PREFILL_NOT_SUBMITTED, C.idle, C.prefill, C.destination_reserving)
        | ignored(C.both_engaged)
    )


# fmt: on

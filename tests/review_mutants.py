"""Deliberately broken charts: each is a copy of a real chart with one rule broken.

The model review must reject every one of them.  They are written exactly like the real
charts in `handoff._chart` (python-statemachine shares `State` objects with subclasses, so
each is a full class, never a subclass of a real chart), and each marks its broken rule with
a `# Broken:` comment.  `MUTANTS` lists them with the property expected to catch each and the
shape of the shortest counterexample: the last call and the last action issued.
"""

from __future__ import annotations

import attrs
from statemachine import State

from handoff import HandoffOrder
from handoff._vocabulary import HandoffChart, Refusal, refused

SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST


class ReleaseBeforeActivation(HandoffChart):
    """SOURCE_FIRST that releases the source as soon as the transfer completed."""

    order = SF

    idle = State("idle", initial=True)
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(prefill_submitting, on="submit_prefill")
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill_submitting)
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
    )
    transfer_scheduled = transfer_starting.to(transferring)
    # Broken: the release goes out with the activation, before the destination applied it.
    transfer_completed = transferring.to(
        activating, on=["activate_destination", "release_source"]
    ) | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
        destination_accepted,
        transfer_starting,
    )
    destination_activated = activating.to(releasing)
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_source.from_(prefill_submitting, prefill_running, on="cancel_source")
        | cancelling_both.from_(
            destination_reserving,
            destination_accepted,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class NoDestinationCancel(HandoffChart):
    """SOURCE_FIRST whose cleanup forgets the destination once it was asked to reserve."""

    order = SF

    idle = State("idle", initial=True)
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(prefill_submitting, on="submit_prefill")
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill_submitting)
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
        destination_accepted,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        # Broken: ReserveDestination is out while the destination is reserving or accepted,
        # yet cleanup from there cancels the source alone.
        | cancelling_source.from_(
            prefill_submitting,
            prefill_running,
            destination_reserving,
            destination_accepted,
            on="cancel_source",
        )
        | cancelling_both.from_(
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class NoReopenAfterSuccess(HandoffChart):
    """DESTINATION_FIRST that ignores a terminal fact once the handoff succeeded."""

    order = DF

    idle = State("idle", initial=True)
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(destination_reserving, on="reserve_destination")
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        prefill_submitting, on="submit_prefill"
    ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, destination_reserving)
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        transfer_starting,
        validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
        on="start_transfer",
    ) | refused(
        Refusal.PREFILL_NOT_SUBMITTED,
        idle,
        destination_reserving,
        destination_accepted,
        prefill_submitting,
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        destination_reserving,
        destination_accepted,
        prefill_submitting,
        prefill_running,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_destination.from_(
            destination_reserving, destination_accepted, on="cancel_destination"
        )
        | cancelling_both.from_(
            prefill_submitting,
            prefill_running,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    # Broken: no reopen; `succeeded` drops a terminal fact although the destination decodes.
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class TransferBeforeReservation(HandoffChart):
    """SOURCE_FIRST that starts the transfer on a reservation the destination never accepted."""

    order = SF

    idle = State("idle", initial=True)
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(prefill_submitting, on="submit_prefill")
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill_submitting)
    ownership_accepted = destination_reserving.to(destination_accepted)
    # Broken: `destination_reserving` takes the reservation instead of refusing it.
    destination_reserved = (
        destination_accepted.to(
            transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
        )
        | destination_reserving.to(
            transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
        )
        | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, prefill_submitting, prefill_running)
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
        destination_accepted,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_source.from_(prefill_submitting, prefill_running, on="cancel_source")
        | cancelling_both.from_(
            destination_reserving,
            destination_accepted,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class CompleteTwice(HandoffChart):
    """DESTINATION_FIRST that completes again on every terminal fact after a cancellation."""

    order = DF

    idle = State("idle", initial=True)
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(destination_reserving, on="reserve_destination")
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        prefill_submitting, on="submit_prefill"
    ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, destination_reserving)
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        transfer_starting,
        validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
        on="start_transfer",
    ) | refused(
        Refusal.PREFILL_NOT_SUBMITTED,
        idle,
        destination_reserving,
        destination_accepted,
        prefill_submitting,
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        destination_reserving,
        destination_accepted,
        prefill_submitting,
        prefill_running,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_destination.from_(
            destination_reserving, destination_accepted, on="cancel_destination"
        )
        | cancelling_both.from_(
            prefill_submitting,
            prefill_running,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    # Broken: a terminal fact re-enters `canceled`, and entering it completes again.
    terminated |= canceled.to.itself()
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class ActivateBeforeTransferCompleted(HandoffChart):
    """DESTINATION_FIRST that activates the destination as soon as the transfer is scheduled."""

    order = DF

    idle = State("idle", initial=True)
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(destination_reserving, on="reserve_destination")
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        prefill_submitting, on="submit_prefill"
    ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, destination_reserving)
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        transfer_starting,
        validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
        on="start_transfer",
    ) | refused(
        Refusal.PREFILL_NOT_SUBMITTED,
        idle,
        destination_reserving,
        destination_accepted,
        prefill_submitting,
    )
    # Broken: the activation goes out when the transfer is scheduled, not when it completed.
    transfer_scheduled = transfer_starting.to(transferring, on="activate_destination")
    transfer_completed = transferring.to(activating) | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        destination_reserving,
        destination_accepted,
        prefill_submitting,
        prefill_running,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_destination.from_(
            destination_reserving, destination_accepted, on="cancel_destination"
        )
        | cancelling_both.from_(
            prefill_submitting,
            prefill_running,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class NoSourceCancelMidTransfer(HandoffChart):
    """SOURCE_FIRST that, failing mid-transfer, cancels the destination but not the source."""

    order = SF

    idle = State("idle", initial=True)
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(prefill_submitting, on="submit_prefill")
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill_submitting)
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
        destination_accepted,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_source.from_(prefill_submitting, prefill_running, on="cancel_source")
        | cancelling_both.from_(
            destination_reserving,
            destination_accepted,
            transfer_starting,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
        # Broken: mid-transfer only the destination is canceled; the source keeps its KV.
        | transferring.to(cancelling_destination, on="cancel_destination")
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class SourceHeldBeforeSubmission(HandoffChart):
    """DESTINATION_FIRST that takes SourceHeld before the prefill submission was acknowledged."""

    order = DF

    idle = State("idle", initial=True)
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(destination_reserving, on="reserve_destination")
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        prefill_submitting, on="submit_prefill"
    ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, destination_reserving)
    prefill_submitted = prefill_submitting.to(prefill_running)
    # Broken: `prefill_submitting` takes SourceHeld instead of refusing it.
    source_held = (
        prefill_running.to(
            transfer_starting,
            validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
            on="start_transfer",
        )
        | prefill_submitting.to(
            transfer_starting,
            validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
            on="start_transfer",
        )
        | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, destination_reserving, destination_accepted)
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        destination_reserving,
        destination_accepted,
        prefill_submitting,
        prefill_running,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_destination.from_(
            destination_reserving, destination_accepted, on="cancel_destination"
        )
        | cancelling_both.from_(
            prefill_submitting,
            prefill_running,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class LostSourceCancel(HandoffChart):
    """SOURCE_FIRST whose cleanup forgets a source cancel acknowledged before the destination's."""

    order = SF

    idle = State("idle", initial=True)
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(prefill_submitting, on="submit_prefill")
    prefill_submitted = prefill_submitting.to(prefill_running)
    source_held = prefill_running.to(
        destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill_submitting)
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
        destination_accepted,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_source.from_(prefill_submitting, prefill_running, on="cancel_source")
        | cancelling_both.from_(
            destination_reserving,
            destination_accepted,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    # Broken: `cancelling_both` journals the source cancel without moving, so once the
    # destination cancel is acknowledged too, the chart waits for a source cancel it already got.
    source_canceled = cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


class DeadTransition(HandoffChart):
    """SOURCE_FIRST with a transition no run can take: idle never awaits an acknowledgement."""

    order = SF

    idle = State("idle", initial=True)
    prefill_submitting = State("prefill submitting")
    prefill_running = State("prefill running")
    destination_reserving = State("destination reserving")
    destination_accepted = State("destination accepted")
    transfer_starting = State("transfer starting")
    transferring = State("transferring")
    activating = State("activating")
    releasing = State("releasing")
    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    start = idle.to(prefill_submitting, on="submit_prefill")
    # Broken: nothing was submitted in `idle`, so this transition is dead.
    prefill_submitted = prefill_submitting.to(prefill_running) | idle.to(prefill_running)
    source_held = prefill_running.to(
        destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill_submitting)
    ownership_accepted = destination_reserving.to(destination_accepted)
    destination_reserved = destination_accepted.to(
        transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
    )
    transfer_scheduled = transfer_starting.to(transferring)
    transfer_completed = transferring.to(activating, on="activate_destination") | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        idle,
        prefill_submitting,
        prefill_running,
        destination_reserving,
        destination_accepted,
        transfer_starting,
    )
    destination_activated = activating.to(releasing, on="release_source")
    source_released = (
        releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    terminated = action_failed = (
        idle.to(canceled)
        | cancelling_source.from_(prefill_submitting, prefill_running, on="cancel_source")
        | cancelling_both.from_(
            destination_reserving,
            destination_accepted,
            transfer_starting,
            transferring,
            activating,
            releasing,
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated |= succeeded.to(cancelling_destination, on="cancel_destination")
    source_canceled = cancelling_both.to(cancelling_destination) | cancelling_source.to(canceled)
    destination_canceled = cancelling_both.to(cancelling_source) | cancelling_destination.to(
        canceled
    )


@attrs.frozen
class Mutant:
    """A broken chart, the property that must catch it, and its counterexample's shape."""

    chart: type[HandoffChart]
    caught_by: str
    says: str
    """A phrase the finding (or, without a counterexample, a note) must contain."""
    last_call: str | None = None
    """The label of the counterexample's last call (None: no counterexample, e.g. coverage)."""
    last_issued: str | None = None
    """The kind of the last action that call issued (None: it issued nothing)."""


MUTANTS = (
    Mutant(
        ReleaseBeforeActivation,
        "S2",
        "ReleaseSource issued before ActivateDestination was acknowledged APPLIED",
        "on_fact(TransferCompleted)",
        "ReleaseSource",
    ),
    Mutant(
        NoDestinationCancel,
        "S5",
        "ReserveDestination #1 was never canceled (slot leaked)",
        "on_action_outcome(2, Applied)",
        "Complete",
    ),
    Mutant(
        NoReopenAfterSuccess,
        "L2",
        "no acknowledgements lead to a CANCELED completion",
        "on_fact(Failed)",
    ),
    Mutant(
        TransferBeforeReservation,
        "S3",
        "before the destination was reserved",
        "on_fact(DestinationReserved(1))",
        "StartTransfer",
    ),
    Mutant(
        CompleteTwice,
        "S4",
        "Complete issued after the handoff completed",
        "on_fact(Failed)",
        "Complete",
    ),
    Mutant(
        ActivateBeforeTransferCompleted,
        "S1",
        "before a scheduled transfer was reported done",
        "on_action_outcome(2, Scheduled)",
        "ActivateDestination",
    ),
    Mutant(
        NoSourceCancelMidTransfer,
        "S5",
        "SubmitPrefill #0 was never released or canceled (KV leaked)",
        "on_action_outcome(3, Applied)",
        "Complete",
    ),
    Mutant(
        SourceHeldBeforeSubmission,
        "S3",
        "before the source was held",
        "on_fact(SourceHeld(valid timing))",
        "StartTransfer",
    ),
    Mutant(
        LostSourceCancel,
        "L1",
        "no cooperative continuation reaches a completion",
        "on_action_outcome(2, Applied)",
    ),
    Mutant(DeadTransition, "Coverage", "dead: idle --prefill_submitted--> prefill_running"),
)

"""The handoff ordering rules: one statechart per `HandoffOrder`.

Each chart walks a request's KV cache from `idle` to `succeeded` along named phases, and
from any phase into cleanup, which cancels exactly the owners that were engaged.  States
say *where* the handoff is; which issued actions still await an acknowledgement is the
adapter's journal, not chart state.

Reading guide (python-statemachine syntax): `event = a.to(b, validators=…, on=…)` takes
`event` from `a` to `b`, running the named checks first and issuing the named actions;
`refused(REFUSAL, *states)` makes those states reject the event with the spec's phrase.
Anything a chart does not mention gets its event kind's default (see `EventKind`): a
duplicate fact is dropped, a fitting acknowledgement is journaled without moving, a
journal error is refused, and a complete handoff drops everything but a reopening fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from statemachine import State

from handoff._chart_base import HandoffChart, refused
from handoff._public import exported
from handoff._values import HandoffOrder
from handoff._vocabulary import Refusal

__all__ = ["CHARTS", "DestinationFirstChart", "SourceFirstChart"]


# The charts are laid out as tables, one rule per line group; the formatter would fold them.
# fmt: off
class SourceFirstChart(HandoffChart):
    """SOURCE_FIRST (vLLM, TRT-LLM): run prefill on the source, then reserve the destination.

    The shipped chart of `HandoffOrder.SOURCE_FIRST`; subclass it to change a rule
    (`HandoffCoordinatorCore(handoff_id=…, chart=MyChart)`, docs/changing-a-rule.md).
    """

    order = HandoffOrder.SOURCE_FIRST
    title = "SourceFirst"

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

    # The head: the source first.
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

    # The tail, the same in both orders: move the KV, activate the destination, release.
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

    # Cleanup: a failed action or a terminal fact cancels every owner engaged so far.
    action_failed = (
        cancelling_source.from_(prefill_submitting, prefill_running, on="cancel_source")
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
    # Before start nothing is engaged: a terminal fact completes the handoff at once.
    # Reopen: after success the destination still owns the request; the source is released.
    terminated = (
        action_failed
        | idle.to(canceled)
        | succeeded.to(cancelling_destination, on="cancel_destination")
    )
    source_canceled = (
        cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    destination_canceled = (
        cancelling_both.to(cancelling_source)
        | cancelling_destination.to(canceled)
    )


class DestinationFirstChart(HandoffChart):
    """DESTINATION_FIRST (SGLang): reserve the destination, then run prefill on the source.

    The shipped chart of `HandoffOrder.DESTINATION_FIRST`; subclass it to change a rule
    (`HandoffCoordinatorCore(handoff_id=…, chart=MyChart)`, docs/changing-a-rule.md).
    """

    order = HandoffOrder.DESTINATION_FIRST
    title = "DestinationFirst"

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

    # The head: the destination first.
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

    # The tail, the same in both orders: move the KV, activate the destination, release.
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

    # Cleanup: a failed action or a terminal fact cancels every owner engaged so far.
    action_failed = (
        cancelling_destination.from_(
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
    # Before start nothing is engaged: a terminal fact completes the handoff at once.
    # Reopen: after success the destination still owns the request; the source is released.
    terminated = (
        action_failed
        | idle.to(canceled)
        | succeeded.to(cancelling_destination, on="cancel_destination")
    )
    source_canceled = (
        cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )
    destination_canceled = (
        cancelling_both.to(cancelling_source)
        | cancelling_destination.to(canceled)
    )


# fmt: on


CHARTS: Mapping[HandoffOrder, type[HandoffChart]] = MappingProxyType(
    {chart.order: chart for chart in (SourceFirstChart, DestinationFirstChart)}
)
"""The chart of each order."""

# Exported from `handoff`: tracebacks and reprs name the public module.
exported(SourceFirstChart, DestinationFirstChart)

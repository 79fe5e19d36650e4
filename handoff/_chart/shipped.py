"""The handoff ordering rules: one statechart per `HandoffOrder`.

Each chart walks a request's KV cache from `idle` to `succeeded` along named phases, and
from any phase into cleanup, which cancels exactly the owners that were engaged.  States
say *where* the handoff is; which issued actions still await an acknowledgement is the
adapter's journal, not chart state.

Reading guide (python-statemachine syntax): `event = a.to(b, validators=…, on=…)` takes
`event` from `a` to `b`, running the named checks first and issuing the named actions;
`refused(REFUSAL, *states)` makes those states reject the event with the spec's phrase.
`class prefill(State.Compound)` is a group: a rule on it applies to each state inside that
has no rule of its own for the event (the inner rule wins), entering it enters its initial
state, and a rule written in its body speaks of the states inside; the tables are flat.
Anything a chart does not mention gets its event kind's default (see `EventKind`): a
duplicate fact is dropped, a fitting acknowledgement is journaled without moving, a
journal error is refused, and a complete handoff drops everything but a reopening fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from statemachine import State

from handoff._chart.base import HandoffChart, refused
from handoff._chart.vocabulary import Refusal
from handoff._public import exported
from handoff._values.values import HandoffOrder

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

    class prefill(State.Compound, name="prefill"):
        """The head: only the source is engaged."""
        prefill_submitting = State("prefill submitting", initial=True)
        prefill_running = State("prefill running")
        prefill_submitted = prefill_submitting.to(prefill_running)

    class both_engaged(State.Compound, name="both engaged"):
        """The tail, the same in both orders: move the KV, activate the destination."""
        destination_reserving = State("destination reserving", initial=True)
        destination_accepted = State("destination accepted")
        transfer_starting = State("transfer starting")
        transferring = State("transferring")
        activating = State("activating")
        releasing = State("releasing")
        ownership_accepted = destination_reserving.to(destination_accepted)
        destination_reserved = destination_accepted.to(
            transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
        ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, destination_reserving)
        transfer_scheduled = transfer_starting.to(transferring)
        transfer_completed = transferring.to(activating, on="activate_destination") | refused(
            Refusal.TRANSFER_NOT_SCHEDULED,
            destination_reserving,
            destination_accepted,
            transfer_starting,
        )
        destination_activated = activating.to(releasing, on="release_source")

    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    # Across the groups: start, then reserve the destination once the source holds the KV.
    start = idle.to(prefill, on="submit_prefill")
    source_held = prefill.prefill_running.to(
        both_engaged, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, idle, prefill)
    destination_reserved = refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, prefill)
    transfer_completed = refused(Refusal.TRANSFER_NOT_SCHEDULED, idle, prefill)
    source_released = (
        both_engaged.releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )

    # Cleanup: a failed action or a terminal fact cancels every owner engaged so far.
    action_failed = (
        cancelling_source.from_(prefill, on="cancel_source")
        | cancelling_both.from_(both_engaged, on=["cancel_source", "cancel_destination"])
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

    class reservation(State.Compound, name="reservation"):
        """The head: only the destination is engaged."""
        destination_reserving = State("destination reserving", initial=True)
        destination_accepted = State("destination accepted")
        ownership_accepted = destination_reserving.to(destination_accepted)

    class both_engaged(State.Compound, name="both engaged"):
        """Prefill, then the tail, the same in both orders: move the KV, activate."""
        prefill_submitting = State("prefill submitting", initial=True)
        prefill_running = State("prefill running")
        transfer_starting = State("transfer starting")
        transferring = State("transferring")
        activating = State("activating")
        releasing = State("releasing")
        prefill_submitted = prefill_submitting.to(prefill_running)
        source_held = prefill_running.to(
            transfer_starting,
            validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
            on="start_transfer",
        ) | refused(Refusal.PREFILL_NOT_SUBMITTED, prefill_submitting)
        transfer_scheduled = transfer_starting.to(transferring)
        transfer_completed = transferring.to(activating, on="activate_destination") | refused(
            Refusal.TRANSFER_NOT_SCHEDULED, prefill_submitting, prefill_running, transfer_starting
        )
        destination_activated = activating.to(releasing, on="release_source")

    succeeded = State("succeeded", enter="complete_success")
    cancelling_source = State("cancelling source")
    cancelling_destination = State("cancelling destination")
    cancelling_both = State("cancelling both")
    canceled = State("canceled", enter="complete_canceled")

    # Across the groups: start, then run prefill once the destination is reserved.
    start = idle.to(reservation, on="reserve_destination")
    destination_reserved = reservation.destination_accepted.to(
        both_engaged, on="submit_prefill"
    ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, idle, reservation)
    source_held = refused(Refusal.PREFILL_NOT_SUBMITTED, idle, reservation)
    transfer_completed = refused(Refusal.TRANSFER_NOT_SCHEDULED, idle, reservation)
    source_released = (
        both_engaged.releasing.to(succeeded)
        | cancelling_both.to(cancelling_destination)
        | cancelling_source.to(canceled)
    )

    # Cleanup: a failed action or a terminal fact cancels every owner engaged so far.
    action_failed = (
        cancelling_destination.from_(reservation, on="cancel_destination")
        | cancelling_both.from_(both_engaged, on=["cancel_source", "cancel_destination"])
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

"""Deliberately broken charts: each is a real chart with one rule broken.

The model review must reject every one of them.  Each is derived from a real chart in
`handoff._chart` by `chart_mutation.mutant`, which copies every rule of the chart but the
events it is given: those are declared anew, as the real charts declare them, so only they
can differ from the chart, and a `# Broken:` comment marks the broken rule.  `MUTANTS`
lists them with the property expected to catch each and the shape of the shortest
counterexample: the last call and the last action issued.
"""

from __future__ import annotations

from types import SimpleNamespace

import attrs
from chart_mutation import Rule, mutant
from statemachine.transition_list import TransitionList

from handoff._chart import DestinationFirstChart, SourceFirstChart
from handoff._chart_base import HandoffChart, refused
from handoff._vocabulary import Refusal


def _terminated(cleanup: Rule) -> Rule:
    """`terminated` built from a chart's cleanup (`action_failed`) as the real charts build it.

    Before start a terminal fact completes at once; after success it reopens the handoff to
    cancel the destination.
    """
    return lambda s: (
        cleanup(s)
        | s.idle.to(s.canceled)
        | s.succeeded.to(s.cancelling_destination, on="cancel_destination")
    )


def _destination_first_cleanup(s: SimpleNamespace) -> TransitionList:
    """DESTINATION_FIRST's `action_failed`, unbroken."""
    return s.cancelling_destination.from_(
        s.destination_reserving, s.destination_accepted, on="cancel_destination"
    ) | s.cancelling_both.from_(
        s.prefill_submitting,
        s.prefill_running,
        s.transfer_starting,
        s.transferring,
        s.activating,
        s.releasing,
        on=["cancel_source", "cancel_destination"],
    )


ReleaseBeforeActivation = mutant(
    SourceFirstChart,
    "ReleaseBeforeActivation",
    "SOURCE_FIRST that releases the source as soon as the transfer completed.",
    # Broken: the release goes out with the activation, before the destination applied it.
    transfer_completed=lambda s: (
        s.transferring.to(s.activating, on=["activate_destination", "release_source"])
        | refused(
            Refusal.TRANSFER_NOT_SCHEDULED,
            s.idle,
            s.prefill_submitting,
            s.prefill_running,
            s.destination_reserving,
            s.destination_accepted,
            s.transfer_starting,
        )
    ),
    destination_activated=lambda s: s.activating.to(s.releasing),
)


def _cleanup_forgetting_the_reservation(s: SimpleNamespace) -> TransitionList:
    # Broken: ReserveDestination is out while the destination is reserving or accepted,
    # yet cleanup from there cancels the source alone.
    return s.cancelling_source.from_(
        s.prefill_submitting,
        s.prefill_running,
        s.destination_reserving,
        s.destination_accepted,
        on="cancel_source",
    ) | s.cancelling_both.from_(
        s.transfer_starting,
        s.transferring,
        s.activating,
        s.releasing,
        on=["cancel_source", "cancel_destination"],
    )


NoDestinationCancel = mutant(
    SourceFirstChart,
    "NoDestinationCancel",
    "SOURCE_FIRST whose cleanup forgets the destination once it was asked to reserve.",
    action_failed=_cleanup_forgetting_the_reservation,
    terminated=_terminated(_cleanup_forgetting_the_reservation),
)

NoReopenAfterSuccess = mutant(
    DestinationFirstChart,
    "NoReopenAfterSuccess",
    "DESTINATION_FIRST that ignores a terminal fact once the handoff succeeded.",
    # Broken: no reopen; `succeeded` drops a terminal fact although the destination decodes.
    terminated=lambda s: _destination_first_cleanup(s) | s.idle.to(s.canceled),
)

TransferBeforeReservation = mutant(
    SourceFirstChart,
    "TransferBeforeReservation",
    "SOURCE_FIRST that starts the transfer on a reservation the destination never accepted.",
    # Broken: `destination_reserving` takes the reservation instead of refusing it.
    destination_reserved=lambda s: (
        s.transfer_starting.from_(
            s.destination_accepted,
            s.destination_reserving,
            validators="transfer_delay_is_valid",
            on="start_transfer",
        )
        | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, s.idle, s.prefill_submitting, s.prefill_running)
    ),
)

CompleteTwice = mutant(
    DestinationFirstChart,
    "CompleteTwice",
    "DESTINATION_FIRST that completes again on every terminal fact after a cancellation.",
    # Broken: a terminal fact re-enters `canceled`, and entering it completes again.
    terminated=lambda s: _terminated(_destination_first_cleanup)(s) | s.canceled.to.itself(),
)

ActivateBeforeTransferCompleted = mutant(
    DestinationFirstChart,
    "ActivateBeforeTransferCompleted",
    "DESTINATION_FIRST that activates the destination as soon as the transfer is scheduled.",
    # Broken: the activation goes out when the transfer is scheduled, not when it completed.
    transfer_scheduled=lambda s: s.transfer_starting.to(s.transferring, on="activate_destination"),
    transfer_completed=lambda s: (
        s.transferring.to(s.activating)
        | refused(
            Refusal.TRANSFER_NOT_SCHEDULED,
            s.idle,
            s.destination_reserving,
            s.destination_accepted,
            s.prefill_submitting,
            s.prefill_running,
            s.transfer_starting,
        )
    ),
)


def _cleanup_keeping_the_source_mid_transfer(s: SimpleNamespace) -> TransitionList:
    return (
        s.cancelling_source.from_(s.prefill_submitting, s.prefill_running, on="cancel_source")
        | s.cancelling_both.from_(
            s.destination_reserving,
            s.destination_accepted,
            s.transfer_starting,
            s.activating,
            s.releasing,
            on=["cancel_source", "cancel_destination"],
        )
        # Broken: mid-transfer only the destination is canceled; the source keeps its KV.
        | s.transferring.to(s.cancelling_destination, on="cancel_destination")
    )


NoSourceCancelMidTransfer = mutant(
    SourceFirstChart,
    "NoSourceCancelMidTransfer",
    "SOURCE_FIRST that, failing mid-transfer, cancels the destination but not the source.",
    action_failed=_cleanup_keeping_the_source_mid_transfer,
    terminated=_terminated(_cleanup_keeping_the_source_mid_transfer),
)

SourceHeldBeforeSubmission = mutant(
    DestinationFirstChart,
    "SourceHeldBeforeSubmission",
    "DESTINATION_FIRST that takes SourceHeld before the prefill submission was acknowledged.",
    # Broken: `prefill_submitting` takes SourceHeld instead of refusing it.
    source_held=lambda s: (
        s.transfer_starting.from_(
            s.prefill_running,
            s.prefill_submitting,
            validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
            on="start_transfer",
        )
        | refused(
            Refusal.PREFILL_NOT_SUBMITTED, s.idle, s.destination_reserving, s.destination_accepted
        )
    ),
)

LostSourceCancel = mutant(
    SourceFirstChart,
    "LostSourceCancel",
    "SOURCE_FIRST whose cleanup forgets a source cancel acknowledged before the destination's.",
    # Broken: `cancelling_both` journals the source cancel without moving, so once the
    # destination cancel is acknowledged too, the chart waits for a source cancel it already got.
    source_canceled=lambda s: s.cancelling_source.to(s.canceled),
)

DeadTransition = mutant(
    SourceFirstChart,
    "DeadTransition",
    "SOURCE_FIRST with a transition no run can take: idle never awaits an acknowledgement.",
    # Broken: nothing was submitted in `idle`, so this transition is dead.
    prefill_submitted=lambda s: (
        s.prefill_submitting.to(s.prefill_running) | s.idle.to(s.prefill_running)
    ),
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

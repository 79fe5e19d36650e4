"""Deliberately broken charts, written as the real charts are, each with one rule broken.

Each is derived from a real chart in `handoff._chart` by `chart_mutation.mutant`, which copies
every rule but the events it is given: those are declared anew, so only they can differ, and a
`# Broken:` comment marks the broken rule.  `review_mutants` says which property catches each.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import SimpleNamespace

from chart_mutation import Rule, mutant
from statemachine.transition_list import TransitionList

from handoff._chart import DestinationFirstChart as DF
from handoff._chart import SourceFirstChart as SF
from handoff._chart_base import refused
from handoff._vocabulary import Refusal

_CS, _CD = "cancel_source", "cancel_destination"
_BOTH = [_CS, _CD]


def _terminated(cleanup: Rule) -> Rule:
    """`terminated` built from a chart's cleanup (`action_failed`) as the real charts build it."""
    return lambda s: (
        cleanup(s)
        | s.idle.to(s.canceled)
        | s.succeeded.to(s.cancelling_destination, on="cancel_destination")
    )


SF_ALONE = ("prefill_submitting", "prefill_running")
"""Where SOURCE_FIRST's cleanup cancels the source alone: no destination asked yet."""
DF_ALONE = ("destination_reserving", "destination_accepted")
"""Where DESTINATION_FIRST's cleanup cancels the destination alone: no prefill asked yet."""
TAIL = ("transfer_starting", "transferring", "activating", "releasing")
SF_BOTH = (*DF_ALONE, *TAIL)
"""Where SOURCE_FIRST's cleanup cancels both owners."""
DF_BOTH = (*SF_ALONE, *TAIL)
"""Where DESTINATION_FIRST's cleanup cancels both owners."""


def cleanup(
    s: SimpleNamespace,
    alone: str,
    from_alone: Iterable[str],
    from_both: Iterable[str],
    *,
    cancels: object = _BOTH,
) -> TransitionList:
    """An `action_failed` written as the real charts write it: the states `from_alone` cancel
    the one owner `alone` (`"source"` or `"destination"`), the states `from_both` cancel both
    (issuing `cancels`, in that order).

    A mutant names the states it moves, so the break reads off its arguments.
    """
    return getattr(s, f"cancelling_{alone}").from_(
        *(getattr(s, name) for name in from_alone), on=f"cancel_{alone}"
    ) | s.cancelling_both.from_(*(getattr(s, name) for name in from_both), on=cancels)


def without(states: Iterable[str], *left_out: str) -> tuple[str, ...]:
    """`states` but `left_out`."""
    return tuple(state for state in states if state not in left_out)


def _sf_cleanup(s: SimpleNamespace, *, cancels: object = _BOTH) -> TransitionList:
    """SOURCE_FIRST's `action_failed`, with the cancels of `cancelling_both` as given."""
    return cleanup(s, "source", SF_ALONE, SF_BOTH, cancels=cancels)


def _df_cleanup(s: SimpleNamespace) -> TransitionList:
    """DESTINATION_FIRST's `action_failed`, unbroken."""
    return cleanup(s, "destination", DF_ALONE, DF_BOTH)


def _sf_source_held(s: SimpleNamespace) -> TransitionList:
    return s.prefill_running.to(
        s.destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, s.idle, s.prefill_submitting)


def _sf_reserved(s: SimpleNamespace) -> TransitionList:
    return s.destination_accepted.to(
        s.transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED,
        s.idle,
        s.prefill_submitting,
        s.prefill_running,
        s.destination_reserving,
    )


def _sf_too_early_for_transfer(s: SimpleNamespace) -> TransitionList:
    return refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        s.idle,
        s.prefill_submitting,
        s.prefill_running,
        s.destination_reserving,
        s.destination_accepted,
    )


def _df_too_early_for_transfer(s: SimpleNamespace) -> TransitionList:
    return refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        s.idle,
        s.destination_reserving,
        s.destination_accepted,
        s.prefill_submitting,
        s.prefill_running,
    )


def _activate(s: SimpleNamespace) -> TransitionList:
    return s.transferring.to(s.activating, on="activate_destination")


# -- S1, S2, S3: forward actions too early ---------------------------------------------------

ReleaseBeforeActivation = mutant(
    SF,
    "ReleaseBeforeActivation",
    "SOURCE_FIRST that releases the source as soon as the transfer completed.",
    # Broken: the release goes out with the activation, before the destination applied it.
    transfer_completed=lambda s: (
        s.transferring.to(s.activating, on=["activate_destination", "release_source"])
        | _sf_too_early_for_transfer(s)
        | refused(Refusal.TRANSFER_NOT_SCHEDULED, s.transfer_starting)
    ),
    destination_activated=lambda s: s.activating.to(s.releasing),
)
ReleaseOnSchedule = mutant(
    DF,
    "ReleaseOnSchedule",
    "DESTINATION_FIRST that releases the source when the transfer is scheduled.",
    # Broken: the release goes out long before any activation.
    transfer_scheduled=lambda s: s.transfer_starting.to(s.transferring, on="release_source"),
)
ActivateBeforeTransferCompleted = mutant(
    DF,
    "ActivateBeforeTransferCompleted",
    "DESTINATION_FIRST that activates the destination as soon as the transfer is scheduled.",
    # Broken: the activation goes out when the transfer is scheduled, not when it completed.
    transfer_scheduled=lambda s: s.transfer_starting.to(s.transferring, on="activate_destination"),
    transfer_completed=lambda s: (
        s.transferring.to(s.activating)
        | _df_too_early_for_transfer(s)
        | refused(Refusal.TRANSFER_NOT_SCHEDULED, s.transfer_starting)
    ),
)
ActivateOnUnscheduledTransfer = mutant(
    SF,
    "ActivateOnUnscheduledTransfer",
    "SOURCE_FIRST that takes TransferCompleted before the transfer was scheduled.",
    # Broken: `transfer_starting` activates instead of refusing.
    transfer_completed=lambda s: (
        _activate(s)
        | s.transfer_starting.to(s.activating, on="activate_destination")
        | _sf_too_early_for_transfer(s)
    ),
)
TransferBeforeReservation = mutant(
    SF,
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
SourceHeldBeforeSubmission = mutant(
    DF,
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

# -- S4, S5: completions ---------------------------------------------------------------------

CompleteTwice = mutant(
    DF,
    "CompleteTwice",
    "DESTINATION_FIRST that completes again on every terminal fact after a cancellation.",
    # Broken: a terminal fact re-enters `canceled`, and entering it completes again.
    terminated=lambda s: _terminated(_df_cleanup)(s) | s.canceled.to.itself(),
)
CanceledReopens = mutant(
    SF,
    "CanceledReopens",
    "SOURCE_FIRST that reopens a CANCELED handoff as if it had succeeded.",
    # Broken: only a success may be reopened.
    terminated=lambda s: (
        _terminated(_sf_cleanup)(s)
        | s.canceled.to(s.cancelling_destination, on="cancel_destination")
    ),
)


def _forgetting_the_reservation(s: SimpleNamespace) -> TransitionList:
    # Broken: ReserveDestination is out while the destination is reserving or accepted,
    # yet cleanup from there cancels the source alone.
    return cleanup(s, "source", (*SF_ALONE, *DF_ALONE), TAIL)


NoDestinationCancel = mutant(
    SF,
    "NoDestinationCancel",
    "SOURCE_FIRST whose cleanup forgets the destination once it was asked to reserve.",
    action_failed=_forgetting_the_reservation,
    terminated=_terminated(_forgetting_the_reservation),
)


def _keeping_the_source_mid_transfer(s: SimpleNamespace) -> TransitionList:
    return cleanup(s, "source", SF_ALONE, without(SF_BOTH, "transferring")) | (
        # Broken: mid-transfer only the destination is canceled; the source keeps its KV.
        s.transferring.to(s.cancelling_destination, on="cancel_destination")
    )


NoSourceCancelMidTransfer = mutant(
    SF,
    "NoSourceCancelMidTransfer",
    "SOURCE_FIRST that, failing mid-transfer, cancels the destination but not the source.",
    action_failed=_keeping_the_source_mid_transfer,
    terminated=_terminated(_keeping_the_source_mid_transfer),
)
SuccessWithoutRelease = mutant(
    DF,
    "SuccessWithoutRelease",
    "DESTINATION_FIRST that succeeds once the destination is activated, never releasing.",
    # Broken: the handoff succeeds while the source still holds the KV cache.
    destination_activated=lambda s: s.activating.to(s.releasing, on="complete_success"),
)
EarlySuccess = mutant(
    SF,
    "EarlySuccess",
    "SOURCE_FIRST that succeeds as soon as the destination is activated.",
    # Broken: the lifecycle of this success lacks SourceReleased.
    destination_activated=lambda s: s.activating.to(s.releasing, on="complete_success"),
)

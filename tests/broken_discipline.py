"""More broken charts: refusals, payloads, promptness, cleanup, liveness and runaway runs.

Built like those of `broken_charts`; the controls at the end change only cells no run reaches.
"""

from __future__ import annotations

from types import SimpleNamespace

from broken_charts import (
    DF_ALONE,
    DF_BOTH,
    SF_ALONE,
    SF_BOTH,
    _activate,
    _df_cleanup,
    _sf_cleanup,
    _sf_reserved,
    _terminated,
    cleanup,
    without,
)
from broken_charts import _sf_source_held as _held
from broken_charts import _sf_too_early_for_transfer as _too_early
from chart_mutation import mutant
from statemachine.transition_list import TransitionList

from handoff._chart import DestinationFirstChart as DF
from handoff._chart import SourceFirstChart as SF
from handoff._chart_base import acknowledged, ignored, refused
from handoff._vocabulary import Refusal

# -- S6 and Bound: dropped repeats that change the coordinator -------------------------------

ReservationRecordedAgain = mutant(
    DF,
    "ReservationRecordedAgain",
    "DESTINATION_FIRST that takes a repeated DestinationReserved while the prefill is submitted.",
    # Broken: the repeat is taken, not dropped: the tokens and the lifecycle are written again.
    destination_reserved=lambda s: (
        s.destination_accepted.to(s.prefill_submitting, on="submit_prefill")
        | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, s.idle, s.destination_reserving)
        | s.prefill_submitting.to.itself(internal=True)
    ),
)
ReservationRecordedAgainMidTransfer = mutant(
    SF,
    "ReservationRecordedAgainMidTransfer",
    "SOURCE_FIRST that takes a repeated DestinationReserved while the transfer starts.",
    # Broken: the repeat is taken, not dropped.
    destination_reserved=lambda s: _sf_reserved(s) | s.transfer_starting.to.itself(internal=True),
)
HeldRecordedAgain = mutant(
    SF,
    "HeldRecordedAgain",
    "SOURCE_FIRST that records every repeated SourceHeld: its runs grow without issuing.",
    # Broken: each repeat appends SourceHeld to the lifecycle, so runs never end.
    source_held=lambda s: _held(s) | s.destination_reserving.to.itself(internal=True),
)
ActivateOnEveryReport = mutant(
    SF,
    "ActivateOnEveryReport",
    "SOURCE_FIRST that activates the destination again on every repeated TransferCompleted.",
    # Broken: each repeat issues another ActivateDestination, so runs never end.
    transfer_completed=lambda s: (
        _activate(s)
        | _too_early(s)
        | refused(Refusal.TRANSFER_NOT_SCHEDULED, s.transfer_starting)
        | s.activating.to.itself(internal=True, on="activate_destination")
    ),
)

# -- S8: actions for owners never engaged, or twice ------------------------------------------

SubmitTwice = mutant(
    SF,
    "SubmitTwice",
    "SOURCE_FIRST that submits the prefill again when the first submission is acknowledged.",
    # Broken: a second SubmitPrefill for the same request.
    prefill_submitted=lambda s: s.prefill_submitting.to(s.prefill_running, on="submit_prefill"),
)


def _df_cancelling_a_source_never_submitted(s: SimpleNamespace) -> TransitionList:
    # Broken: from `destination_reserving` on, cleanup cancels a source never submitted.
    return cleanup(s, "destination", (), (*DF_ALONE, *DF_BOTH))


CancelSourceNeverSubmitted = mutant(
    DF,
    "CancelSourceNeverSubmitted",
    "DESTINATION_FIRST that cancels the source before it ever asked for one.",
    action_failed=_df_cancelling_a_source_never_submitted,
    terminated=_terminated(_df_cancelling_a_source_never_submitted),
)


def _sf_cancelling_a_destination_never_reserved(s: SimpleNamespace) -> TransitionList:
    # Broken: cleanup cancels a destination it never asked to reserve.
    return cleanup(s, "source", (), (*SF_ALONE, *SF_BOTH))


CancelDestinationNeverReserved = mutant(
    SF,
    "CancelDestinationNeverReserved",
    "SOURCE_FIRST that cancels a destination it never asked to reserve.",
    action_failed=_sf_cancelling_a_destination_never_reserved,
    terminated=_terminated(_sf_cancelling_a_destination_never_reserved),
)

# -- R1, R2: refusals ------------------------------------------------------------------------

DropsEarlySourceHeld = mutant(
    SF,
    "DropsEarlySourceHeld",
    "SOURCE_FIRST that silently drops SourceHeld before the submission was acknowledged.",
    # Broken: `prefill_submitting` no longer refuses SourceHeld (the default drops it).
    source_held=lambda s: (
        s.prefill_running.to(
            s.destination_reserving,
            validators="transfer_timing_is_valid",
            on="reserve_destination",
        )
        | refused(Refusal.PREFILL_NOT_SUBMITTED, s.idle)
    ),
)
RefusesRepeatedTransferReport = mutant(
    DF,
    "RefusesRepeatedTransferReport",
    "DESTINATION_FIRST that refuses a repeated TransferCompleted instead of dropping it.",
    # Broken: `activating` refuses the repeat.
    transfer_completed=lambda s: (
        _activate(s)
        | refused(
            Refusal.TRANSFER_NOT_SCHEDULED,
            s.idle,
            s.destination_reserving,
            s.destination_accepted,
            s.prefill_submitting,
            s.prefill_running,
            s.transfer_starting,
            s.activating,
        )
    ),
)
AcceptsFailedCancel = mutant(
    SF,
    "AcceptsFailedCancel",
    "SOURCE_FIRST that silently accepts a failed CancelSource.",
    # Broken: `cancelling_source` drops a failed cleanup action instead of refusing it.
    cleanup_action_failed=lambda s: ignored(s.cancelling_source),
)
AcceptsMismatchedOutcome = mutant(
    SF,
    "AcceptsMismatchedOutcome",
    "SOURCE_FIRST that takes any outcome for SubmitPrefill.",
    # Broken: an outcome that does not fit SubmitPrefill is journaled, not refused.
    mismatched_outcome=lambda s: acknowledged(s.prefill_submitting),
)

# -- P1: payloads ----------------------------------------------------------------------------

HeldWithoutTimingCheck = mutant(
    SF,
    "HeldWithoutTimingCheck",
    "SOURCE_FIRST that takes SourceHeld without validating the transfer timing.",
    # Broken: no `transfer_timing_is_valid`.
    source_held=lambda s: (
        s.prefill_running.to(s.destination_reserving, on="reserve_destination")
        | refused(Refusal.PREFILL_NOT_SUBMITTED, s.idle, s.prefill_submitting)
    ),
)
TransferWithoutTimingCheck = mutant(
    DF,
    "TransferWithoutTimingCheck",
    "DESTINATION_FIRST that checks the delay of SourceHeld but not its bandwidth.",
    # Broken: no `transfer_timing_is_valid`; a negative bandwidth falls back to 0 ms.
    source_held=lambda s: (
        s.prefill_running.to(
            s.transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
        )
        | refused(
            Refusal.PREFILL_NOT_SUBMITTED,
            s.idle,
            s.destination_reserving,
            s.destination_accepted,
            s.prefill_submitting,
        )
    ),
)

# -- Q1: promptness and order inside a call --------------------------------------------------

_BACKWARDS = ["cancel_destination", "cancel_source"]
CancelsOutOfOrder = mutant(
    SF,
    "CancelsOutOfOrder",
    "SOURCE_FIRST whose cleanup cancels the destination before the source.",
    # Broken: the SPEC issues CancelSource first.
    action_failed=lambda s: _sf_cleanup(s, cancels=["cancel_destination", "cancel_source"]),
    terminated=_terminated(
        lambda s: _sf_cleanup(s, cancels=["cancel_destination", "cancel_source"])
    ),
)
LateCancelComplete = mutant(
    SF,
    "LateCancelComplete",
    "SOURCE_FIRST whose cleanup waits for a repeated acknowledgement before completing.",
    # Broken: the source cancel is confirmed, yet `Complete` waits for a duplicate outcome.
    source_canceled=lambda s: s.cancelling_both.to(s.cancelling_destination),
    duplicate_outcome=lambda s: s.cancelling_source.to(s.canceled),
)
LateRelease = mutant(
    DF,
    "LateRelease",
    "DESTINATION_FIRST that releases the source only when the activation is acknowledged twice.",
    # Broken: ReleaseSource waits for a duplicate APPLIED.
    destination_activated=lambda s: s.activating.to(s.releasing),
    duplicate_outcome=lambda s: s.releasing.to.itself(internal=True, on="release_source"),
)

# -- L1, L2, L3 ------------------------------------------------------------------------------

LostSourceCancel = mutant(
    SF,
    "LostSourceCancel",
    "SOURCE_FIRST whose cleanup forgets a source cancel acknowledged before the destination's.",
    # Broken: `cancelling_both` journals the source cancel without moving, so once the
    # destination cancel is acknowledged too, the chart waits for a source cancel it already got.
    source_canceled=lambda s: s.cancelling_source.to(s.canceled),
)
DestinationCancelNeverConfirmed = mutant(
    DF,
    "DestinationCancelNeverConfirmed",
    "DESTINATION_FIRST that never completes a cleanup of the destination alone.",
    # Broken: `cancelling_destination` journals the cancel's acknowledgement without moving.
    destination_canceled=lambda s: s.cancelling_both.to(s.cancelling_source),
)
NoReopenAfterSuccess = mutant(
    DF,
    "NoReopenAfterSuccess",
    "DESTINATION_FIRST that ignores a terminal fact once the handoff succeeded.",
    # Broken: no reopen; `succeeded` drops a terminal fact although the destination decodes.
    terminated=lambda s: _df_cleanup(s) | s.idle.to(s.canceled),
)


def _sf_cleanup_but_mid_transfer(s: SimpleNamespace) -> TransitionList:
    return cleanup(s, "source", SF_ALONE, without(SF_BOTH, "transferring"))


IgnoresTerminalMidTransfer = mutant(
    SF,
    "IgnoresTerminalMidTransfer",
    "SOURCE_FIRST that drops a terminal fact while the KV cache is moving.",
    # Broken: `transferring` is left out of the terminal fact's cleanup (the default drops it).
    terminated=_terminated(_sf_cleanup_but_mid_transfer),
)
HeldRecordedInCleanup = mutant(
    SF,
    "HeldRecordedInCleanup",
    "SOURCE_FIRST that takes SourceHeld while cancelling the source.",
    # Broken: in cleanup a fact is dropped; here it records SourceHeld in the lifecycle.
    source_held=lambda s: _held(s) | s.cancelling_source.to.itself(internal=True),
)

# -- Coverage, and controls that change only cells no run reaches -----------------------------

DeadTransition = mutant(
    SF,
    "DeadTransition",
    "SOURCE_FIRST with a transition no run can take: idle never awaits an acknowledgement.",
    # Broken: nothing was submitted in `idle`, so this transition is dead.
    prefill_submitted=lambda s: (
        s.prefill_submitting.to(s.prefill_running) | s.idle.to(s.prefill_running)
    ),
)
DeadScheduleInIdle = mutant(
    DF,
    "DeadScheduleInIdle",
    "DESTINATION_FIRST with a transition no run can take: nothing is scheduled in idle.",
    # Broken: this transition is dead.
    transfer_scheduled=lambda s: s.transfer_starting.to(s.transferring) | s.idle.to(s.transferring),
)
UnreachableFailureKept = mutant(
    SF,
    "UnreachableFailureKept",
    "Control: SOURCE_FIRST journaling a failure in `prefill_running`, where none can arrive.",
    # Changed, unreachable: every action issued there was already acknowledged.
    action_failed=lambda s: cleanup(s, "source", without(SF_ALONE, "prefill_running"), SF_BOTH),
)


def _df_cleanup_dead_mid_transfer(s: SimpleNamespace) -> TransitionList:
    return cleanup(s, "destination", DF_ALONE, without(DF_BOTH, "transferring"))


UnreachableLeak = mutant(
    DF,
    "UnreachableLeak",
    "Control: DESTINATION_FIRST completing at once on a failure in `transferring`.",
    # Changed, unreachable: StartTransfer was acknowledged there, so no action can fail.
    action_failed=lambda s: _df_cleanup_dead_mid_transfer(s) | s.transferring.to(s.canceled),
)

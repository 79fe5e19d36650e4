"""More broken charts: refusals, payloads, promptness, cleanup, liveness and runaway runs.

Built like those of `charts.broken`; the controls at the end change only cells no run reaches.
"""

from __future__ import annotations

from statemachine.transition_list import TransitionList

from charts import DF_ALONE, DF_BOTH, SF_ALONE, SF_BOTH, without
from charts.broken import (
    Chart,
    _activate,
    _df_cleanup,
    _sf_cleanup,
    _sf_reserved,
    _terminated,
    cleanup,
)
from charts.broken import _sf_source_held as _held
from charts.broken import _sf_too_early_for_transfer as _too_early
from handoff import DestinationFirstChart as DF
from handoff import Refusal, acknowledged, ignored, refused
from handoff import SourceFirstChart as SF

# -- S6 and Bound: dropped repeats that change the coordinator -------------------------------


class ReservationRecordedAgain(DF):
    """DESTINATION_FIRST that takes a repeated DestinationReserved while the prefill is
    submitted."""

    # Broken: the repeat is taken, not dropped: the tokens and the lifecycle are written again.
    destination_reserved = (
        DF.destination_accepted.to(DF.prefill_submitting, on="submit_prefill")
        | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, DF.idle, DF.destination_reserving)
        | DF.prefill_submitting.to.itself(internal=True)
    )


class ReservationRecordedAgainMidTransfer(SF):
    """SOURCE_FIRST that takes a repeated DestinationReserved while the transfer starts."""

    # Broken: the repeat is taken, not dropped.
    destination_reserved = _sf_reserved(SF) | SF.transfer_starting.to.itself(internal=True)


class HeldRecordedAgain(SF):
    """SOURCE_FIRST that records every repeated SourceHeld: its runs grow without issuing."""

    # Broken: each repeat appends SourceHeld to the lifecycle, so runs never end.
    source_held = _held(SF) | SF.destination_reserving.to.itself(internal=True)


class ActivateOnEveryReport(SF):
    """SOURCE_FIRST that activates the destination again on every repeated TransferCompleted."""

    # Broken: each repeat issues another ActivateDestination, so runs never end.
    transfer_completed = (
        _activate(SF)
        | _too_early(SF)
        | refused(Refusal.TRANSFER_NOT_SCHEDULED, SF.transfer_starting)
        | SF.activating.to.itself(internal=True, on="activate_destination")
    )


# -- C1: actions for owners never engaged, or twice ------------------------------------------


class SubmitTwice(SF):
    """SOURCE_FIRST that submits the prefill again when the first submission is acknowledged."""

    # Broken: a second SubmitPrefill for the same request.
    prefill_submitted = SF.prefill_submitting.to(SF.prefill_running, on="submit_prefill")


def _df_cancelling_a_source_never_submitted(s: Chart) -> TransitionList:
    # Broken: from `destination_reserving` on, cleanup cancels a source never submitted.
    return cleanup(s, "destination", (), (*DF_ALONE, *DF_BOTH))


class CancelSourceNeverSubmitted(DF):
    """DESTINATION_FIRST that cancels the source before it ever asked for one."""

    action_failed = _df_cancelling_a_source_never_submitted(DF)
    terminated = _terminated(_df_cancelling_a_source_never_submitted)(DF)


def _sf_cancelling_a_destination_never_reserved(s: Chart) -> TransitionList:
    # Broken: cleanup cancels a destination it never asked to reserve.
    return cleanup(s, "source", (), (*SF_ALONE, *SF_BOTH))


class CancelDestinationNeverReserved(SF):
    """SOURCE_FIRST that cancels a destination it never asked to reserve."""

    action_failed = _sf_cancelling_a_destination_never_reserved(SF)
    terminated = _terminated(_sf_cancelling_a_destination_never_reserved)(SF)


# -- R1, R2: refusals ------------------------------------------------------------------------


class DropsEarlySourceHeld(SF):
    """SOURCE_FIRST that silently drops SourceHeld before the submission was acknowledged."""

    # Broken: `prefill_submitting` no longer refuses SourceHeld (the default drops it).
    source_held = SF.prefill_running.to(
        SF.destination_reserving,
        validators="transfer_timing_is_valid",
        on="reserve_destination",
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, SF.idle)


class RefusesRepeatedTransferReport(DF):
    """DESTINATION_FIRST that refuses a repeated TransferCompleted instead of dropping it."""

    # Broken: `activating` refuses the repeat.
    transfer_completed = _activate(DF) | refused(
        Refusal.TRANSFER_NOT_SCHEDULED,
        DF.idle,
        DF.destination_reserving,
        DF.destination_accepted,
        DF.prefill_submitting,
        DF.prefill_running,
        DF.transfer_starting,
        DF.activating,
    )


class AcceptsFailedCancel(SF):
    """SOURCE_FIRST that silently accepts a failed CancelSource."""

    # Broken: `cancelling_source` drops a failed cleanup action instead of refusing it.
    cleanup_action_failed = ignored(SF.cancelling_source)


class AcceptsMismatchedOutcome(SF):
    """SOURCE_FIRST that takes any outcome for SubmitPrefill."""

    # Broken: an outcome that does not fit SubmitPrefill is journaled, not refused.
    mismatched_outcome = acknowledged(SF.prefill_submitting)


# -- P1: payloads ----------------------------------------------------------------------------


class HeldWithoutTimingCheck(SF):
    """SOURCE_FIRST that takes SourceHeld without validating the transfer timing."""

    # Broken: no `transfer_timing_is_valid`.
    source_held = SF.prefill_running.to(
        SF.destination_reserving, on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, SF.idle, SF.prefill_submitting)


class TransferWithoutTimingCheck(DF):
    """DESTINATION_FIRST that checks the delay of SourceHeld but not its bandwidth."""

    # Broken: no `transfer_timing_is_valid`; a negative bandwidth falls back to 0 ms.
    source_held = DF.prefill_running.to(
        DF.transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.PREFILL_NOT_SUBMITTED,
        DF.idle,
        DF.destination_reserving,
        DF.destination_accepted,
        DF.prefill_submitting,
    )


# -- Q1: promptness and order inside a call --------------------------------------------------

_BACKWARDS = ["cancel_destination", "cancel_source"]


class CancelsOutOfOrder(SF):
    """SOURCE_FIRST whose cleanup cancels the destination before the source."""

    # Broken: the SPEC issues CancelSource first.
    action_failed = _sf_cleanup(SF, cancels=["cancel_destination", "cancel_source"])
    terminated = _terminated(
        lambda s: _sf_cleanup(s, cancels=["cancel_destination", "cancel_source"])
    )(SF)


class LateCancelComplete(SF):
    """SOURCE_FIRST whose cleanup waits for a repeated acknowledgement before completing."""

    # Broken: the source cancel is confirmed, yet `Complete` waits for a duplicate outcome.
    source_canceled = SF.cancelling_both.to(SF.cancelling_destination)
    duplicate_outcome = SF.cancelling_source.to(SF.canceled)


class LateRelease(DF):
    """DESTINATION_FIRST that releases the source only when the activation is acknowledged twice."""

    # Broken: ReleaseSource waits for a duplicate APPLIED.
    destination_activated = DF.activating.to(DF.releasing)
    duplicate_outcome = DF.releasing.to.itself(internal=True, on="release_source")


# -- L1, L2, C2 ------------------------------------------------------------------------------


class LostSourceCancel(SF):
    """SOURCE_FIRST whose cleanup forgets a source cancel acknowledged before the destination's."""

    # Broken: `cancelling_both` journals the source cancel without moving, so once the
    # destination cancel is acknowledged too, the chart waits for a source cancel it already got.
    source_canceled = SF.cancelling_source.to(SF.canceled)


class DestinationCancelNeverConfirmed(DF):
    """DESTINATION_FIRST that never completes a cleanup of the destination alone."""

    # Broken: `cancelling_destination` journals the cancel's acknowledgement without moving.
    destination_canceled = DF.cancelling_both.to(DF.cancelling_source)


class NoReopenAfterSuccess(DF):
    """DESTINATION_FIRST that ignores a terminal fact once the handoff succeeded."""

    # Broken: no reopen; `succeeded` drops a terminal fact although the destination decodes.
    terminated = _df_cleanup(DF) | DF.idle.to(DF.canceled)


def _sf_cleanup_but_mid_transfer(s: Chart) -> TransitionList:
    return cleanup(s, "source", SF_ALONE, without(SF_BOTH, "transferring"))


class IgnoresTerminalMidTransfer(SF):
    """SOURCE_FIRST that drops a terminal fact while the KV cache is moving."""

    # Broken: `transferring` is left out of the terminal fact's cleanup (the default drops it).
    terminated = _terminated(_sf_cleanup_but_mid_transfer)(SF)


class HeldRecordedInCleanup(SF):
    """SOURCE_FIRST that takes SourceHeld while cancelling the source."""

    # Broken: in cleanup a fact is dropped; here it records SourceHeld in the lifecycle.
    source_held = _held(SF) | SF.cancelling_source.to.itself(internal=True)


# -- Coverage, and controls that change only cells no run reaches -----------------------------


class DeadTransition(SF):
    """SOURCE_FIRST with a transition no run can take: idle never awaits an acknowledgement."""

    # Broken: nothing was submitted in `idle`, so this transition is dead.
    prefill_submitted = SF.prefill_submitting.to(SF.prefill_running) | SF.idle.to(
        SF.prefill_running
    )


class DeadScheduleInIdle(DF):
    """DESTINATION_FIRST with a transition no run can take: nothing is scheduled in idle."""

    # Broken: this transition is dead.
    transfer_scheduled = DF.transfer_starting.to(DF.transferring) | DF.idle.to(DF.transferring)


class UnreachableFailureKept(SF):
    """Control: SOURCE_FIRST journaling a failure in `prefill_running`, where none can arrive."""

    # Changed, unreachable: every action issued there was already acknowledged.
    action_failed = cleanup(SF, "source", without(SF_ALONE, "prefill_running"), SF_BOTH)


def _df_cleanup_dead_mid_transfer(s: Chart) -> TransitionList:
    return cleanup(s, "destination", DF_ALONE, without(DF_BOTH, "transferring"))


class UnreachableLeak(DF):
    """Control: DESTINATION_FIRST completing at once on a failure in `transferring`."""

    # Changed, unreachable: StartTransfer was acknowledged there, so no action can fail.
    action_failed = _df_cleanup_dead_mid_transfer(DF) | DF.transferring.to(DF.canceled)

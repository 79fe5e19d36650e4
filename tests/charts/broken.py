"""Deliberately broken charts, written as the real charts are, each with one rule broken.

Each is a plain subclass of a real chart of `handoff._chart.shipped`: it inherits every rule but the
events it declares anew, so only they can differ, and a `# Broken:` comment marks the broken
rule.  The helpers take the parent chart (`SF`, `DF`) and write rules on its states, as a
class body does.  `review_mutants` says which property catches each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from statemachine.transition_list import TransitionList

from charts import DF_ALONE, DF_BOTH, SF_ALONE, SF_BOTH, TAIL, states, without
from handoff import DestinationFirstChart as DF
from handoff import Refusal, refused
from handoff import SourceFirstChart as SF

Chart = Any
"""A parent chart class (`SF`, `DF`), whose states a rule names: `s.transferring`, …"""
Rule = Callable[[Chart], TransitionList]
"""An event's transitions, written on a parent chart's states."""

_CS, _CD = "cancel_source", "cancel_destination"
_BOTH = [_CS, _CD]


def _terminated(cleanup: Rule) -> Rule:
    """`terminated` built from a chart's cleanup (`action_failed`) as the real charts build it."""
    return lambda s: (
        cleanup(s)
        | s.idle.to(s.canceled)
        | s.succeeded.to(s.cancelling_destination, on="cancel_destination")
    )


def cleanup(
    s: Chart,
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


def _sf_cleanup(s: Chart, *, cancels: object = _BOTH) -> TransitionList:
    """SOURCE_FIRST's `action_failed`, with the cancels of `cancelling_both` as given."""
    return cleanup(s, "source", SF_ALONE, SF_BOTH, cancels=cancels)


def _df_cleanup(s: Chart) -> TransitionList:
    """DESTINATION_FIRST's `action_failed`, unbroken."""
    return cleanup(s, "destination", DF_ALONE, DF_BOTH)


def _sf_source_held(s: Chart) -> TransitionList:
    return s.prefill_running.to(
        s.destination_reserving, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, s.idle, s.prefill_submitting)


def _sf_reserved(s: Chart) -> TransitionList:
    return s.destination_accepted.to(
        s.transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED, *states(s, ("idle", *SF_ALONE, "destination_reserving"))
    )


def _sf_too_early_for_transfer(s: Chart) -> TransitionList:
    return refused(Refusal.TRANSFER_NOT_SCHEDULED, *states(s, ("idle", *SF_ALONE, *DF_ALONE)))


def _df_too_early_for_transfer(s: Chart) -> TransitionList:
    return refused(Refusal.TRANSFER_NOT_SCHEDULED, *states(s, ("idle", *DF_ALONE, *SF_ALONE)))


def _activate(s: Chart) -> TransitionList:
    return s.transferring.to(s.activating, on="activate_destination")


# -- S1, S2, S3: forward actions too early ---------------------------------------------------


class ReleaseBeforeActivation(SF):
    """SOURCE_FIRST that releases the source as soon as the transfer completed."""

    # Broken: the release goes out with the activation, before the destination applied it.
    transfer_completed = (
        SF.transferring.to(SF.activating, on=["activate_destination", "release_source"])
        | _sf_too_early_for_transfer(SF)
        | refused(Refusal.TRANSFER_NOT_SCHEDULED, SF.transfer_starting)
    )
    destination_activated = SF.activating.to(SF.releasing)


class ReleaseWithActivation(SF):
    """SOURCE_FIRST that releases the source in the call that activates the destination, and
    completes once both are acknowledged, in either order: live with any workers, yet the
    source may let go of the KV before the destination holds it."""

    # Broken: the release goes out with the activation, before the destination applied it.
    transfer_completed = (
        SF.transferring.to(SF.activating, on=["activate_destination", "release_source"])
        | _sf_too_early_for_transfer(SF)
        | refused(Refusal.TRANSFER_NOT_SCHEDULED, SF.transfer_starting)
    )
    # Whichever acknowledgement comes first moves to `releasing`, the other completes.
    destination_activated = SF.activating.to(SF.releasing) | SF.releasing.to(SF.succeeded)
    source_released = (
        SF.activating.to(SF.releasing)
        | SF.releasing.to(SF.succeeded)
        | SF.cancelling_both.to(SF.cancelling_destination)
        | SF.cancelling_source.to(SF.canceled)
    )


class ReleaseOnSchedule(DF):
    """DESTINATION_FIRST that releases the source when the transfer is scheduled."""

    # Broken: the release goes out long before any activation.
    transfer_scheduled = DF.transfer_starting.to(DF.transferring, on="release_source")


class ActivateBeforeTransferCompleted(DF):
    """DESTINATION_FIRST that activates the destination as soon as the transfer is scheduled."""

    # Broken: the activation goes out when the transfer is scheduled, not when it completed.
    transfer_scheduled = DF.transfer_starting.to(DF.transferring, on="activate_destination")
    transfer_completed = (
        DF.transferring.to(DF.activating)
        | _df_too_early_for_transfer(DF)
        | refused(Refusal.TRANSFER_NOT_SCHEDULED, DF.transfer_starting)
    )


class ActivateOnUnscheduledTransfer(SF):
    """SOURCE_FIRST that takes TransferCompleted before the transfer was scheduled."""

    # Broken: `transfer_starting` activates instead of refusing.
    transfer_completed = (
        _activate(SF)
        | SF.transfer_starting.to(SF.activating, on="activate_destination")
        | _sf_too_early_for_transfer(SF)
    )


class TransferBeforeReservation(SF):
    """SOURCE_FIRST that starts the transfer on a reservation the destination never accepted."""

    # Broken: `destination_reserving` takes the reservation instead of refusing it.
    destination_reserved = SF.transfer_starting.from_(
        SF.destination_accepted,
        SF.destination_reserving,
        validators="transfer_delay_is_valid",
        on="start_transfer",
    ) | refused(Refusal.OWNERSHIP_NOT_ACCEPTED, SF.idle, SF.prefill_submitting, SF.prefill_running)


class SourceHeldBeforeSubmission(DF):
    """DESTINATION_FIRST that takes SourceHeld before the prefill submission was acknowledged."""

    # Broken: `prefill_submitting` takes SourceHeld instead of refusing it.
    source_held = DF.transfer_starting.from_(
        DF.prefill_running,
        DF.prefill_submitting,
        validators=["transfer_timing_is_valid", "transfer_delay_is_valid"],
        on="start_transfer",
    ) | refused(
        Refusal.PREFILL_NOT_SUBMITTED, DF.idle, DF.destination_reserving, DF.destination_accepted
    )


# -- S4, S5: completions ---------------------------------------------------------------------


class CompleteTwice(DF):
    """DESTINATION_FIRST that completes again on every terminal fact after a cancellation."""

    # Broken: a terminal fact re-enters `canceled`, and entering it completes again.
    terminated = _terminated(_df_cleanup)(DF) | DF.canceled.to.itself()


class CanceledReopens(SF):
    """SOURCE_FIRST that reopens a CANCELED handoff as if it had succeeded."""

    # Broken: only a success may be reopened.
    terminated = _terminated(_sf_cleanup)(SF) | SF.canceled.to(
        SF.cancelling_destination, on="cancel_destination"
    )


def _forgetting_the_reservation(s: Chart) -> TransitionList:
    # Broken: ReserveDestination is out while the destination is reserving or accepted,
    # yet cleanup from there cancels the source alone.
    return cleanup(s, "source", (*SF_ALONE, *DF_ALONE), TAIL)


class NoDestinationCancel(SF):
    """SOURCE_FIRST whose cleanup forgets the destination once it was asked to reserve."""

    action_failed = _forgetting_the_reservation(SF)
    terminated = _terminated(_forgetting_the_reservation)(SF)


def _keeping_the_source_mid_transfer(s: Chart) -> TransitionList:
    return cleanup(s, "source", SF_ALONE, without(SF_BOTH, "transferring")) | (
        # Broken: mid-transfer only the destination is canceled; the source keeps its KV.
        s.transferring.to(s.cancelling_destination, on="cancel_destination")
    )


class NoSourceCancelMidTransfer(SF):
    """SOURCE_FIRST that, failing mid-transfer, cancels the destination but not the source."""

    action_failed = _keeping_the_source_mid_transfer(SF)
    terminated = _terminated(_keeping_the_source_mid_transfer)(SF)


class SuccessWithoutRelease(DF):
    """DESTINATION_FIRST that succeeds once the destination is activated, never releasing."""

    # Broken: the handoff succeeds while the source still holds the KV cache.
    destination_activated = DF.activating.to(DF.releasing, on="complete_success")


class EarlySuccess(SF):
    """SOURCE_FIRST that succeeds as soon as the destination is activated."""

    # Broken: the lifecycle of this success lacks SourceReleased.
    destination_activated = SF.activating.to(SF.releasing, on="complete_success")

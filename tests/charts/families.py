"""Charts that differ from the reference (SPEC.md) yet can be argued safe, and one that leaks.

`handoff review --chart charts.families:NAME` (run from `tests/`) judges each; `test_families`
holds what it must say.  The chart names are the class names, but `LeakReservation` keeps its
parent's title, so a counterexample trace must name it by `MODULE:CLASS`.
"""

from __future__ import annotations

from statemachine import State

from charts import SF_ALONE, SF_BOTH, states, without
from handoff import SourceFirstChart, ignored

S = SourceFirstChart

# The charts are laid out as tables, one rule per line group; the formatter would fold them.
# fmt: off


class DropEarlyTransfer(SourceFirstChart):
    """Drops a `TransferCompleted` reported before the transfer was scheduled instead of
    refusing it: nothing moves, so it is safe; the reference refuses it (R1)."""

    transfer_completed = S.transferring.to(S.activating, on="activate_destination") | ignored(
        S.idle, S.prefill_submitting, S.prefill_running, S.destination_reserving,
        S.destination_accepted, S.transfer_starting,
    )


class CancelDestinationFirst(SourceFirstChart):
    """Cancels the destination before the source: both are still freed, so it is safe; the
    reference cancels the source first (Q1)."""

    action_failed = (
        S.cancelling_source.from_(*states(S, SF_ALONE), on="cancel_source")
        | S.cancelling_both.from_(*states(S, SF_BOTH), on=["cancel_destination", "cancel_source"])
    )
    terminated = (
        action_failed
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )


class RetryFailedCancel(SourceFirstChart):
    """Retries a failed `CancelSource` once instead of refusing the failure: the source is
    still freed before completion, so it is safe; the reference refuses the failure (R2) and
    issues each action once (C1)."""

    retrying_source = State("retrying source")
    cleanup_action_failed = S.cancelling_source.to(retrying_source, on="cancel_source")
    source_canceled = (
        S.cancelling_both.to(S.cancelling_destination)
        | S.cancelling_source.to(S.canceled)
        | retrying_source.to(S.canceled)
    )
    source_released = (
        S.releasing.to(S.succeeded)
        | S.cancelling_both.to(S.cancelling_destination)
        | S.cancelling_source.to(S.canceled)
        | retrying_source.to(S.canceled)
    )


class LeakReservation(SourceFirstChart):
    """Unsafe: a failure while the destination is being reserved cancels only the source, so
    the reservation leaks (S5)."""

    title = "SourceFirst"
    action_failed = (
        S.cancelling_source.from_(
            *states(S, (*SF_ALONE, "destination_reserving")), on="cancel_source"
        )
        | S.cancelling_both.from_(
            *states(S, without(SF_BOTH, "destination_reserving")),
            on=["cancel_source", "cancel_destination"],
        )
    )
    terminated = (
        action_failed
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )


# fmt: on

"""A chart of one's own, importable by name (`user_charts:FreesBoth`), for the tests that name
their chart: snapshots and recorded traces."""

from __future__ import annotations

from handoff import SourceFirstChart

S = SourceFirstChart


class FreesBoth(SourceFirstChart):
    """SOURCE_FIRST, but a failed transfer start frees both owners from `transfer_starting`."""

    title = "FreesBoth"
    action_failed = S.cancelling_source.from_(
        S.prefill_submitting, S.prefill_running, on="cancel_source"
    ) | S.cancelling_both.from_(
        S.destination_reserving,
        S.destination_accepted,
        S.transfer_starting,
        S.transferring,
        S.activating,
        S.releasing,
        on=["cancel_source", "cancel_destination"],
    )

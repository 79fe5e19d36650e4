"""A chart of one's own, importable by name (`user_charts:FreesBoth`), for the tests that name
their chart: snapshots and recorded traces."""

from __future__ import annotations

from charts import SF_ALONE, SF_BOTH, states

from handoff import SourceFirstChart

S = SourceFirstChart


class FreesBoth(SourceFirstChart):
    """SOURCE_FIRST, but a failed transfer start frees both owners from `transfer_starting`."""

    title = "FreesBoth"
    action_failed = S.cancelling_source.from_(
        *states(S, SF_ALONE), on="cancel_source"
    ) | S.cancelling_both.from_(*states(S, SF_BOTH), on=["cancel_source", "cancel_destination"])

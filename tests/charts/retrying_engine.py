"""A writer's chart of their own, as `docs/writing-a-chart.md` teaches: the tests and the
docs-build benchmark write it beside a scratch site as the user's module `retrying_engine`."""

from handoff import SourceFirstChart

S = SourceFirstChart


class RetryingEngine(SourceFirstChart):
    """A failed transfer frees the destination only: the prefill is kept for a retry."""

    action_failed = (
        S.cancelling_source.from_(S.prefill_submitting, S.prefill_running, on="cancel_source")
        | S.cancelling_both.from_(
            S.destination_reserving,
            S.destination_accepted,
            S.transferring,
            S.activating,
            S.releasing,
            on=["cancel_source", "cancel_destination"],
        )
        | S.transfer_starting.to(S.cancelling_destination, on="cancel_destination")
    )

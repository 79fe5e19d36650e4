"""A chart whose safety depends on when the runtime acknowledges work (`--acknowledge`).

`CancelOnceSubmitted` waits, when a terminal fact comes before the source acknowledged
`SubmitPrefill`, for that `Submitted` before it issues `CancelSource` (and likewise for the
destination's `Accepted` before `CancelDestination`): "once a worker says it has the work,
cancelling it frees it".  That holds when the worker's reply carries the acknowledgement
(`on-reply`), even for `forgetful` workers, and breaks when the runtime reports `Submitted`
as it sends the work (`on-send`): the cancel can then reach the worker before the work.
"""

from __future__ import annotations

from statemachine import State

from handoff import Refusal, SourceFirstChart, refused

S = SourceFirstChart

# The charts are laid out as tables, one rule per line group; the formatter would fold them.
# fmt: off


class CancelOnceSubmitted(SourceFirstChart):
    """A terminal fact during the submission waits for `Submitted`, then cancels the source;
    a failed submission completes at once (nothing was taken).  The same for the
    reservation: a terminal fact before `Accepted` waits for it, then cancels both."""

    awaiting_submission = State("awaiting submission")
    awaiting_acceptance = State("awaiting acceptance")

    prefill_submitted = (
        S.prefill_submitting.to(S.prefill_running)
        | awaiting_submission.to(S.cancelling_source, on="cancel_source")
    )
    ownership_accepted = (
        S.destination_reserving.to(S.destination_accepted)
        | awaiting_acceptance.to(S.cancelling_both, on=["cancel_source", "cancel_destination"])
    )
    destination_reserved = S.destination_accepted.to(
        S.transfer_starting, validators="transfer_delay_is_valid", on="start_transfer"
    ) | refused(
        Refusal.OWNERSHIP_NOT_ACCEPTED,
        S.idle, S.prefill, S.destination_reserving, awaiting_acceptance,
    )
    source_held = S.prefill_running.to(
        S.both_engaged, validators="transfer_timing_is_valid", on="reserve_destination"
    ) | refused(Refusal.PREFILL_NOT_SUBMITTED, S.idle, S.prefill, awaiting_submission)
    action_failed = (
        S.cancelling_source.from_(S.prefill, on="cancel_source")
        | S.cancelling_both.from_(S.both_engaged, on=["cancel_source", "cancel_destination"])
        | awaiting_submission.to(S.canceled)
        | awaiting_acceptance.to(S.cancelling_source, on="cancel_source")
    )
    terminated = (
        awaiting_submission.from_(S.prefill_submitting)
        | awaiting_acceptance.from_(S.destination_reserving)
        | S.cancelling_source.from_(S.prefill, on="cancel_source")
        | S.cancelling_both.from_(S.both_engaged, on=["cancel_source", "cancel_destination"])
        | S.idle.to(S.canceled)
        | S.succeeded.to(S.cancelling_destination, on="cancel_destination")
    )

"""The mutant suite: broken charts and adapters, the property that must catch each, and how.

Most mutants are charts written as the real ones are, plain subclasses of them
(`charts.broken`, `charts.discipline`).  Breaks that definition-time checks refuse in chart
text (a refusal under another event, a misplaced check) are made on the compiled table
(`patched`): runs must catch them too.  S7 cannot be broken by any chart, only by an
adapter: those mutants patch the coordinator.  `CONTROLS` change only cells no run reaches:
they must pass (or be dead code).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import attrs
import pytest
from charts import broken as c
from charts import discipline as d
from support import SessionCache

from handoff._chart.base import HandoffChart
from handoff._chart.shipped import DestinationFirstChart, SourceFirstChart
from handoff._chart.vocabulary import ChartEvent, Check, Effect, Refusal
from handoff._compile.table import CompiledChart, compile_chart
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._review.explore import Review, review
from handoff._values.messages import IssuedHandoffAction

__all__ = ["CONTROLS", "MUTANTS", "Mutant"]

Adapter = Callable[[pytest.MonkeyPatch], None]


def patched(
    chart: type[HandoffChart], cells: dict[tuple[str, ChartEvent], dict[str, Any]]
) -> CompiledChart:
    """`chart` compiled, with the given cells' steps changed (`{(state, event): fields}`).

    For breaks the chart text cannot express because definition-time checks refuse them (a
    refusal under another event, a misplaced check): the review must still catch them in runs.
    """
    table = compile_chart(chart)
    rows = [list(row) for row in table.rows]
    for (state, event), fields in cells.items():
        source = table.index(state)
        rows[source][event.index] = attrs.evolve(rows[source][event.index], **fields)
    return attrs.evolve(table, rows=tuple(tuple(row) for row in rows))


@attrs.frozen
class Mutant:
    """A broken chart or adapter, the property that must catch it, and its counterexample.

    The counterexample's shape: its last call's label, whether that call was refused, and an
    action the call issued (None: it issued nothing).  No `last_call`: no counterexample (e.g.
    Coverage), and `says` must be in a note.
    """

    name: str
    chart: type[HandoffChart] | CompiledChart
    caught_by: str
    says: str
    last_call: str | None = None
    last_issued: str | None = None
    refused: bool = False
    adapter: Adapter | None = None
    calls: int | None = None
    """The counterexample's length, where it was worked out by hand."""

    def compiled(self) -> CompiledChart:
        """The mutant's table."""
        return self.chart if isinstance(self.chart, CompiledChart) else compile_chart(self.chart)

    def review(self, monkeypatch: pytest.MonkeyPatch) -> Review:
        """Review the mutant (an adapter mutant is patched in for the review only)."""
        with monkeypatch.context() as patch:
            if self.adapter is not None:
                self.adapter(patch)
            source = self.chart if isinstance(self.chart, type) else None
            return review(self.compiled(), source=source)

    @property
    def shared_key(self) -> str:
        """What the session's cache keeps the mutant's review under."""
        return f"review-{self.name}"

    def shared_review(self, cache: SessionCache) -> Review:
        """The mutant's review, made once in the test session by the first worker asking."""
        return cache.get(self.shared_key, self._review_alone)

    def _review_alone(self) -> Review:
        return self.review(pytest.MonkeyPatch())


def shared_reviews(
    cache: SessionCache, mutants: Iterable[Mutant], workers: int = 1
) -> dict[str, Review]:
    """Each mutant's review by name, as `Mutant.shared_review` gives it: those no other
    worker is making are made `workers` at a time, in spawned processes when more than one;
    those another worker is making are waited for last (`SessionCache.get_all`)."""
    chosen = {mutant.shared_key: mutant for mutant in mutants}

    def side_by_side(keys: list[str]) -> dict[str, Review]:
        spawned = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(workers, len(keys)), mp_context=spawned) as pool:
            names = [chosen[key].name for key in keys]
            return dict(zip(keys, pool.map(_review_named, names), strict=True))

    made = cache.get_all(
        {key: mutant._review_alone for key, mutant in chosen.items()},
        side_by_side if workers > 1 else None,
    )
    return {chosen[key].name: review for key, review in made.items()}


def _review_named(name: str) -> Review:
    """A mutant's review, made in a worker process (a mutant travels by name)."""
    return next(mutant for mutant in MUTANTS if mutant.name == name)._review_alone()


def _ids_skip(patch: pytest.MonkeyPatch) -> None:
    issue = HandoffCoordinatorCore._issue

    def skipping(self: HandoffCoordinatorCore, after: Any, *args: Any) -> IssuedHandoffAction:
        issued = issue(self, after, *args)
        after.next_id += 1
        return issued

    patch.setattr(HandoffCoordinatorCore, "_issue", skipping)


def _ids_restart(patch: pytest.MonkeyPatch) -> None:
    issue = HandoffCoordinatorCore._issue

    def restarting(
        self: HandoffCoordinatorCore, after: Any, make: Any, *args: Any
    ) -> IssuedHandoffAction:
        issued = issue(self, after, make, *args)
        if make.__name__ == "Complete":
            after.next_id = 0
        return issued

    patch.setattr(HandoffCoordinatorCore, "_issue", restarting)


_E = ChartEvent
_HELD = "on_fact(SourceHeld(valid timing))"
_FAILED = "on_fact(Failed)"
_TC = "on_fact(TransferCompleted)"
_NEVER_ENGAGED = "that is not engaged (never asked for, or freed)"

MUTANTS = (
    # S1-S3: forward actions issued too early.
    Mutant("ActivateBeforeTransferCompleted", c.ActivateBeforeTransferCompleted, "S1",
           "before a scheduled transfer was reported done", "on_action_outcome(2, Scheduled)",
           "ActivateDestination"),
    Mutant("ActivateOnUnscheduledTransfer", c.ActivateOnUnscheduledTransfer, "S1",
           "before a scheduled transfer was reported done", _TC, "ActivateDestination", calls=6),
    Mutant("ReleaseBeforeActivation", c.ReleaseBeforeActivation, "S2",
           "ReleaseSource issued before ActivateDestination was acknowledged APPLIED", _TC,
           "ReleaseSource"),
    Mutant("ReleaseOnSchedule", c.ReleaseOnSchedule, "S2",
           "ReleaseSource issued before ActivateDestination was acknowledged APPLIED",
           "on_action_outcome(2, Scheduled)", "ReleaseSource", calls=6),
    Mutant("TransferBeforeReservation", c.TransferBeforeReservation, "S3",
           "before the destination was reserved", "on_fact(DestinationReserved(1000))",
           "StartTransfer"),
    Mutant("SourceHeldBeforeSubmission", c.SourceHeldBeforeSubmission, "S3",
           "before the source was held", _HELD, "StartTransfer"),
    # S4, S5: completions.
    Mutant("CompleteTwice", c.CompleteTwice, "S4", "Complete issued after the handoff completed",
           _FAILED, "Complete", calls=2),
    Mutant("CanceledReopens", c.CanceledReopens, "S4",
           "CancelDestination issued after the handoff completed", _FAILED, "CancelDestination",
           calls=2),
    Mutant("NoDestinationCancel", c.NoDestinationCancel, "S5",
           "the ReserveDestination was never canceled (slot leaked)",
           "on_action_outcome(2, Applied)", "Complete", calls=5),
    Mutant("NoSourceCancelMidTransfer", c.NoSourceCancelMidTransfer, "S5",
           "the SubmitPrefill was never released or canceled (KV leaked)",
           "on_action_outcome(3, Applied)", "Complete"),
    Mutant("SuccessWithoutRelease", c.SuccessWithoutRelease, "S5",
           "SUCCESS completion, yet ReleaseSource was never acknowledged done",
           "on_action_outcome(3, Applied)", "Complete", calls=8),
    # S6 and Bound: repeats that change the coordinator, runs that never end.
    Mutant("ReservationRecordedAgain", d.ReservationRecordedAgain, "S6",
           "changed the coordinator, yet the contract drops it",
           "on_fact(DestinationReserved(1000))",
           calls=4),
    Mutant("ReservationRecordedAgainMidTransfer", d.ReservationRecordedAgainMidTransfer, "S6",
           "changed the coordinator, yet the contract drops it",
           "on_fact(DestinationReserved(1000))",
           calls=6),
    Mutant("HeldRecordedAgain", d.HeldRecordedAgain, "Bound",
           "the configuration grew 3 times in one run without progress", _HELD, calls=6),
    Mutant("ActivateOnEveryReport", d.ActivateOnEveryReport, "Bound",
           "the configuration grew 3 times in one run without progress", _TC,
           "ActivateDestination", calls=10),
    # S7: only an adapter can break it.
    Mutant("IdsSkip", SourceFirstChart, "S7", "CancelSource got id 2, expected 1", _FAILED,
           "CancelSource", adapter=_ids_skip, calls=2),
    Mutant("IdsRestartAfterCompletion", SourceFirstChart, "S7",
           "CancelDestination got id 0, expected 6", _FAILED, "CancelDestination",
           adapter=_ids_restart, calls=10),
    # C1: each action once, when allowed, for an engaged owner.
    Mutant("SubmitTwice", d.SubmitTwice, "C1", "a second SubmitPrefill was issued",
           "on_action_outcome(0, Submitted)", "SubmitPrefill", calls=2),
    Mutant("CancelSourceNeverSubmitted", d.CancelSourceNeverSubmitted, "C1",
           f"CancelSource issued for a source {_NEVER_ENGAGED}", _FAILED, "CancelSource", calls=2),
    Mutant("CancelDestinationNeverReserved", d.CancelDestinationNeverReserved, "C1",
           f"CancelDestination issued for a destination {_NEVER_ENGAGED}", _FAILED,
           "CancelDestination", calls=2),
    # R1, R2: refusals.
    Mutant("DropsEarlySourceHeld", d.DropsEarlySourceHeld, "R1",
           "was silently dropped; the contract refuses it with OutOfOrderFactError 'source held "
           "before prefill submission was acknowledged'", _HELD, calls=2),
    Mutant("RefusesRepeatedTransferReport", d.RefusesRepeatedTransferReport, "R1",
           "the contract drops it", _TC, refused=True, calls=8),
    Mutant("RefusesWithAnotherEventsPhrase",
           patched(DestinationFirstChart, {
               ("idle", _E.DESTINATION_RESERVED): {"refusal": Refusal.TRANSFER_NOT_SCHEDULED}
           }), "R1",
           "the contract refuses it with OutOfOrderFactError 'destination reserved before "
           "ownership was accepted'", "on_fact(DestinationReserved(1000))", refused=True, calls=1),
    Mutant("RefusesFittingAcknowledgement",
           patched(DestinationFirstChart, {
               ("destination_reserving", _E.OWNERSHIP_ACCEPTED):
                   {"refusal": Refusal.MISMATCHED_OUTCOME},
           }), "R2", "the contract takes it", "on_action_outcome(0, Accepted)", refused=True,
           calls=2),
    Mutant("AcceptsFailedCancel", d.AcceptsFailedCancel, "R2",
           "was silently dropped; the contract refuses it with CleanupActionFailedError",
           'on_action_outcome(1, Failed("x"))', calls=3),
    Mutant("AcceptsMismatchedOutcome", d.AcceptsMismatchedOutcome, "R2",
           "the contract refuses it with InvalidOutcomeError", "on_action_outcome(0, Accepted)",
           calls=2),
    # P1: payloads.
    Mutant("HeldWithoutTimingCheck", d.HeldWithoutTimingCheck, "P1",
           "was taken; the contract refuses it with InvalidTransferTimingError 'invalid handoff "
           "transfer bandwidth'", "on_fact(SourceHeld(bandwidth -1.0 GB/s))",
           "ReserveDestination", calls=3),
    Mutant("TransferWithoutTimingCheck", d.TransferWithoutTimingCheck, "P1",
           "the contract refuses it with InvalidTransferTimingError 'invalid handoff transfer "
           "bandwidth'", "on_fact(SourceHeld(bandwidth -1.0 GB/s))", "StartTransfer", calls=5),
    # Q1: promptness, and the order inside one call.
    Mutant("CancelsOutOfOrder", d.CancelsOutOfOrder, "Q1",
           "cleanup step issues [CancelSource, CancelDestination] in that call; the chart "
           "issued [CancelDestination, CancelSource]", _FAILED, "CancelSource", calls=4),
    Mutant("LateCancelComplete", d.LateCancelComplete, "Q1",
           "cleanup step issues [Complete] in that call; the chart issued []",
           "on_action_outcome(1, Applied)", calls=3),
    Mutant("LateRelease", d.LateRelease, "Q1",
           "the contract issues ReleaseSource in that call; the chart issued []",
           "on_action_outcome(3, Applied)", calls=8),
    # L1, L2, C2.
    Mutant("LostSourceCancel", d.LostSourceCancel, "L1",
           "no cooperative continuation reaches a completion", "on_action_outcome(2, Applied)"),
    Mutant("DestinationCancelNeverConfirmed", d.DestinationCancelNeverConfirmed, "L1",
           "no cooperative continuation reaches a completion", _FAILED, "CancelDestination",
           calls=2),
    Mutant("NoReopenAfterSuccess", d.NoReopenAfterSuccess, "L2",
           "no acknowledgements lead to a CANCELED completion", _FAILED),
    Mutant("IgnoresTerminalMidTransfer", d.IgnoresTerminalMidTransfer, "L2",
           "no acknowledgements lead to a CANCELED completion", _FAILED, calls=7),
    Mutant("HeldRecordedInCleanup", d.HeldRecordedInCleanup, "C2",
           "lifecycle [SourceHeld], the calls taken record []", "on_action_outcome(1, Applied)",
           "Complete", calls=4),
    Mutant("EarlySuccess", c.EarlySuccess, "C2",
           "SUCCESS with lifecycle [SourceHeld, DestinationAccepted, DestinationReserved, "
           "DestinationActivated, Completed]", "on_action_outcome(3, Applied)", "Complete",
           calls=8),
    # Coverage.
    Mutant("DeadTransition", d.DeadTransition, "Coverage",
           "dead: idle --prefill_submitted--> prefill_running"),
    Mutant("DeadScheduleInIdle", d.DeadScheduleInIdle, "Coverage",
           "dead: idle --transfer_scheduled--> transferring"),
    # Errors: crashes of checks the chart text cannot misplace.
    Mutant("TimingCheckOnReservation",
           patched(SourceFirstChart, {
               ("destination_accepted", _E.DESTINATION_RESERVED): {
                   "checks": (Check.TRANSFER_TIMING_IS_VALID, Check.TRANSFER_DELAY_IS_VALID)
               }
           }), "Errors", "AssertionError", "on_fact(DestinationReserved(1000))", refused=True,
           calls=5),
    Mutant("TransferWithoutDelayCheck",
           patched(DestinationFirstChart, {
               ("prefill_running", _E.SOURCE_HELD): {"checks": (Check.TRANSFER_TIMING_IS_VALID,)}
           }), "Errors", "AssertionError: a transfer is issued only after its delay was checked",
           _HELD, refused=True, calls=5),
    # Table: a compiled table that says something its chart does not.
    Mutant("TableForgetsSourceCancel",
           patched(SourceFirstChart, {
               ("transferring", _E.ACTION_FAILED): {"effects": (Effect.CANCEL_DESTINATION,)}
           }), "Table", "in transferring, action_failed: the table goes to cancelling_both, issues "
           "CANCEL_DESTINATION; python-statemachine goes to cancelling_both, issues CANCEL_SOURCE, "
           "CANCEL_DESTINATION"),
    Mutant("TableIgnoresEarlyCancel",
           patched(DestinationFirstChart, {("idle", _E.TERMINATED): {"ignored": True}}),
           "Table", "in idle, terminated: the table drops it, goes to canceled, issues "
           "COMPLETE_CANCELED; python-statemachine goes to canceled, issues COMPLETE_CANCELED"),
)  # fmt: skip

CONTROLS = (
    Mutant("UnreachableFailureKept", d.UnreachableFailureKept, "", ""),
    Mutant("UnreachableLeak", d.UnreachableLeak, "Coverage",
           "dead: transferring --action_failed--> canceled"),
)  # fmt: skip
"""Changes no run can reach: the first passes every property, the second only has dead code."""

"""`handoff demo`: drive one handoff of each order and print the trace, call by call."""

from __future__ import annotations

import argparse
import functools
import uuid
from collections.abc import Callable, Iterator

from handoff._binding import FITTING_OUTCOME
from handoff._coordinator import HandoffCoordinatorCore
from handoff._messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._timing import HandoffTransferTiming
from handoff._values import HandoffActionOutcome, HandoffId, HandoffOrder, KvTransferTimingMode

__all__ = ["configure", "run", "success_run"]

DEMO_ID = HandoffId(uuid.UUID(int=1))
DEMO_TIMING = HandoffTransferTiming(
    mode=KvTransferTimingMode.DESTINATION_MISSING,
    full_prompt_tokens=4096,
    kv_bytes_per_token=131_072,
    bandwidth_gb_s=50.0,
)
DEMO_MISSING_TOKENS = 4000

# The fact a cooperative runtime reports once it has performed an acknowledged action.
_FACT_AFTER: dict[type, Callable[[HandoffId], HandoffFact]] = {
    HandoffAction.SubmitPrefill: lambda hid: HandoffFact.SourceHeld(hid, DEMO_TIMING),
    HandoffAction.ReserveDestination: lambda hid: HandoffFact.DestinationReserved(
        hid, DEMO_MISSING_TOKENS
    ),
    HandoffAction.StartTransfer: HandoffFact.TransferCompleted,
}

Call = tuple[str, Callable[[], list[IssuedHandoffAction]]]


def success_run(coordinator: HandoffCoordinatorCore) -> Iterator[Call]:
    """The calls of a cooperative runtime: acknowledge each action, then report its fact.

    Yields (description, call) pairs; the caller performs each call, and the actions it
    returns feed the calls that follow.  Stops after `Complete` is issued.
    """
    hid = coordinator.handoff_id
    pending: list[IssuedHandoffAction] = []

    def start() -> list[IssuedHandoffAction]:
        pending.extend(issued := coordinator.start())
        return issued

    yield "start()", start
    while pending:
        issued_action = pending.pop(0)
        kind = type(issued_action.action)
        if kind is HandoffAction.Complete:
            return
        outcome = FITTING_OUTCOME[kind]

        def acknowledge(
            issued_action: IssuedHandoffAction = issued_action,
            outcome: HandoffActionOutcome = outcome,
        ) -> list[IssuedHandoffAction]:
            pending.extend(issued := coordinator.on_action_outcome(issued_action.id, outcome))
            return issued

        yield f"on_action_outcome({issued_action.id.value}, {outcome})", acknowledge
        make_fact = _FACT_AFTER.get(kind)
        if make_fact is not None:
            fact = make_fact(hid)

            def report(fact: HandoffFact = fact) -> list[IssuedHandoffAction]:
                pending.extend(issued := coordinator.on_fact(fact))
                return issued

            yield f"on_fact({type(fact).__name__})", report


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the demo's options."""
    parser.add_argument(
        "--reopen",
        action="store_true",
        help="after success, report Canceled and show the reopened cleanup",
    )


def run(args: argparse.Namespace) -> int:
    """Print the trace of one successful handoff per order."""
    for order in HandoffOrder:
        coordinator = HandoffCoordinatorCore(DEMO_ID, order)
        print(f"{order.name} ({order.value})")
        for number, (description, call) in enumerate(success_run(coordinator), start=1):
            _show(coordinator, number, description, call)
        if args.reopen:
            reopen = functools.partial(coordinator.on_fact, HandoffFact.Canceled(DEMO_ID))
            _show(coordinator, 99, "on_fact(Canceled)", reopen)
        print(f"  completion: {coordinator.completion and coordinator.completion.name}")
        print(f"  lifecycle:  {', '.join(event.name for event in coordinator.lifecycle)}")
        print()
    return 0


def _show(
    coordinator: HandoffCoordinatorCore,
    number: int,
    description: str,
    call: Callable[[], list[IssuedHandoffAction]],
) -> None:
    before = coordinator.chart_state
    issued = call()
    actions = ", ".join(f"#{item.id.value} {_describe(item.action)}" for item in issued)
    print(f"  {number:2}. {description:34} {before:>22} -> {coordinator.chart_state:<22} {actions}")


def _describe(action: HandoffAction) -> str:
    name = type(action).__name__
    if isinstance(action, HandoffAction.StartTransfer):
        return f"{name}(delay_ms={action.delay_ms:.3f})"
    return name

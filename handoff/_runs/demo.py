"""`handoff demo`: drive one handoff of each order and print the trace, call by call."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from handoff import _cli
from handoff._chart.shipped import CHARTS
from handoff._coordinator.core import HandoffCoordinatorCore
from handoff._system.bound import Runaway, cut
from handoff._system.call import HANDOFF_ID
from handoff._system.runtime import DEMO_WORKLOAD, CooperativeRuntime
from handoff._values.messages import HandoffAction, HandoffFact, IssuedHandoffAction
from handoff._values.values import HandoffOrder

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the demo's options."""
    parser.add_argument(
        "--reopen",
        action="store_true",
        help="after success, report Canceled and show the reopened cleanup to its completion",
    )
    _cli.add_chart_options(parser, order=None)


def run(args: argparse.Namespace) -> int:
    """Print the trace of one successful handoff per order or chart (and of its reopening)."""
    runs: list[tuple[HandoffOrder, type[HandoffChart] | None]] = (
        [(chart.order, chart) for chart in args.chart]
        if args.chart
        else [(order, None) for order in HandoffOrder]
    )
    for order, chart in runs:
        coordinator = HandoffCoordinatorCore(HANDOFF_ID, chart=chart or CHARTS[order])
        runtime = CooperativeRuntime(DEMO_WORKLOAD)
        title = f"{order.name} ({order.value})"
        print(title if chart is None else f"{coordinator.chart_name} (order {order.value})")
        issued: list[HandoffAction] = []
        number = _drive(coordinator, runtime, issued, first=1)
        if args.reopen:
            # The client cancels after the answer was delivered: the destination still holds
            # the request, so the coordinator cleans it up again and completes as CANCELED.
            runtime.report(HandoffFact.Canceled(HANDOFF_ID))
            _drive(coordinator, runtime, issued, first=number)
        print(f"  completion: {coordinator.completion and coordinator.completion.name}")
        print(f"  lifecycle:  {', '.join(event.name for event in coordinator.lifecycle)}")
        print()
    return 0


def _drive(
    coordinator: HandoffCoordinatorCore,
    runtime: CooperativeRuntime,
    issued_so_far: list[HandoffAction],
    first: int,
) -> int:
    """Make the runtime's calls until it has none left, numbering them from `first`.

    Returns the number the next call would get.  A handoff issuing more actions than the contract
    allows is cut where the review cuts it, as a failure naming the chart and the loop.
    """
    number = first
    while (call := runtime.next_call()) is not None:
        before = coordinator.chart_state
        issued = call.send(coordinator)
        try:
            cut(coordinator.chart_name, issued_so_far, call, issued)
        except Runaway as error:
            raise _cli.CommandError(f"{error} (`handoff review` shows it as Bound)") from None
        issued_so_far.extend(item.action for item in issued)
        runtime.answered(issued)
        after = coordinator.chart_state
        line = f"  {number:2}. {call.describe():34} {before:>22} -> {after:<22} {_actions(issued)}"
        print(line.rstrip())
        number += 1
    return number


def _actions(issued: list[IssuedHandoffAction]) -> str:
    return ", ".join(f"#{item.id.value} {_describe(item.action)}" for item in issued)


def _describe(action: HandoffAction) -> str:
    name = type(action).__name__
    if isinstance(action, HandoffAction.StartTransfer):
        return f"{name}(delay_ms={action.delay_ms:.3f})"
    return name

"""Command line: `handoff <command>` (also `python -m handoff`)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

# Each command lives in its own module exposing `configure(parser)` and `run(args) -> int`.
# Those modules import optional extras (graphviz, …) inside `run`, so a command that does
# not need an extra works without it, and the missing extra is reported in one line.
_COMMANDS = {
    "demo": ("handoff._runs.demo", "drive one handoff of each order and print the trace"),
    "review": ("handoff._review.cli", "explore every reachable configuration and check it"),
    "diagrams": ("handoff._docs.cli", "write the lifecycle diagrams and generated docs"),
    "simulate": (
        "handoff._runs.simulate_cli",
        "simulate many handoffs under faults and check them",
    ),
    "replay": ("handoff._runs.replay_cli", "replay recorded traces against fresh coordinators"),
    "export": (
        "handoff._review.promela",
        "write a chart and the review's world as a Promela model",
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    parser = argparse.ArgumentParser(
        prog="handoff",
        description="Prefill-to-decode KV-cache handoff, defined as a statechart per order.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, summary) in _COMMANDS.items():
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.set_defaults(module_name=module_name)
        _module(module_name).configure(sub)
    args = parser.parse_args(argv)
    status: int = _module(args.module_name).run(args)
    return status


def _module(name: str) -> Any:
    return importlib.import_module(name)


if __name__ == "__main__":
    sys.exit(main())

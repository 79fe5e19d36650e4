"""Command line: `handoff <command>` (also `python -m handoff`)."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence

from handoff import _cli
from handoff._docs import cli as diagrams
from handoff._docs import explain
from handoff._review import cli as review
from handoff._review import promela
from handoff._review.judge import judge
from handoff._runs import demo, replay_cli, simulate_cli

# Each command module exposes `configure(parser)` and `run(args) -> int`, and imports its
# optional extras (graphviz, ...) inside `run`: `handoff --help` stays fast, and a command
# that does not need an extra works without it.
_COMMANDS = (
    ("demo", demo, "drive one handoff of each order and print the trace"),
    ("review", review, "explore every reachable configuration and check it"),
    ("diagrams", diagrams, "write the lifecycle diagrams and generated docs"),
    ("simulate", simulate_cli, "simulate many handoffs under faults and check them"),
    ("replay", replay_cli, "replay recorded traces against fresh coordinators"),
    ("export", promela, "write a chart and the review's world as a Promela model"),
)

# The runs wing cannot see the review, nor the review the diagrams: the command line, above
# every wing, hands replay the review's judge and the review the explain writer.
_RUNS = {
    "replay": functools.partial(replay_cli.run, monitors=(judge,)),
    "review": functools.partial(review.run, explain=explain.write_explain),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    return _cli.run(parsers, argv)


def parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser, and each command's parser by name."""
    top = _cli.Parser(
        prog="handoff",
        description="Prefill-to-decode KV-cache handoff, defined as a statechart per order.",
        epilog=f"`handoff COMMAND --help` explains a command. Installed as {_cli.DISTRIBUTION}.",
    )
    _cli.add_version(top)
    subparsers = top.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_cli.Parser
    )
    commands: dict[str, argparse.ArgumentParser] = {}
    for name, module, summary in _COMMANDS:
        command = subparsers.add_parser(name, help=summary, description=summary)
        command.set_defaults(run=_RUNS.get(name, module.run))
        module.configure(command)
        commands[name] = command
    return top, commands


if __name__ == "__main__":
    sys.exit(main())

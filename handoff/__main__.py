"""Command line: `handoff <command>` (also `python -m handoff`)."""

from __future__ import annotations

import sys

try:  # Ctrl-C while the command line is still loading: as quiet as Ctrl-C later
    import argparse
    import importlib
    from collections.abc import Callable, Collection, Sequence
    from types import ModuleType
    from typing import TYPE_CHECKING

    from handoff import _cli

    if TYPE_CHECKING:
        from pathlib import Path

        from handoff._review.explore import Review
except KeyboardInterrupt:
    print("handoff: error: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

# Each command module exposes `configure(parser)` and `run(args) -> int`.  Only the command
# being run is imported and configured: `handoff --help` loads no command, and a command pays
# for its own imports alone.  Optional extras (graphviz, ...) are imported inside `run`.
_COMMANDS = {
    "demo": ("handoff._runs.demo", "drive one handoff of each order and print the trace"),
    "review": ("handoff._review.cli", "explore every reachable configuration and check it"),
    "diagrams": ("handoff._docs.cli", "draw charts' lifecycle and sequence diagrams into a folder"),
    "simulate": (
        "handoff._runs.simulate_cli",
        "simulate many handoffs under faults and check them",
    ),
    "replay": ("handoff._runs.replay_cli", "replay recorded traces against fresh coordinators"),
    "conform": (
        "handoff._review.conform.cli",
        "hold an implementation that speaks the conformance protocol to the chart",
    ),
    "export": (
        "handoff._review.spin.export",
        "write a chart and the review's world as a Promela model",
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        chosen = [next((word for word in words if not word.startswith("-")), "")]
        return _cli.run(lambda: parsers(only=chosen), words)
    except KeyboardInterrupt:  # between the calls `_cli.run` guards
        return _cli.INTERRUPTED


def parsers(
    only: Collection[str] | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser, and each command's parser by name: every command configured, or
    only the commands named in `only` (the others are listed, for `--help` and misspellings)."""
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
    for name, (module_name, summary) in _COMMANDS.items():
        command = subparsers.add_parser(name, help=summary, description=summary)
        if only is None or name in only:
            module = importlib.import_module(module_name)
            command.set_defaults(run=_runner(name, module))
            module.configure(command)
        commands[name] = command
    return top, commands


def _runner(name: str, module: ModuleType) -> Callable[[argparse.Namespace], int]:
    """`module.run`, handed what it cannot import itself: the runs wing cannot see the
    review, nor the review the diagrams, so the command line, above every wing, gives replay
    the review's judge, the simulation its review of a chart alone, and the review the
    explain writer."""
    if name == "replay":
        from handoff._review.judge import judge, judge_system_run

        return lambda args: module.run(args, monitors=(judge,), systems=judge_system_run)
    if name == "simulate":
        from handoff._review.judge import review_alone

        return lambda args: module.run(args, alone=review_alone)
    if name == "review":

        def explain(reviews: Sequence[Review], directory: Path) -> list[str]:
            # The diagram writers cost a review that explains nothing 45 ms to import.
            from handoff._docs.explain import write_explain

            return write_explain(reviews, directory)

        return lambda args: module.run(args, explain=explain)
    run: Callable[[argparse.Namespace], int] = module.run
    return run


if __name__ == "__main__":
    sys.exit(main())

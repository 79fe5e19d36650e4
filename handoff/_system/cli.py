"""The command line's words for a `System`: the world's options declared once and read back
once, for every command that takes a world (`handoff review`, `handoff simulate`, `handoff
export promela`).

Each command names which of the options it takes (`Options`): the review and the export take
them all, the simulation no `--failures` (it injects faults at a rate) and its own
`--concurrency` (handoffs in flight, with or without workers).  `system_of` turns what was
given into a `System`, or None when neither `--workers` nor `--runtime` was given, refusing an
option about the workers without them.  The runtime (`--runtime`, else the default one) fills
in the runtime's settings; `--acknowledge` and `--workers` override its own.
"""

from __future__ import annotations

import argparse
import enum
import math
from typing import TYPE_CHECKING, Any

from handoff import _cli
from handoff._system.config import (
    DEFAULT_FAILURES,
    Resend,
    Restart,
    System,
    acknowledge_of,
)
from handoff._system.faults import NETWORK, Fault

if TYPE_CHECKING:
    from handoff._system.profiles import RuntimeProfile
    from handoff._system.workers import WorkerContract

__all__ = [
    "FAULTS_HELP",
    "RUNTIME_HELP",
    "WORKERS_HELP",
    "Options",
    "add_system_options",
    "system_of",
]

FAULTS_HELP = ", ".join(fault.value for fault in NETWORK)

WORKERS_HELP = (
    "forgetful (a cancel for an unseen request is answered Noop and forgotten), tombstone "
    "(canceled ids are remembered and late work dropped), tombstone:K (only the last K), "
    "source=A,destination=B (one per role), or MODULE:NAME, a WorkerContract of your own"
)
"""How every command's `--workers` help ends."""

# Each unit more multiplies the configurations a review explores: past a few it never ends.
_BUDGETS = _cli.whole_number(1, 9, " (each one more multiplies what a review explores)")
_FAILURES = _cli.whole_number(0, 4, " (each one more multiplies what a review explores)")
_HANDOFFS = _cli.whole_number(1, 4, " (each handoff more multiplies what a review explores)")
_SLOTS = _cli.whole_number(1)


class Options(enum.Flag):
    """Which of the world's options a command takes, beyond `--workers`, `--fifo`, `--slots`,
    `--faults`, `--fault-budget`, `--acknowledge`, `--runtime` and the runtime's duties
    (`--no-retry`, `--resend`, `--restart`, `--deadline`, `--drain-transfers`), which every
    world command takes."""

    NONE = 0
    FAILURES = enum.auto()
    """`--failures K`: the terminal facts and failed works a reviewed run suffers."""
    CONCURRENCY = enum.auto()
    """`--concurrency N`: handoffs sharing the workers in a reviewed world."""
    REVIEWED = FAILURES | CONCURRENCY


def contract_argument(text: str) -> WorkerContract:
    """An argparse type: a worker contract, tabulated once so that a contract that raises,
    answers what is not a reaction or keeps hidden state is a usage error before any work."""
    from handoff._system.workers import ContractTable, find_contract  # only when one is named

    try:
        found = find_contract(text)
        ContractTable(found)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return found


def runtime_argument(text: str) -> RuntimeProfile:
    """An argparse type: a runtime profile, shipped or `MODULE:NAME`."""
    from handoff._system.profiles import find_runtime

    try:
        return find_runtime(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def acknowledge_argument(text: str) -> str:
    """An argparse type: `on-send`, `on-reply` or `on-send:KIND,…`, checked, kept as given."""
    try:
        acknowledge_of(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def faults_argument(text: str) -> frozenset[Fault]:
    """An argparse type: `duplicate,lose,crash`, any of them, each once."""
    found: set[Fault] = set()
    for name in (part.strip().casefold() for part in text.split(",")):
        fault = next((fault for fault in NETWORK if fault.value == name), None)
        if fault is None:
            raise argparse.ArgumentTypeError(
                f"unknown fault {name!r}: expected a comma-separated list of {FAULTS_HELP}"
            )
        found.add(fault)
    return frozenset(found)


RESTART_HELP = ", ".join(Restart.WORDS)


def restart_argument(text: str) -> Restart:
    """An argparse type: `loses-inbox,keeps-slots`, any of `Restart.WORDS`, each once."""
    try:
        return Restart.of([part.strip().casefold() for part in text.split(",")])
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error}, comma-separated") from None


def deadline_argument(text: str) -> float:
    """An argparse type: a deadline in milliseconds, a positive number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < math.inf:  # also refuses NaN
        raise argparse.ArgumentTypeError(
            f"expected a deadline in milliseconds, a positive number such as 50, got {text!r}"
        )
    return value


def add_system_options(
    parser: argparse.ArgumentParser, *, workers_help: str, options: Options = Options.REVIEWED
) -> None:
    """Declare `--workers` and the options naming the rest of its world, read back by
    `system_of`."""
    parser.add_argument(
        "--workers",
        type=contract_argument,
        metavar="CONTRACT",
        help=f"{workers_help}; {WORKERS_HELP}",
    )
    parser.add_argument(
        "--fifo",
        action="store_true",
        help="with --workers: deliver each worker's messages in the order they were sent "
        "(default: in any order)",
    )
    parser.add_argument(
        "--slots",
        type=_SLOTS,
        metavar="C",
        help="with --workers: each worker holds at most C KV slots and refuses work that "
        "would take one more (default: unbounded)",
    )
    parser.add_argument(
        "--faults",
        type=faults_argument,
        metavar="FAULT,…",
        help=f"with --workers: let a handoff suffer these faults too ({FAULTS_HELP}): a "
        "message delivered twice, a message lost (the runtime reports TimedOut), a worker "
        "that restarts and forgets the request",
    )
    parser.add_argument(
        "--fault-budget",
        type=_BUDGETS,
        metavar="K",
        help="with --faults: how many faults of each kind a handoff suffers at most: K "
        "duplicates and K losses of its own messages; a restart strikes every handoff live on "
        "the worker at once, so each lives through at most K restarts (a review's handoffs are "
        "live from start to end: at most K restarts a run) (default 1)",
    )
    parser.add_argument(
        "--acknowledge",
        type=acknowledge_argument,
        metavar="POLICY",
        help="with --workers: when the runtime reports Submitted, Accepted and Scheduled: "
        "on-send, as it sends the work, before the worker has it (the weaker guarantee, as "
        "the documented asyncio runtime gives it); on-reply, once the worker has done the "
        "work; on-send:KIND,… those kinds on send, the rest on reply (default: the "
        "runtime's; on-send:StartTransfer for the default runtime, offline)",
    )
    parser.add_argument(
        "--runtime",
        type=runtime_argument,
        metavar="NAME",
        help=f"the runtime around the workers: {RUNTIME_HELP}",
    )
    for option, flag, bounded, metavar, what in _REVIEWED_OPTIONS:
        if flag in options:
            parser.add_argument(option, type=bounded, metavar=metavar, help=what)
    _add_runtime_options(parser)


def _add_runtime_options(parser: argparse.ArgumentParser) -> None:
    """The runtime's duties beyond carrying messages, each at the contract's default."""
    parser.add_argument(
        "--no-retry",
        action="store_true",
        default=None,
        help="with --workers: a runtime that gives up on a cancel acknowledged as failed "
        "(default: it sends it again until it is Applied or Noop, as the contract demands)",
    )
    parser.add_argument(
        "--resend",
        choices=[policy.value for policy in Resend],
        help="with --workers: what the runtime sends again once its timer says a message was "
        "lost (--faults lose), instead of reporting TimedOut: none, cleanups (a release or "
        "cancel and its acknowledgement), everything (default: none)",
    )
    parser.add_argument(
        "--restart",
        type=restart_argument,
        metavar="CHOICE,…",
        help="with --faults crash: what a worker's restart does besides forgetting its "
        f"requests, any of {RESTART_HELP} (default: none of them: its inbox survives, its "
        "slots are freed, its tombstones forgotten); refuses-unvouched also refuses a transfer "
        "written into a destination that restarted since its reservation",
    )
    parser.add_argument(
        "--deadline",
        type=deadline_argument,
        nargs="?",
        const=math.inf,
        metavar="MS",
        help="with --workers: each handoff has a deadline, MS after its start: the runtime "
        "reports TimedOut when it fires unless the handoff completed first (once, besides "
        "--failures), and what is in flight still arrives; a review is untimed, so there it "
        "may fire at any moment and MS may be left out (default: no deadline)",
    )
    parser.add_argument(
        "--drain-transfers",
        action="store_true",
        default=None,
        help="with --workers: the runtime holds a handoff's CancelDestination while a "
        "StartTransfer of that handoff has not reached the source yet, so the destination "
        "never frees the slot a transfer is about to write (default: the runtime's; none of "
        "the shipped runtimes does)",
    )


_REVIEWED_OPTIONS = (
    (
        "--failures",
        Options.FAILURES,
        _FAILURES,
        "K",
        "with --workers: how many terminal facts (Failed, TimedOut, Canceled) and failed works "
        f"a run suffers at most, besides --faults (default {DEFAULT_FAILURES}; from 0 to 4)",
    ),
    (
        "--concurrency",
        Options.CONCURRENCY,
        _HANDOFFS,
        "N",
        "with --workers: N handoffs live at once, sharing the source and the destination "
        "worker (default 1; from 1 to 4)",
    ),
)
"""The options only a reviewed world takes: each multiplies what the review explores."""


RUNTIME_HELP = (
    "offline (the serving simulator's offline replay: StartTransfer acknowledged at once, the "
    "rest on the worker's reply; forgetful workers unless --workers says otherwise; the "
    "default), live (its live mocker: acknowledged on reply, early facts held back, one "
    "action at a time, tombstones that expire, and its own cleanup when a session ends "
    "instead of Failed, TimedOut or Canceled; tombstone workers unless --workers says "
    "otherwise), eager (every take and transfer acknowledged as it is sent, as reviews "
    "assumed before runtimes had names), or MODULE:NAME, a RuntimeProfile of your own; "
    "--acknowledge and --workers override the runtime's"
)
"""How every command's `--runtime` help reads."""


_ABOUT_WORKERS = (
    ("--faults", "faults"),
    ("--acknowledge", "acknowledge"),
    ("--runtime", "runtime"),
    ("--slots", "slots"),
    ("--failures", "failures"),
    ("--property", "property"),
    ("--no-retry", "no_retry"),
    ("--resend", "resend"),
    ("--restart", "restart"),
    ("--deadline", "deadline"),
    ("--drain-transfers", "drain_transfers"),
)
"""The options that say something of the workers, and where argparse keeps each."""


def system_of(
    args: argparse.Namespace, options: Options = Options.REVIEWED, **review: Any
) -> System | None:
    """The system the options in `args` name (declared with `options`), or None for no
    workers; `review` gives the review's own fields (`properties`, `symmetry`).  An option
    about the workers without `--workers` is a usage error."""
    if _given(args, "fault_budget") is not None and _given(args, "faults") is None:
        raise _cli.UsageError("--fault-budget bounds the faults injected: give --faults too")
    concurrency = _given(args, "concurrency") if Options.CONCURRENCY in options else None
    profile = _given(args, "runtime")
    contract = _given(args, "workers")
    if contract is None and profile is not None:
        contract = profile.contract()
        if contract is None:
            raise _cli.UsageError(
                f"the runtime {profile.name} names no workers: give --workers too"
            )
    if contract is None:
        if _given(args, "fifo"):
            raise _cli.UsageError("--fifo orders the workers' messages: give --workers too")
        about: tuple[tuple[str, str], ...] = _ABOUT_WORKERS
        if Options.CONCURRENCY in options:  # else `--concurrency` is the command's own
            about = (*about, ("--concurrency", "concurrency"))
        for option, name in about:
            if _given(args, name) is not None:
                raise _cli.UsageError(f"{option} is about the workers: give --workers too")
        return None
    _check_runtime_options(args)
    budget, failures = _given(args, "fault_budget"), _given(args, "failures")
    deadline = _given(args, "deadline")
    if deadline == math.inf and Options.FAILURES not in options:
        raise _cli.UsageError("--deadline takes MS in a simulation: a time after the start")
    system = System(
        contract,
        fifo=bool(_given(args, "fifo")),
        faults=DEFAULT_FAILURES if failures is None else failures,
        injected=_given(args, "faults") or frozenset(),
        budget=1 if budget is None else budget,
        concurrency=1 if concurrency is None else concurrency,
        slots=_given(args, "slots"),
        deadline=deadline,
        **_runtime_settings(profile, args),
        **review,
    )
    if _given(args, "resend") not in (None, Resend.NONE.value) and not system.loses:
        raise _cli.UsageError(
            "--resend says what is sent again once lost: give --faults lose, or "
            "--restart loses-inbox, too"
        )
    return system


def _check_runtime_options(args: argparse.Namespace) -> None:
    """A runtime's option about a fault the world does not suffer is a usage error."""
    injected = _given(args, "faults") or frozenset()
    restart = _given(args, "restart")
    if restart is not None and Fault.RESTART not in injected:
        raise _cli.UsageError("--restart says what a restart does: give --faults crash too")


def _runtime_settings(profile: RuntimeProfile | None, args: argparse.Namespace) -> dict[str, Any]:
    """The `System` fields the runtime sets (the default one's, when none was named), with
    each explicit option (`--acknowledge`, `--no-retry`, `--resend`, `--restart`,
    `--drain-transfers`) over the
    runtime's own."""
    if profile is None:
        from handoff._system.profiles import DEFAULT_RUNTIME

        profile = DEFAULT_RUNTIME
    settings = profile.settings()
    acknowledge = _given(args, "acknowledge")
    if acknowledge is not None:
        settings["acknowledge"] = acknowledge_of(acknowledge)
    if _given(args, "no_retry"):
        settings["retry"] = False
    resend = _given(args, "resend")
    if resend is not None:
        settings["resend"] = Resend(resend)
    restart = _given(args, "restart")
    if restart is not None:
        settings["restart"] = restart
    if _given(args, "drain_transfers"):
        settings["drains_transfers"] = True
    return settings


def _given(args: argparse.Namespace, name: str) -> Any:
    """What the option kept as `name` was given (None: not given, or not declared)."""
    return getattr(args, name, None)

"""`handoff conform -- COMMAND [ARGS…]`: hold an implementation to the chart, call by call.

COMMAND is started once and spoken to in the protocol of docs/conformance.md.  For each order
(or `--chart`), the suite reaches every configuration and makes every call from it (going on
past each refused or dropped call as a cooperating runtime would), then one cooperative handoff
per payload class, then `--walks` random walks from `--seed`; every answer is compared with the
chart's.  Exit 0 when every answer agrees, 1 with the shortest counterexample when one does not
(`--trace-out FILE` writes it as a trace `handoff replay` reads, `--vectors-out FILE` as test
vectors), 2 when the implementation breaks the protocol (no answer within `--timeout`, a line
past its limit, an exit, a line that is not the protocol, an answer for another handoff).
`--export FILE` writes the suites as test vectors instead of, or before, running;
`--vectors FILE` sends test vectors to COMMAND instead of the suites.  SIGTERM ends the check
like Ctrl-C, and the implementation with everything it started.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import shlex
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

import attrs

from handoff import _cli, _files
from handoff._compile.lookup import spelling
from handoff._compile.table import compiled
from handoff._review.conform.check import Broken, Checker, ImplementationDivergence
from handoff._review.conform.child import Implementation, adopt_orphans, clip
from handoff._review.conform.protocol import (
    CallRequest,
    Close,
    Hello,
    Open,
    ProtocolError,
    Reply,
    write,
)
from handoff._review.conform.suite import ChartCrashed, Model, Run, Suite, build_suite
from handoff._review.conform.vectors import read_vectors, vector_line, vectors_header
from handoff._runs.trace import TraceError, write_trace

__all__ = ["configure", "run"]


class _BrokenProtocol(_cli.CommandError):
    """The implementation broke the protocol: there is no answer to judge (exit 2)."""

    status = 2


class _Terminated(_cli.CommandError):
    """SIGTERM ended the check (exit 143, as a shell reports a process SIGTERM ended)."""

    status = 128 + signal.SIGTERM


@contextlib.contextmanager
def _terminable() -> Iterator[None]:
    """SIGTERM raises `_Terminated` inside the block, so the implementation is ended with it."""

    def terminated(_signum: int, _frame: FrameType | None) -> None:
        raise _Terminated("terminated (SIGTERM)")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the conformance check's options."""
    _cli.add_chart_options(parser, order="each", order_help="the chart(s) to hold it to")
    parser.add_argument(
        "--walks",
        type=_cli.whole_number(0, 1_000_000),
        default=100,
        metavar="N",
        help="random walks to make after the suite",
    )
    _cli.add_seed(parser, "the random walks")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long the implementation may take to answer a call",
    )
    parser.add_argument(
        "--trace-out",
        type=_cli.new_file,
        metavar="FILE",
        help="write the first counterexample as a trace that `handoff replay` reads",
    )
    parser.add_argument(
        "--export",
        type=_cli.new_file,
        metavar="FILE",
        help="write the suites as test vectors (JSON Lines: each request and the answer it "
        "must get) for an implementation's own test runner; COMMAND is then optional",
    )
    parser.add_argument(
        "--vectors-out",
        type=_cli.new_file,
        metavar="FILE",
        help="write the first counterexample as test vectors, which `--vectors` replays on an "
        "implementation",
    )
    parser.add_argument(
        "--vectors",
        type=_cli.existing_file,
        metavar="FILE",
        help="send the test vectors in FILE (from --export or --vectors-out) to the "
        "implementation instead of the suites; exit 1 if an answer differs",
    )
    parser.add_argument(
        "implementation",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND [ARGS…]",
        help="the implementation to start, e.g. `-- python -m handoff.conform_driver`",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Build the suites, export them, hold the implementation to them; the exit status."""
    given = args.implementation
    command = given[1:] if given[:1] == ["--"] else given
    if args.vectors is not None and (not command or args.export or args.trace_out):
        raise _cli.UsageError(
            "--vectors FILE sends the vectors to an implementation: give one after --, "
            "and neither --export nor --trace-out"
        )
    if not command and args.export is None:
        raise _cli.UsageError(
            "give the implementation to check after --, e.g. "
            "`handoff conform -- python -m handoff.conform_driver` (or --export FILE)"
        )
    if not command:
        _export(_suites(args), args)
        return 0
    with _terminable():
        return _start(command, args)


def _start(command: list[str], args: argparse.Namespace) -> int:
    adopted = adopt_orphans()
    try:
        return _hold(command, args, adopted=adopted)
    finally:
        if adopted:
            adopt_orphans(adopt=False)


def _hold(command: list[str], args: argparse.Namespace, *, adopted: bool) -> int:
    began = time.perf_counter()
    try:  # started first: it starts up while the suites are built
        implementation = Implementation(command, args.timeout, adopted=adopted)
    except OSError as error:
        raise _cli.UsageError(f"cannot start {shlex.join(command)}: {error.strerror}") from None
    with implementation:
        if args.vectors is not None:
            return _replay(_vector_runs(args.vectors), implementation, args)
        suites = _suites(args)
        built = time.perf_counter() - began
        if args.export is not None:
            _export(suites, args)
        return _conform(suites, implementation, args, built)


def _vector_runs(path: Path) -> list[tuple[Model, Run]]:
    """The runs a vectors file holds: each opening and the calls after it, for its handoff."""
    runs: list[tuple[Model, Run]] = []
    requests: list[str] = []
    expected: list[str] = []
    try:
        for number, send, expect in read_vectors(path):
            if isinstance(send, Close | Hello):
                continue  # the check says these itself
            if isinstance(send, Open):
                requests, expected = [], []
                model = Model(
                    send.order, fallback_transfer_delay_ms=send.fallback_transfer_delay_ms
                )
                runs.append((model, Run(send.handoff_id, (), ())))
            elif not runs or not isinstance(send, CallRequest) or not isinstance(expect, Reply):
                raise ProtocolError(f"{path}:{number}: expected an opening, or a call after one")
            elif send.handoff_id != runs[-1][1].handoff_id:
                raise ProtocolError(
                    f"{path}:{number}: a call for another handoff than the last opened"
                )
            requests.append(write(send))
            expected.append(write(expect))
            model, run = runs[-1]
            runs[-1] = (
                model,
                attrs.evolve(run, requests=tuple(requests), expected=tuple(expected)),
            )
    except ProtocolError as error:
        raise _cli.UsageError(str(error)) from None
    except OSError as error:
        raise _cli.CommandError(f"cannot read {path}: {error.strerror}") from None
    return runs


def _replay(
    runs: Sequence[tuple[Model, Run]], implementation: Implementation, args: argparse.Namespace
) -> int:
    began = time.perf_counter()
    checker = Checker(implementation)
    try:
        _greet(checker)
        found = checker.replay(runs)
    except Broken as error:
        raise _BrokenProtocol(str(error)) from None
    said = f"{args.vectors}: {len(runs):,} handoffs, {checker.calls:,} calls"
    print(f"{said}: {'OK' if found is None else 'DIVERGED'}")
    if found is not None:
        _report(attrs.evolve(found, chart_known=False))
        _write_vectors(found, args)
    print(f"{'OK' if found is None else 'DIVERGED'} ({_rate(checker, began, 0.0)})")
    return 0 if found is None else 1


def _greet(checker: Checker) -> None:
    hello = checker.hello()
    name = _clipped(hello.implementation) or "unnamed"
    command = shlex.join(checker.implementation.command)
    print(f"conform {_clipped(command)} ({name}, protocol {hello.version})")
    if checker.unreported:
        unchecked = " and ".join(sorted(checker.unreported))
        print(f"not checked: {unchecked} (the implementation's hello says it does not report it)")


def _rate(checker: Checker, began: float, built: float) -> str:
    """The calls sent, how fast the implementation answered, and what the check took."""
    wall = time.perf_counter() - began
    waited = max(checker.waited, 1e-9)
    return (
        f"{checker.calls:,} calls sent in {wall:.1f} s; the implementation answered "
        f"{checker.calls / waited:,.0f} calls/s over the {checker.waited:.1f} s the check "
        f"waited for it; building the suites took {built:.1f} s and judging "
        f"{max(0.0, wall - checker.waited - built):.1f} s"
    )


def _write_vectors(found: ImplementationDivergence, args: argparse.Namespace) -> None:
    if args.vectors_out is None:
        return
    run, last = found.run, found.index + 1
    lines = list(map(vector_line, run.requests[:last], run.expected[:last]))
    _files.write_text(
        args.vectors_out, "".join(f"{line}\n" for line in [vectors_header(len(lines)), *lines])
    )
    replay = f"`handoff conform --vectors {args.vectors_out} -- COMMAND` replays it"
    print(f"counterexample written to {args.vectors_out} as {len(lines)} test vectors ({replay})")


def _suites(args: argparse.Namespace) -> list[Suite]:
    try:
        return [build_suite(model) for model in _models(args)]
    except ChartCrashed as error:
        raise _cli.CommandError(str(error)) from None


def _models(args: argparse.Namespace) -> list[Model]:
    if args.chart:
        return [Model(compiled(chart).order, chart, spelling(chart)) for chart in args.chart]
    return [Model(order) for order in args.order]


def _export(suites: Sequence[Suite], args: argparse.Namespace) -> None:
    lines: list[str] = []
    opened = 0
    for suite in suites:
        for run in suite.runs(opened):
            lines += map(vector_line, run.requests, run.expected)
        for _, run in suite.probe_runs(opened + len(suite.cases)):
            lines += map(vector_line, run.requests, run.expected)
        opened += suite.handoffs
    _files.write_text(
        args.export, "".join(f"{line}\n" for line in [vectors_header(len(lines)), *lines])
    )
    print(f"wrote {len(lines):,} test vectors ({opened:,} handoffs) to {args.export}")


def _conform(
    suites: Sequence[Suite], implementation: Implementation, args: argparse.Namespace, built: float
) -> int:
    began = time.perf_counter()
    checker = Checker(implementation)
    first: ImplementationDivergence | None = None
    try:
        _greet(checker)
        for suite in suites:
            found = _check(checker, suite, args)
            first = first or found
    except Broken as error:
        raise _BrokenProtocol(str(error)) from None
    rate = _rate(checker, began - built, built)
    if first is None:
        print(f"OK: every answer is the chart's ({rate})")
        return 0
    if args.trace_out is not None:
        try:
            write_trace(first.trace(), args.trace_out)
        except TraceError as error:
            raise _cli.CommandError(f"cannot write the counterexample: {error}") from None
        replay = "`handoff replay` shows the chart's answers"
        print(f"counterexample written to {args.trace_out} ({replay})")
    _write_vectors(first, args)
    print(f"DIVERGED ({rate})")
    return 1


def _check(
    checker: Checker, suite: Suite, args: argparse.Namespace
) -> ImplementationDivergence | None:
    model = suite.model
    said = (
        f"{model.name}: {suite.configurations:,} configurations, {len(suite.cases):,} cases, "
        f"{len(suite.probes)} payload classes, {suite.calls:,} calls ({suite.covered})"
    )
    found = checker.suite(suite)
    if found is None and args.walks:
        walked, made, found = checker.walks(model, args.seed, args.walks)
        said += f"; {walked:,} walks from seed {args.seed}, {made:,} calls"
    print(f"{said}: {'OK' if found is None else 'DIVERGED'}")
    if found is not None:
        _report(found)
    return found


def _clipped(text: str) -> str:
    """`text` as a report quotes it: clipped, control characters escaped."""
    shown = clip(text)
    return shown.encode("unicode_escape").decode("ascii") if not shown.isprintable() else shown


def _report(divergence: ImplementationDivergence) -> None:
    calls = divergence.calls
    if not divergence.chart_known:
        run = "the run of the vectors that shows it"
    elif not divergence.shrunk:
        run = "the shortest run that shows it"
    elif divergence.past_refusal:
        run = "the run past a refused or dropped call that shows it, shrunk"
    else:
        run = "the walk that shows it, shrunk"
    print(f"  {run}, handoff {divergence.run.handoff_id}:")
    for number, call in enumerate(calls, start=1):
        print(f"    {number:>2}. {call}")
    if divergence.chart_known:
        print(f"  chart state before call {len(calls)}: {divergence.chart_state()}")
    print(f"  the chart answered:          {divergence.expected.describe()}")
    print(f"  the implementation answered: {divergence.answered()}")

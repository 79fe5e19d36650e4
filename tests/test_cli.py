"""The command line: every bad invocation is one line on stderr, never a traceback.

The table runs the real CLI (`python -m handoff`) in subprocesses, in parallel, inside a
sandbox directory that holds a few fixtures; afterwards the sandbox must be unchanged.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import attrs
import pytest
from hostile import Sandbox, finish
from support import run_handoff

from handoff import HandoffOrder, _cli
from handoff.__main__ import _COMMANDS, main, parsers

READ_ONLY = "/proc/self"  # not writable even by root
HUGE = "9" * 5000  # past Python's limit on digits converted by int()


@attrs.frozen
class Bad:
    argv: tuple[str, ...]
    status: int
    says: tuple[str, ...]
    """Fragments the error line must contain."""


def bad(line: str, status: int, *says: str) -> Bad:
    return Bad(tuple(line.split()), status, says)


def each(where: tuple[str, ...], arguments: tuple[str, ...], *says: str) -> list[Bad]:
    """One idea written once: a row for every place it applies to (a command, or a command and
    one of its options) and every bad argument given there; all are usage errors (status 2).

    An empty argument gives the option no value.  The fragments may name `{option}` (the
    place's last word), `{argument}` and `{parent}` (the argument's parent directory).
    """
    return [
        bad(
            f"{place} {argument}",
            2,
            *(
                fragment.format(
                    option=place.split()[-1],
                    argument=argument,
                    parent=os.path.dirname(argument),
                )
                for fragment in says
            ),
        )
        for place in where
        for argument in arguments
    ]


# The places that share an idea: commands, and options taking a value of one kind.
COMMANDS = ("demo", "simulate", "review", "diagrams", "diagrams --check")
COUNTS = ("simulate --handoffs", "simulate --concurrency", "simulate --seed")
ORDERS = ("simulate --order", "review --order", "diagrams --order")
DIRECTORIES = ("simulate --record-failures", "diagrams --out")
WRITTEN = ("simulate --record-failures", "diagrams --out", "review --trace-out")
VALUED = (
    *COUNTS,
    "simulate --fault-rate",
    *ORDERS,
    *DIRECTORIES,
    "review --trace-out",
    "review --format",
)

BAD = [
    # the top level
    bad("", 2, "required: COMMAND"),
    bad("nonsense", 2, "invalid choice: 'nonsense'"),
    bad("--bogus", 2, "COMMAND"),
    # what every command refuses
    *each(COMMANDS, ("--bogus", "extra"), "unrecognized arguments: {argument}"),
    *each(VALUED, ("",), "{option}: expected one argument"),
    # demo
    bad("demo --reopen=yes", 2, "--reopen: ignored explicit argument 'yes'"),
    # simulate: counts
    *each(COUNTS, ("abc", "1.5", HUGE, "1e999999999"), "{option}: expected a whole number"),
    bad("simulate --handoffs -1", 2, "--handoffs: must be at least 1, got -1"),
    # Nothing simulated is nothing to say OK of.
    bad("simulate --handoffs 0", 2, "--handoffs: must be at least 1, got 0"),
    bad("simulate --handoffs 1e13", 2, "--handoffs: must be at most 1,000,000,000"),
    bad("simulate --concurrency 0", 2, "--concurrency: must be at least 1, got 0"),
    bad("simulate --concurrency -5", 2, "--concurrency: must be at least 1"),
    bad("simulate --concurrency 1e9", 2, "--concurrency: must be at most 1,000,000"),
    bad("simulate --handoffs 1e9 --concurrency 1e9", 2, "2 GB"),
    # simulate: the fault rate
    *each(
        ("simulate --fault-rate",),
        ("2", "-0.1", "nan", "inf", "half"),
        "--fault-rate: expected a probability from 0 to 1, got '{argument}'",
    ),
    # orders
    *each(
        ORDERS,
        ("mixed", "both", "sideways"),
        "{option}: unknown order '{argument}': expected SourceFirst or DestinationFirst, or all",
    ),
    # exactly one order: `all` is not among the choices offered
    *each(
        ("export promela --order",),
        ("all", "sideways"),
        "--order: unknown order '{argument}': expected SourceFirst or DestinationFirst (see",
    ),
    # directories read or written, and files written
    *each(
        DIRECTORIES,
        ("afile.txt", "afile.txt/sub"),
        "{option}: {argument} is not a directory",
        "afile.txt is a file",
    ),
    *each(
        WRITTEN,
        (f"{READ_ONLY}/sub",),
        "{option}: cannot write under {argument}: {parent} is read-only",
    ),
    # review
    bad("review --format yaml", 2, "--format: invalid choice: 'yaml'"),
    bad("review --trace-out missing/t.jsonl", 2, "no directory missing; create it first"),
    bad("review --trace-out afile.txt/t.jsonl", 2, "afile.txt is a file"),
    *each(
        ("review --workers", "simulate --workers"),
        ("sloppy",),
        "{option}: unknown worker contract 'sloppy': expected forgetful, tombstone, tombstone:K, "
        "source=A,destination=B or MODULE:NAME",
    ),
    bad("review --workers nowhere:X", 2, "--workers: no module nowhere"),
    bad("review --fifo", 2, "--fifo orders the workers' messages: give --workers too"),
    bad(
        "review --workers tombstone --engine spin --trace-out t.jsonl",
        2,
        "--engine spin writes no system counterexample: drop --trace-out, --explain",
    ),
    # diagrams: it reads no docs, so it takes no docs folder
    bad("diagrams --docs baddocs --out out", 2, "unrecognized arguments: --docs baddocs"),
    # replay
    bad("replay", 2, "required: FILE"),
    bad("replay missing.jsonl", 2, "no file missing.jsonl"),
    bad("replay adir", 2, "adir is a directory, not a file"),
]


def _sandbox(root: Path) -> Path:
    (root / "afile.txt").write_text("a file, not a directory\n")
    (root / "adir").mkdir()
    (root / "baddocs").mkdir()
    (root / "baddocs" / "lifecycle.md").write_bytes(b"caf\xe9, in Latin-1\n")
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _handoff(argv: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_handoff(*argv, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _sandbox(tmp_path_factory.mktemp("cli"))


@pytest.fixture(scope="module")
def results(sandbox: Path) -> dict[Bad, subprocess.CompletedProcess[str]]:
    before = _tree(sandbox)
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = dict(zip(BAD, pool.map(lambda row: _handoff(row.argv, sandbox), BAD), strict=True))
    assert _tree(sandbox) == before, "a refused invocation changed files"
    assert sorted(p.name for p in sandbox.iterdir()) == ["adir", "afile.txt", "baddocs"]
    return done


def test_the_table_is_large_enough() -> None:
    assert len(set(BAD)) == len(BAD) >= 70


@pytest.mark.parametrize("row", BAD, ids=[" ".join(row.argv)[:60] or "(none)" for row in BAD])
def test_a_bad_invocation_is_one_line(
    row: Bad, results: dict[Bad, subprocess.CompletedProcess[str]]
) -> None:
    done = results[row]
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    command = row.argv[0] if row.argv and not row.argv[0].startswith("-") else ""
    prog = f"handoff {command}" if command in _COMMAND_NAMES else "handoff"
    assert done.stderr.startswith(f"{prog}: error: "), done.stderr
    assert all(fragment in done.stderr for fragment in row.says), done.stderr
    assert done.returncode == row.status, done.stderr


_COMMAND_NAMES = set(_COMMANDS)


# -- interrupts and closed pipes ---------------------------------------------------------


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "handoff", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()  # the reader leaves before the demo has written anything
        error = process.stderr.read()
    assert error == b""
    assert process.returncode == _cli.BROKEN_PIPE


def test_ctrl_c_prints_one_line_and_exits_130(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    process = box.start_announced("simulate", "--handoffs", "1e9", "--concurrency", "1000")
    process.send_signal(signal.SIGINT)  # in the simulation, past building the parsers
    ran = finish(process, timeout=300)
    assert ran.err == "handoff simulate: error: interrupted\n"
    assert ran.status == 130


def test_a_dropped_interrupt_after_the_command_said_interrupted_adds_no_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command reports Ctrl-C, and another Ctrl-C, dropped in a finalizer, is still on its
    # way as the command ends (the stand-in deliverer never delivers it): one line, not two.
    monkeypatch.setattr("handoff._process._thread.interrupt_main", lambda: None)

    def run(_: argparse.Namespace) -> int:
        sys.unraisablehook(argparse.Namespace(exc_value=KeyboardInterrupt()))
        _cli.error("handoff demo", "interrupted")
        return _cli.INTERRUPTED

    parsed = argparse.Namespace(command="demo", run=run)
    assert _cli.run(_parsers(monkeypatch, parsed), []) == _cli.INTERRUPTED
    assert capsys.readouterr().err == "handoff demo: error: interrupted\n"


def _failing(exception: BaseException) -> argparse.Namespace:
    def run(_: argparse.Namespace) -> int:
        raise exception

    return argparse.Namespace(command="demo", run=run)


def _parsers(
    monkeypatch: pytest.MonkeyPatch, parsed: argparse.Namespace
) -> Callable[[], tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]]:
    top = _cli.Parser(prog="handoff")
    monkeypatch.setattr(top, "parse_known_args", lambda argv: (parsed, []))
    return lambda: (top, {"demo": _cli.Parser(prog="handoff demo")})


@pytest.mark.parametrize(
    ("exception", "status", "line"),
    [
        (KeyboardInterrupt(), 130, "handoff demo: error: interrupted"),
        (
            PermissionError(13, "Permission denied", "out/x.svg"),
            1,
            "handoff demo: error: out/x.svg: Permission denied; check the path and its permissions",
        ),
        (OSError("disk on fire"), 1, "handoff demo: error: disk on fire; check the path"),
        (_cli.CommandError("the check failed"), 1, "handoff demo: error: the check failed"),
        (_cli.UsageError("--x: bad"), 2, "handoff demo: error: --x: bad"),
    ],
)
def test_failures_inside_a_command_become_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    exception: BaseException,
    status: int,
    line: str,
) -> None:
    assert _cli.run(_parsers(monkeypatch, _failing(exception)), []) == status
    assert capsys.readouterr().err.startswith(line)


def test_a_closed_pipe_in_process_returns_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli.run(_parsers(monkeypatch, _failing(BrokenPipeError())), []) == 141
    assert capsys.readouterr().err == ""


# -- help and version --------------------------------------------------------------------


def _command_parsers() -> Iterator[argparse.ArgumentParser]:
    top, commands = parsers()
    yield top
    yield from commands.values()


@pytest.mark.parametrize("parser", list(_command_parsers()), ids=lambda p: p.prog)
def test_every_option_has_help_and_shows_its_default(parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        assert action.help, f"{parser.prog} {action.option_strings} has no help"
        if not any(action.default is unset for unset in (None, False, argparse.SUPPRESS)):
            assert f"(default: {action.default})" in " ".join(text.split()), action.dest


def test_acknowledge_names_its_default_in_the_help() -> None:
    # Its default is None (the option is only read with --workers): the test above skips it.
    helped = [
        " ".join(parser.format_help().split())
        for parser in _command_parsers()
        if any("--acknowledge" in action.option_strings for action in parser._actions)
    ]
    assert len(helped) >= 2  # review and simulate at least
    for text in helped:
        # The default is the runtime's, and the default runtime's is named.
        assert "(default: the runtime's; on-send:StartTransfer for the default runtime" in text
        assert "--runtime NAME" in text
        assert "the default)" in text  # offline, in --runtime's help


def test_version_names_the_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"kv-handoff {metadata.version('kv-handoff')}\n"


def test_version_from_a_source_tree(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("kv-handoff (not installed")


def test_the_help_epilog_names_the_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "Installed as kv-handoff." in capsys.readouterr().out


# -- values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("SourceFirst", HandoffOrder.SOURCE_FIRST),
        ("SOURCE_FIRST", HandoffOrder.SOURCE_FIRST),
        ("source-first", HandoffOrder.SOURCE_FIRST),
        ("sourcefirst", HandoffOrder.SOURCE_FIRST),
        ("DestinationFirst", HandoffOrder.DESTINATION_FIRST),
        ("destination_first", HandoffOrder.DESTINATION_FIRST),
        (" DESTINATION-FIRST ", HandoffOrder.DESTINATION_FIRST),
    ],
)
def test_an_order_is_its_wire_value_or_its_enum_name(text: str, order: HandoffOrder) -> None:
    assert _cli.parse_order(text) is order
    assert _cli.orders(text) == (order,)


def test_all_is_each_order_in_turn() -> None:
    assert _cli.orders("all") == (HandoffOrder.SOURCE_FIRST, HandoffOrder.DESTINATION_FIRST)
    assert _cli.orders("ALL") == tuple(HandoffOrder)
    assert _cli.order_words(tuple(HandoffOrder)) == "all"
    assert _cli.order_words((HandoffOrder.DESTINATION_FIRST,)) == "DestinationFirst"


@pytest.mark.parametrize("text", ["both", "mixed", "", "source", "SourceFirst,DestinationFirst"])
def test_other_words_for_an_order_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected SourceFirst or DestinationFirst$"):
        _cli.parse_order(text)


@pytest.mark.parametrize(
    ("text", "value"), [("0", 0), ("10_000", 10_000), ("1e4", 10_000), (" 7 ", 7), ("-3", -3)]
)
def test_whole_numbers_in_their_usual_spellings(text: str, value: int) -> None:
    assert _cli.whole_number()(text) == value


def test_the_limit_and_its_reason_are_named() -> None:
    parse = _cli.whole_number(1, 10, " (ten is plenty)")
    with pytest.raises(argparse.ArgumentTypeError, match=r"at most 10 \(ten is plenty\), got 11"):
        parse("11")
    assert parse("10") == 10


@pytest.mark.parametrize(("text", "value"), [("0", 0.0), ("1", 1.0), ("0.25", 0.25)])
def test_probabilities_include_their_ends(text: str, value: float) -> None:
    assert _cli.probability(text) == value


def test_a_read_only_file_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "report.md"
    target.write_text("kept\n")
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != target)
    with pytest.raises(argparse.ArgumentTypeError, match="the file is read-only"):
        _cli.new_file(str(target))
    assert _cli.new_file(str(tmp_path / "other.md")) == tmp_path / "other.md"


def test_diagrams_refuse_a_read_only_out_before_rendering(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["diagrams", "--out", f"{READ_ONLY}/diagrams"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("handoff diagrams: error: --out: cannot write under")
    assert error.count("\n") == 1


def test_the_output_directory_may_be_new(tmp_path: Path) -> None:
    assert _cli.output_directory(str(tmp_path / "a" / "b")) == tmp_path / "a" / "b"


@pytest.mark.parametrize("row", BAD, ids=[" ".join(row.argv)[:60] or "(none)" for row in BAD])
def test_a_bad_invocation_in_process(
    row: Bad,
    sandbox: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(sandbox)
    assert main(list(row.argv)) == row.status
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert all(fragment in error for fragment in row.says), error

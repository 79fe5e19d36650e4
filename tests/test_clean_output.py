"""Output that stays clean, large inputs in bounded memory, and the smaller hostile cases.

Clean: a name holding a line break (a chart's title, a trace's chart) stays inside its one
error line; a reader that goes away early ends a command quietly (141); a file name that is
not UTF-8 is shown escaped, even on a strict UTF-8 stdout.  Large: a huge trace line is
refused at the limit, a trace without its end line before its calls are read.
"""

from __future__ import annotations

import hashlib
import os
import resource
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import LOOPING, TWO_LINE_TITLE, Ran, Sandbox, chart_module, failure, only_changed

from handoff.__main__ import parsers

TRACE = Path(__file__).parent / "traces" / "source_first_rejected.jsonl"
STRICT = {"PYTHONIOENCODING": "utf-8"}  # errors=strict: what cannot be encoded raises


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    sandbox = Sandbox(tmp_path)
    (tmp_path / "loops.py").write_text(
        chart_module(Looping=LOOPING, TwoLines=TWO_LINE_TITLE, Fine='title = "Fine"')
    )
    (tmp_path / "trace.jsonl").write_bytes(TRACE.read_bytes())
    return sandbox


# -- a line break in a name --------------------------------------------------------------------


def test_a_title_with_a_line_break_stays_in_its_one_line(box: Sandbox) -> None:
    for argv in (
        ("demo", "--reopen", "--chart", "loops:TwoLines"),
        ("simulate", "--handoffs", "200", "--fault-rate", "0.3", "--chart", "loops:TwoLines"),
    ):
        failure(box.run(*argv), 1, "chart Two\\nLines")


def test_a_trace_naming_a_chart_with_a_line_break_is_one_line(box: Sandbox) -> None:
    lines = TRACE.read_text().splitlines(keepends=True)
    header = lines[0].replace('"order":"SourceFirst"', '"order":"SourceFirst","chart":"A\\nB\\r"')
    (box.root / "named.jsonl").write_text(header + "".join(lines[1:]))
    ran = box.run("replay", "named.jsonl")
    failure(ran, 2, "the trace was made on chart A\\nB\\r: give it with --chart")


# -- a reader that goes away ------------------------------------------------------------------


def _into_a_closed_pipe(box: Sandbox, *argv: str) -> Ran:
    """Run with stdout a pipe whose reader is already gone, as `| head -0` leaves it: the
    first byte the command writes meets the closed pipe, however big or fast anything is."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        process = box.start(*argv, stdout=writer)
    finally:
        os.close(writer)
    assert process.stderr is not None
    err = process.stderr.read()
    process.stderr.close()
    process.wait(timeout=120)
    return Ran(tuple(argv), process.returncode, "", err.decode())


@pytest.mark.parametrize(
    "argv",
    [
        # Prints a line per trace recorded: its first full buffer is written mid-recording.
        ("simulate", "--chart", "loops:Looping", "--handoffs", "5000", "--fault-rate", "0.5",
         "--record-failures", "failures"),
        ("demo", "--reopen", "--chart", "loops:Fine"),
        ("replay", *(f"copy{number}.jsonl" for number in range(300))),
    ],
    ids=["simulate --record-failures", "demo", "replay"],
)  # fmt: skip
def test_a_closed_pipe_ends_the_command_quietly(box: Sandbox, argv: tuple[str, ...]) -> None:
    for number in range(300):
        os.link(box.root / "trace.jsonl", box.root / f"copy{number}.jsonl")
    ran = _into_a_closed_pipe(box, *argv)
    assert (ran.status, ran.err) == (141, "")
    recorded = list((box.root / "failures").glob("*"))
    if argv[0] == "simulate":
        assert recorded  # the pipe closed while traces were being recorded
    for trace in recorded:
        assert trace.suffix == ".jsonl"  # each recorded whole, none half-written


# -- names that are not UTF-8 -----------------------------------------------------------------

NOT_UTF8 = os.fsencode("caf") + b"\xe9"


def test_a_name_that_is_not_utf8_is_shown_escaped(box: Sandbox) -> None:
    os.link(box.root / "trace.jsonl", box.root / os.fsdecode(NOT_UTF8 + b".jsonl"))
    runs = {
        "replay": box.run("replay", NOT_UTF8 + b".jsonl", env=STRICT),
        "export": box.run("export", "promela", "--out", NOT_UTF8 + b".pml", env=STRICT),
        "simulate": box.run(
            "simulate", "--chart", "loops:Looping", "--handoffs", "50", "--fault-rate", "0.5",
            "--record-failures", NOT_UTF8, env=STRICT,
        ),
    }  # fmt: skip
    assert runs["replay"].status == 0, runs["replay"].err
    assert runs["replay"].out.startswith("OK caf\\udce9.jsonl (10 calls)")
    assert (runs["export"].status, runs["export"].out) == (0, "wrote caf\\udce9.pml\n")
    assert runs["simulate"].status == 1
    assert "recorded caf\\udce9/" in runs["simulate"].out
    assert not any("Traceback" in ran.err for ran in runs.values())


# -- large inputs ---------------------------------------------------------------------------


def test_a_huge_line_is_refused_at_the_limit(box: Sandbox) -> None:
    header, first, *rest = TRACE.read_text().splitlines(keepends=True)
    huge = first.replace('"call":"start"', '"call":"start","pad":"' + "x" * 3_000_000 + '"')
    (box.root / "huge.jsonl").write_text(header + huge + "".join(rest))

    def at_most_400_mb() -> None:  # reading the line whole would cost far more
        resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))

    ran = box.run("replay", "huge.jsonl", limit=at_most_400_mb)
    failure(ran, 2, "huge.jsonl:2: a line longer than 1,048,576 bytes")


def test_a_trace_without_its_end_is_refused_before_its_calls(box: Sandbox) -> None:
    header, call = TRACE.read_text().splitlines(keepends=True)[:2]
    (box.root / "long.jsonl").write_text(header + call * 200_000)
    (box.root / "cut.jsonl").write_text(header + call * 3 + call[:20])
    failure(box.run("replay", "long.jsonl"), 2, "long.jsonl: no end line after 200000 calls")
    failure(box.run("replay", "cut.jsonl"), 2, "cut.jsonl: no end line after 4 calls")


# -- the smaller ones -------------------------------------------------------------------------


def test_a_manifest_that_is_not_utf8_is_read_as_bytes(box: Sandbox) -> None:
    explained = box.root / "explained"
    explained.mkdir()
    stale = os.fsdecode(NOT_UTF8 + b".jsonl")
    (explained / stale).write_text("left by an earlier run")
    digest = hashlib.sha256(b"left by an earlier run").hexdigest().encode()
    (explained / ".explain").write_bytes(digest + b" " + NOT_UTF8 + b".jsonl\n\xff\xfe\n")
    ran = box.run("review", "--order", "SourceFirst", "--explain", "explained")
    assert ran.status == 0, ran.err
    assert ran.err == "removed stale explained/caf\\udce9.jsonl\n"
    assert sorted(os.listdir(explained)) == [".explain"]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: os.symlink("loop", root / "loop"), "a symbolic link in the path loops"),
        (lambda root: os.symlink("nowhere", root / "loop"), "loop is a dangling symbolic link"),
        (lambda root: (root / "loop").write_text(""), "is not a directory"),
    ],
    ids=["link loop", "dangling link", "a file"],
)
def test_a_folder_that_cannot_be_one_is_refused_before_the_run(
    box: Sandbox, make: Callable[[Path], None], says: str
) -> None:
    make(box.root)
    before = box.snapshot()
    ran = box.run("simulate", "--handoffs", "1e9", "--record-failures", "loop")
    failure(ran, 2, "--record-failures: ", says)
    only_changed(before, box.snapshot())


def test_no_help_states_a_default_twice() -> None:
    _, commands = parsers()
    for command in commands.values():
        text = " ".join(command.format_help().split())
        for action in command._actions:
            if action.default not in (None, False) and isinstance(action.default, str | int):
                assert text.count(f"(default: {action.default})") <= 1, (command.prog, action)


def test_drawing_under_a_small_address_space_says_what_it_needs(box: Sandbox) -> None:
    def at_most_3_gb() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    (box.root / "fine.py").write_text(chart_module(Fine='title = "Fine"'))
    before = box.snapshot()
    ran = box.run("diagrams", "--chart", "fine:Fine", "--out", "drawn", limit=at_most_3_gb)
    failure(ran, 1, "cannot draw an SVG", "`ulimit -v` of at least 5000000")
    only_changed(before, box.snapshot())

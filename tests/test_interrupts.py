"""Ctrl-C always ends a command: exit 130, one line, no traceback, nothing half-written.

Cases: an interrupt that lands inside a finalizer (python-statemachine's engines have one, and
Python drops what a finalizer raises), with work left and without; the review interrupted at
several moments; Ctrl-C while the command line is still importing; a simulation interrupted
while it records its failures, which leaves only whole traces.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hostile import LOOPING, Sandbox, chart_module, finish, only_changed

from handoff._runs.trace import read_trace

# A command whose work drops Ctrl-C in finalizers, as python-statemachine's engines may.
_DROPPING = """
    import signal, sys
    from handoff import _cli

    class Engine:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, landing inside the finalizer

    def work(args):
        for _ in range(3):
            Engine()
        total = 0
        for number in range({work}):
            total += number
        print("ran to the end")
        return 0

    def build():
        top = _cli.Parser(prog="handoff")
        command = top.add_subparsers(dest="command").add_parser("work", prog="handoff work")
        command.set_defaults(run=work)
        return top, {{"work": command}}

    sys.exit(_cli.run(build, ["work"]))
"""


@pytest.mark.parametrize("work", [3_000_000, 10], ids=["work left", "nothing left"])
def test_an_interrupt_a_finalizer_dropped_still_ends_the_command(work: int) -> None:
    script = textwrap.dedent(_DROPPING.format(work=work))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 130, done
    assert "ran to the end" not in done.stdout or work == 10
    assert "Traceback" not in done.stderr
    assert "Exception ignored" not in done.stderr
    assert done.stderr.endswith("error: interrupted\n")
    assert done.stderr.count("\n") == 1


def _interrupt(box: Sandbox, after: float, *args: str) -> subprocess.Popen[bytes]:
    """`args` run, interrupted `after` seconds into the command's own work."""
    process = box.start_announced(*args)
    time.sleep(after)  # a moment of the work, not a guess at start-up: any moment will do
    process.send_signal(signal.SIGINT)
    return process


@pytest.mark.parametrize("after", [0.0, 0.5, 2.0])
def test_the_review_interrupted_ends_at_once(tmp_path: Path, after: float) -> None:
    box = Sandbox(tmp_path)
    (box.root / "loops.py").write_text(chart_module(Looping=LOOPING))
    before = box.snapshot()
    charts = ("--chart", "loops:Looping") * 4  # long enough to be interrupted while it works
    ran = finish(_interrupt(box, after, "review", *charts, "--trace-out", "t.jsonl"), timeout=300)
    assert ran.status == 130, ran
    assert "Traceback" not in ran.err
    assert ran.err == "handoff review: error: interrupted\n"
    only_changed(before, box.snapshot())


# Ctrl-C landing while the command line imports a module: the import raises it.
_IMPORTING = """
import runpy, sys

class Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt

sys.argv = ["handoff", "review", "--order", "SourceFirst"]
sys.meta_path.insert(0, Interrupting())
runpy.run_module("handoff", run_name="__main__")
"""


@pytest.mark.parametrize("module", ["handoff._cli", "argparse", "handoff._review.cli"])
def test_ctrl_c_while_the_command_line_loads_is_quiet(module: str) -> None:
    """At `handoff._cli` the package is loaded, the command line not; `argparse` comes before
    it; `handoff._review.cli` is the command's own module, loaded while the line is parsed."""
    script = _IMPORTING.format(module=module)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 130, done
    assert "Traceback" not in done.stderr
    assert done.stderr.endswith("error: interrupted\n"), done.stderr
    assert done.stderr.count("\n") == 1


def test_an_interrupted_simulation_keeps_every_trace_it_recorded(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    (box.root / "loops.py").write_text(chart_module(Looping=LOOPING))
    args = ("simulate", "--chart", "loops:Looping", "--handoffs", "10000000", "--fault-rate", "0.5")
    process = box.start(*args, "--record-failures", "failures")
    deadline = time.monotonic() + 300
    while len(list((box.root / "failures").glob("*.jsonl"))) < 20:
        assert time.monotonic() < deadline, "no failure recorded"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    ran = finish(process, timeout=300)
    assert ran.status == 130
    assert ran.err.endswith("handoff simulate: error: interrupted\n"), ran.err
    assert "Traceback" not in ran.err
    written = sorted((box.root / "failures").iterdir())
    assert all(path.suffix == ".jsonl" for path in written)  # no partial file
    assert all(read_trace(path).entries for path in written)
    assert list(box.tmp.iterdir()) == []

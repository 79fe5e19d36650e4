"""`--engine spin` runs outside tools (spin, gcc, pan): whatever they do, one line, no leftovers.

A tool that fails says so in one line (its first error, not its whole output); one that
crashes names its signal; Ctrl-C while gcc compiles ends the command at once and leaves no
compiler running and no temporary file behind.  The failing tools are stand-ins put first on
PATH; the interrupted compile is the real one.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest
from hostile import Sandbox, failure, finish, only_changed
from support import spin_or_skip

# Stand-ins: a spin that answers -V as the pinned release and otherwise writes a pan.c.
_SPIN = """#!/bin/sh
if [ "$1" = "-V" ]; then echo "Spin Version 6.5.2 -- 6 December 2019"; exit 0; fi
{spin_body}
"""
_FAKES = {
    "gcc fails": (
        "echo 'int main(void) { return 0; }' > pan.c",
        "echo 'pan.c: In function main:' >&2\n"
        "echo 'pan.c:12:5: error: expected ; before return' >&2\n"
        "echo '   12 |     return 0' >&2\necho '      |     ^~~~~~' >&2\nexit 1",
        "gcc -O0 -w -DNOFAIR -o pan pan.c failed (exit 1): pan.c:12:5: error: expected ;",
    ),
    "gcc crashes": (
        "echo 'int main(void) { return 0; }' > pan.c",
        "kill -SEGV $$",
        "gcc crashed (signal 11)",
    ),
    "spin fails": (
        "echo 'spin: model.pml:3, Error: syntax error' >&2\n"
        "echo 'spin: model.pml:4, Error: another' >&2\nexit 1",
        "exit 0",
        "spin -o2 -a model.pml failed (exit 1): spin: model.pml:3, Error: syntax error",
    ),
}


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(body if body.startswith("#!") else f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("case", list(_FAKES))
def test_a_failing_tool_is_one_line(tmp_path: Path, case: str) -> None:
    spin_body, gcc_body, says = _FAKES[case]
    box = Sandbox(tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    _tool(tools, "spin", _SPIN.format(spin_body=spin_body))
    _tool(tools, "gcc", gcc_body)
    before = box.snapshot()
    path = f"{tools}{os.pathsep}{os.environ['PATH']}"
    ran = box.run("review", "--engine", "spin", "--order", "SourceFirst", env={"PATH": path})
    failure(ran, 1, says)
    only_changed(before, box.snapshot())


def _compilers_in(folder: Path) -> list[int]:
    """The processes whose working directory is under `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                found.append(int(entry.name))
        except OSError:  # gone already, or not ours to look at
            continue
    return found


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:  # gone already
        return ""


def test_ctrl_c_while_compiling_leaves_nothing_behind(tmp_path: Path) -> None:
    spin_or_skip()
    box = Sandbox(tmp_path)
    before = box.snapshot()
    process = box.start("review", "--engine", "spin", "--order", "SourceFirst")
    deadline = time.monotonic() + 300
    while not any(_name(pid) in ("cc1", "gcc") for pid in _compilers_in(box.tmp)):
        assert time.monotonic() < deadline, "gcc never started"
        assert process.poll() is None, "the review ended before it compiled"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    ran = finish(process, timeout=300)
    failure(ran, 130, "interrupted")
    deadline = time.monotonic() + 120  # a killed process takes a moment to be gone
    while _compilers_in(box.tmp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _compilers_in(box.tmp) == []
    only_changed(before, box.snapshot())

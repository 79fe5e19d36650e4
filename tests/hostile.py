"""Hostile but ordinary inputs: chart modules, files and signals a user may hand a command.

`Sandbox` runs the real `handoff` command in a scratch directory (its own TMPDIR inside) and
tells what a run left behind: every path with its kind and content, before and after, so a
test can say that nothing but the named output changed and no temporary file remains.
`failure` states what every refusal must look like: one line on stderr naming the command,
the exit status, no traceback.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
from support import users_environment

HANDOFF = str(Path(sys.executable).with_name("handoff"))

# A cleanup that never ends: each acknowledged CancelDestination issues another.
LOOPING = """
    title = "CancelsForever"
    destination_canceled = (
        S.cancelling_both.to(S.cancelling_source)
        | S.cancelling_destination.to.itself(on="cancel_destination")
    )
"""
# Cleanup that never ends by ping-pong: a canceled destination starts cancelling both again.
PING_PONG = """
    title = "PingPong"
    destination_canceled = S.cancelling_both.to(S.cancelling_source) | S.cancelling_destination.to(
        S.cancelling_both, on=["cancel_source", "cancel_destination"]
    )
"""
# The other order's cleanup never ends (a DestinationFirst chart, see `chart_module`).
DESTINATION_FIRST_LOOP = """
    title = "DestinationFirstForever"
    destination_canceled = (
        S.cancelling_both.to(S.cancelling_source)
        | S.cancelling_destination.to.itself(on="cancel_destination")
    )
"""
# A chart whose title holds a line break, and whose cleanup never ends.
TWO_LINE_TITLE = LOOPING.replace('"CancelsForever"', '"Two\\nLines"')


# The command line, told to print "started" as the command's own code begins, past starting
# Python, loading and parsing: a test that interrupts a command at some moment of its work
# waits for that line, not for a guess at how long start-up takes on a busy machine.
ANNOUNCING = """
import importlib, sys
from handoff.__main__ import _COMMANDS, main

module = importlib.import_module(_COMMANDS[sys.argv[1]][0])
run = module.run

def announced(*args, **kwargs):
    print("started", flush=True)
    return run(*args, **kwargs)

module.run = announced
sys.exit(main(sys.argv[1:]))
"""


def chart_module(base: str = "SourceFirstChart", **bodies: str) -> str:
    """A module defining one chart class per keyword, named by it, derived from `base`."""
    head = f"from handoff import {base}\n\nS = {base}\n"
    classes = [
        f"\n\nclass {name}({base}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
        for name, body in bodies.items()
    ]
    return head + "".join(classes)


@attrs.frozen
class Ran:
    """What one run of the command did."""

    argv: tuple[str, ...]
    status: int
    out: str
    err: str


def failure(ran: Ran, status: int, *fragments: str) -> None:
    """`ran` failed as every refusal must: one line on stderr, `status`, no traceback."""
    command = next((word for word in ran.argv if not word.startswith("-")), "")
    assert "Traceback" not in ran.err, ran.err
    assert ran.err.count("\n") == 1, ran.err
    assert ran.err.endswith("\n"), ran.err
    assert ran.err.startswith(f"handoff {command}: error: "), ran.err
    assert ran.status == status, (ran.status, ran.err)
    for fragment in fragments:
        assert fragment in ran.err, (fragment, ran.err)


Snapshot = dict[str, tuple[str, str]]


class Sandbox:
    """A scratch directory to run the command in; its TMPDIR is `tmp` inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.tmp.mkdir(exist_ok=True)

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = users_environment({"TMPDIR": str(self.tmp)})
        env.pop("PYTHONPATH", None)
        return {**env, **(extra or {})}

    def start(
        self,
        *args: str | bytes,
        env: Mapping[str, str] | None = None,
        limit: Callable[[], None] | None = None,
        stdout: int = subprocess.PIPE,
    ) -> subprocess.Popen[bytes]:
        if limit is not None:
            # CPython does not check a short write of a .pyc: under a file-size limit it would
            # leave a truncated one in the package itself, failing every later import of it.
            env = {"PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        return subprocess.Popen(
            [HANDOFF, *args],
            cwd=self.root,
            env=self.env(env),
            stdout=stdout,
            stderr=subprocess.PIPE,
            preexec_fn=limit,
        )

    def start_announced(self, *args: str) -> subprocess.Popen[bytes]:
        """Start the command with `ANNOUNCING`; returns once its own code has begun."""
        process = subprocess.Popen(
            [sys.executable, "-c", ANNOUNCING, *args],
            cwd=self.root,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        started = process.stdout.readline()
        assert started == b"started\n", (started, process.stderr and process.stderr.read())
        return process

    def run(
        self,
        *args: str | bytes,
        env: Mapping[str, str] | None = None,
        limit: Callable[[], None] | None = None,
        timeout: float = 120,
    ) -> Ran:
        return finish(self.start(*args, env=env, limit=limit), timeout)

    def snapshot(self) -> Snapshot:
        """Every path under the sandbox (the command's TMPDIR too), with its kind and content."""
        found: Snapshot = {}
        for path in sorted(self.root.rglob("*")):
            found[os.fsdecode(path.relative_to(self.root))] = _describe(path)
        return found


def finish(process: subprocess.Popen[bytes], timeout: float = 120) -> Ran:
    out, err = process.communicate(timeout=timeout)
    args = process.args
    assert isinstance(args, list)
    argv = tuple(os.fsdecode(arg) for arg in args[1:])
    return Ran(argv, process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


def _describe(path: Path) -> tuple[str, str]:
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "link", os.readlink(path)
    if stat.S_ISREG(mode):
        return "file", hashlib.sha256(path.read_bytes()).hexdigest()
    kinds = {stat.S_ISDIR: "dir", stat.S_ISFIFO: "fifo", stat.S_ISSOCK: "socket"}
    return next((kind for test, kind in kinds.items() if test(mode)), "other"), ""


def changes(before: Snapshot, after: Snapshot) -> set[str]:
    """The paths a run added, removed or changed."""
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


def only_changed(before: Snapshot, after: Snapshot, allowed: Sequence[str] = ()) -> None:
    """Nothing but `allowed` (paths, or folders whose contents may change) changed, and the
    command's TMPDIR is empty again."""
    changed = {
        path
        for path in changes(before, after)
        if not any(path == ok or path.startswith(ok.rstrip("/") + "/") for ok in allowed)
    }
    assert changed == set(), changed
    assert [path for path in after if path.startswith("tmp/")] == []

"""Run Spin on a generated model and read back its verdicts and trails.

One model per chart, compiled once (or not at all, when a chart before it in this process had
the same verifier source: see `_BUILT`): the same `pan` runs the safety search (exhaustive
depth-first, every property reported at its first violation) and, with the liveness modes
switched on (`HANDOFF_SPIN_LIVENESS` in its environment), checks each LTL formula in turn
(`-a -N <key>`).  Never bitstate: every search is exhaustive.  Each trail is replayed
by `pan` itself, which prints the `CALL n` lines the model writes; `n` is the review's call.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from handoff._compile.table import CompiledChart
from handoff._review.environment import Call, environment
from handoff._review.spin.model import model
from handoff._review.spin.properties import mirrored
from handoff._review.spin.system import system_model, unmirrored
from handoff._review.spin.vocabulary import calls
from handoff._system.properties import Key, SpinCheck, WorldKind

if TYPE_CHECKING:
    from handoff._system.config import System

__all__ = [
    "INSTALL_HINT",
    "PINNED_VERSION",
    "SpinRun",
    "SpinUnavailableError",
    "Trail",
    "run_spin",
    "spin_version",
]

PINNED_VERSION = "6.5."
"""The Spin release the model is written for (Debian's `spin` package, 6.5.x)."""

INSTALL_HINT = (
    "Spin is not installed: install Spin 6.5.x so that `spin` is on the PATH (Debian and "
    "Ubuntu: `apt-get install -y spin`; elsewhere: https://spinroot.com)"
)

OPTIMIZE = "-O0"
"""gcc's optimisation level for `pan`: its searches take well under a second, so time spent
optimising the compiled verifier is not won back (see docs/performance.md)."""

_HASH = "-w18"
"""2^18 hash slots: the models have tens of thousands of states, not millions."""


class SpinUnavailableError(RuntimeError):
    """Spin (or the C compiler its verifiers need) is missing, or is not the pinned release."""


@attrs.frozen
class Trail:
    """A Spin counterexample, read back as the review's calls."""

    calls: tuple[Call, ...]
    switch: int | None = None
    """For a liveness trail: how many calls were made before the environment changed mode."""
    crash: str | None = None
    """The adapter assertion the model's crash stands in for, if its last call crashed."""
    moves: tuple[tuple[int, int, int], ...] = ()
    """For a system trail: each move the model made, as it printed it (`MOVE mv what id`:
    the kind of move, the message or fact it moved, the action id or worker)."""


@attrs.frozen
class SpinRun:
    """What Spin found for one chart."""

    version: str
    states: int
    """States stored by the safety search (one per configuration the review explores)."""
    transitions: int
    liveness_states: dict[Key, int]
    """States stored by each LTL search (configurations × mode × round-robin turn)."""
    trails: dict[Key, Trail | None]
    """Per mirrored property: None when it holds, else its
    first counterexample."""
    seconds: float
    broken: frozenset[Key] = frozenset()
    """The mirrored properties Spin found broken."""
    world: WorldKind = WorldKind.CHART


def spin_version() -> str:
    """The installed Spin's version line; raises `SpinUnavailableError` when unusable."""
    for tool in ("spin", "gcc"):
        if shutil.which(tool) is None:
            raise SpinUnavailableError(
                INSTALL_HINT if tool == "spin" else "gcc is needed to compile Spin's verifiers"
            )
    output = subprocess.run(["spin", "-V"], capture_output=True, text=True, check=False).stdout
    found = re.search(r"Spin Version (\S+)", output)
    if found is None or not found.group(1).startswith(PINNED_VERSION):
        raise SpinUnavailableError(
            f"Spin {PINNED_VERSION}x is pinned, found {output.strip() or 'nothing'}; "
            + INSTALL_HINT.replace("Spin is not installed: install", "install")
        )
    return output.strip()


def run_spin(
    chart: CompiledChart, workdir: Path | None = None, *, system: System | None = None
) -> SpinRun:
    """Generate `chart`'s model (alone, or in `system`), verify every mirrored property,
    read back the trails."""
    if system is not None and (why := unmirrored(system)) is not None:
        raise ValueError(f"Spin mirrors {why}")
    version = spin_version()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="handoff-spin-") as scratch:
        folder = Path(scratch) if workdir is None else workdir
        folder.mkdir(parents=True, exist_ok=True)
        text = model(chart) if system is None else system_model(chart, system)
        (folder / "model.pml").write_text(text, encoding="utf-8")
        _build(folder)
        if system is None:
            states, transitions, trails = _safety(folder)
            broken = {key for key, trail in trails.items() if trail is not None}
        else:
            states, transitions, trails = _safety(folder, system=True)
            broken = {key for key, trail in trails.items() if trail is not None}
        world = WorldKind.CHART if system is None else WorldKind.SYSTEM
        liveness_states = {}
        for key, check in mirrored(world).items():
            if check is SpinCheck.LTL:
                liveness_states[key], trail, failed = _liveness(folder, key)
                trails[key] = trail
                if failed:
                    broken.add(key)
    return SpinRun(
        version=version,
        states=states,
        transitions=transitions,
        liveness_states=liveness_states,
        trails={key: trails.get(key) for key in mirrored(world)},
        seconds=time.perf_counter() - began,
        broken=frozenset(broken),
        world=world,
    )


_BUILT: dict[str, bytes] = {}
"""The `pan` compiled from each verifier source seen in this process, by the source's digest.

A chart model's chart is data its `pan` reads from model.pml when it runs, so every chart of
the same order (and most actions per step) has the same verifier source: compiled once, the
binary serves them all."""

_SOURCES = ("pan.c", "pan.h", "pan.m", "pan.b", "pan.t", "pan.p")


def _build(folder: Path) -> None:
    """`spin -a`, then gcc unless this source was compiled already: one `pan` for the safety
    search and every LTL search."""
    # -o2: Spin 6.5.2's dead-variable elimination makes `pan` crash on a variable that is
    # only ever written; the model has none now, and this keeps one from mattering.
    _run(["spin", "-o2", "-a", "model.pml"], folder)
    digest = hashlib.sha256()
    for name in _SOURCES:
        source = folder / name
        digest.update(source.read_bytes() if source.exists() else b"")
        digest.update(b"\0")
    key = digest.hexdigest()
    binary = folder / "pan"
    if key in _BUILT:
        binary.write_bytes(_BUILT[key])
        binary.chmod(0o755)
        return
    # NOFAIR: no search asks for Spin's process fairness (the model has one process).
    _run(["gcc", OPTIMIZE, "-w", "-DNOFAIR", "-o", "pan", "pan.c"], folder)
    _BUILT[key] = binary.read_bytes()


def _safety(folder: Path, *, system: bool = False) -> tuple[int, int, dict[Key, Trail | None]]:
    """One search counting every error; then, per property broken, its first trail.

    Writing a trail for every error (`-e`) costs more than the search on a chart broken in
    many configurations, so the search only counts them; the same search, stopped at the
    first error of a property (`-cN`, deterministic), then writes that property's trail.
    The system model (`system`) has no invalid end states to report (`-E`): its runs end
    where nothing more can move.
    """
    flags = ["./pan", _HASH, "-n", *(["-E"] if system else [])]
    output = _run([*flags, "-c0"], folder)
    trails: dict[Key, Trail | None] = {}
    for key, number in _first_errors(output).items():
        _run([*flags, f"-c{number}"], folder)
        # -A: replay the whole trail, past any other property it broke on the way.
        replay = _run(["./pan", _HASH, "-n", "-S", "-A", "-r", "model.pml.trail"], folder)
        os.remove(folder / "model.pml.trail")
        trails[key] = _trail(replay)
    return _count(r"(\d+) states, stored", output), _count(r"(\d+) transitions", output), trails


def _first_errors(output: str) -> dict[Key, int]:
    """The number of the first error of each property the search broke.

    `pan` prints an error's message only when it differs from the previous one, so the
    first message naming a property is its first error.
    """
    first: dict[Key, int] = {}
    for line in output.splitlines():
        message = re.match(r"pan:(\d+): assertion violated\s+!\((\w+)_broken\)", line)
        if message is not None:
            first.setdefault(Key(message.group(2)), int(message.group(1)))
    return first


def _liveness(folder: Path, key: Key) -> tuple[int, Trail | None, bool]:
    """An acceptance-cycle search for LTL formula `key`, the liveness modes switched on (the
    system model reads no such switch: its formulas switch themselves); whether it failed,
    and its trail."""
    output = _run(["./pan", _HASH, "-n", "-a", "-A", "-N", key.value], folder, live=True)
    states = _count(r"(\d+) states, stored", output)
    if _count(r"errors: (\d+)", output) == 0:
        return states, None, False
    replay = ["./pan", _HASH, "-n", "-S", "-A", "-N", key.value, "-r", "model.pml.trail"]
    trail = _trail(_run(replay, folder, live=True))
    os.remove(folder / "model.pml.trail")
    return states, trail, True


_CALLS = calls(environment()).all
_LIVE = "HANDOFF_SPIN_LIVENESS"


def _trail(replay: str) -> Trail:
    """The calls a replayed trail made, and where its environment changed mode."""
    made: list[Call] = []
    moves: list[tuple[int, int, int]] = []
    switch = crash = None
    for line in replay.splitlines():
        if line.startswith("CALL "):
            made.append(_CALLS[int(line.split()[1])])
        elif line.startswith("MOVE "):
            mv, what, number = map(int, line.split()[1:4])
            moves.append((mv, what, number))
        elif line.startswith("MODE ") and switch is None:
            switch = len(made)
        elif line.startswith("CRASH "):
            crash = line.removeprefix("CRASH ").strip()
    return Trail(tuple(made), switch, crash, tuple(moves))


def _count(pattern: str, output: str) -> int:
    found = re.search(pattern, output)
    if found is None:
        raise SpinUnavailableError(f"unexpected output from Spin's verifier: {output[-400:]}")
    return int(found.group(1))


def _run(command: list[str], folder: Path, *, live: bool = False) -> str:
    """Run a tool in `folder`; `live` switches the model's liveness modes on (for `pan`).

    The tool runs in a process group of its own, its temporary files in `folder`: when the
    call ends early (Ctrl-C), the whole group is killed (gcc's cc1 with it) before `folder`
    is removed, so nothing outlives the review.  A failure is one line: its first error.
    """
    env = {key: value for key, value in os.environ.items() if key != _LIVE}
    env["TMPDIR"] = str(folder.absolute())
    if live:
        env[_LIVE] = "1"
    tool = subprocess.Popen(
        command, cwd=folder, env=env, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = tool.communicate()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(tool.pid, signal.SIGKILL)
        tool.wait()
        raise
    if tool.returncode < 0:
        raise SpinUnavailableError(f"{command[0]} crashed (signal {-tool.returncode})")
    if tool.returncode != 0 and command[0] in ("spin", "gcc"):  # pan words its own findings
        lines = [line.strip() for line in f"{err}\n{out}".splitlines() if line.strip()]
        first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")
        raise SpinUnavailableError(
            f"{' '.join(command)} failed (exit {tool.returncode}): {first or 'no message'}"
        )
    return out

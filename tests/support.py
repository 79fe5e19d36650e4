"""What the tests share: a scripted runtime that drives a coordinator and remembers what it
issued, workers that fall silent, and small checks."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, TypeVar, cast

import pytest
from hypothesis import settings

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    KvTransferTimingMode,
)
from handoff._system.call import TERMINAL_FACTS as _TERMINAL_FACTS
from handoff._system.properties import Key
from handoff._system.workers import (
    FORGETFUL,
    TOMBSTONE,
    RequestMemory,
    Slots,
    Tombstone,
    WorkerContract,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
)

T = TypeVar("T")

HID = HandoffId(uuid.UUID(int=7))
OTHER_HID = HandoffId(uuid.UUID(int=8))

# 10 tokens of 1024 bytes over 1.5 GB/s: 10240 / 1.5e9 s = 6.8266… µs = 0.0068266… ms.
TIMING = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 1.5)
TIMING_DELAY_MS = 10240.0 / 1.5e9 * 1000.0

SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST
ORDERS = (SF, DF)

STALE_TRANSFER = frozenset({Key.KV_INTO_OWN_SLOT})
"""W9, which every system run of a shipped chart that suffers a terminal fact after
`StartTransfer` went out breaks: cleanup cancels the source and the destination in one call, so
the destination may free the request's slot while the transfer is still on its way to the
source, which holds the KV and performs it (test_ownership.py shows it).  A test of other
properties expects it besides theirs."""

ON_CI = os.environ.get("CI", "").lower() in ("true", "1")
"""Whether the suite runs under CI (`CI=true`, as CI services and `.ci/run` set it)."""
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if ON_CI else "dev")
"""The Hypothesis profile the suite loads (tests/conftest.py): `ci` under CI, else `dev`."""


def slow_property(ci_examples: int) -> settings:
    """The loaded profile's settings for a slow property test: under the `ci` profile it
    tries `ci_examples` (derandomized, the same ones every run), elsewhere the full budget."""
    if HYPOTHESIS_PROFILE == "ci":
        return settings(max_examples=ci_examples)
    return settings()


@contextlib.contextmanager
def uncovered() -> Iterator[None]:
    """Run the block with coverage measurement paused (when the suite measures it).

    For work a test repeats for consistency on code other tests already cover line by line:
    under the tracer it costs three times as much and measures nothing new.  The suite's
    coverage report is the same with and without it (compare the missing lines of
    `./dev test` before adding a block here).
    """
    try:
        import coverage
    except ImportError:  # the suite runs without pytest-cov, and so without coverage
        yield
        return
    measuring = coverage.Coverage.current()
    if measuring is None:
        yield
        return
    measuring.stop()
    try:
        yield
    finally:
        measuring.start()


CHECKOUT_ONLY = pytest.mark.skipif(
    # `.git` is a directory in a clone and a file in a worktree.
    not (Path(__file__).parent.parent / ".git").exists(),
    reason="judges a git checkout's own files against the handoff package it runs; from an "
    "unpacked sdist, the suite tests the installed wheel instead",
)
"""For a test that only a git checkout can pass (its source is the package imported)."""

SUBMIT = HandoffAction.SubmitPrefill
RESERVE = HandoffAction.ReserveDestination
TRANSFER = HandoffAction.StartTransfer
ACTIVATE = HandoffAction.ActivateDestination
RELEASE = HandoffAction.ReleaseSource
CANCEL_SOURCE = HandoffAction.CancelSource
CANCEL_DESTINATION = HandoffAction.CancelDestination
COMPLETE = HandoffAction.Complete

FITTING = {
    SUBMIT: HandoffActionOutcome.SUBMITTED,
    RESERVE: HandoffActionOutcome.ACCEPTED,
    TRANSFER: HandoffActionOutcome.SCHEDULED,
    ACTIVATE: HandoffActionOutcome.APPLIED,
    RELEASE: HandoffActionOutcome.APPLIED,
    CANCEL_SOURCE: HandoffActionOutcome.APPLIED,
    CANCEL_DESTINATION: HandoffActionOutcome.APPLIED,
}

BAD_COUNTS: list[tuple[object, type[Exception]]] = [
    (True, TypeError),
    (False, TypeError),
    (1.0, TypeError),
    (0.0, TypeError),
    (None, TypeError),
    ("1", TypeError),
    (-1, ValueError),
    (2**64, ValueError),
    (-(2**64), ValueError),
]
"""(value, exception) pairs every count field must refuse."""

TERMINAL_FACTS = cast(tuple[Callable[[HandoffId], HandoffFact], ...], _TERMINAL_FACTS)
"""The facts that end a handoff early: those the coordinator binds to its `TERMINATED`."""

# The success path of each order: the chart state after each step of a cooperative runtime.
SUCCESS_PATH = {
    SF: (
        "idle",
        "prefill_submitting",
        "prefill_running",
        "destination_reserving",
        "destination_accepted",
        "transfer_starting",
        "transferring",
        "activating",
        "releasing",
        "succeeded",
    ),
    DF: (
        "idle",
        "destination_reserving",
        "destination_accepted",
        "prefill_submitting",
        "prefill_running",
        "transfer_starting",
        "transferring",
        "activating",
        "releasing",
        "succeeded",
    ),
}


def kinds(actions: Iterable[IssuedHandoffAction]) -> list[type]:
    """The kinds of the issued actions, in order."""
    return [type(item.action) for item in actions]


class Runtime:
    """A runtime that performs each step of the success path on request."""

    def __init__(
        self,
        order: HandoffOrder,
        *,
        fallback: float = 0.0,
        interpreted: bool = False,
        timing: HandoffTransferTiming = TIMING,
        tokens: int = 10,
    ) -> None:
        self.coordinator = HandoffCoordinatorCore(HID, order, fallback, interpreted=interpreted)
        self.order = order
        self.timing = timing
        self.tokens = tokens
        self.issued: dict[type, IssuedHandoffAction] = {}
        self.log: list[IssuedHandoffAction] = []

    def _note(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        for item in actions:
            self.issued[type(item.action)] = item
        self.log.extend(actions)
        return actions

    def start(self) -> list[IssuedHandoffAction]:
        return self._note(self.coordinator.start())

    def fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        return self._note(self.coordinator.on_fact(fact))

    def ack(
        self, kind: type, outcome: HandoffActionOutcome | None = None
    ) -> list[IssuedHandoffAction]:
        action_id = self.id_of(kind)
        return self._note(self.coordinator.on_action_outcome(action_id, outcome or FITTING[kind]))

    def id_of(self, kind: type) -> HandoffActionId:
        return self.issued[kind].id

    def source_held(self) -> list[IssuedHandoffAction]:
        return self.fact(HandoffFact.SourceHeld(HID, self.timing))

    def destination_reserved(self) -> list[IssuedHandoffAction]:
        return self.fact(HandoffFact.DestinationReserved(HID, self.tokens))

    def transfer_completed(self) -> list[IssuedHandoffAction]:
        return self.fact(HandoffFact.TransferCompleted(HID))

    def step(self) -> list[IssuedHandoffAction]:
        """Take the next step of the success path."""
        state = self.coordinator.chart_state
        steps: dict[str, Callable[[], list[IssuedHandoffAction]]] = {
            "idle": self.start,
            "prefill_submitting": lambda: self.ack(SUBMIT),
            "prefill_running": self.source_held,
            "destination_reserving": lambda: self.ack(RESERVE),
            "destination_accepted": self.destination_reserved,
            "transfer_starting": lambda: self.ack(TRANSFER),
            "transferring": self.transfer_completed,
            "activating": lambda: self.ack(ACTIVATE),
            "releasing": lambda: self.ack(RELEASE),
        }
        return steps[state]()

    def advance_to(self, state: str) -> Runtime:
        """Step along the success path until the chart is in `state`."""
        path = SUCCESS_PATH[self.order]
        assert state in path, state
        while self.coordinator.chart_state != state:
            self.step()
        return self

    def succeed(self) -> Runtime:
        return self.advance_to("succeeded")


def spin_or_skip() -> str:
    """Spin's version; a test that needs Spin is skipped without it, and fails on CI."""
    from handoff._review.spin.run import SpinUnavailableError, spin_version

    try:
        return spin_version()
    except SpinUnavailableError as error:
        if ON_CI:
            pytest.fail(f"CI must run the Spin cross-check: {error}")
        pytest.skip(str(error))


def assert_contains(text: str, *pieces: str) -> None:
    """Assert that each of `pieces` stands in `text`; a failure names every piece missing."""
    missing = [piece for piece in pieces if piece not in text]
    assert not missing, f"missing {missing} in:\n{text}"


class Silent(WorkerContract):
    """Workers that never acknowledge `task` (leaving the request as `memory`) and otherwise
    react as the contract `otherwise` does."""

    def __init__(
        self, name: str, task: WorkerTask, memory: RequestMemory, otherwise: WorkerContract
    ) -> None:
        self.name, self.task, self.memory, self.otherwise = name, task, memory, otherwise

    def react(
        self, task: WorkerTask, memory: RequestMemory
    ) -> WorkerReaction | tuple[WorkerReaction, ...]:
        if task is self.task:
            return WorkerReaction(self.memory, WorkerReply.SILENT)
        return self.otherwise.react(task, memory)


class NeverDecodes(Tombstone):
    """Acknowledges `ActivateDestination` as applied and never decodes: the request stays
    merely held (W10)."""

    name = "never-decodes"

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        if task is WorkerTask.ACTIVATE and memory is RequestMemory.HELD:
            return WorkerReaction(RequestMemory.HELD, WorkerReply.DONE)
        return super().react(task, memory)


class SecondSlot(Tombstone):
    """Activating takes a second slot for the request it already holds one for."""

    name = "second-slot"

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        if task is WorkerTask.ACTIVATE and memory is RequestMemory.HELD:
            return WorkerReaction(RequestMemory.SERVING, WorkerReply.DONE, Slots.TAKE)
        return super().react(task, memory)


class Refusing(Tombstone):
    """Takes no work at all: every submission and reservation fails."""

    name = "refusing"

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        if task is WorkerTask.TAKE and memory is RequestMemory.UNKNOWN:
            return WorkerReaction(memory, WorkerReply.FAILED)
        return super().react(task, memory)


class CancelFailsOnce(Tombstone):
    """The first cancel of a request it holds a slot for fails (the slot stays held); any
    cancel after that frees it: a worker whose cleanup fails once."""

    name = "cancel-fails-once"
    failed_once = "held, a cancel failed"
    """The memory of a request it holds a slot for, whose first cancel it failed."""

    def react(self, task: WorkerTask, memory: object) -> WorkerReaction:
        if memory == self.failed_once:
            if task in (WorkerTask.CANCEL, WorkerTask.RELEASE):
                return WorkerReaction(RequestMemory.FREED, WorkerReply.DONE, Slots.FREE)
            if task is WorkerTask.TAKE:
                return WorkerReaction(memory, WorkerReply.FAILED, Slots.KEEP)
            return WorkerReaction(memory, WorkerReply.DONE, Slots.KEEP)
        if task is WorkerTask.CANCEL and memory is RequestMemory.HELD:
            return WorkerReaction(self.failed_once, WorkerReply.FAILED, Slots.KEEP)
        return super().react(task, memory)


class CancelAlwaysFails(Tombstone):
    """Never frees a slot on cancel: every cancel of a held request fails."""

    name = "cancel-always-fails"

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        if task is WorkerTask.CANCEL and memory is RequestMemory.HELD:
            return WorkerReaction(memory, WorkerReply.FAILED, Slots.KEEP)
        return super().react(task, memory)


SILENT_CANCEL = Silent("silent-cancel", WorkerTask.CANCEL, RequestMemory.FREED, TOMBSTONE)
"""Never acknowledges a cancel: cleanup waits for ever."""
SILENT_TAKE = Silent("silent", WorkerTask.TAKE, RequestMemory.HELD, FORGETFUL)
"""Never acknowledges a submission: nothing else of the handoff is then on its way."""


def module_beside(
    folder: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> Iterator[Path]:
    """Write the module `name` into `folder` and work there, as a user running a command
    beside a module of their own does; `sys.path` and the module cache are put back after."""
    (folder / f"{name}.py").write_text(text)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield folder
    sys.modules.pop(name, None)


def run_handoff(
    *argv: str, cwd: Path, timeout: float | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real `handoff` command, run from `cwd` by this interpreter, its output as text,
    in a user's environment (`env` adds to it)."""
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=users_environment(env),
    )


def users_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment as a user's machine has it, with `extra` added.

    A user's Python may well write bytecode: a machine setting `PYTHONDONTWRITEBYTECODE` must
    not hide a `__pycache__` that a command leaves in the user's folder."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**environment, **(extra or {})}


def run_side_by_side(
    runs: dict[str, tuple[str, ...]], here: Path, env: dict[str, str] | None = None
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each command of `runs`, two at a time, from `here`; none may end in a traceback.
    `"here"` holds the folder, for the tests that look at what the commands wrote."""
    from concurrent.futures import ThreadPoolExecutor

    def run(argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
        return run_handoff(*argv, cwd=here, timeout=300, env=env)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(runs, pool.map(run, runs.values()), strict=True))
    for name, result in results.items():
        assert "Traceback" not in result.stderr, (name, result.stderr)
    results["here"] = subprocess.CompletedProcess((), 0, str(here), "")
    return results


class SessionCache:
    """Values made once per test session and shared by its workers (pytest-xdist runs one
    process per core): each is pickled into `folder`, the folder the workers' temporary
    folders share, and the first worker asking for a value makes it while the others wait
    (each value has its own lock file).  Only values made by pure functions of their key
    belong here: the mutant reviews most modules judge."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._made: dict[str, object] = {}

    def get(self, key: str, make: Callable[[], T]) -> T:
        """The value of `key`, made by `make()` by whichever worker asked first."""
        if key not in self._made:
            with self._lock(key) as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not self._loaded(key):
                    self._keep(key, make())
        return self._made[key]  # type: ignore[return-value]

    def get_all(
        self,
        makers: Mapping[str, Callable[[], T]],
        make_many: Callable[[list[str]], Mapping[str, T]] | None = None,
    ) -> dict[str, T]:
        """The value of every key of `makers`, as `get` gives each.  The values no other
        worker is making are claimed at once and made by `make_many(keys)` if given (which
        may make them side by side), else one by one; a value another worker is making is
        waited for only after that, so that two workers asking for the same values make
        different ones instead of queueing on each."""
        busy, claimed = [], []
        with contextlib.ExitStack() as held:
            for key in makers:
                if key in self._made:
                    continue
                lock = held.enter_context(self._lock(key))
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    busy.append(key)
                    continue
                if not self._loaded(key):
                    claimed.append(key)
            if make_many is not None and claimed:
                made = make_many(claimed)
                for key in claimed:
                    self._keep(key, made[key])
            else:
                for key in claimed:
                    self._keep(key, makers[key]())
        for key in busy:
            self.get(key, makers[key])
        return {key: self._made[key] for key in makers}  # type: ignore[misc]

    def _lock(self, key: str) -> IO[str]:
        return (self.folder / f"{key}.lock").open("w")

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pickle"

    def _loaded(self, key: str) -> bool:
        """Whether some worker has written `key`'s value; it is read in if so."""
        path = self._path(key)
        if not path.is_file():
            return False
        self._made[key] = pickle.loads(path.read_bytes())
        return True

    def _keep(self, key: str, made: object) -> None:
        """Keep `made` as `key`'s value, written whole for the other workers (lock held)."""
        self._made[key] = made
        partial = self._path(key).with_suffix(".partial")
        partial.write_bytes(pickle.dumps(made))
        partial.replace(self._path(key))

    def ready(self, key: str) -> object | None:
        """The value of `key` if some worker has made it already, else None (never waits)."""
        if key not in self._made and not self._loaded(key):
            return None
        return self._made[key]

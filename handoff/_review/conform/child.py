"""The implementation under test: a process of its own, spoken to in lines, always ended.

The process runs in a session and process group of its own.  On the way out of
`Implementation` (done, failed, Ctrl-C, SIGTERM) everything it started is ended: its
descendants, found through /proc while they still descend from it (a helper that left the
group with `setsid()` included), are stopped first so none can start another, then killed with
the whole group.  `handoff conform` also makes itself the subreaper of what it starts
(`adopt_orphans`), so a helper whose parent already exited is still found; where /proc or the
subreaper is missing, only the group is killed.  Requests are sent while answers are read, so
many calls are in flight at once and neither side waits for a pipe the other does not empty.
A process that gives no whole answer line within `timeout` seconds (whatever else it writes),
writes a line longer than `MAX_LINE`, exits, or says something nobody asked for raises
`Misbehaved`, naming the request it left unanswered.  Of its standard error, only the last
`KEPT_STDERR` bytes are kept, for the report.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import TracebackType

__all__ = [
    "KEPT_STDERR",
    "MAX_LINE",
    "QUOTED",
    "Implementation",
    "Misbehaved",
    "adopt_orphans",
    "clip",
    "quoted",
]

_CHUNK = 1 << 16
_LINGER = 2.0
"""How long a process that was told the input is over may take to exit by itself."""
_LAST_WORDS = 300
"""How much of a dead process's stderr a report quotes, at most."""
QUOTED = 200
"""How much of anything else an implementation wrote a report quotes, at most."""
MAX_LINE = 1 << 20
"""The longest answer line taken, in bytes: a chart's answer is a few hundred."""
KEPT_STDERR = 1 << 16
"""How many of the last bytes of the implementation's standard error are kept."""
_ROUNDS = 20
"""How many times the process tree is looked at for processes started meanwhile."""
_PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans(adopt: bool = True) -> bool:
    """Make this process the subreaper of everything it starts (Linux), or no longer when
    not `adopt`: a process whose parent exits is handed to this one rather than to init, so
    it can still be found and ended.  Whether that worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(adopt), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


class Misbehaved(Exception):
    """The implementation broke the protocol at request `index` of an exchange."""

    def __init__(self, index: int, reason: str, *, before: bool = False) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason
        self.before = before
        """Whether it stopped before answering (rather than answering wrongly, or not at all)."""


class Implementation:
    """`command`, started in a process group of its own; use it as a context manager."""

    def __init__(self, command: Sequence[str], timeout: float, *, adopted: bool = False) -> None:
        self.command = list(command)
        self.timeout = timeout
        self._adopted = adopted
        """Whether this process adopts the orphans of what it starts (`adopt_orphans`)."""
        self._process = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, bufsize=0,
        )  # fmt: skip
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        assert self._process.stderr is not None
        self._in = self._process.stdin.fileno()
        self._out = self._process.stdout.fileno()
        self._err = self._process.stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._selector = selectors.DefaultSelector()
        self._buffer = bytearray()
        self._stderr = bytearray()
        """The last `KEPT_STDERR` bytes of the process's standard error."""

    def __enter__(self) -> Implementation:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: TracebackType | None
    ) -> None:
        self.close(graceful=kind is None)

    def close(self, *, graceful: bool = True) -> None:
        """End the process and everything it started: told the input is over first when
        `graceful`."""
        process = self._process
        # Looked at while they still descend from it; once it is reaped, its number may be
        # another process's, so nothing is looked for under it.
        started = _descendants(process.pid) if process.poll() is None else set()
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()
        if graceful:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(_LINGER)
        if process.returncode is not None:
            started.discard(process.pid)  # reaped: the number may be another process's now
        self._end_all(started)
        process.wait()
        self._drain_stderr()  # its last words, for `stderr_tail`
        for stream in (process.stdout, process.stderr):
            assert stream is not None
            stream.close()
        self._selector.close()

    def _end_all(self, started: set[int]) -> None:
        """Stop every process found (so none starts another while the tree is looked at),
        look again until no new one shows, then kill them all and the process group."""
        pid = self._process.pid
        stopped: set[int] = set()
        for _ in range(_ROUNDS):
            alive = _descendants(pid) if self._process.returncode is None else set()
            found = (started | alive | self._orphans()) - stopped
            if not found:
                break
            for each in found:
                _signal(each, signal.SIGSTOP)
            stopped |= found
        for each in stopped:
            _signal(each, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        self._reap(stopped - {pid})

    def _orphans(self) -> set[int]:
        """What this process adopted (see `adopt_orphans`), and what descends from it."""
        if not self._adopted:
            return set()
        own = _children().get(os.getpid(), set()) - {self._process.pid}
        found = set(own)
        for each in own:
            found |= _descendants(each)
        return found

    def _reap(self, pids: set[int]) -> None:
        """Collect the exit of each adopted process killed, so none stays a zombie (waiting a
        moment at most: one that could not be killed is left alone)."""
        deadline = time.monotonic() + _LINGER
        waiting = set(pids)
        while waiting and time.monotonic() < deadline:
            for each in list(waiting):
                try:
                    done, _ = os.waitpid(each, os.WNOHANG)
                except OSError:  # not a child of this process: nothing to collect
                    done = each
                if done:
                    waiting.discard(each)
            if waiting:
                time.sleep(0.01)

    def exchange(self, requests: Sequence[str]) -> list[bytes]:
        """Send each request as a line; the answer lines, one per request, in order."""
        data = memoryview("".join(line + "\n" for line in requests).encode("utf-8"))
        answers: list[bytes] = []
        sent = 0
        deadline = time.monotonic() + self.timeout
        while len(answers) < len(requests):
            left = deadline - time.monotonic()
            if left <= 0:  # checked on every round: a flood of anything but answers ends too
                # A process it started may hold the pipe open after it exited: say so.
                if self._process.poll() is not None:
                    raise Misbehaved(len(answers), self._ended(), before=True)
                raise Misbehaved(len(answers), f"gave no answer within {self.timeout:g} s")
            for fd in ready_fds(self._selector, self._fds(sent < len(data)), left):
                if fd == self._in:
                    sent += self._write(data[sent : sent + _CHUNK], len(answers))
                elif fd == self._err:
                    self._keep_stderr()
                elif self._read(answers, len(requests)):
                    deadline = time.monotonic() + self.timeout
        return answers

    def _fds(self, sending: bool) -> dict[int, int]:
        fds = {self._out: selectors.EVENT_READ}
        if self._err >= 0:
            fds[self._err] = selectors.EVENT_READ
        if sending:
            fds[self._in] = selectors.EVENT_WRITE
        return fds

    def _keep_stderr(self) -> bool:
        """Take what the process wrote on stderr, keeping the last `KEPT_STDERR` bytes;
        whether the stream is still open."""
        try:
            chunk = os.read(self._err, _CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            self._err = -1  # closed: nothing more to read or wait for
            return False
        self._stderr += chunk
        del self._stderr[:-KEPT_STDERR]
        return True

    def _write(self, chunk: memoryview, pending: int) -> int:
        try:
            return os.write(self._in, chunk)
        except BlockingIOError:
            return 0
        except (BrokenPipeError, ConnectionResetError):
            raise Misbehaved(pending, self._ended(), before=True) from None

    def _read(self, answers: list[bytes], wanted: int) -> bool:
        """Take what the process wrote; whether a whole answer line came."""
        try:
            chunk = os.read(self._out, _CHUNK)
        except BlockingIOError:
            return False
        if not chunk:
            raise Misbehaved(len(answers), self._ended(), before=True)
        searched = len(self._buffer)
        self._buffer += chunk
        before = len(answers)
        while len(answers) < wanted and (end := self._buffer.find(b"\n", searched)) >= 0:
            answers.append(bytes(self._buffer[:end]))
            del self._buffer[: end + 1]
            searched = 0
        if len(self._buffer) > MAX_LINE and self._buffer.find(b"\n", searched) < 0:
            raise Misbehaved(
                len(answers),
                f"wrote a line longer than {MAX_LINE:,} bytes ({quoted(self._buffer[:80])} …)",
            )
        return len(answers) > before

    def unasked(self) -> str | None:
        """A line the process wrote past the last answer asked for (quoted), if one came."""
        end = self._buffer.find(b"\n")
        return None if end < 0 else quoted(self._buffer[:end], _LAST_WORDS)

    def _ended(self) -> str:
        """Why the process stopped reading or writing: its exit status and last words."""
        try:
            status = self._process.wait(_LINGER)
        except subprocess.TimeoutExpired:
            return "closed its standard streams without exiting"
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        self._drain_stderr()
        words = [line.strip() for line in self._stderr.decode(errors="replace").splitlines()]
        last = next((line for line in reversed(words) if line), "")
        return how + (f" ({quoted(last.encode(), _LAST_WORDS)})" if last else "")

    def _drain_stderr(self) -> None:
        """Take what is left on the stderr of a process that ended: until the stream closes,
        or a moment passes (a helper it started may hold the stream open)."""
        deadline = time.monotonic() + 0.2
        while self._err >= 0 and (left := deadline - time.monotonic()) > 0:
            if ready_fds(self._selector, {self._err: selectors.EVENT_READ}, left):
                self._keep_stderr()

    def stderr_tail(self) -> bytes:
        """The last bytes the process wrote on its standard error (at most `KEPT_STDERR`)."""
        return bytes(self._stderr)


def ready_fds(selector: selectors.BaseSelector, fds: dict[int, int], timeout: float) -> list[int]:
    """The descriptors of `fds` (each with the events to wait for) ready within `timeout`."""
    for fd, events in fds.items():
        selector.register(fd, events)
    try:
        return [key.fd for key, _ in selector.select(timeout)]
    finally:
        for fd in fds:
            selector.unregister(fd)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _children() -> dict[int, set[int]]:
    """Each process's children, as /proc shows them now (empty without /proc)."""
    children: dict[int, set[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), set()).add(int(entry))
    return children


def _descendants(pid: int) -> set[int]:
    """`pid` and every process that descends from it, as /proc shows them now."""
    children = _children()
    found = {pid}
    queue = [pid]
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def clip(text: str, most: int = QUOTED) -> str:
    """`text` cut to at most `most` characters (an ellipsis says so): what an implementation
    wrote is quoted, never repeated whole."""
    return text if len(text) <= most else text[:most] + "…"


def quoted(line: bytes | bytearray, most: int = QUOTED) -> str:
    """Bytes an implementation wrote, as a report quotes them: decoded, clipped, in quotes."""
    return repr(clip(bytes(line).decode("utf-8", errors="backslashreplace"), most))

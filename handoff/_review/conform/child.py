"""The implementation under test: a process of its own, spoken to in lines, always ended.

The process runs in a process group of its own, so that whatever it starts ends with it: on
the way out of `Implementation` (done, failed, Ctrl-C) the whole group is killed.  Requests are
sent while answers are read, so many calls are in flight at once and neither side waits for a
pipe the other does not empty.  A process that stops answering for `timeout` seconds, exits,
or says something nobody asked for raises `Misbehaved`, naming the request it left unanswered.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from types import TracebackType

__all__ = ["Implementation", "Misbehaved"]

_CHUNK = 1 << 16
_LINGER = 2.0
"""How long a process that was told the input is over may take to exit by itself."""
_LAST_WORDS = 300
"""How much of a dead process's stderr a report quotes, at most."""


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

    def __init__(self, command: Sequence[str], timeout: float) -> None:
        self.command = list(command)
        self.timeout = timeout
        # Kept until `close`: a report quotes the last words of a process that died.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self._stderr, start_new_session=True, bufsize=0,
            )  # fmt: skip
        except BaseException:
            self._stderr.close()
            raise
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._in = self._process.stdin.fileno()
        self._out = self._process.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._selector = selectors.DefaultSelector()
        self._buffer = bytearray()

    def __enter__(self) -> Implementation:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: TracebackType | None
    ) -> None:
        self.close(graceful=kind is None)

    def close(self, *, graceful: bool = True) -> None:
        """End the process and its group: told the input is over first when `graceful`."""
        process = self._process
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()
        if graceful:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(_LINGER)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever it started, too
        process.wait()
        assert process.stdout is not None
        process.stdout.close()
        self._selector.close()
        self._stderr.close()

    def exchange(self, requests: Sequence[str]) -> list[bytes]:
        """Send each request as a line; the answer lines, one per request, in order."""
        data = memoryview("".join(line + "\n" for line in requests).encode("utf-8"))
        answers: list[bytes] = []
        sent = 0
        deadline = time.monotonic() + self.timeout
        while len(answers) < len(requests):
            events = selectors.EVENT_READ
            self._selector.register(self._out, events)
            if sent < len(data):
                self._selector.register(self._in, selectors.EVENT_WRITE)
            try:
                ready = self._selector.select(max(0.0, deadline - time.monotonic()))
            finally:
                self._selector.unregister(self._out)
                if sent < len(data):
                    self._selector.unregister(self._in)
            if not ready:
                # A process it started may hold the pipe open after it exited: say so.
                if self._process.poll() is not None:
                    raise Misbehaved(len(answers), self._ended(), before=True)
                raise Misbehaved(len(answers), f"gave no answer within {self.timeout:g} s")
            for key, _ in ready:
                if key.fd == self._in:
                    sent += self._write(data[sent : sent + _CHUNK], len(answers))
                elif self._read(answers, len(requests)):
                    deadline = time.monotonic() + self.timeout
        return answers

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
        self._buffer += chunk
        before = len(answers)
        while len(answers) < wanted and (end := self._buffer.find(b"\n")) >= 0:
            answers.append(bytes(self._buffer[:end]))
            del self._buffer[: end + 1]
        return len(answers) > before

    def unasked(self) -> str | None:
        """A line the process wrote past the last answer asked for (quoted), if one came."""
        end = self._buffer.find(b"\n")
        return None if end < 0 else _clip(self._buffer[:end])

    def _ended(self) -> str:
        """Why the process stopped reading or writing: its exit status and last words."""
        try:
            status = self._process.wait(_LINGER)
        except subprocess.TimeoutExpired:
            return "closed its standard streams without exiting"
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        self._stderr.seek(0)
        words = [line.strip() for line in self._stderr.read().decode(errors="replace").splitlines()]
        last = next((line for line in reversed(words) if line), "")
        return how + (f" ({_clip(last.encode())})" if last else "")


def _clip(line: bytes | bytearray) -> str:
    text = bytes(line).decode("utf-8", errors="backslashreplace")
    return repr(text if len(text) <= _LAST_WORDS else text[:_LAST_WORDS] + "…")

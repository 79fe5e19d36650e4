"""What a command does with the process it runs in: its standard streams and Ctrl-C."""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from typing import Any

__all__ = ["DroppedInterrupts", "one_line", "silence_stdout", "tolerant_streams"]


class DroppedInterrupts:
    """While a command runs, Ctrl-C that a finalizer dropped is delivered again.

    Ctrl-C that lands while a finalizer runs (python-statemachine's engines have one) is
    raised inside `__del__`, where Python can only report and drop it: the command would run
    on as if never interrupted.  Python hands it to `sys.unraisablehook` instead; this hook
    delivers it again from another thread a moment later, once the finalizer has returned.
    """

    def __init__(self) -> None:
        self.pending = False
        self._delivered = False
        self._landed = False
        self._running = True
        self._lock = threading.Lock()
        self._previous = sys.unraisablehook
        self._previous_handler: Any = None

    def __enter__(self) -> DroppedInterrupts:
        sys.unraisablehook = self._hook
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGINT, self._interrupted)
        return self

    def __exit__(self, *_: object) -> None:
        with self._lock:
            sys.unraisablehook = self._previous
            self._running = False
            pending, self.pending = self.pending, False
        if self._delivered and not self._landed:
            # The interrupt is on its way to this thread: let it land here, inside the
            # `with`, rather than a moment later wherever the caller has got to.
            deadline = time.monotonic() + 1.0
            while not self._landed and time.monotonic() < deadline:
                time.sleep(0.001)
        if self._previous_handler is not None:
            signal.signal(signal.SIGINT, self._previous_handler)
        if pending or (self._delivered and not self._landed):
            raise KeyboardInterrupt  # the command ended before the interrupt reached it

    def _interrupted(self, signum: int, frame: object) -> None:
        self._landed = True
        raise KeyboardInterrupt

    def _hook(self, unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self._previous(unraisable)
            return
        self.pending = True
        threading.Thread(target=self._deliver, daemon=True).start()

    def _deliver(self) -> None:
        time.sleep(0.01)
        with self._lock:
            if self._running and self.pending:
                self.pending = False
                self._delivered, self._landed = True, False
                _thread.interrupt_main()


def one_line(text: str) -> str:
    """`text` with every line break and control character escaped: always one line."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def tolerant_streams() -> None:
    """Let stdout and stderr show any text: what they cannot encode is shown escaped."""
    # A file name need not be valid UTF-8; printed to a strict stdout it would end the run
    # in a UnicodeEncodeError.  Shown escaped instead, as stderr already does.
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def silence_stdout() -> None:
    """Send whatever is still written to stdout to the null device."""
    # The reader is gone: whatever is still buffered can never be delivered, and flushing it
    # at exit would raise again.  Point stdout at the null device so the exit is quiet.
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout replaced by something without a descriptor
        pass

"""What a command does with the process it runs in: its standard streams and Ctrl-C."""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

__all__ = ["DroppedInterrupts", "one_line", "silence_stdout", "tolerant_streams"]


class DroppedInterrupts:
    """While a command runs, Ctrl-C that a finalizer dropped is delivered again.

    Ctrl-C that lands while a finalizer runs (python-statemachine's engines have one) is
    raised inside `__del__`, where Python can only report and drop it: the command would run
    on as if never interrupted.  Python hands it to `sys.unraisablehook` instead; this hook
    has a thread deliver it again a moment later, once the finalizer has returned, and again
    whenever the delivery lands in another finalizer.  An interrupt that reaches the hook
    itself waits for that thread too: raised there, Python would report the hook as broken.
    Whatever is still on its way as the block ends lands inside it.
    """

    def __init__(self) -> None:
        self.pending = False
        """A dropped interrupt waits to be delivered again."""
        self._delivered = False
        self._landed = False
        self._running = True
        self._deliverer: threading.Thread | None = None
        self._lock = threading.Lock()
        self._previous = sys.unraisablehook
        self._previous_handler: Any = None

    def __enter__(self) -> DroppedInterrupts:
        sys.unraisablehook = self._hook
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGINT, self._interrupted)
        return self

    def __exit__(self, *_: object) -> None:
        try:
            with self._lock:
                self._running = False  # nothing is delivered from now on
            if self._previous_handler is not None:
                # Python runs the signals still pending before it changes a handler: an
                # interrupt delivered but not yet landed lands here, inside the block.
                signal.signal(signal.SIGINT, self._previous_handler)
                self._previous_handler = None
        finally:
            sys.unraisablehook = self._previous
            if self._previous_handler is not None:  # an interrupt landed on the way out
                signal.signal(signal.SIGINT, self._previous_handler)
        if self.pending or (self._delivered and not self._landed):
            self.pending = False
            raise KeyboardInterrupt  # the command ended before the interrupt reached it

    def _interrupted(self, signum: int, frame: FrameType | None) -> None:
        while frame is not None:
            if frame.f_code is _HOOK_CODE:
                self.pending = True  # the hook has its thread deliver it
                return
            frame = frame.f_back
        self._landed = True
        raise KeyboardInterrupt

    def _hook(self, unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            self.pending = True
        else:
            self._previous(unraisable)
        if self.pending and self._deliverer is None:
            self._deliverer = threading.Thread(target=self._deliver, daemon=True)
            self._deliverer.start()

    def _deliver(self) -> None:
        while True:
            time.sleep(0.01)  # the finalizer that dropped it returns meanwhile
            with self._lock:
                if not self._running:
                    return
                if self.pending:
                    self.pending = False
                    self._delivered, self._landed = True, False
                    _thread.interrupt_main()


_HOOK_CODE = DroppedInterrupts._hook.__code__


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

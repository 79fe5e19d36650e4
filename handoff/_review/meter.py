"""How far a long review has got, shown on a terminal: one line on stderr, rewritten in place.

An exploration tells its `Progress` every few thousand configurations; the meter shows
nothing for the first seconds (a quick review prints only its report), then the
configurations found and explored and how many a second, at most a few times a second.  When
stderr is not a terminal (a pipe, a file, a CI log) nothing is shown at all: a log of
rewritten lines helps no one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["QUIET_SECONDS", "Meter", "meter"]

QUIET_SECONDS = 2.0
"""How long a review runs before its progress is shown."""
_EVERY = 0.25
"""The least time between two lines, in seconds."""


class Meter:
    """The progress line of one command's reviews, on the terminal `out`."""

    def __init__(self, out: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        self.clock = clock
        self.shown = False
        """Whether a line is on the terminal, to be cleared before the report."""

    def showing(self, name: str) -> Callable[[int, int], None]:
        """The progress of the review of `name`, which begins now."""
        began = self.clock()
        last = began

        def show(found: int, explored: int) -> None:
            nonlocal last
            now = self.clock()
            if now - began < QUIET_SECONDS or now - last < _EVERY:
                return
            last = now
            rate = explored / (now - began)
            self.out.write(
                f"\r\x1b[Kreviewing {name}: {found:,} configurations found, {explored:,} "
                f"explored, {rate:,.0f} a second"
            )
            self.out.flush()
            self.shown = True

        return show

    def clear(self) -> None:
        """Take the progress line off the terminal."""
        if self.shown:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self.shown = False


@contextmanager
def meter(out: TextIO) -> Iterator[Meter | None]:
    """A meter on `out` when it is a terminal (None otherwise), cleared at the end."""
    isatty = getattr(out, "isatty", None)
    if isatty is None or not isatty():
        yield None
        return
    shown = Meter(out)
    try:
        yield shown
    finally:
        shown.clear()

"""A trace file read line by line, in bounded memory, and refused early when cut short.

A trace line holds one call and what it answered: a few hundred bytes.  A line longer than
`MAX_LINE_BYTES` is refused as soon as that many bytes are read, so a huge line costs no
more memory than the limit.  A trace that must end with its end line is checked for one at
its last line before any line is parsed, so a trace cut short is refused at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from handoff._values.errors import TraceError

__all__ = ["MAX_LINE_BYTES", "lines", "require_last_line"]

MAX_LINE_BYTES = 1 << 20
"""The longest trace line read (1 MiB): thousands of times what any call's line needs."""

_CHUNK = 1 << 20
_BOM = "\ufeff"


def lines(file: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    """Each non-blank line of `file` with its number, decoded; `TraceError` on a bad one.

    JSON Lines ends a line at "\\n" (or "\\r\\n") only: a string may hold U+2028 and friends,
    which the writer leaves as they are.  A UTF-8 byte order mark opening the file, which some
    editors write, is not part of its first line.
    """
    offset = 0
    number = 0
    while raw := file.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise TraceError(
                f"{name}:{number}: a line longer than {MAX_LINE_BYTES:,} bytes: not a trace "
                "(a call's line takes a few hundred)"
            )
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TraceError(f"{name}: not UTF-8 (byte {offset + error.start})") from None
        if offset == 0:
            line = line.removeprefix(_BOM)
        offset += len(raw)
        line = line.removesuffix("\n").removesuffix("\r")
        if line.strip():
            yield number, line


def require_last_line(
    file: BinaryIO,
    name: str,
    is_last: Callable[[str], bool],
    missing: Callable[[int], str],
    key: str,
) -> None:
    """Refuse `file` when no line of it can be the last line, which `is_last` accepts.

    The last non-blank line is read first.  If `is_last` refuses it and the file nowhere holds
    the JSON key `key`, no line can be: `missing(calls)` words the refusal, `calls` being the
    count of non-blank lines after the first.  Otherwise the file is left to be read line by
    line, which words what is wrong, from where the file was.
    """
    where = file.tell()
    size = file.seek(0, 2)
    file.seek(max(0, size - MAX_LINE_BYTES))
    tail = file.read()
    last = next((piece for piece in reversed(tail.split(b"\n")) if piece.strip()), b"")
    try:
        ends = is_last(last.decode("utf-8"))
    except UnicodeDecodeError:  # not text at all: what the line reader says is more to the point
        ends = True
    if not ends:
        file.seek(0)
        count, found = _scan(file, f'"{key}"'.encode())
        if not found:
            raise TraceError(f"{name}: {missing(max(count - 1, 0))}")
    file.seek(where)


def _scan(file: BinaryIO, marker: bytes) -> tuple[int, bool]:
    """How many non-blank lines `file` holds, and whether `marker` occurs in it."""
    count = 0
    filled = found = False
    carry = b""
    while chunk := file.read(_CHUNK):
        found = found or marker in carry + chunk[: len(marker)] or marker in chunk
        carry = chunk[-len(marker) :]
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            count += filled or bool(piece.strip())
            filled = False
        filled = filled or bool(pieces[-1].strip())
    return count + filled, found

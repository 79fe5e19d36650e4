"""Test vectors: the suite's requests with the response each must get, as JSON Lines.

A header, `{"vectors":{"version":1,"lines":N}}`, then N lines `{"send":REQUEST,"expect":RESPONSE}`
whose REQUEST and RESPONSE are protocol lines (see `protocol`), in the order they must be sent.
An implementation's own test runner feeds each `send` to its handler and compares what it
answers with `expect`, an error's `message` aside (docs/conformance.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from handoff._review.conform.protocol import ProtocolError, ProtocolLine, read_message
from handoff._wire.json_text import WireRefusal, parse

__all__ = ["VERSION", "read_vectors", "vector_line", "vectors_header"]

_VECTORS = "vectors"
VERSION = 1
"""The version of the vectors format (its lines are the same in every protocol version)."""


def vectors_header(lines: int) -> str:
    """The first line of a vectors file that holds `lines` vectors."""
    return f'{{"{_VECTORS}":{{"version":{VERSION},"lines":{lines}}}}}'


def vector_line(send: str, expect: str) -> str:
    """One test vector: a request line, and the response line it must get."""
    return f'{{"send":{send},"expect":{expect}}}'


def read_vectors(path: Path) -> Iterator[tuple[int, ProtocolLine, ProtocolLine]]:
    """Each vector of the file at `path` with its line number; `ProtocolError` naming the line
    for a file that is not vectors (or is cut short), `OSError` for one that cannot be read."""
    with path.open("rb") as file:
        rows = enumerate(file, start=1)
        stated = _header(path, next(rows, (1, b"")))
        count = 0
        for number, raw in rows:
            send, expect = _vector(f"{path}:{number}", raw)
            count += 1
            yield number, send, expect
    if count != stated:
        raise ProtocolError(f"{path}: the header counts {stated} vectors, the file holds {count}")


def _header(path: Path, first: tuple[int, bytes]) -> int:
    try:
        data = parse(first[1])
    except WireRefusal:
        data = None
    header = data.get(_VECTORS) if isinstance(data, dict) and len(data) == 1 else None
    if not isinstance(header, dict) or set(header) != {"version", "lines"}:
        raise ProtocolError(
            f'{path}:1: expected the header {{"{_VECTORS}":{{"version":{VERSION},"lines":N}}}}'
        )
    if header["version"] != VERSION:
        raise ProtocolError(
            f"{path}:1: vectors of protocol version {header['version']!r}; "
            f"this side reads version {VERSION}"
        )
    lines = header["lines"]
    if type(lines) is not int:
        raise ProtocolError(f"{path}:1: lines must be a whole number, got {lines!r}")
    return lines


def _vector(where: str, raw: bytes) -> tuple[ProtocolLine, ProtocolLine]:
    try:
        data = parse(raw)
    except WireRefusal as refusal:
        raise ProtocolError(f"{where}: not JSON: {refusal.reason}") from None
    if not isinstance(data, dict) or set(data) != {"send", "expect"}:
        raise ProtocolError(f'{where}: expected {{"send":…,"expect":…}}')
    found = []
    for key in ("send", "expect"):
        value = data[key]
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: ${key}: expected a JSON object")
        try:
            found.append(read_message(value))
        except WireRefusal as refusal:
            raise ProtocolError(f"{where}: ${key}{refusal.path[1:]}: {refusal.reason}") from None
        except ProtocolError as error:
            raise ProtocolError(f"{where}: {key}: {error}") from None
    return found[0], found[1]

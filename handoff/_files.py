"""Writing a command's outputs: whole or not at all, and never over something that is no file.

Every file a command writes goes through `write_text` (or `write_bytes`).  The text goes to a
fresh file beside the target, which then replaces the target in one rename, so a reader (or
a crash, a full disk, a Ctrl-C) never sees half of it.  The target must be a regular file or
a missing path; a symbolic link is followed and its target replaced, the link kept.  Anything
else (a directory, a FIFO, a device such as `/dev/null`, a socket) is refused untouched.
Every failure is an `OutputError` whose one-line message names the file.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "OutputError",
    "discard",
    "make_directory",
    "refusal",
    "words",
    "write_bytes",
    "write_chunks",
    "write_text",
]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_ADVICE = {
    errno.ENOSPC: "no space left on the device: free some space and run again",
    errno.EDQUOT: "the disk quota is exceeded: free some space and run again",
    errno.EFBIG: "the file would be larger than this process may write (see `ulimit -f`)",
    errno.ENAMETOOLONG: "the file name is too long: choose a shorter one",
    errno.ELOOP: "a symbolic link in the path loops: fix or remove it",
}


class OutputError(Exception):
    """A file a command was to write could not be written; the message names the file."""

    status = 1


def refusal(path: Path) -> str | None:
    """Why `path` cannot be written as an output (it is not a regular file), or None.

    A missing path is fine; a symbolic link is judged by what it points at.
    """
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # missing; a file above it fails the write
        return None
    except OSError as error:
        return f"cannot write {path}: {words(error)}"
    for test, kind in _KINDS:
        if test(mode):
            return f"{path} is {kind}, not a regular file: give the name of a file to write"
    return None


def make_directory(path: Path) -> None:
    """Make the directory `path` (and its parents) unless it is one; `OutputError` if not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"cannot write into {path}: it is not a directory") from None
    except OSError as error:
        raise OutputError(f"cannot write into {path}: {words(error)}") from None


def write_text(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` whole, or raise `OutputError` leaving `path` as it was."""
    write_bytes(path, text.encode("utf-8", "surrogateescape"))


def write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole, or raise `OutputError` leaving `path` as it was."""
    write_chunks(path, (data,))


def write_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """Write `chunks`, made one after the other, to `path` whole, or raise leaving `path` as
    it was: `OutputError` if it cannot be written, or whatever making a chunk raised."""
    why = refusal(path)
    if why is not None:
        raise OutputError(why)
    try:
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
        _replace(target, chunks)
    except OSError as error:
        raise OutputError(f"cannot write {path}: {words(error)}") from None


def _replace(target: Path, chunks: Iterable[bytes]) -> None:
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    # A short name of our own: the target's name may already be as long as a name can be.
    partial = os.path.join(target.parent, f".handoff-{secrets.token_hex(6)}.partial")
    # The open is inside the guard: a Ctrl-C landing after the file is made but before its
    # descriptor has a name would otherwise leave it behind.
    try:
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "wb") as file:
            for chunk in chunks:
                file.write(chunk)
            if mode is not None:
                os.fchmod(file.fileno(), mode)
        os.replace(partial, target)
    except BaseException:  # a full disk, a Ctrl-C: no half-written file is left behind
        discard(partial)
        raise


def discard(path: str | os.PathLike[str]) -> None:
    """Remove the file at `path` if there is one, even through more Ctrl-Cs: it is being
    removed because the command is already ending."""
    while True:
        try:
            os.unlink(path)
        except KeyboardInterrupt:
            continue
        except OSError:  # gone already, or never made
            return
        return


def words(error: OSError) -> str:
    """What an `OSError` means for a file being written, in a few lower-case words."""
    return _ADVICE.get(error.errno or 0) or (error.strerror or str(error)).lower()

"""Paths on a command line: argparse types that check a path before the command runs.

A path a command will write is refused while the command line is parsed, so a bad one
stops the command before it has done (or written) anything.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable
from pathlib import Path

from handoff import _files

__all__ = ["directory", "existing_file", "new_file", "output_directory", "writable_directory"]


def _path_type(check: Callable[[str], Path]) -> Callable[[str], Path]:
    """`check`, with any OSError of looking at the path (a name too long, a link loop, no
    permission to look) refused as a bad value naming the path."""

    @functools.wraps(check)
    def checked(text: str) -> Path:
        try:
            return check(text)
        except OSError as error:
            raise argparse.ArgumentTypeError(f"cannot use {text}: {_files.words(error)}") from None

    return checked


@_path_type
def directory(text: str) -> Path:
    """An argparse type: a directory, or a path where one can be made (not under a file)."""
    path = Path(text)
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):  # the check below words these
        if path.is_symlink():
            raise argparse.ArgumentTypeError(
                f"{text} is a dangling symbolic link: remove it, or point it at a directory"
            ) from None
    nearest = _nearest_existing(path)
    if not nearest.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a directory: {nearest} is a file")
    return path


@_path_type
def output_directory(text: str) -> Path:
    """An argparse type: a directory the command may create and write files into."""
    path = directory(text)
    _check_writable(_nearest_existing(path), text)
    return path


def writable_directory(path: Path) -> None:
    """Raise ArgumentTypeError unless files can be written under the directory `path`."""
    _check_writable(_nearest_existing(path), str(path))


@_path_type
def existing_file(text: str) -> Path:
    """An argparse type: a file that exists (the command will read it)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no file {text}; check the path")
    return path


@_path_type
def new_file(text: str) -> Path:
    """An argparse type: a file the command may create or replace, in an existing directory."""
    path = Path(text)
    why = _files.refusal(path)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
    parent = path.parent
    if not parent.is_dir():
        nearest = _nearest_existing(parent)
        if not nearest.is_dir():
            raise argparse.ArgumentTypeError(f"cannot create {text}: {nearest} is a file")
        raise argparse.ArgumentTypeError(
            f"cannot create {text}: no directory {parent}; create it first"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: the file is read-only")
    _check_writable(parent, text)
    return path


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_writable(existing: Path, text: str) -> None:
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(
            f"cannot write under {text}: {existing} is read-only; choose a writable directory"
        )

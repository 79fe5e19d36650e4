"""The fixed text of the generated Promela models, read from the `.pml` files shipped beside.

Each file under `promela/` is one section of a model as it is written, with `$name` where
the Python fills in what varies (a chart's sizes, the environment's calls, a system's
options).  A line holding only `$name` becomes the lines of `name` (none, one or many), each
indented as the marker is; elsewhere `$name` becomes the text of `name`, as `string.Template`
substitutes it, and `$$` a dollar sign.  The files are text, never run: what a model says
that is not in its file is what the caller hands to `filled`, by name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from string import Template

__all__ = ["Value", "filled", "fixed"]

Value = str | int | Sequence[str]
"""What fills a placeholder: text, a number, or lines (for a marker on a line of its own)."""

_MARKER = re.compile(r"([ \t]*)\$(?:(\w+)|\{(\w+)\})")


@functools.cache
def fixed(name: str) -> str:
    """The text of `promela/<name>.pml`, without its final newline (sections are joined)."""
    path = resources.files(__package__).joinpath("promela", f"{name}.pml")
    return path.read_text(encoding="utf-8").removesuffix("\n")


def filled(section: str, /, **values: Value) -> str:
    """`promela/<section>.pml` with its placeholders filled from `values`: every placeholder
    the file names must be given, and every value given must be named."""
    text = fixed(section)
    named = set(Template(text).get_identifiers())
    if named != set(values):
        raise KeyError(
            f"{section}.pml names {sorted(named)}, but the values given are {sorted(values)}"
        )
    inline = {key: value for key, value in values.items() if isinstance(value, (str, int))}
    try:
        filled = [each for line in text.split("\n") for each in _fill(line, values, inline)]
    except KeyError as missing:
        raise KeyError(
            f"{section}.pml: ${missing.args[0]} stands within a line, so it takes text, not lines"
        ) from None
    return "\n".join(filled)


def _fill(line: str, values: Mapping[str, Value], inline: Mapping[str, object]) -> list[str]:
    """The lines `line` becomes: a marker's value as lines, or the line with its text filled."""
    marker = _MARKER.fullmatch(line)
    if marker is None:
        return [Template(line).substitute(inline)]
    indent, key = marker[1], marker[2] or marker[3]
    return [indent + each if each else each for each in _lines(values[key])]


def _lines(value: Value) -> list[str]:
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, str):
        return value.split("\n") if value else []
    return list(value)

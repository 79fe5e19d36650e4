"""How a name the package exports says so: its `__module__` is `handoff`."""

from __future__ import annotations

__all__ = ["exported"]


def exported(*names: object) -> None:
    """Make each of `names` report `handoff` as its module, so that tracebacks, reprs and
    pickles name the public package rather than the private module defining it."""
    for name in names:
        setattr(name, "__module__", "handoff")  # noqa: B010 - not every object types it

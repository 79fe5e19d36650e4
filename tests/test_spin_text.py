"""The Promela models' fixed text as package data: how a section is filled, and that every
shipped section is one the models read (without running Spin)."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

import pytest

from handoff import HandoffOrder
from handoff._compile.table import compiled
from handoff._review.spin import text
from handoff._review.spin.model import model
from handoff._review.spin.system import system_model
from handoff._system.config import System
from handoff._system.faults import Fault
from handoff._system.workers import TOMBSTONE

SECTION = """\
/* $what, $count of them */
inline f() {
  if
  $options
  :: else -> skip
  fi;
$tail
  $$done
}"""


@pytest.fixture
def section(monkeypatch: pytest.MonkeyPatch) -> None:
    """`filled` reads `SECTION`, whatever the section's name."""
    monkeypatch.setattr(text, "fixed", lambda name: SECTION)


@pytest.mark.usefixtures("section")
def test_a_marker_line_becomes_its_lines_indented_as_it_is() -> None:
    filled = text.filled("any", what="calls", count=2, options=[":: a", ":: b"], tail="x = 0")
    assert filled == (
        "/* calls, 2 of them */\ninline f() {\n  if\n  :: a\n  :: b\n  :: else -> skip\n"
        "  fi;\nx = 0\n  $done\n}"
    )


@pytest.mark.usefixtures("section")
def test_a_marker_line_with_no_lines_is_dropped() -> None:
    filled = text.filled("any", what="calls", count=0, options=[], tail="")
    assert (
        filled == "/* calls, 0 of them */\ninline f() {\n  if\n  :: else -> skip\n  fi;\n  $done\n}"
    )


@pytest.mark.usefixtures("section")
def test_every_placeholder_is_given_and_every_value_named() -> None:
    with pytest.raises(KeyError, match=r"any.pml names .*'tail'.*given are \['count', 'options'"):
        text.filled("any", what="calls", count=2, options=[])
    with pytest.raises(KeyError, match=r"given are .*'typo'"):
        text.filled("any", what="c", count=2, options=[], tail="", typo="t")
    with pytest.raises(KeyError, match=r"any.pml: \$what stands within a line, so it takes text"):
        text.filled("any", what=["a"], count=2, options=[], tail="")


def test_a_shipped_section_keeps_its_text() -> None:
    assert text.fixed("adapter").startswith("/* -- the adapter: the call becomes one chart event")
    assert not text.fixed("adapter").endswith("\n")  # the model joins sections itself


def test_every_shipped_section_is_read_by_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    read: set[str] = set()
    real = resources.files

    monkeypatch.setattr(resources, "files", lambda package: _Noting(real(package), read))
    text.fixed.cache_clear()
    try:
        for order in HandoffOrder:
            model(compiled(order))
        injected = frozenset(Fault)
        system_model(compiled(HandoffOrder.SOURCE_FIRST), System(TOMBSTONE, injected=injected))
    finally:
        text.fixed.cache_clear()
    shipped = {item.name for item in real("handoff._review.spin").joinpath("promela").iterdir()}
    assert {name for name in shipped if name.endswith(".pml")} == shipped
    assert read == shipped


class _Noting:
    """A package's files, noting the name of each file read under it."""

    def __init__(self, root: Traversable, read: set[str]) -> None:
        self.root, self.read = root, read

    def joinpath(self, *parts: str) -> Traversable:
        self.read.add(parts[-1])
        return self.root.joinpath(*parts)

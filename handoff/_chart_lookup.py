"""Naming charts: an order by its name, any chart by `MODULE:NAME`.

The command line and `check_trace` take charts so.  NAME is a `HandoffChart` subclass of
MODULE (dotted, for a class nested in another), or a compiled table
(`handoff._table.CompiledChart`) kept there: tools that break a table on purpose, as the
review's tests do, name it like a chart.  MODULE is imported from the current directory or
the Python path.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import attrs

from handoff._table import CompiledChart, compiled
from handoff._values import HandoffOrder

if TYPE_CHECKING:
    from handoff._chart_base import HandoffChart

__all__ = ["NamedChart", "find_chart", "parse_order", "spelling"]


def _squash(text: str) -> str:
    return text.strip().replace("-", "").replace("_", "").casefold()


_ORDER_SPELLINGS = {
    _squash(spelling): order for order in HandoffOrder for spelling in (order.value, order.name)
}
_ORDER_CHOICES = " or ".join(order.value for order in HandoffOrder)


def parse_order(text: str) -> HandoffOrder:
    """The order `text` names: its wire value (`SourceFirst`) or its enum name (`SOURCE_FIRST`).

    Case, `-` and `_` do not matter.  Raises ValueError naming the accepted spellings.
    """
    order = _ORDER_SPELLINGS.get(_squash(text))
    if order is None:
        raise ValueError(f"unknown order {text!r}: expected {_ORDER_CHOICES}")
    return order


@attrs.frozen
class NamedChart:
    """A chart found by name: what it was called, and the chart class or table itself."""

    spec: str
    """`MODULE:NAME`, as it was given."""
    rules: type[HandoffChart] | CompiledChart

    @property
    def table(self) -> CompiledChart:
        """The table a coordinator runs for this chart."""
        return self.rules if isinstance(self.rules, CompiledChart) else compiled(self.rules)

    @property
    def order(self) -> HandoffOrder:
        """The chart's order."""
        return self.table.order


def spelling(chart: type) -> str:
    """How a chart class is named for `find_chart`: `module:QualifiedName`."""
    return f"{chart.__module__}:{chart.__qualname__}"


def find_chart(text: str, *, tables: bool = False) -> NamedChart:
    """The chart `text` (`MODULE:NAME`) names; `tables` also accepts a compiled table.

    Raises ValueError saying what is wrong and what would be right.
    """
    module_name, colon, name = (part.strip() for part in text.partition(":"))
    if not (colon and module_name and name):
        raise ValueError(f"expected MODULE:CLASS, such as my_chart:MyChart, got {text!r}")
    found = _import(module_name)
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ValueError(f"module {module_name} has no {name}")
    if tables and isinstance(found, CompiledChart):
        return NamedChart(f"{module_name}:{name}", found)
    from handoff._chart_base import HandoffChart

    if not (isinstance(found, type) and issubclass(found, HandoffChart) and found.states):
        raise ValueError(
            f"{text} is not a chart: derive it from HandoffChart, SourceFirstChart or "
            "DestinationFirstChart"
        )
    return NamedChart(f"{module_name}:{name}", found)


def _import(name: str) -> Any:
    # A user's chart module sits beside them, not in the package's environment.
    here = os.getcwd()
    if sys.path[:1] != [here]:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            raise ValueError(f"no module {name} in {here} or on the Python path") from None
        raise ValueError(f"importing {name} failed: {error}") from None
    except Exception as error:  # a user's module may raise anything
        raise ValueError(f"importing {name} failed: {type(error).__name__}: {error}") from None

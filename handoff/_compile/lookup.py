"""Naming charts: an order by its name, any chart by `MODULE:NAME`.

The command line and `check_trace` take charts so.  NAME is a `HandoffChart` subclass of
MODULE (dotted, for a class nested in another), or a compiled table
(`handoff._compile.table.CompiledChart`) kept there: tools that break a table on purpose, as the
review's tests do, name it like a chart.  MODULE is imported from the current directory or
the Python path.

A user's module is code the command does not control.  While it is imported and its names are
looked up, whatever it prints goes to stderr (stdout carries the command's own output, such
as `review --format json`), and whatever it raises — `sys.exit` included, but not Ctrl-C — is
a ValueError naming the module.  A table is checked for its shape before anything runs it.

Only a name the caller gives is imported.  A name read from a file (a snapshot's chart, a
trace's chart, workers or properties) is data: it finds what is shipped or what the caller
handed over, and any other is `NotGiven`, with nothing imported.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from handoff._chart.vocabulary import ChartEvent, Check, Effect, Refusal
from handoff._compile.table import CompiledChart, Step, compiled
from handoff._values.values import HandoffOrder

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = ["NamedChart", "NotGiven", "find_chart", "parse_order", "shipped_chart", "spelling"]

T = TypeVar("T")


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


class NotGiven(ValueError):
    """A name read from a file that is neither shipped nor handed over by the caller; its
    caller's words say how to hand it over (`allow`)."""

    def __init__(self, what: str, name: str) -> None:
        self.what = what
        self.name = name if len(name) <= _SHOWN else "MODULE:NAME"
        """The name, for a hint to repeat; a long one (a file may hold anything) is not."""
        shown = name if len(name) <= _SHOWN else f"{name[:_SHOWN]}… ({len(name):,} characters)"
        super().__init__(
            f"{what} {shown} is neither shipped nor given: a file's names are data, "
            "and nothing they name is imported"
        )

    def allow(self, how: str) -> str:
        """The refusal, then how to allow the name (`how`, e.g. `give it with --chart X`)."""
        return f"{self}; {how} to allow it"


_SHOWN = 120
"""The longest name a refusal quotes whole."""


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


def shipped_chart(name: str) -> NamedChart | None:
    """The shipped chart class a file names as `MODULE:CLASS` (`handoff:SourceFirstChart`),
    found among those already loaded; None for any other name.  Nothing is imported."""
    from handoff._chart.shipped import CHARTS

    for chart in CHARTS.values():
        if name.strip() in (spelling(chart), f"handoff:{chart.__qualname__}"):
            return NamedChart(name.strip(), chart)
    return None


def find_chart(text: str, *, tables: bool = False) -> NamedChart:
    """The chart `text` (`MODULE:NAME`) names; `tables` also accepts a compiled table.

    Raises ValueError saying what is wrong and what would be right.
    """
    module_name, colon, name = (part.strip() for part in text.partition(":"))
    if not (colon and module_name and name):
        raise ValueError(f"expected MODULE:CLASS, such as my_chart:MyChart, got {text!r}")
    try:
        found = _import(module_name)
    except ValueError as error:
        if not module_name.endswith(".py"):
            raise
        # A file name where a module name belongs: the likeliest slip, so say the fix.
        module = module_name.removesuffix(".py").replace("/", ".").replace("\\", ".")
        raise ValueError(
            f"{error}; MODULE is a module's name, not its file: did you mean {module}:{name}?"
        ) from None
    for part in name.split("."):
        found = _attribute(found, part, f"looking up {name} in {module_name}")
        if found is None:
            raise ValueError(f"module {module_name} has no {name}")
    if tables and isinstance(found, CompiledChart):
        _check_table(found, f"{module_name}:{name}")
        return NamedChart(f"{module_name}:{name}", found)
    from handoff._chart.base import HandoffChart

    if not _guarded(f"looking at {text}", lambda: _is_chart(found, HandoffChart)):
        raise ValueError(
            f"{text} is not a chart: derive it from HandoffChart, SourceFirstChart or "
            "DestinationFirstChart"
        )
    return NamedChart(f"{module_name}:{name}", found)


def _attribute(owner: object, name: str, doing: str) -> Any:
    return _guarded(doing, lambda: getattr(owner, name, None))


def _is_chart(found: object, base: type) -> bool:
    return isinstance(found, type) and issubclass(found, base) and bool(found.states)  # type: ignore[attr-defined]


def _import(name: str) -> Any:
    """A user's module, imported without writing anything beside it.

    A user's chart module sits beside them, not in the package's environment; importing it
    must not leave a `__pycache__` folder in their repository or docs source, which they never
    asked a command to write."""
    here = os.getcwd()
    if sys.path[:1] != [here]:
        sys.path.insert(0, here)
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        return _guarded(f"importing {name}", lambda: importlib.import_module(name))
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            raise ValueError(f"no module {name} in {here} or on the Python path") from None
        raise ValueError(f"importing {name} failed: {error}") from None
    finally:
        sys.dont_write_bytecode = writes


def _guarded(doing: str, run: Callable[[], T]) -> T:
    """`run()` on a user's code: its prints go to stderr, whatever it raises is a ValueError.

    Ctrl-C is the user's, not the module's: it goes on as it came.  A missing module goes on
    too, for `_import` to word.
    """
    try:
        with _stdout_to_stderr():
            return run()
    except (KeyboardInterrupt, ModuleNotFoundError):
        raise
    except SystemExit as error:
        raise ValueError(f"{doing} failed: it called sys.exit({error.code!r})") from None
    except BaseException as error:  # a user's module may raise anything
        raise ValueError(f"{doing} failed: {type(error).__name__}: {error}") from None


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what is printed to stdout, by Python or below it (file descriptor 1), to stderr."""
    saved = None
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):  # no descriptors (stdout replaced in a test)
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            sys.stderr.flush()
            os.dup2(saved, 1)
            os.close(saved)


def _check_table(table: CompiledChart, spec: str) -> None:
    """Refuse a table whose shape no coordinator can run: a ValueError saying where."""
    try:
        problem = _table_problem(table)
    except Exception as error:  # a field of the wrong type entirely: no length, no items
        problem = f"{type(error).__name__}: {error}"
    if problem is not None:
        raise ValueError(f"{spec} is a broken compiled table: {problem}")


def _table_problem(table: CompiledChart) -> str | None:
    states = len(table.states) if isinstance(table.states, tuple) else -1
    if not isinstance(table.name, str) or not isinstance(table.order, HandoffOrder):
        return "its name must be a str and its order a HandoffOrder"
    if states < 1 or not all(isinstance(state, str) for state in table.states):
        return "its states must be a non-empty tuple of state ids"
    if not isinstance(table.names, tuple) or len(table.names) != states:
        return f"it names {len(table.names)} states for {states} state ids"
    if not isinstance(table.rows, tuple) or len(table.rows) != states:
        return f"it has {len(table.rows)} rows for {states} states"
    if not all(isinstance(index, int) and 0 <= index < states for index in table.complete):
        return "its complete states must be state indices"
    for source, row in enumerate(table.rows):
        if not isinstance(row, tuple) or len(row) != len(ChartEvent):
            return f"row {source} must hold one step per event ({len(ChartEvent)})"
        for event, step in zip(ChartEvent, row, strict=True):
            problem = _step_problem(step, source, event, states)
            if problem is not None:
                return f"the step of {event.name} in state {source}: {problem}"
    return None


def _step_problem(step: object, source: int, event: ChartEvent, states: int) -> str | None:
    if not isinstance(step, Step):
        return f"a {type(step).__name__}, not a Step"
    if step.source != source or step.event is not event:
        return f"it says it is the step of {step.event} in state {step.source}"
    if not (isinstance(step.target, int) and 0 <= step.target < states):
        return f"target {step.target!r} is not a state index (0 to {states - 1})"
    if step.refusal is not None and not isinstance(step.refusal, Refusal):
        return f"refusal {step.refusal!r} is not a Refusal"
    if not all(isinstance(check, Check) for check in step.checks):
        return "its checks must be Checks"
    if not all(isinstance(effect, Effect) for effect in step.effects):
        return "its effects must be Effects"
    return None

"""What every `handoff` command shares: one error path, option value types, path checks.

Every problem a user can cause ends as one line on stderr,
`handoff <command>: error: <what is wrong and what to do>`, with exit status 2 for a bad
invocation and 1 for a failure the command detected.  Option values are checked while the
command line is parsed, so a bad value or an unwritable path stops a command before it has
done (or written) anything.
"""

from __future__ import annotations

import argparse
import decimal
import math
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from handoff import _files, _process
from handoff._compile.lookup import NamedChart, find_chart, parse_order
from handoff._compile.table import CompiledChart
from handoff._paths import (
    directory,
    existing_file,
    new_file,
    output_directory,
    writable_directory,
)
from handoff._values.values import HandoffOrder

if TYPE_CHECKING:
    from handoff._chart.base import HandoffChart

__all__ = [
    "ALL_ORDERS",
    "DISTRIBUTION",
    "ORDER_HELP",
    "CommandError",
    "Parser",
    "UsageError",
    "add_chart_options",
    "add_version",
    "chart",
    "directory",
    "error",
    "existing_file",
    "named_chart",
    "new_file",
    "one_order",
    "order_words",
    "orders",
    "output_directory",
    "parse_order",
    "probability",
    "require_writable",
    "run",
    "whole_number",
]

DISTRIBUTION = "kv-handoff"
"""The name the package is published and installed under; it is imported as `handoff`."""

ALL_ORDERS = "all"
"""The one word, in every command, for "each order in turn"."""

INTERRUPTED = 130  # what a shell reports for a process ended by Ctrl-C
OUT_OF_MEMORY = 4
"""Every command's status when it ran out of memory: distinct from any verdict it gives."""
BROKEN_PIPE = 141  # what a shell reports for a process ended by a closed pipe


class CommandError(Exception):
    """A failure a command detected; reported as one line, exit status 1."""

    status = 1


class UsageError(CommandError):
    """A bad invocation: an unknown option, a bad value, an unusable path; exit status 2."""

    status = 2

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class _Formatter(argparse.HelpFormatter):
    """Help that shows every option's default beside its text."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            action.option_strings
            and action.default is not None
            and action.default is not False
            and action.default is not argparse.SUPPRESS
            and "%(default)" not in text
            and f"(default: {action.default})" not in text  # said by the help already
        ):
            text += " (default: %(default)s)"
        return text

    def _split_lines(self, text: str, width: int) -> list[str]:
        # Names such as TensorRT-LLM or docs/model-review.md must not break at their hyphens.
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, raised rather than printed."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        # argparse words a bad value as "argument --x: ..."; the option alone reads better.
        message = message.removeprefix("argument ")
        raise UsageError(f"{message} (see `{self.prog} --help`)", self.prog)


class _Version(argparse.Action):
    """`--version`: the distribution's name and installed version, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", f"print the {DISTRIBUTION} version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from importlib import metadata

        try:
            version = metadata.version(DISTRIBUTION)
        except metadata.PackageNotFoundError:
            version = "(not installed: run from a source tree)"
        print(f"{DISTRIBUTION} {version}")
        parser.exit()


def add_version(parser: argparse.ArgumentParser) -> None:
    """Give `parser` a `--version` option."""
    parser.add_argument("--version", action=_Version)


# -- running a command ------------------------------------------------------------------


Parsers = Callable[[], tuple[argparse.ArgumentParser, Mapping[str, argparse.ArgumentParser]]]
"""Makes the top-level parser and each command's, by the command's name."""


def run(build: Parsers, argv: Sequence[str] | None) -> int:
    """Parse `argv` with the parsers `build` makes, run `args.run(args)`; returns the status.

    Options that no parser knows are reported by the command's own parser, so the hint
    names the command's usage rather than the top level's.
    """
    _process.tolerant_streams()
    status = 0
    try:
        with _process.DroppedInterrupts():
            status = _run(build, argv)
    except KeyboardInterrupt:  # a dropped Ctrl-C, delivered again as the command ended
        if status == INTERRUPTED:
            return status  # the command has said so already: one line
        return _fail("handoff", "interrupted", INTERRUPTED, fresh_line=True)
    return status


def _run(build: Parsers, argv: Sequence[str] | None) -> int:
    prog = "handoff"
    exhausted = False
    try:
        parser, commands = build()
        args, unknown = parser.parse_known_args(argv)
        command = commands[args.command]
        prog = command.prog
        if unknown:
            command.error(f"unrecognized arguments: {' '.join(unknown)}")
        status: int = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
    except UsageError as error:
        return _fail(error.prog or prog, str(error), error.status)
    except (CommandError, _files.OutputError) as error:
        return _fail(prog, str(error), error.status)
    except KeyboardInterrupt:
        return _fail(prog, "interrupted", INTERRUPTED, fresh_line=True)
    except BrokenPipeError:
        _process.silence_stdout()
        return BROKEN_PIPE
    except OSError as error:
        return _fail(prog, _os_error_text(error), 1)
    except MemoryError:
        exhausted = True  # said below, once the work the error holds on to is let go
    if exhausted:
        return _fail(prog, _out_of_memory(prog), OUT_OF_MEMORY)
    return status


_LESS_WORK = {
    "review": "review a smaller world (fewer handoffs at once, faults or a smaller fault "
    "budget, --fifo) or one order at a time, or lower --max-configurations",
    "replay": "replay fewer runs with workers at once (each is held whole while it is judged)",
}
"""What asks a command for less memory, by command."""


def _out_of_memory(prog: str) -> str:
    less = _LESS_WORK.get(prog.rpartition(" ")[2], "ask for less work")
    return (
        f"out of memory: the command needed more memory than this process may use (see "
        f"`ulimit -v`); allow it more, or {less}"
    )


def error(prog: str, message: str, *, fresh_line: bool = False) -> None:
    """Print `prog: error: message` as one line on stderr, whatever `message` holds.

    Every command reports its errors through here: a line break or another control
    character in a name (a chart's title, a file's) is shown escaped, never obeyed.
    """
    start = "\n" if fresh_line and sys.stderr.isatty() else ""
    print(f"{start}{prog}: error: {_process.one_line(message)}", file=sys.stderr, flush=True)


def _fail(prog: str, message: str, status: int, *, fresh_line: bool = False) -> int:
    error(prog, message, fresh_line=fresh_line)
    return status


def _os_error_text(error: OSError) -> str:
    where = f"{error.filename}: " if error.filename is not None else ""
    words = error.strerror or str(error) or type(error).__name__
    return f"{where}{words}; check the path and its permissions"


# -- option value types ------------------------------------------------------------------


def whole_number(
    minimum: int | None = None, maximum: int | None = None, why: str = ""
) -> Callable[[str], int]:
    """An argparse type: a whole number in [minimum, maximum] (`10000`, `10_000`, `1e4`).

    `why` follows the maximum in the message: the reason there is a limit.
    """

    def whole_number(text: str) -> int:
        value = _integer(text)
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:,}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}{why}, got {text}")
        return value

    return whole_number


def _integer(text: str) -> int:
    try:
        number = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        number = decimal.Decimal("NaN")
    # A huge exponent would make int() build a number with that many digits.
    if not number.is_finite() or number.adjusted() > 40 or number != number.to_integral_value():
        raise argparse.ArgumentTypeError(f"expected a whole number such as 100, got {text!r}")
    return int(number)


def probability(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"expected a probability from 0 to 1, got {text!r}")
    return value


def orders(text: str) -> tuple[HandoffOrder, ...]:
    """An argparse type: one order, or `all` for each order in turn."""
    if text.strip().casefold() == ALL_ORDERS:
        return tuple(HandoffOrder)
    try:
        return (parse_order(text),)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error}, or {ALL_ORDERS}") from None


def order_words(chosen: Sequence[HandoffOrder]) -> str:
    """How a choice of orders is written back to the user: as they would type it."""
    if tuple(chosen) == tuple(HandoffOrder):
        return ALL_ORDERS
    return ", ".join(order.value for order in chosen)


ORDER_HELP = (
    f"SourceFirst (vLLM, TensorRT-LLM), DestinationFirst (SGLang) or {ALL_ORDERS}; "
    "the enum names (SOURCE_FIRST, ...) are accepted too"
)
"""How every command's `--order` help ends."""

_ONE_ORDER_HELP = "SourceFirst or DestinationFirst (or the enum names)"


CHART_HELP = (
    "a chart of your own, MODULE:CLASS (MODULE imported from the current directory or the "
    "Python path); repeat for several; replaces --order"
)
"""How a command's `--chart` help reads unless it says more."""


def add_seed(parser: argparse.ArgumentParser, what: str) -> None:
    """`--seed S` (default 0): what the seed chooses, and that the same seed repeats it."""
    parser.add_argument(
        "--seed",
        type=whole_number(),
        default=0,
        metavar="S",
        help=f"seed of {what}: the same seed makes the same run",
    )


def add_chart_options(
    parser: argparse.ArgumentParser,
    *,
    order: Literal["each", "one"] | None,
    order_help: str = "the chart(s) to use",
    charts: bool = True,
    chart_help: str = CHART_HELP,
    tables: bool = False,
) -> None:
    """Give `parser` the options that choose a chart: `--order`, `--chart` or both.

    `order="each"` takes one order or `all` (default all), `order="one"` exactly one (default
    SourceFirst); its help is `order_help` followed by the spellings.  `--chart MODULE:CLASS`
    may be repeated; it yields chart classes, or with `tables` `NamedChart`s that may also
    hold a compiled table.
    """
    if order is not None:
        parser.add_argument(
            "--order",
            type=orders if order == "each" else one_order,
            default=ALL_ORDERS if order == "each" else HandoffOrder.SOURCE_FIRST.value,
            metavar="ORDER",
            help=f"{order_help}: {ORDER_HELP if order == 'each' else _ONE_ORDER_HELP}",
        )
    if charts:
        parser.add_argument(
            "--chart",
            type=named_chart if tables else chart,
            action="append",
            metavar="MODULE:CLASS",
            help=chart_help,
        )


def one_order(text: str) -> HandoffOrder:
    """An argparse type: exactly one order."""
    try:
        return parse_order(text)
    except ValueError as error:  # argparse shows an ArgumentTypeError's own words
        raise argparse.ArgumentTypeError(str(error)) from None


def named_chart(text: str) -> NamedChart:
    """An argparse type: `MODULE:NAME`, a chart class or a compiled table, with its name."""
    try:
        return find_chart(text, tables=True)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def chart(text: str) -> type[HandoffChart]:
    """An argparse type: `MODULE:CLASS`, a chart class from the current directory or the
    Python path."""
    rules = named_chart(text).rules
    if isinstance(rules, CompiledChart):
        raise argparse.ArgumentTypeError(f"{text} is a compiled table: name a chart class")
    return rules


def require_writable(path: Path, option: str) -> None:
    """Refuse, as a usage error, a directory `option` names that cannot be written."""
    try:
        writable_directory(path)
    except argparse.ArgumentTypeError as error:
        raise UsageError(f"{option}: {error}") from None

"""The pytest file of an explained counterexample: the run, judged through the public API.

The file names its trace (next to it), the chart it was explained for (`CHART`, as
`MODULE:CLASS`; None for an order's shipped chart) and the property, and asserts that
`handoff.check_trace` finds the property holding along the run.  On the broken chart it fails
with the property's sentence and what broke it; once the chart is fixed in place it passes,
whatever else the fixed chart does differently from the shipped one.  It names nothing
private, so it can be copied into a user's own suite.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from handoff._system.properties import Property

__all__ = ["chart_folder", "pytest_source"]

_TEMPLATE = '''\
"""{key} ({title}) along a counterexample, kept as a test.

{words}

Replays {trace} on the chart CHART names, with handoff.check_trace, and asserts {key}:
it fails while the chart breaks {key} along this run and passes once the chart is fixed.
"""

import pathlib
{imports}
import handoff

TRACE = pathlib.Path(__file__).with_name({trace!r})
CHART = {chart!r}
"""The chart the run was explained for, MODULE:CLASS (None: the shipped {order} chart)."""
{folder}PROPERTY = {key!r}
FOUND = {finding!r}
"""What the review found along this run."""


def test_{name}():
    verdict = handoff.check_trace(TRACE, chart=CHART{trusted}).verdict(PROPERTY)
    assert verdict.holds, str(verdict)
'''


_FOLDER = '''CHART_FOLDER = (pathlib.Path(__file__).parent / {folder!r}).resolve()
"""Where CHART's module was found when the run was explained, searched after the Python
path: the test runs from any folder, and a copy of the chart on the path still comes first."""
if str(CHART_FOLDER) not in sys.path:
    sys.path.append(str(CHART_FOLDER))
'''


def chart_folder(chart: str | None, directory: Path) -> str | None:
    """The folder `chart`'s module came from, relative to `directory`, when that folder is
    the current directory: found there only because the command ran there, so a test run
    from `directory` must be told where it is.  None for a module on the Python path."""
    if chart is None:
        return None
    module_name = chart.partition(":")[0]
    file = getattr(sys.modules.get(module_name), "__file__", None)
    if file is None:
        return None
    path = Path(file).resolve()
    depth = module_name.count(".") + (path.name == "__init__.py")
    root = path.parents[depth]
    if root != Path.cwd().resolve():
        return None
    return Path(os.path.relpath(root, directory.resolve())).as_posix()


def pytest_source(
    name: str,
    prop: Property,
    finding: str,
    chart: str | None,
    order: str,
    workers: tuple[str, tuple[str, ...]] | None = None,
    folder: str | None = None,
    runtimes: tuple[str, ...] = (),
) -> str:
    """The text of `test_<name>.py`, which judges `<name>.jsonl` on `chart` (MODULE:CLASS);
    a run with workers hands `check_trace` the contract and properties its trace names
    (`workers`), and the runtime of one's own (`runtimes`), which it would not import from
    the trace; `folder` (relative to the file) is where the chart's module is found if not on
    the path."""
    trusted = ""
    if workers is not None:
        contract, properties = workers
        trusted = f", workers=[{contract!r}], properties={list(properties)!r}"
    if runtimes:
        trusted += f", runtimes={list(runtimes)!r}"
    return _TEMPLATE.format(
        trusted=trusted,
        imports="import sys\n" if folder else "",
        folder="" if folder is None else _FOLDER.format(folder=folder),
        key=prop.key.value,
        title=prop.title,
        words=textwrap.fill(f"{prop.key.value}: {prop.words}", 88),
        trace=f"{name}.jsonl",
        chart=chart,
        order=order,
        finding=finding,
        name=name,
    )

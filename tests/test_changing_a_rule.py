"""docs/changing-a-rule.md runs as written: its files are saved, its commands run, in order,
with the installed `handoff` command in a scratch directory, and each output is the page's.

A `<!-- file: NAME -->` line names the code block below it; a `console` block holds commands
(`$ ...`) each followed by its output.  Only timings may differ from the page.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "changing-a-rule.md"
HANDOFF = str(Path(sys.executable).with_name("handoff"))

_BLOCK = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<kind>\w+)\n(?P<body>.*?)```", re.S)
_TIMES = (
    (re.compile(r"\d+\.\d\d s\b"), "<seconds> s"),
    (re.compile(r"^  wall .*$", re.M), "  wall <timings>"),
)


@attrs.frozen
class Step:
    """Save `text` as `file`, or run `command` and expect `output`."""

    file: str | None = None
    text: str = ""
    command: str = ""
    output: str = ""


def steps(page: str) -> list[Step]:
    """The page's files and commands, in reading order."""
    found: list[Step] = []
    for block in _BLOCK.finditer(page):
        if block["file"]:
            found.append(Step(file=block["file"], text=block["body"]))
        elif block["kind"] == "console":
            for chunk in re.split(r"^\$ ", block["body"], flags=re.M)[1:]:
                command, _, output = chunk.partition("\n")
                found.append(Step(command=command, output=output))
    return found


def _calm(text: str) -> str:
    for pattern, fixed in _TIMES:
        text = pattern.sub(fixed, text)
    return text


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Step, int, str, str]]:
    where = tmp_path_factory.mktemp("guide")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    ran = []
    for step in steps(GUIDE.read_text()):
        if step.file is not None:
            (where / step.file).write_text(step.text)
            continue
        program, *args = shlex.split(step.command)
        assert program == "handoff"
        done = subprocess.run(
            [HANDOFF, *args], cwd=where, env=env, text=True, capture_output=True, timeout=300
        )
        ran.append((step, done.returncode, done.stdout, done.stderr))
    return ran


def test_the_page_has_the_worked_example() -> None:
    found = steps(GUIDE.read_text())
    files = [step.file for step in found if step.file]
    commands = [step.command.split()[1] for step in found if step.command]
    assert files == ["retrying_engine.py", "retrying_engine.py"]  # the first attempt, the fix
    assert commands == ["review", "review", "diagrams", "simulate", "demo"]


def test_every_command_prints_what_the_page_shows(
    outputs: list[tuple[Step, int, str, str]],
) -> None:
    for step, _, out, err in outputs:
        assert err == "", step.command
        assert _calm(out) == _calm(step.output), step.command


def test_the_first_attempt_fails_and_the_fix_passes(
    outputs: list[tuple[Step, int, str, str]],
) -> None:
    statuses = [status for _, status, _, _ in outputs]
    assert statuses == [1, 0, 0, 0, 0]
    first, fixed = outputs[0][2], outputs[1][2]
    assert "S5 fails: CANCELED completion, yet the SubmitPrefill was never released" in first
    assert (
        first.rstrip()
        .splitlines()[-1]
        .startswith("UNSAFE: S5 (RetryingEngine); differs from the reference: Q1 (RetryingEngine)")
    )
    assert (
        fixed.rstrip().splitlines()[-1].startswith("OK: all 19 properties hold for RetryingEngine")
    )


def test_the_page_is_linked_from_the_readme_and_the_index() -> None:
    root = GUIDE.parent.parent
    assert "(docs/changing-a-rule.md)" in (root / "README.md").read_text()
    assert "(changing-a-rule.md)" in (root / "docs" / "index.md").read_text()

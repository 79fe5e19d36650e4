"""The types make the match exhaustive: `mypy --strict` on the README's example, on the example
runtime of docs/integrating.md and on a match over every union and enum
(tests/typing_samples/exhaustive.py), with no cast and no ignore.

One mypy run checks them all, in a fresh process with a cache of its own.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SAMPLE = Path(__file__).parent / "typing_samples" / "exhaustive.py"

# Each line must be refused; the comment names the error code mypy gives.
REFUSED = """\
from handoff import HandoffActionOutcome, HandoffCoordinatorCore, HandoffId, IssuedHandoffAction
from handoff import HandoffAction, wire

HandoffCoordinatorCore(HandoffId.new())  # call-overload: no order and no chart
reason: None = HandoffActionOutcome.failed(reason="x").reason  # assignment: a str
action: HandoffAction.Complete = wire.loads("{}", IssuedHandoffAction).action  # assignment
"""


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    here = tmp_path_factory.mktemp("typing")
    readme = here / "readme_example.py"
    (example,) = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    readme.write_text(example)
    integrating = ROOT / "docs" / "integrating.md"
    runtime = re.findall(r"```python\n(.*?)```", integrating.read_text(), re.S)[0]
    assert "type: ignore" not in runtime
    assert "cast(" not in runtime
    (here / "integrating_example.py").write_text(runtime)
    refused = here / "refused.py"
    refused.write_text(REFUSED)
    command = [
        sys.executable, "-m", "mypy", "--strict", "--no-incremental",
        "--cache-dir", str(here / "cache"), "--config-file", "/dev/null",
        str(readme), str(here / "integrating_example.py"), str(SAMPLE), str(refused),
    ]  # fmt: skip
    ran = subprocess.run(command, capture_output=True, text=True, cwd=here, check=False)
    return readme, refused, ran.stdout + ran.stderr


def _errors(output: str, path: Path) -> list[str]:
    # mypy names a file under its working directory relative to it.
    names = (
        f"{path}:",
        f"{path.name}:",
        f"{path.relative_to(ROOT)}:" if path.is_relative_to(ROOT) else "\0",
    )
    return [line for line in output.splitlines() if line.startswith(names)]


def test_the_samples_use_no_cast_and_no_ignore() -> None:
    text = SAMPLE.read_text()
    assert "cast(" not in text
    assert "type: ignore" not in text
    assert re.search(r"\bAny\b", text) is None


def test_the_readme_example_passes_mypy_strict(mypy_run: tuple[Path, Path, str]) -> None:
    readme, _, output = mypy_run
    assert _errors(output, readme) == []
    assert "assert_never" in readme.read_text() or "match" in readme.read_text()


def test_every_union_and_enum_matches_exhaustively(mypy_run: tuple[Path, Path, str]) -> None:
    _, _, output = mypy_run
    assert _errors(output, SAMPLE) == []


def test_the_example_runtime_passes_mypy_strict(mypy_run: tuple[Path, Path, str]) -> None:
    readme, _, output = mypy_run
    assert _errors(output, readme.with_name("integrating_example.py")) == []


def test_what_the_types_forbid_is_refused(mypy_run: tuple[Path, Path, str]) -> None:
    _, refused, output = mypy_run
    errors = _errors(output, refused)
    lines = REFUSED.splitlines()
    for number, line in enumerate(lines, start=1):
        if "# " in line and line.split("# ", 1)[1].split(":")[0] in {"call-overload", "assignment"}:
            code = line.split("# ", 1)[1].split(":")[0]
            assert any(
                f"{refused.name}:{number}:" in error and f"[{code}]" in error for error in errors
            ), (number, errors)
    assert len([error for error in errors if ": error:" in error]) == 3, errors

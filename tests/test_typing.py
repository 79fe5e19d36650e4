"""The types make the match exhaustive: `mypy --strict` on the README's example, on the example
runtime of docs/integrating.md and on a match over every union and enum
(tests/typing_samples/exhaustive.py), with no cast and no ignore.

One mypy run checks them all, in a fresh process with a cache of its own.
"""

from __future__ import annotations

import operator
import re
import subprocess
import sys
from pathlib import Path

import pytest

import handoff

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

# Each public value's type, spelled as the docs spell it, is the type mypy infers
# (`assert_type`), and `reveal_type` shows it: the comment after each is the public spelling
# of the class the test expects. Written to a scratch file, so that the project's own mypy run
# prints none of the reveals.
PUBLIC_NAMES = """\
from __future__ import annotations

from typing import assert_type, reveal_type

import handoff
from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffError,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    KvTransferTimingMode,
    wire,
)

hid = HandoffId.new()
timing = HandoffTransferTiming(KvTransferTimingMode.FULL_PROMPT, 10, 1024, 1.5)
held = HandoffFact.SourceHeld(hid, timing)
transfer = HandoffAction.StartTransfer(hid, 2.5)
coordinator = HandoffCoordinatorCore(hid, HandoffOrder.SOURCE_FIRST)
issued = coordinator.start()
outcome = HandoffActionOutcome.failed("x")
read = wire.loads("{}", HandoffFact.Failed)

assert_type(hid, handoff.HandoffId)
assert_type(timing, handoff.HandoffTransferTiming)
assert_type(held, handoff.HandoffFact.SourceHeld)
assert_type(transfer, handoff.HandoffAction.StartTransfer)
assert_type(coordinator, handoff.HandoffCoordinatorCore)
assert_type(issued, list[handoff.IssuedHandoffAction])
assert_type(issued[0].id, handoff.HandoffActionId)
assert_type(issued[0].action, handoff.AnyHandoffAction)
assert_type(outcome, handoff.HandoffActionOutcome)
assert_type(read, handoff.HandoffFact.Failed)
assert_type(HandoffError("x"), handoff.HandoffError)

reveal_type(hid)  # handoff.HandoffId
reveal_type(timing)  # handoff.HandoffTransferTiming
reveal_type(held)  # handoff.HandoffFact.SourceHeld
reveal_type(transfer)  # handoff.HandoffAction.StartTransfer
reveal_type(coordinator)  # handoff.HandoffCoordinatorCore
reveal_type(issued[0])  # handoff.IssuedHandoffAction
reveal_type(HandoffActionId(3))  # handoff.HandoffActionId
reveal_type(outcome)  # handoff.HandoffActionOutcome
reveal_type(read)  # handoff.HandoffFact.Failed
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
    (here / "public_names.py").write_text(PUBLIC_NAMES)
    command = [
        sys.executable, "-m", "mypy", "--strict", "--no-incremental",
        "--cache-dir", str(here / "cache"), "--config-file", "/dev/null",
        str(readme), str(here / "integrating_example.py"), str(SAMPLE), str(refused),
        str(here / "public_names.py"),
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


def test_the_public_spellings_are_the_types_mypy_infers(mypy_run: tuple[Path, Path, str]) -> None:
    # assert_type fails unless the public spelling is exactly the inferred type.
    readme, _, output = mypy_run
    said = _errors(output, readme.with_name("public_names.py"))
    assert [line for line in said if ": error:" in line] == []
    lines = PUBLIC_NAMES.splitlines()
    expected = {
        number: line.split("# ", 1)[1]
        for number, line in enumerate(lines, start=1)
        if line.startswith("reveal_type(")
    }
    revealed = {
        int(line.split(":")[1]): line.split('Revealed type is "', 1)[1].rstrip('"')
        for line in said
        if "Revealed type is" in line
    }
    assert revealed.keys() == expected.keys()
    for number, spelling in expected.items():
        public = operator.attrgetter(spelling.removeprefix("handoff."))(handoff)
        # mypy names a class after the module its class statement is in, which no re-export
        # changes (pyright shows the bare name); it is the public class, and never Any.
        assert revealed[number].startswith("handoff."), revealed[number]
        assert revealed[number].rsplit(".", 1)[1] == public.__name__, revealed[number]

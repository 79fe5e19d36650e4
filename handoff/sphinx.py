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
that chart; `:format:` `svg` (inline, the default for `state` and `path`), `mermaid` (through
sphinxcontrib-mermaid when it is loaded, else a ``mermaid`` code block; the only format of
`sequence`) or `html` (`rules`); `:caption:`, `:alt:`, `:width:`, `:align:`, `:name:` as for
a figure; `:target:` a link for the drawing, or without a value a standalone copy of the SVG
written under the build's `_images` folder.

The drawing is made in process from the chart class by `handoff.diagrams`, so the same
sources give the same bytes; each one is kept in the build's doctree folder under a hash of
the chart's compiled table and the options, so a rebuild draws only what changed, and a page
is read again when its chart's module changes.  A chart that cannot be imported or drawn,
or an option it cannot take, is a warning at the directive's file and line (a `-W` build
fails), never a traceback.  Nothing is written into the docs source.
"""

from __future__ import annotations

import hashlib
import inspect
import posixpath
import sys
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

from handoff import _files, diagrams
from handoff._values import HandoffOrder

if TYPE_CHECKING:
    from handoff._chart_base import HandoffChart

__all__ = ["HandoffDiagram", "setup"]

_LOG = logging.getLogger(__name__)
_IMAGES = "_images"
_CACHE = "handoff-diagram"


def _target(argument: str | None) -> str:
    return (argument or "").strip()


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
        "width": directives.length_or_percentage_or_unitless,
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
        _LOG.warning(
            "handoff-diagram %s: %s", self.arguments[0], problem, location=self.get_location()
        )
        return []

    def _run(self) -> list[nodes.Node]:
        kind = self.options.get("kind", "state").strip()
        if kind not in diagrams.KINDS:
            raise diagrams.DiagramError(
                f"unknown :kind: {kind!r}: expected one of {', '.join(diagrams.KINDS)}"
            )
        fmt = self.options.get("format", diagrams.FORMATS[kind][0]).strip()
        scenario = " ".join(self.options.get("scenario", "success").split())
        chart = _resolve(self.arguments[0], self.config.handoff_diagram_path)
        self._note_source(chart)
        text = _drawn(self.env, chart, kind, fmt, scenario)
        if fmt == "mermaid":
            # sphinxcontrib-mermaid squeezes every drawing into 500 px of height, which
            # shrinks a long sequence's labels to a few pixels: drawn at its own height.
            body: list[nodes.Node] = [nodes.raw("", _MERMAID_STYLE, format="html")]
            body.append(self._mermaid(text))
        else:
            body = [nodes.raw("", self._html(text, fmt), format="html")]
        figure = nodes.figure("", *body, classes=["handoff-diagram", f"handoff-{kind}"])
        if "align" in self.options:
            figure["align"] = self.options["align"]
        if "caption" in self.options:
            caption_nodes, _ = self.parse_inline(self.options["caption"], lineno=self.lineno)
            figure += nodes.caption(self.options["caption"], "", *caption_nodes)
        self.set_source_info(figure)
        self.add_name(figure)
        return [figure]

    def _note_source(self, chart: HandoffOrder | type[HandoffChart]) -> None:
        """Read the page again when the chart's module changes."""
        if isinstance(chart, HandoffOrder):
            from handoff._table import GENERATED_TABLES

            self.env.note_dependency(GENERATED_TABLES)
            return
        source = inspect.getsourcefile(chart)
        if source:
            self.env.note_dependency(source)

    def _html(self, text: str, fmt: str) -> str:
        style = "max-width:100%;height:auto"
        if fmt == "svg":
            label = self.options.get("alt", "")
            aria = f' role="img" aria-label="{_attr(label)}"' if label else ""
            text = text.replace("<svg ", f'<svg style="{style}"{aria} ', 1)
            text = self._linked(text)
        width = self.options.get("width")
        wrapper = f' style="width:{_attr(width)}"' if width else ""
        return f'<div class="handoff-diagram-body"{wrapper}>\n{text}</div>\n'

    def _linked(self, svg: str) -> str:
        if "target" not in self.options:
            return svg
        href = self.options["target"]
        if not href:
            name = f"handoff-{hashlib.sha256(svg.encode()).hexdigest()[:16]}.svg"
            _standalone(self.env).setdefault(self.env.docname, {})[name] = svg
            here = posixpath.dirname(self.env.docname)
            href = posixpath.relpath(posixpath.join(_IMAGES, name), here or ".")
        return f'<a class="handoff-diagram-target" href="{_attr(href)}">{svg}</a>'

    def _mermaid(self, text: str) -> nodes.Element:
        if "sphinxcontrib.mermaid" in self.config.extensions:
            from sphinxcontrib.mermaid import mermaid  # type: ignore[import-untyped]

            node: nodes.Element = mermaid()
            node["code"] = text
            node["options"] = {}
            if "alt" in self.options:
                node["alt"] = self.options["alt"]
            return node
        # Pygments knows no Mermaid: the block keeps the text, marked for a page's own script.
        return nodes.literal_block(text, text, language="none", classes=["mermaid"])


_MERMAID_STYLE = "<style>figure.handoff-diagram pre.mermaid > svg{height:auto !important}</style>\n"


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _resolve(argument: str, folders: list[str]) -> HandoffOrder | type[HandoffChart]:
    """The chart named; `module:Class` is imported from the Python path or `folders`."""
    if ":" in argument:
        sys.path.extend(folder for folder in folders if folder not in sys.path)
    # Importing a writer's module must not leave a __pycache__ folder in the docs source.
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        return diagrams.resolve_chart(argument)
    finally:
        sys.dont_write_bytecode = writes


def _drawn(
    env: BuildEnvironment,
    chart: HandoffOrder | type[HandoffChart],
    kind: str,
    fmt: str,
    scenario: str,
) -> str:
    """The drawing, from the cache when the chart's table and the options are unchanged."""
    from handoff._table import compiled

    table = repr(compiled(chart))
    key = "\0".join((diagrams._version(), kind, fmt, scenario, table))
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


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _standalone(env).pop(docname, None)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: Any, other: BuildEnvironment) -> None:
    mine = _standalone(env)
    for docname, files in _standalone(other).items():
        if docname in docnames:
            mine[docname] = files


def _write_images(app: Sphinx, exception: BaseException | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    folder = Path(app.outdir) / _IMAGES
    for files in _standalone(app.env).values():
        for name, text in files.items():
            path = folder / name
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")


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
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _write_images)
    return {
        "version": diagrams._version(),
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }

"""The docs site: these Markdown pages read by MyST, drawn by the `handoff-diagram` directive.

`./dev docs` builds it into build/docs with warnings as errors (`./dev test` does too).  Every
page of this folder joins the site by itself: the start page gets a glob table of contents at
build time, so the Markdown stays as it reads on a code host.
"""

from __future__ import annotations

import re
from importlib import metadata

project = "handoff"
author = "the kv-handoff authors"
release = metadata.version("kv-handoff")
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinxcontrib.mermaid",
    "handoff.sphinx",
]
root_doc = "index"
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = f"handoff {release}"
html_static_path = ["_static"]
html_css_files = ["site.css"]

# A ```mermaid fence is drawn, on the site as on a code host.
myst_fence_as_directive = ["mermaid"]
myst_heading_anchors = 3

# Every name is documented where it is exported; signatures read as in the source.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# The pages link to the repository's files (README, diagrams/, tests/) for readers on a code
# host; on the site those are plain links.
suppress_warnings = ["myst.xref_missing"]

_CONTENTS = "\n\n```{toctree}\n:hidden:\n:glob:\n\n*\n```\n"


def _contents(app: object, docname: str, source: list[str]) -> None:
    if docname == root_doc:
        source[0] += _CONTENTS


def _inherited_from_the_library() -> frozenset[str]:
    """The member names a chart inherits from python-statemachine's classes."""
    import handoff

    inherited = {
        name
        for cls in handoff.HandoffChart.__mro__
        if cls.__module__.split(".")[0] == "statemachine"
        for name in vars(cls)
    }
    # And what python-statemachine's metaclass sets on every chart class it builds.
    return frozenset(inherited | {"final_states", "initial_state", "states", "states_map"})


def _statechart_library(obj: object) -> bool:
    """`obj` comes from python-statemachine (a chart's events, states and their helpers)."""
    if isinstance(obj, list | tuple) and obj:
        return all(_statechart_library(item) for item in obj)
    origin = getattr(obj, "fget", obj)
    modules = (type(obj).__module__, getattr(origin, "__module__", None) or "")
    return any(module.split(".")[0] == "statemachine" for module in modules)


def _skip(app: object, what: str, name: str, obj: object, skip: bool, options: object) -> bool:
    # A chart's members are its states and events, documented by the chart's own docs pages;
    # python-statemachine's docstrings cite labels of its own site.
    return skip or _statechart_library(obj) or (what == "class" and name in _LIBRARY)


_LIBRARY = _inherited_from_the_library()
_CODE = re.compile(r"(?<![`:\w])`([^`\n]+)`(?![`\w])")


def _markdown_code(
    app: object, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    # Docstrings mark code with single backticks, as Markdown does: make each an rST literal.
    lines[:] = [_CODE.sub(lambda found: f"``{found[1]}``", line) for line in lines]


def setup(app: object) -> None:
    app.connect("source-read", _contents)  # type: ignore[attr-defined]
    app.connect("autodoc-skip-member", _skip)  # type: ignore[attr-defined]
    app.connect("autodoc-process-docstring", _markdown_code)  # type: ignore[attr-defined]

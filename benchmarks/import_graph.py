"""The shape of `handoff`'s import graph at a git revision: modules, edges, cycles, upward imports.

Run: `./dev python benchmarks/import_graph.py [REVISION]` (default `HEAD`).

Imports are read with `ast`, at any depth (a function-level import is still a dependency).
An edge is one importing module → one imported module of the package, counted once however
often it is written.  A cycle is a strongly connected group of two or more modules.  An import
is upward when it runs against library ← runs ← review ← docs ← command line; the flat tool
modules of the tree before the wings are placed in the layer their code moved to, so both
trees are judged by one rule.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import PurePosixPath

_LAYERS = ("library", "system", "runs", "review", "docs", "command line")
# Where each flat tool module of the tree before the wings went when they were made.
_FLAT_TOOLS = {
    "_demo": "runs",
    "_simulation": "runs",
    "_simulate_cli": "runs",
    "_trace": "runs",
    "_replay_cli": "runs",
    "_review": "review",
    "_watch": "review",
    "_verdict": "review",
    "_review_cli": "review",
    "_diagram": "docs",
    "_diagrams_cli": "docs",
    "_docs": "docs",
    "_sequence": "docs",
}
# `_cli` holds the helpers every command shares, so it sits below the wings, with the library.
_COMMAND_LINE = {"__main__"}


def sources(revision: str) -> dict[str, tuple[str, bool]]:
    """Module name → (source, is a package) for every `handoff/**.py` at `revision`."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "handoff"], capture_output=True, check=True
    ).stdout
    found: dict[str, tuple[str, bool]] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            path = PurePosixPath(member.name)
            handle = tar.extractfile(member)
            if path.suffix != ".py" or handle is None:
                continue
            parts = path.with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = (handle.read().decode("utf-8"), is_package)
    return found


def imported(source: str, module: str, *, is_package: bool) -> Iterator[tuple[str, list[str]]]:
    """(module, names taken from it) for each import; `import a.b` takes no names."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            yield base, [alias.name for alias in node.names]


def edges(modules: dict[str, tuple[str, bool]]) -> set[tuple[str, str]]:
    """`from p import m` is an edge to the submodule `p.m`, to `p` only for names it defines."""
    found: set[tuple[str, str]] = set()
    for name, (source, is_package) in modules.items():
        for base, names in imported(source, name, is_package=is_package):
            submodules = {f"{base}.{taken}" for taken in names} & modules.keys()
            found.update((name, target) for target in submodules)
            if base in modules and len(submodules) < max(len(names), 1):
                found.add((name, base))
    # A module naming itself (for type aliases to its own later classes) depends on nothing.
    return {(a, b) for a, b in found if a != b}


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in ("_system", "_runs", "_review", "_docs"):
        return _LAYERS.index(parts[1][1:])
    if len(parts) == 2 and parts[1] in ("_system", "_runs", "_review", "_docs"):
        return _LAYERS.index(parts[1][1:])
    if len(parts) == 2 and parts[1] in _COMMAND_LINE:
        return _LAYERS.index("command line")
    if len(parts) == 2 and parts[1] in _FLAT_TOOLS:
        return _LAYERS.index(_FLAT_TOOLS[parts[1]])
    return _LAYERS.index("library")


def cycles(nodes: set[str], graph: set[tuple[str, str]]) -> list[set[str]]:
    """Strongly connected groups of two or more modules."""
    following = {node: {b for a, b in graph if a == node} for node in nodes}

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in following[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reachable = {node: reach(node) for node in nodes}
    groups = {
        frozenset(other for other in nodes if other in reachable[node] and node in reachable[other])
        for node in nodes
        if node in reachable[node]
    }
    return [set(group) for group in groups]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", nargs="?", default="HEAD")
    revision = parser.parse_args(argv).revision
    modules = sources(revision)
    graph = edges(modules)
    upward = sorted((a, b) for a, b in graph if layer(a) < layer(b))
    found = cycles(set(modules), graph)
    print(f"revision {revision}")
    print(f"modules {len(modules)}")
    print(f"edges {len(graph)}")
    print(f"cycles {len(found)}")
    for group in found:
        print("  cycle: " + ", ".join(sorted(group)))
    print(f"upward imports {len(upward)}")
    for a, b in upward:
        print(f"  {a} ({_LAYERS[layer(a)]}) -> {b} ({_LAYERS[layer(b)]})")


if __name__ == "__main__":
    main()

"""Cold docs builds with `handoff-diagram`: `sphinx-build -j 2` next to a serial build.

Run: `./dev python benchmarks/bench_sphinx.py [--rounds N] [--pages N] [--without-drawings]`.

A writer's small site (MyST pages, the writer's own chart beside the shipped ones, every kind
of drawing, several to a page) is built from nothing into a fresh folder by a fresh
`sphinx-build`, as a writer's first build or a CI job runs it: serial and with `-j 2`, rounds
interleaved so drift on a shared machine hits both alike.  Medians are reported, and the
parallel build's as a ratio to the serial one's (at most 1.0 is the goal: a second process
must never make the build slower).  Wall time is what the writer waits; the CPU time of the
build and its worker processes says how much work the second process duplicates.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHART = (Path(__file__).parents[1] / "tests" / "charts" / "retrying_engine.py").read_text()
"""The writer's chart the tests draw too, written beside the scratch site as their module."""

DRAWINGS = (
    ("retrying_engine:RetryingEngine", ""),
    ("SourceFirst", ":kind: path\n:scenario: cancel\n"),
    ("retrying_engine:RetryingEngine", ":kind: sequence\n:scenario: fail:StartTransfer\n"),
    ("DestinationFirst", ""),
    ("retrying_engine:RetryingEngine", ":kind: path\n:scenario: reopen\n"),
    ("SourceFirst", ":format: mermaid\n"),
    ("DestinationFirst", ":kind: rules\n"),
)
"""Every kind and format of drawing; a page holds three of them, each page a different
three."""


def write_site(folder: Path, pages: int, *, drawn: bool = True) -> None:
    """A writer's site of `pages` pages under an index, in `folder`; without `drawn`, each
    directive is a code block of its text (Sphinx's own cost of the same pages)."""
    folder.mkdir(parents=True)
    extensions = ["myst_parser", "sphinxcontrib.mermaid", "handoff.sphinx"]
    (folder / "conf.py").write_text(f"extensions = {extensions!r}\nproject = 'writer'\n")
    (folder / "retrying_engine.py").write_text(CHART)
    names = [f"page{number}" for number in range(pages)]
    (folder / "index.md").write_text(
        "# A writer's site\n\n```{toctree}\n" + "\n".join(names) + "\n```\n"
    )
    for number, name in enumerate(names):
        text = f"# Page {number}\n\n"
        for offset in range(3):
            chart, options = DRAWINGS[(3 * number + offset) % len(DRAWINGS)]
            fence = "{handoff-diagram}" if drawn else "text"
            text += f"```{fence} {chart}\n{options}```\n\nA paragraph.\n\n"
        (folder / f"{name}.md").write_text(text)


def build(source: Path, out: Path, jobs: int) -> tuple[float, float]:
    """Seconds of wall time and of CPU time (the build's and its workers') one fresh
    `sphinx-build` takes to build `source` into the empty `out`."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "sphinx", "-q", "-W", "-j", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    # Run from the site's folder, as a writer does: `-m` puts the working folder first on the
    # path, and a checkout's own folder would shadow the installed package.
    subprocess.run([*command, "-b", "html", str(source), str(out)], check=True, cwd=source)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument(
        "--without-drawings",
        action="store_true",
        help="the same pages with code blocks for directives: what -j 2 costs Sphinx itself",
    )
    args = parser.parse_args(argv)
    walls: dict[int, list[float]] = {1: [], 2: []}
    cpus: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "site"
        write_site(source, args.pages, drawn=not args.without_drawings)
        # Sphinx's own bytecode and the site's first import are paid once, by neither build.
        build(source, Path(scratch) / "out", 1)
        for _ in range(args.rounds):
            for jobs in (1, 2):
                taken, used = build(source, Path(scratch) / "out", jobs)
                walls[jobs].append(taken)
                cpus[jobs].append(used)
    wall = {jobs: statistics.median(found) for jobs, found in walls.items()}
    cpu = {jobs: statistics.median(found) for jobs, found in cpus.items()}
    drawings = 0 if args.without_drawings else 3 * args.pages
    print(
        f"cold sphinx-build of {args.pages + 1} pages ({drawings} drawings), "
        f"median of {args.rounds} rounds, {os.cpu_count()} cores"
    )
    print(f"  {'':<10} {'wall':>8} {'CPU':>8}")
    for jobs, name in ((1, "serial"), (2, "-j 2")):
        print(f"  {name:<10} {wall[jobs]:7.2f}s {cpu[jobs]:7.2f}s")
    print(f"  -j 2 / serial: wall {wall[2] / wall[1]:.2f}x, CPU {cpu[2] / cpu[1]:.2f}x")


if __name__ == "__main__":
    main()

"""Start-up cost: what `import handoff` and `handoff --help` take next to their dependencies.

Run: `./dev python benchmarks/bench_import.py [--rounds N]`.

Each measurement is a fresh interpreter timing its own import (interpreter start-up itself is
left out: it is the same for all).  Rounds are interleaved so drift hits every subject alike;
medians over rounds are reported, then each as a ratio to `import attrs`.  Wall time is what a
user waits; CPU time (the process's own) is what the import costs, and it holds steady when
other jobs share the machine, as the wall time does not.

The packages are byte-compiled first, as an install leaves them: with `PYTHONDONTWRITEBYTECODE`
set, a source checkout would otherwise be compiled anew by every interpreter, which measures
the compiler rather than the import.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import statistics
import subprocess
import sys

_TIMED = """
import sys, time
wall, cpu = time.perf_counter(), time.process_time()
{body}
sys.stderr.write(f"\\n{{time.perf_counter() - wall!r}} {{time.process_time() - cpu!r}}\\n")
"""

_HELP = """
import contextlib, io
from handoff.__main__ import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--help"])
"""

SUBJECTS = {
    "import attrs": "import attrs",
    "import statemachine": "import statemachine",
    "import handoff": "import handoff",
    "handoff --help": _HELP,
}

PACKAGES = ("attr", "attrs", "statemachine", "handoff")


def byte_compile() -> None:
    """Write the bytecode of every measured package where it is missing or stale."""
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        assert spec is not None, name
        for folder in spec.submodule_search_locations or ():
            compileall.compile_dir(folder, quiet=1)


def measure(body: str) -> tuple[float, float]:
    """Seconds of wall time and of CPU time one fresh interpreter spends running `body`."""
    done = subprocess.run(
        [sys.executable, "-c", _TIMED.format(body=body)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = done.stderr.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args(argv)
    byte_compile()
    walls: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    cpus: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    for _ in range(args.rounds):
        for name, body in SUBJECTS.items():
            wall, cpu = measure(body)
            walls[name].append(wall)
            cpus[name].append(cpu)
    wall_medians = {name: statistics.median(found) for name, found in walls.items()}
    cpu_medians = {name: statistics.median(found) for name, found in cpus.items()}
    wall_base, cpu_base = wall_medians["import attrs"], cpu_medians["import attrs"]
    print(f"median of {args.rounds} fresh interpreters each; ratios to import attrs")
    print(f"  {'':<20} {'wall':>9} {'ratio':>6}   {'CPU':>9} {'ratio':>6}")
    for name in SUBJECTS:
        wall, cpu = wall_medians[name], cpu_medians[name]
        print(
            f"  {name:<20} {wall * 1e3:6.2f} ms {wall / wall_base:5.2f}x"
            f"   {cpu * 1e3:6.2f} ms {cpu / cpu_base:5.2f}x"
        )


if __name__ == "__main__":
    main()

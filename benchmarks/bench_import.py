"""Start-up cost: what `import handoff` and `handoff --help` take next to their dependencies.

Run: `./dev python benchmarks/bench_import.py [--rounds N]`.

Each measurement is a fresh interpreter timing its own import (interpreter start-up itself is
left out: it is the same for all).  Rounds are interleaved so drift hits every subject alike;
medians over rounds are reported, then each as a ratio to `import attrs`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

_TIMED = """
import sys, time
began = time.perf_counter()
{body}
sys.stderr.write(f"\\n{{time.perf_counter() - began!r}}\\n")
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


def measure(body: str) -> float:
    """Seconds one fresh interpreter spends running `body`."""
    done = subprocess.run(
        [sys.executable, "-c", _TIMED.format(body=body)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stderr.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    for _ in range(args.rounds):
        for name, body in SUBJECTS.items():
            times[name].append(measure(body))
    medians = {name: statistics.median(found) for name, found in times.items()}
    base = medians["import attrs"]
    print(f"median of {args.rounds} fresh interpreters each")
    for name, median in medians.items():
        print(f"  {name:<20} {median * 1e3:7.2f} ms   {median / base:5.2f}x import attrs")


if __name__ == "__main__":
    main()

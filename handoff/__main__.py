"""Command line: `handoff <command>`."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    del argv
    print("handoff: no commands yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())

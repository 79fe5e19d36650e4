"""The reference driver that says, on stderr as its input ends, how many handoffs it still
holds open: a check that closes each handoff after its run leaves none."""

from __future__ import annotations

import sys

from handoff.conform_driver import Driver, main

if __name__ == "__main__":
    drivers: list[Driver] = []

    def build(*args: object) -> Driver:
        drivers.append(Driver(*args))  # type: ignore[arg-type]
        return drivers[-1]

    status = main(driver=build)
    print(f"open at the end: {len(drivers[0].handoffs)}", file=sys.stderr)
    sys.exit(status)

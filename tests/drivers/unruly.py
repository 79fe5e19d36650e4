"""Outlasts the limits `handoff conform` puts on an implementation, as its first argument says:

* `flood`: after the hello, one endless line on stdout, never ended by a line feed;
* `trickle`: after the hello, a byte now and then on stdout, never a whole line;
* `stderr`: after the hello, 32 MiB on stderr, then last words and exit 3;
* `setsid`: starts a helper that leaves the process group with `setsid()`, then hangs;
* `orphan`: starts a helper that leaves the group and whose parent exits at once, then hangs.

The second argument is a file to write the process ids into (its own, and its helper's), then
a line `ready` once it has reached what it plays.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HOW, PIDS = sys.argv[1], Path(sys.argv[2])
SLEEP = "import os, sys, time; os.setsid(); time.sleep(600)"
ORPHAN = (
    "import os, sys, time\n"
    "if os.fork(): os._exit(0)\n"  # the helper's parent exits: the helper is an orphan
    "os.setsid(); open(sys.argv[1], 'a').write(f'{os.getpid()}\\n'); time.sleep(600)"
)


def helper() -> None:
    script, args = (ORPHAN, [str(PIDS)]) if HOW == "orphan" else (SLEEP, [])
    started = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    if HOW == "orphan":
        started.wait()
    else:
        with PIDS.open("a") as pids:
            pids.write(f"{started.pid}\n")


def main() -> None:
    PIDS.write_text(f"{os.getpid()}\n")
    if HOW in ("setsid", "orphan"):
        helper()
    out = sys.stdout.buffer
    sys.stdin.buffer.readline()
    out.write(b'{"hello":{"version":1,"implementation":"unruly"}}\n')
    out.flush()
    if HOW == "stderr":
        for _ in range(512):
            sys.stderr.buffer.write(b"e" * 65535 + b"\n")
        sys.stderr.write("the last words\n")
        sys.exit(3)
    with PIDS.open("a") as pids:
        pids.write("ready\n")
    while True:
        if HOW == "flood":
            out.write(b"x" * 65536)
            out.flush()
        elif HOW == "trickle":
            out.write(b"x")
            out.flush()
            time.sleep(0.05)
        else:
            time.sleep(600)


if __name__ == "__main__":
    main()

"""Run a command while one busy-loop process per core keeps every core busy.

    python tools/busy.py -- make test

This is how `make test-under-load` checks that the suite holds on a shared machine (a
classroom server, a CI runner running other jobs): the tests must assert values, poll for
readiness and have generous timeouts, never depend on how fast the machine is. The busy
processes run at normal priority and are always stopped: when the command ends, fails, or
this script is interrupted or terminated. The exit code is the command's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

BUSY = "while True: pass"


def main(argv: list[str]) -> int:
    if "--" in argv:
        argv = argv[argv.index("--") + 1 :]
    if not argv:
        print("usage: python tools/busy.py -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(cores or 1)]
    print(f"busy.py: {len(busy)} busy-loop processes running (one per core)", flush=True)

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    start = time.monotonic()
    code = 1
    try:
        code = subprocess.call(argv)
    except KeyboardInterrupt:
        code = 130
    finally:
        for proc in busy:
            proc.kill()
        for proc in busy:
            proc.wait()
        print(
            f"busy.py: busy loops stopped; the command exited {code} after "
            f"{time.monotonic() - start:.0f} s under load",
            flush=True,
        )
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

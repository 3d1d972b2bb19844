"""How long a 1 ps + 2 worker process cluster takes to come up and to go down.

    python benchmarks/cluster_up_down.py [--rounds 5] [--workers 2] [--ps 1]

Up: from ``LocalCluster.start()`` until every task's port answers (start returns only
then). Down: from ``shutdown()`` until every task PID is gone. Prints each round and the
medians against the targets (up <= 10 s, down <= 5 s on a 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

UP_TARGET_SECONDS = 10.0
DOWN_TARGET_SECONDS = 5.0


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False  # shutdown reaps its children, so no zombie can stand in for a live one


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ps", type=int, default=1)
    args = parser.parse_args(argv)

    from dpkit import cluster

    warnings.simplefilter("ignore", UserWarning)  # the one-time security warning
    print(f"cores: {os.cpu_count()}; {args.ps} ps + {args.workers} workers, process mode")
    ups, downs = [], []
    for i in range(args.rounds):
        c = cluster.LocalCluster(num_workers=args.workers, num_ps=args.ps)
        start = time.perf_counter()
        c.start()
        up = time.perf_counter() - start
        silent = [t for t, a in c.addresses.items() if not cluster.port_answers(a)]
        if silent:
            raise SystemExit(f"start() returned but {silent} do not answer")
        pids = list(c.pids.values())
        start = time.perf_counter()
        c.shutdown()
        while not all(_gone(pid) for pid in pids):
            time.sleep(0.01)
        down = time.perf_counter() - start
        ups.append(up)
        downs.append(down)
        print(f"round {i + 1}: up {up:5.2f} s  down {down:5.2f} s", flush=True)
    up, down = statistics.median(ups), statistics.median(downs)
    ok = up <= UP_TARGET_SECONDS and down <= DOWN_TARGET_SECONDS
    print(
        f"median: up {up:.2f} s (target <= {UP_TARGET_SECONDS:g}), "
        f"down {down:.2f} s (target <= {DOWN_TARGET_SECONDS:g}): {'OK' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

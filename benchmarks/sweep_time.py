"""How long a scaling sweep takes: LeNet-5 on 1, 2 and 4 logical devices, one child each.

    python benchmarks/sweep_time.py [--devices 1 2 4] [--model lenet5]

Runs the sweep the way ``python -m dpkit bench`` and the notebook widget do (default
``bench.Config`` settings: 3 warm-up steps, 4 windows of 5 steps, batch 256, matmul peak in
the first child) and prints the wall time of each child and of the whole sweep, against
the target of 60 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

TARGET_SECONDS = 60.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--model", default="lenet5")
    args = parser.parse_args(argv)

    from dpkit import bench

    sweep = bench.Sweep(args.devices, model=args.model)
    print(f"cores: {os.cpu_count()}; sweep {args.devices} of {args.model}", flush=True)
    start = time.perf_counter()
    for event in sweep.events():
        if event.kind in ("start", "result"):
            print(
                f"{time.perf_counter() - start:6.1f} s  {bench.describe_event(event)}", flush=True
            )
    total = time.perf_counter() - start
    print()
    print(sweep.report.table())
    ok = all(r.ok for r in sweep.report.results)
    print(
        f"\nsweep wall time: {total:.1f} s (target <= {TARGET_SECONDS:.0f} s): "
        f"{'met' if ok and total <= TARGET_SECONDS else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Peak memory of a notebook run: the kernel and every process it starts, summed.

    python tools/memory_peak.py lessons/06_tensorboard.ipynb
    DPKIT_MEMORY_LIMIT=2G python tools/memory_peak.py lessons/05_throughput_and_scaling.ipynb

A hosted service limits the memory of the whole container (a Binder pod has about 2 GB),
so what counts is the sum over the kernel and its children (TensorBoard, cluster tasks,
sweep runs) at the worst moment. Sampled every half second, three ways:

- PSS: shared pages split between the processes sharing them. On a machine where other
  users run the same TensorFlow (a shared server), they share its library pages too, so
  the sum understates what this run alone would take.
- container: each process's own pages (USS) summed, plus the shared pages of the process
  sharing most, counted once. Every process here is the same Python with the same
  TensorFlow, so their shared pages are mostly the same pages; a container's memory limit
  charges each page once. This is the figure to hold against a pod's limit.
- RSS: shared pages counted once per process; overstates it.

The environment passes to the kernel, so DPKIT_MEMORY_LIMIT (plumbing.quota) runs a
lesson as it would run under that limit.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_notebooks  # noqa: E402


def sample(stop: threading.Event, peaks: dict) -> None:
    me = psutil.Process()
    while not stop.wait(0.5):
        rows = []  # (uss, pss, rss, command) of each process
        for proc in me.children(recursive=True):
            try:
                info, argv = proc.memory_full_info(), proc.cmdline()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            uss, pss = getattr(info, "uss", info.rss), getattr(info, "pss", info.rss)
            rows.append((uss, pss, info.rss, " ".join(argv[1:4])))
        if not rows:
            continue
        container = sum(r[0] for r in rows) + max(r[2] - r[0] for r in rows)
        if container > peaks["container"]:
            peaks.update(container=container, rows=rows)
        peaks["pss"] = max(peaks["pss"], sum(r[1] for r in rows))
        peaks["rss"] = max(peaks["rss"], sum(r[2] for r in rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("notebook", type=Path)
    args = parser.parse_args(argv)
    peaks = {"container": 0, "pss": 0, "rss": 0, "rows": []}
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(stop, peaks), daemon=True)
    sampler.start()
    try:
        _, seconds = run_notebooks.execute(args.notebook)
    finally:
        stop.set()
        sampler.join()
    mib = 1024 * 1024
    print(
        f"{args.notebook}: ran in {seconds:.0f} s; peak memory of the kernel and its children "
        f"(sampled every 0.5 s): {peaks['container'] / mib:.0f} MiB container "
        f"({peaks['pss'] / mib:.0f} MiB PSS, {peaks['rss'] / mib:.0f} MiB RSS); "
        f"at the container peak, {len(peaks['rows'])} process(es):"
    )
    for uss, _pss, rss, command in sorted(peaks["rows"], reverse=True):
        print(f"  {uss / mib:5.0f} MiB own, {rss / mib:5.0f} MiB RSS: {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

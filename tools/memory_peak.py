"""Peak memory of a notebook run: the kernel and every process it starts, summed.

    python tools/memory_peak.py lessons/06_tensorboard.ipynb

A hosted service limits the memory of the whole container (a Binder pod has about 2 GB),
so what counts is the sum over the kernel and its children (TensorBoard, cluster tasks,
sweep runs) at the worst moment. Sampled every half second; PSS (shared pages split
between the processes sharing them) is what a container's limit comes closest to, RSS
counts shared libraries once per process and so overstates it.
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
        rss = pss = 0
        count = 0
        for proc in me.children(recursive=True):
            try:
                info = proc.memory_full_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            rss, pss, count = rss + info.rss, pss + getattr(info, "pss", info.rss), count + 1
        if pss > peaks["pss"]:
            peaks.update(pss=pss, rss=rss, processes=count)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    args = parser.parse_args(argv)
    peaks = {"pss": 0, "rss": 0, "processes": 0}
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
        f"(sampled every 0.5 s): {peaks['pss'] / mib:.0f} MiB PSS "
        f"({peaks['rss'] / mib:.0f} MiB RSS) over {peaks['processes']} process(es)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

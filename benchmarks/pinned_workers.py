"""A real speed-up on a CPU: worker processes pinned to their own cores, side by side.

    python benchmarks/pinned_workers.py [--workers 2] [--model lenet5] [--batch 256]
                                        [--rounds 15] [--steps 4]

Measures, on the same model and global batch (dpkit.pinned.compare):

* one process pinned to one core, one intra-op thread (the baseline);
* one process with one intra-op thread per core (TensorFlow splits each op);
* one worker process per core, each pinned with one thread, training data-parallel with
  MultiWorkerMirroredStrategy over loopback (gradients all-reduced every step).

Every contender is warmed up first, then timed in rounds (one window of --steps steps each,
in turn, while the others wait idle); speed-ups are paired per round. It prints medians,
ranges and whether the pinned workers reach the target (1.7x with 2 workers: 85% of the
2x that two cores allow), and writes JSON under runs/bench/.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import results_file  # noqa: E402

TARGET_EFFICIENCY = 0.85


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=None, help="default: every usable core")
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--batch", type=int, default=256, help="global batch size")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=4, help="steps per window")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    from dpkit.plumbing import contract

    contract.quiet_tensorflow(os.environ)  # before TensorFlow is imported
    from dpkit import pinned

    result = pinned.compare(
        model=args.model,
        global_batch=args.batch,
        workers=args.workers,
        rounds=args.rounds,
        window_steps=args.steps,
        echo=print,
    )
    print()
    print(result.table())
    name = pinned.contender_names(result.workers)[2]
    ups = result.speedups(name)
    target = TARGET_EFFICIENCY * result.workers
    verdict = "met" if result.speedup(name) >= target else "MISSED"
    print(
        f"\n{name} / 1 process, 1 thread: {result.speedup(name):.2f}x "
        f"[{min(ups):.2f}-{max(ups):.2f}], target >= {target:.2f}x "
        f"({TARGET_EFFICIENCY:.0%} of {result.workers}x): {verdict}"
    )
    same = len(set(result.checksums[name])) == 1
    print(f"every worker holds the same weights after the run: {same}")
    out = results_file.write(
        args.out or results_file.default_path("pinned_workers"),
        {**result.as_dict(), "target": target, "met": verdict == "met"},
    )
    print(f"wrote {out}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

"""Predict the pinned-worker run from this machine's calibration, then measure it.

    python benchmarks/predict_pinned.py [--model lenet5] [--batch 256] [--trials 3]
                                        [--rounds 5] [--steps 2]

Each trial calibrates the loopback all-reduce (dpkit.calibrate.measure: alpha and beta of
the ring formula, fitted to real MultiWorkerMirrored all-reduces between two pinned
processes), then runs dpkit.pinned.compare (one pinned process on the whole batch, then two
pinned workers sharing it) and predicts the workers' rate with dpkit.scaling from the
one-process rate and the calibration alone. It prints predicted and measured examples/sec
per trial and whether each is within the issue's target of 25%, and writes JSON under
runs/bench/.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import results_file  # noqa: E402

TARGET = 0.25  # relative error of the predicted rate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--batch", type=int, default=256, help="global batch size")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="steps per window")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    from dpkit.plumbing import contract

    contract.quiet_tensorflow(os.environ)  # before TensorFlow is imported
    from dpkit import calibrate, cards, pinned, scaling

    card = cards.model_card(args.model)
    workers = 2
    name = pinned.contender_names(workers)[2]
    trials = []
    for trial in range(args.trials):
        cal = calibrate.measure(workers=workers)
        run = pinned.compare(
            model=args.model,
            global_batch=args.batch,
            workers=workers,
            rounds=args.rounds,
            window_steps=args.steps,
        )
        one = run.median(pinned.BASELINE)
        local = scaling.predict(
            card,
            cards.this_machine(cal),
            [1, workers],
            global_batch=args.batch,
            one_device_examples_per_s=one,
        )
        predicted, measured = local.at(workers).examples_per_s, run.median(name)
        error = predicted / measured - 1
        trials.append(
            {
                "alpha_s": cal.alpha_s,
                "bandwidth_bytes_per_s": cal.bandwidth_bytes_per_s,
                "one_worker": one,
                "predicted": predicted,
                "measured": measured,
                "error": error,
                "met": abs(error) <= TARGET,
            }
        )
        print(
            f"trial {trial + 1}: alpha {cal.alpha_s * 1e6:.0f} us, "
            f"{cal.bandwidth_bytes_per_s / 1e6:,.0f} MB/s; one worker {one:,.0f}/s; "
            f"{workers} workers predicted {predicted:,.0f}/s, measured {measured:,.0f}/s: "
            f"{error:+.0%} ({'met' if abs(error) <= TARGET else 'MISSED'})",
            flush=True,
        )
    met = sum(t["met"] for t in trials)
    print(f"\n{met} of {len(trials)} trials within {TARGET:.0%} (target: every trial)")
    out = results_file.write(
        args.out or results_file.default_path("predict_pinned"),
        {"model": args.model, "batch": args.batch, "trials": trials},
    )
    print(f"wrote {out}")
    return 0 if met == len(trials) else 1


if __name__ == "__main__":
    sys.exit(main())

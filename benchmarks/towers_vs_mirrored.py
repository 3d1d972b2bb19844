"""Throughput of dpkit towers against TensorFlow's own data parallelism, timed the same way.

    python benchmarks/towers_vs_mirrored.py [--devices 4] [--batch 256] [--model lenet5]
                                            [--steps 10] [--rounds 5] [--per-call 10]

On the same logical devices, the same global batch and the same synthetic data it measures:

* single device: the whole batch through one plain tf.function step on device 0;
* dpkit towers: towers.make_tower_train_step, variables on the CPU;
* MirroredStrategy custom loop: strategy.run inside a tf.function;
* Keras fit under MirroredStrategy;

each once with one step per Python call and once with ``--per-call`` steps per call (a
``tf.range`` loop inside one tf.function for the first three, ``steps_per_execution`` for
Keras fit), which shows what Python dispatch costs per step next to the compute.

Fairness: every contender is timed inside one long call after warm-up. The custom loops
are timed over ``--steps`` consecutive steps; Keras fit runs ONE ``fit`` call for the whole
benchmark and a callback reads the clock at the end of the warm-up and at each round's
boundary, so ``fit``'s per-call set-up (data adapter, iterator, callbacks) is never timed,
as no contender's set-up is. Each contender lives in a child process of its own (the program
``contender``, :mod:`dpkit.programs.contender`); the parent drives them in rounds, asking
each in turn (order rotated every round) for ``--steps`` timed steps while the others wait
idle. It prints medians, spreads and paired ratios (per
round, under the same load on the machine), says plainly whether the targets are met, and
writes everything as JSON under runs/bench/. Children are always reaped, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import queue
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # dpkit, when run from a checkout
from benchmarks import results_file  # noqa: E402

#: contender -> the contender program's --strategy
CONTENDERS = {
    "single device": "single",
    "dpkit towers": "towers",
    "MirroredStrategy custom loop": "mirrored",
    "Keras fit + MirroredStrategy": "fit",
}
REFERENCE = "MirroredStrategy custom loop"
TARGETS = (  # (contender, over, at least)
    ("dpkit towers", "MirroredStrategy custom loop", 1.25),
    ("dpkit towers", "Keras fit + MirroredStrategy", 1.00),
)


def _read(child, what: str, kind):
    """The next record of ``child``, as the contract's ``kind``."""
    from dpkit.plumbing import procs

    while True:
        _, line = child.lines.get()
        if line is None:
            code = child.wait()
            raise RuntimeError(
                f"the benchmark child for {what} exited (code {code}) before answering; "
                f"its stderr:\n{child.tail()}"
            )
        record = procs.parse_record(line)
        if record is not None:
            return kind.from_record(record)  # anything else is a line some library printed


def _machine() -> dict:
    from dpkit import pinned

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {
        "cpu": model,
        "usable_cores": len(pinned.usable_cores()),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _summary(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256, help="global batch size")
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--per-call", type=int, default=10, help="steps per tf.function call in the second set"
    )
    parser.add_argument("--out", default=None, help="JSON file (default: runs/bench/...)")
    args = parser.parse_args(argv)

    from dpkit.plumbing import checks, contract, procs

    contract.quiet_tensorflow(os.environ)  # before TensorFlow is imported
    from dpkit import models, towers

    towers.shard_sizes(args.batch, args.devices)  # fail early, with the fix, if it does not divide
    models.build(args.model)  # fail early on an unknown model name
    for what in ("steps", "rounds", "per_call"):
        checks.whole(getattr(args, what), f"--{what.replace('_', '-')}", 1, "e.g. 10")
    if args.steps % args.per_call:
        parser.error(f"--steps {args.steps} must be a multiple of --per-call {args.per_call}")
    if args.model not in models.INPUT_SHAPES:
        parser.error(f"--model must be one of {', '.join(models.INPUT_SHAPES)}")

    common = ["--devices", str(args.devices), "--batch", str(args.batch), "--model", args.model]
    common += ["--steps", str(args.steps), "--rounds", str(args.rounds)]
    keys = [(name, k) for k in sorted({1, args.per_call}) for name in CONTENDERS]
    label = {key: f"{key[0]} [{key[1]}/call]" for key in keys}
    children = {}
    try:
        for name, k in keys:  # start them all; each warms up while the others start
            argv_child = procs.program_argv(
                contract.Program.CONTENDER, "--strategy", CONTENDERS[name], "--per-call", k, *common
            )
            children[(name, k)] = procs.Child(
                argv_child, name=label[(name, k)], lines=queue.Queue(), stdin=True
            )
        print(f"started {len(children)} children; building and warming up ...", flush=True)
        info = {
            key: _read(proc, label[key], contract.ContenderReady) for key, proc in children.items()
        }
        failed = {key: i.failed for key, i in info.items() if i.failed is not None}
        for key, why in failed.items():
            print(f"NOT MEASURED: {label[key]} failed before its first step: {why}", flush=True)
            if key[0] == "Keras fit + MirroredStrategy":
                print("  (a known Keras 3 bug: keras-team/keras#19246)", flush=True)
            children[key].kill()
        keys = [key for key in keys if key not in failed]
        ready = dataclasses.asdict(info[keys[0]])
        machine = {**_machine(), **{k: v for k, v in ready.items() if k not in ("ready", "failed")}}
        print(
            f"machine: {machine['cpu']}, {machine['usable_cores']} usable cores, "
            f"TensorFlow {machine['tensorflow']}, intra-op threads {machine['intra_op_threads']}, "
            f"inter-op threads {machine['inter_op_threads']}\n"
            f"run: {args.model}, global batch {args.batch}, {args.devices} devices "
            f"({machine['device_case']}); {args.rounds} rounds of {args.steps} steps per contender",
            flush=True,
        )
        seconds = {key: [] for key in keys}
        for r in range(args.rounds):
            order = keys[r % len(keys) :] + keys[: r % len(keys)]
            for key in order:
                children[key].send(contract.Command.RUN)
                seconds[key].append(_read(children[key], label[key], contract.Round).seconds)
            print(f"  round {r + 1}/{args.rounds} done", flush=True)
        for key in keys:
            children[key].send(contract.Command.QUIT)
        for key in keys:
            children[key].wait(timeout=120)
    finally:
        for child in children.values():
            child.close()

    rate = {key: [args.batch * args.steps / s for s in v] for key, v in seconds.items()}

    def paired(a, b):
        if a not in rate or b not in rate:
            return None
        return [x / y for x, y in zip(rate[a], rate[b])]

    def ratio_text(values):
        if values is None:
            return "n/a (not measured)"
        ratio, low, high = _summary(values)
        return f"{ratio:.2f}x [{low:.2f}-{high:.2f}]"

    lines = [
        f"\n{'contender':44s} {'examples/sec':>12s} {'spread':>7s} {'vs MS loop [range]':>22s}"
    ]
    for key in keys:
        median, low, high = _summary(rate[key])
        lines.append(
            f"{label[key]:44s} {median:12,.0f} {(high - low) / median:6.0%} "
            f"{ratio_text(paired(key, (REFERENCE, key[1]))):>22s}"
        )
    for key in failed:
        lines.append(f"{label[key]:44s} {'failed':>12s}   (see NOT MEASURED above)")
    if args.per_call > 1:
        lines.append(
            f"\nPython dispatch: examples/sec with {args.per_call} steps per call over 1 per call"
        )
        for name in CONTENDERS:
            values = paired((name, args.per_call), (name, 1))
            lines.append(f"  {name:42s} {ratio_text(values)}")
    lines.append("\nTargets (paired ratio: median [range over rounds]):")
    verdicts = []
    for k in sorted({1, args.per_call}):
        for name, over, target in TARGETS:
            values = paired((name, k), (over, k))
            if values is None:
                lines.append(f"  {name} / {over} [{k}/call]: not measured (see above)")
                continue
            ratio, rlow, rhigh = _summary(values)
            met = "met" if ratio >= target else "MISSED"
            sure = " in every round" if rlow >= target else " (not in every round)"
            verdict = {"contender": name, "over": over, "per_call": k, "target": target}
            verdict.update(median=ratio, low=rlow, high=rhigh, met=ratio >= target)
            verdicts.append(verdict)
            lines.append(
                f"  {name} / {over} [{k}/call]: {ratio:.2f}x [{rlow:.2f}-{rhigh:.2f}], "
                f"target >= {target:.2f}x: {met}{sure if met == 'met' else ''}"
            )
    print("\n".join(lines), flush=True)

    out = results_file.write(
        args.out or results_file.default_path("towers_vs_mirrored"),
        {
            "machine": machine,
            "args": vars(args),
            "examples_per_sec": {label[k]: v for k, v in rate.items()},
            "seconds": {label[k]: v for k, v in seconds.items()},
            "targets": verdicts,
            "not_measured": {label[k]: why for k, why in failed.items()},
        },
    )
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

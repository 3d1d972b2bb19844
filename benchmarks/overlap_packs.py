"""Gradients all-reduced in one pack or in several, across pinned worker processes (lesson 10).

    python benchmarks/overlap_packs.py [--packs 0,12582912,8388608,4194304] [--width 1024]
                                       [--layers 6] [--batch 128] [--rounds 12] [--steps 8]

Two workers, each pinned to a core of its own with one intra-op thread (lesson 05's
``pinned`` program), train ``overlap.deep_mlp`` data-parallel with
``MultiWorkerMirroredStrategy(communication_options=CommunicationOptions(bytes_per_pack=B))``
and Keras's SGD, which all-reduces the gradients with the strategy's options. One pair of
workers per ``B`` in ``--packs`` (0: one pack, TensorFlow's default), and one more process,
pinned to the first core, that trains the same model on one worker's share of the batch with
no strategy: the compute alone. And one pair per ``B`` that only all-reduces tensors the size of
the gradients, with the same options: the exchange alone.

Every process starts and warms up first; then each round asks every contender in turn (the
order rotated from round to round) for ``--steps`` steps in one call, while the others wait
idle. Per round, with ``compute`` the compute alone, ``exchange(B)`` the exchange alone and
``step(B)`` a training step, all in packs of B:

* exposed exchange ``step(B) - compute``: what the all-reduce added to the step;
* saved ``step(0) - step(B)``: what several packs saved over one;
* overlap ``(compute + exchange(B) - step(B)) / exchange(B)``: the fraction of the exchange
  that hid behind the compute (lesson 09's ``overlap``).

It prints medians and ranges over the rounds, whether each saving is larger than its spread
(every round's saving of one sign), and writes JSON (default
``benchmarks/results/overlap_packs.json``, which lesson 10 reads with ``overlap.load``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import results_file  # noqa: E402

OPS_LINE = "collective all-reduce ops in the step: "


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--packs", default="0,12582912,8388608,4194304", help="bytes_per_pack list")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=128, help="global batch (two workers)")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=8, help="steps per timed call")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    from dpkit.plumbing import contract

    contract.quiet_tensorflow(os.environ)  # before TensorFlow is imported
    from dpkit import overlap, pinned
    from dpkit.plumbing import checks, procs

    sizes = [int(s) for s in args.packs.split(",")]
    if sizes[0] != 0:
        raise SystemExit("--packs must start with 0 (one pack), the reference of every saving.")
    cores = pinned.cores_for(2)
    checks.divides(args.batch, 2, f"--batch {args.batch}", "over 2 workers")
    model = overlap.deep_mlp(args.width, args.layers)
    grad_bytes = overlap.tensor_bytes(model.trainable_variables)
    packs = {str(b): len(overlap.all_reduce_packs(grad_bytes, b)) for b in sizes}
    common = ["--model", "deep_mlp", "--width", args.width, "--layers", args.layers]
    common += ["--warmup_steps", 3, "--threads", 1]
    ops: dict[str, int] = {}
    names = {}  # contender -> its tasks

    def echo(line: str) -> None:
        name, _, text = line.partition("] ")
        if text.startswith(OPS_LINE):
            ops[name.strip("[").rpartition(" #")[0]] = int(text[len(OPS_LINE) :])
        else:
            print(line)

    seconds = {"compute": []} | {f"{k} {b}": [] for b in sizes for k in ("step", "exchange")}
    with procs.Group(timeout=900, echo=echo) as group:
        argv = [*common, "--global_batch", args.batch // 2, "--core", cores[0]]
        group.start("compute", procs.program_argv(contract.Program.PINNED, *argv))
        names["compute"] = ["compute"]
        for b in sizes:
            for kind in ("step", "exchange"):
                name = f"{kind} {b}"
                hosts = [f"127.0.0.1:{procs.free_port()}" for _ in cores]
                names[name] = [f"{name} #{i}" for i in range(2)]
                for i, core in enumerate(cores):
                    spec = {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}}
                    argv = [*common, "--global_batch", args.batch, "--core", core]
                    argv += ["--bytes_per_pack", b] + (["--exchange_only"] * (kind == "exchange"))
                    group.start(
                        names[name][i],
                        procs.program_argv(contract.Program.PINNED, *argv),
                        env={"TF_CONFIG": json.dumps(spec)},
                    )
        for tasks in names.values():
            for task in tasks:
                ready = group.wait_for(task, contract.WorkerReady)
        print(f"{sum(map(len, names.values()))} processes ready; TensorFlow {ready.tensorflow}")
        order = list(names)
        for r in range(args.rounds):
            turn = order[r % len(order) :] + order[: r % len(order)]
            for name in turn:
                for task in names[name]:
                    group.send(task, contract.Command.RUN.line(args.steps))
                timed = [group.wait_for(t, contract.Timed).seconds for t in names[name]]
                seconds[name].append(max(timed) / args.steps)
            print(
                f"round {r + 1}/{args.rounds}: "
                + ", ".join(f"{n} {s[-1] * 1e3:.1f} ms" for n, s in seconds.items())
            )
        for tasks in names.values():
            for task in tasks:
                group.send(task, contract.Command.QUIT)
        group.wait()
    result = overlap.Measured(
        seconds,
        sizes,
        packs,
        {f"{k} {b}": ops.get(f"{k} {b}", -1) for b in sizes for k in ("step", "exchange")},
        {
            "model": f"deep_mlp width {args.width}, {args.layers} layers",
            "gradient_bytes": sum(grad_bytes),
            "global_batch": args.batch,
            "workers": 2,
            "cores": cores,
            "pinned": pinned.can_pin(),
            "steps_per_call": args.steps,
            "rounds": args.rounds,
            "tensorflow": ready.tensorflow,
            "usable_cores": len(pinned.usable_cores()),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        },
    )
    print()
    print(result.table())
    out = results_file.write(
        args.out or os.path.join("benchmarks", "results", "overlap_packs.json"), result.as_dict()
    )
    print(f"wrote {out}")
    agree = all(n == packs[k.split()[1]] for k, n in result.collective_ops.items())
    print(f"every step's all-reduce ops = the packs counted from the gradients' sizes: {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())

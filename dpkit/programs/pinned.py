"""The ``pinned`` program: one contender of :func:`dpkit.pinned.compare` (lesson 05).

Started through :class:`dpkit.plumbing.procs.Group` as ``python -m dpkit.programs pinned``.
It pins itself to ``--core`` *before* TensorFlow starts (TensorFlow sizes its thread pools
from the cores it may use), trains on synthetic data (with ``MultiWorkerMirroredStrategy``
when ``TF_CONFIG`` names several workers, each on its slice of every global batch), writes
a ``ready`` record, and then answers the stdin lines of ``contract.Command`` with records:
``run K`` (time K steps, answer ``{"seconds": ...}``), ``checksum PATH`` (write every weight
to the ``.npz`` file PATH, atomically, and answer their sum: the parent compares the workers'
models weight by weight) and ``quit``.

For lesson 10 (``benchmarks/overlap_packs.py``): ``--bytes_per_pack B`` gives the strategy
``CommunicationOptions(bytes_per_pack=B)`` (Keras's optimizer all-reduces with the strategy's
options), ``--model deep_mlp --width W --layers L`` trains :func:`dpkit.overlap.deep_mlp`,
``--exchange_only`` times the all-reduce of tensors the size of its gradients alone; a worker
logs how many collective all-reduce ops its traced step holds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from dpkit import models
from dpkit.plumbing import contract, procs


def save_weights(path: str, arrays: list) -> None:
    """Write ``arrays`` to the ``.npz`` file ``path`` whole or not at all (a parent never
    reads half a file: the name appears only once the data is written)."""
    import numpy as np

    partial = f"{path}.partial"
    with open(partial, "wb") as file:
        np.savez(file, *arrays)
    os.replace(partial, path)


def join(core: int, threads: int) -> tuple[int, int]:
    """Pin this process to ``core`` (-1: do not) *before* TensorFlow starts (it sizes its thread
    pools from the cores it may use) and give TensorFlow ``threads`` intra-op threads; return
    ``(workers, index)`` from ``TF_CONFIG`` (``(1, 0)`` without one). The ``allreduce`` program
    (:mod:`dpkit.programs.collective`) starts the same way."""
    if core >= 0:
        os.sched_setaffinity(0, {core})
    import tensorflow as tf  # here: after pinning (TF sizes thread pools on import)

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    # collectives need a second inter-op thread next to the call that waits for them
    tf.config.threading.set_inter_op_parallelism_threads(max(2, threads))
    spec = json.loads(os.environ.get("TF_CONFIG") or "{}")
    return len(spec.get("cluster", {}).get("worker", [])) or 1, spec.get("task", {}).get("index", 0)


def ready(index: int, workers: int) -> None:
    """Write this worker's ``contract.WorkerReady``."""
    import tensorflow as tf  # here: after pinning (TF sizes thread pools on import)

    procs.record(
        contract.WorkerReady(
            ready=index, workers=workers, tensorflow=tf.__version__, pid=os.getpid()
        )
    )


def exchange_step(strategy, variables):
    """A step that only all-reduces tensors the size of the gradients (the variables' values),
    with the strategy's options, and returns one number that needs every result."""
    import tensorflow as tf  # here: after pinning (TF sizes thread pools on import)

    def replica():
        context = tf.distribute.get_replica_context()
        sums = context.all_reduce("sum", [tf.identity(v) for v in variables])
        return tf.add_n([tf.reshape(s, [-1])[0] for s in sums])

    @tf.function
    def step(x, y):
        return strategy.run(replica)

    return step


def main(argv: list[str]) -> int:
    """One contender process; returns 0 after ``quit`` (or the end of stdin)."""
    parser = argparse.ArgumentParser(prog="python -m dpkit.programs pinned")
    parser.add_argument("--model", default="lenet5", choices=[*models.INPUT_SHAPES, "deep_mlp"])
    parser.add_argument("--width", type=int, default=1024, help="deep_mlp: units per layer")
    parser.add_argument("--layers", type=int, default=6, help="deep_mlp: hidden layers")
    parser.add_argument("--bytes_per_pack", type=int, default=0, help="0: one pack (TF's default)")
    parser.add_argument(
        "--exchange_only", action="store_true", help="time the all-reduce of the gradients alone"
    )
    parser.add_argument("--global_batch", type=int, default=256)
    parser.add_argument("--core", type=int, default=-1, help="pin to this core (-1: do not)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads")
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    workers, index = join(args.core, args.threads)
    import keras  # here: after pinning (TF sizes thread pools on import)
    import tensorflow as tf

    from dpkit import accumulation, data, overlap, towers

    if workers > 1:
        options = tf.distribute.experimental.CommunicationOptions(
            bytes_per_pack=args.bytes_per_pack
        )
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    else:
        strategy = tf.distribute.get_strategy()  # the default: one device, no all-reduce
    per_worker = args.global_batch // workers
    deep = args.model == "deep_mlp"
    shape = (args.width,) if deep else models.INPUT_SHAPES[args.model]
    # every process draws the same global batch and keeps its own slice of it
    x, y = next(iter(data.synthetic(shape, 10, batch_size=args.global_batch, seed=args.seed)))
    mine = slice(index * per_worker, (index + 1) * per_worker)
    x, y = x[mine], y[mine]
    keras.utils.set_random_seed(args.seed)
    with strategy.scope():
        if deep:
            model = overlap.deep_mlp(args.width, args.layers)
        else:
            model = models.build(args.model, input_shape=shape)
        optimizer = keras.optimizers.SGD(0.01)
    # each worker's share of the loss: summing it over the workers would cost an all-reduce
    step = towers.make_mirrored_train_step(
        model, optimizer, strategy, args.global_batch, global_loss=False
    )
    if args.exchange_only:
        step = exchange_step(strategy, model.trainable_variables)
    for _ in range(args.warmup_steps):
        float(step(x, y))
    if deep and workers > 1:
        ops = accumulation.collective_ops(step, tf.constant(x), tf.constant(y))
        print(f"collective all-reduce ops in the step: {ops}", flush=True)
    ready(index, workers)
    for line in sys.stdin:
        command, arguments = contract.Command.parse(line)
        if command is contract.Command.RUN:
            start = time.perf_counter()
            for _ in range(int(arguments[0])):
                loss = step(x, y)
            float(loss)  # waits for the last step
            procs.record(contract.Timed(seconds=time.perf_counter() - start, loss=float(loss)))
        elif command is contract.Command.CHECKSUM:
            total = sum(float(tf.reduce_sum(tf.cast(v, tf.float64))) for v in model.weights)
            if arguments:
                save_weights(" ".join(arguments), [v.numpy() for v in model.weights])
            procs.record(contract.Checksum(checksum=total))
        else:
            break
    return contract.Exit.OK

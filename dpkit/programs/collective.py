"""The ``allreduce`` program: one worker of :func:`dpkit.calibrate.measure` (lesson 09).

Started through :class:`dpkit.plumbing.procs.Group` as ``python -m dpkit.programs allreduce ...``,
one process per worker, with ``TF_CONFIG`` naming every worker on 127.0.0.1. Like the
workers of :mod:`dpkit.programs.pinned`, it pins itself to ``--core`` *before* TensorFlow
starts and runs one intra-op thread, so each worker stands for one device of its own.

It joins a ``MultiWorkerMirroredStrategy`` collective, warms up, and then times all-reduces
(a sum over every worker) of float32 tensors of each size in ``--sizes``. Every timed sample
starts right after a tiny all-reduce that lines the workers up, runs several all-reduces
back to back inside one ``tf.function`` (so Python's call overhead is shared among them),
and fetches the result. It writes one record per size::

    {"size_bytes": 4096, "seconds": [per all-reduce, one per sample], "per_sample": 64}

Worker 0 then times square float32 matmuls on its one core and thread
(:func:`dpkit.programs.throughput.matmul_peak`) and writes ``{"matmul_flops_per_s": ...}``.
The last record is ``{"done": index}``.
"""

from __future__ import annotations

import argparse
import time

from dpkit.plumbing import contract, procs
from dpkit.programs import pinned

#: All-reduces run back to back in one ``tf.function`` call (one trace serves every size).
CHAIN = 4

#: Bytes of all-reduce per timed sample that set how many calls a sample makes (below, more
#: calls: a small all-reduce takes microseconds, too short to time alone).
SAMPLE_BYTES = 1 << 22

#: The most calls of the chain in one sample (for the smallest messages).
MAX_CALLS = 8


def calls_per_sample(size_bytes: int) -> int:
    """Calls of the :data:`CHAIN` function in one timed sample of ``size_bytes`` messages.

    Every worker computes the same number from the size alone: each call is a collective,
    so the workers must make exactly the same calls.
    """
    return max(1, min(MAX_CALLS, SAMPLE_BYTES // (CHAIN * size_bytes)))


def main(argv: list[str]) -> contract.ThroughBarrier:
    """One worker; returns ``Exit.OK`` after its records, through TensorFlow's barrier."""
    parser = argparse.ArgumentParser(prog="python -m dpkit.programs allreduce")
    parser.add_argument("--sizes", required=True, help="message sizes in bytes, comma-separated")
    parser.add_argument("--repeats", type=int, default=5, help="timed samples per size")
    parser.add_argument("--warmup", type=int, default=8, help="untimed calls before the first")
    parser.add_argument("--core", type=int, default=-1, help="pin to this core (-1: do not)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads")
    parser.add_argument("--matmul_size", type=int, default=512, help="0: no matmul timing")
    parser.add_argument("--matmul_seconds", type=float, default=0.5)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    workers, index = pinned.join(args.core, args.threads)
    import tensorflow as tf  # here: after pinning (TensorFlow sizes thread pools on import)

    from dpkit.programs import throughput  # imports TensorFlow

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    pinned.ready(index, workers)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def chain(t):
        def replica(t):
            context = tf.distribute.get_replica_context()
            t = tf.identity(t)  # on this replica's device: where the all-reduce puts its sum
            # issued in this order and run one after the other (an ordering token links
            # a strategy's collectives); one element of each, so that all of them run
            return tf.stack([context.all_reduce("sum", t)[0] for _ in range(CHAIN)])

        return strategy.run(replica, (t,))

    line_up = tf.ones([1])  # a tiny all-reduce: every worker leaves it at about the same time
    for _ in range(args.warmup):  # tracing, connections, the first buffers
        chain(line_up).numpy()
    for size in sizes:
        message = tf.ones([size // 4])
        calls = calls_per_sample(size)
        sums = chain(message).numpy()  # untimed: buffers of this size
        seconds = []
        for _ in range(args.repeats):
            chain(line_up).numpy()
            start = time.perf_counter()
            for _ in range(calls):
                chain(message).numpy()  # the call returns once its all-reduces ran
            seconds.append((time.perf_counter() - start) / (calls * CHAIN))
        if not (sums == workers).all():  # every worker gave ones: the sum is the count
            raise RuntimeError(f"an all-reduce of ones over {workers} workers gave {sums}")
        times = contract.AllReduceTimes(size_bytes=size, seconds=seconds, per_sample=calls * CHAIN)
        procs.record(times)
    if index == 0 and args.matmul_size > 0:
        flops = throughput.matmul_peak("/CPU:0", args.matmul_size, args.matmul_seconds)
        procs.record(contract.MatmulPeak(matmul_flops_per_s=flops, matmul_size=args.matmul_size))
    procs.record(contract.Done(done=index))
    return contract.ThroughBarrier(contract.Exit.OK)  # it joined a collective

"""The ``preempt`` program: one ``MultiWorkerMirroredStrategy`` worker whose training loop runs
under ``tf.distribute.experimental.PreemptionCheckpointHandler`` (lesson 10,
:func:`dpkit.preemption.run_job`).

Started through :class:`dpkit.plumbing.procs.Group`, one process per worker, with ``TF_CONFIG``
naming every worker on 127.0.0.1. Each worker trains lesson 07's softmax regression
(:func:`dpkit.softmax.mirrored_step`, with a step counter) on its slice of global batch
``step`` of ``--data``, an ``.npz`` of ``x [steps, batch, features]`` and ``y`` that the parent
writes from :func:`dpkit.softmax.digits_batches` (so a worker imports no scikit-learn). A run
that resumes at step ``s`` takes the same batches from ``s`` on. The weights and the step
counter are in a ``tf.train.Checkpoint`` that the handler restores from ``--checkpoint_dir``
when it is made, and saves when any worker gets SIGTERM.

Records: :class:`~dpkit.plumbing.contract.Restored` once the handler is made (the step it
restored), one :class:`~dpkit.plumbing.contract.MirroredStep` per step (``step`` is the step
counter before the step), :class:`~dpkit.plumbing.contract.Paused` after ``--pause_at`` steps
(then it waits for a ``run`` line on stdin, so that a parent can send SIGTERM at a step that
is not the last without racing the loop), and at the end either
:class:`~dpkit.plumbing.contract.Preempted` (the handler saved and called its ``exit_fn``) or
:class:`~dpkit.plumbing.contract.Saved` (every step done, the weights in ``--out``).

Off Google Cloud, TensorFlow 2.21 completes the handler's ``TerminationConfig`` as on Borg
(``_complete_config_for_environment`` in
``tensorflow/python/distribute/failure_handling/failure_handling.py``): SIGTERM is the signal
(``signal.signal(SIGTERM, ...)``), no grace period, and ``exit_fn`` is ``sys.exit(42)``. This
program keeps those defaults; the 42 becomes its exit code (``contract.Exit.PREEMPTED``).
On a Google Cloud CPU VM the handler would do nothing (``detect_platform`` says ``GCE_CPU``
and ``run`` only calls the step), so the parent points ``GCE_METADATA_IP`` at a closed port:
``on_gcp`` then answers no at once instead of asking the metadata server (5 s timeout).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import tensorflow as tf

from dpkit import softmax
from dpkit.plumbing import contract, procs
from dpkit.programs.workers import worker_share


def main(argv: list[str]) -> int | contract.ThroughBarrier:
    """One worker; ``ThroughBarrier(OK)`` when it finished, ``ThroughBarrier(PREEMPTED)`` when
    the handler saved a checkpoint and exited."""
    parser = argparse.ArgumentParser(
        prog="python -m dpkit.programs preempt",
        description="a MultiWorkerMirroredStrategy worker under PreemptionCheckpointHandler",
    )
    parser.add_argument("--checkpoint_dir", required=True)
    parser.add_argument("--out", required=True, help="where to save the final weights (.npz)")
    parser.add_argument("--data", required=True, help=".npz of x [steps, batch, ...] and y")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--global_batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pause_at", type=int, default=-1, help="wait for 'run' after this step")
    args = parser.parse_args(argv)
    try:
        workers, index, per_worker = worker_share("preempt", args.global_batch)
    except ValueError as error:
        print(error, file=sys.stderr)
        return contract.Exit.USAGE

    with np.load(args.data) as data:
        x, y = data["x"], data["y"]
    if x.shape[:2] != (args.steps, args.global_batch):
        print(
            f"--data holds {x.shape[:2]} (steps, batch), not ({args.steps}, {args.global_batch})",
            file=sys.stderr,
        )
        return contract.Exit.USAGE
    mine = slice(index * per_worker, (index + 1) * per_worker)
    x, y = x[:, mine], y[:, mine]  # this worker's slice of every global batch

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    w0, b0 = softmax.softmax_init(x.shape[-1], 10, args.seed)
    with strategy.scope():
        w, b = tf.Variable(w0), tf.Variable(b0)
        step_counter = tf.Variable(0, dtype=tf.int64, name="step")
    checkpoint = tf.train.Checkpoint(w=w, b=b, step=step_counter)
    handler = tf.distribute.experimental.PreemptionCheckpointHandler(
        strategy.cluster_resolver, checkpoint, checkpoint_dir=args.checkpoint_dir
    )  # restores the latest checkpoint in checkpoint_dir, if there is one
    procs.record(contract.Restored(restored=int(step_counter.numpy()), worker=index))
    train = softmax.mirrored_step(strategy, w, b, args.lr, args.global_batch, step_counter)
    started = time.perf_counter()
    try:
        while (s := int(step_counter.numpy())) < args.steps:
            loss = float(handler.run(train, tf.constant(x[s]), tf.constant(y[s])))
            procs.record(
                contract.MirroredStep(step=s, loss=loss, seconds=time.perf_counter() - started)
            )
            if s + 1 == args.pause_at:
                procs.record(contract.Paused(paused=s + 1))
                contract.Command.parse(sys.stdin.readline())  # wait for the parent's "run"
    except SystemExit as exit_:  # the handler's exit_fn, after it saved
        procs.record(contract.Preempted(preempted=int(step_counter.numpy()), code=exit_.code))
        return contract.ThroughBarrier(int(exit_.code))
    np.savez(args.out, w=w.numpy(), b=b.numpy())
    procs.record(contract.Saved(done=int(step_counter.numpy()), out=args.out))
    return contract.ThroughBarrier(contract.Exit.OK)  # it joined a collective

"""The ``mwms`` and ``tf1`` programs of lesson 07, and the training pieces lesson 08 shares.

Both programs run as children of :class:`dpkit.tasks.Group`, one process per task, and train
with the steps of :mod:`dpkit.tasks` (TF2) and :func:`dpkit.compat.worker_graph` (TF1). The
task program of lesson 08 (:mod:`dpkit.programs.task`) shares the rest: the chief's restored
variables sent to every worker (:func:`share_from_chief`), the TF1 session
(:func:`tf1_session`), and :func:`batches` and :func:`accuracy` on the flattened digits of
:func:`dpkit.softmax.digits`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import numpy as np
import tensorflow as tf

from dpkit import compat, softmax
from dpkit.plumbing import checks, contract, procs

# ----------------------------------------------------------------------------- shared pieces


def share_from_chief(strategy, restored: float, w, b, global_step) -> None:
    """Give every ``MultiWorkerMirroredStrategy`` worker the chief's ``w``, ``b`` and
    ``global_step`` if the chief restored them from a checkpoint (``restored`` is 1.0 there,
    0.0 elsewhere): one all-reduce of a sum, to which the others add zeros."""

    @tf.function
    def share(flag):
        def replica(flag):
            step = tf.reshape(tf.cast(global_step, tf.float32), [1])  # no scalars: an
            flag = tf.reshape(flag, [1])  # all-reduce of a scalar fails across workers
            values = [w * flag, b * flag, step * flag, flag]
            return tf.distribute.get_replica_context().all_reduce("sum", values)

        return strategy.run(replica, (flag,))

    sw, sb, sstep, any_restored = share(tf.constant(restored))
    if float(any_restored[0]) > 0:
        w.assign(sw)
        b.assign(sb)
        global_step.assign(int(round(float(sstep[0]))))


def tf1_session(master: str, index: int, chief: bool, hooks: list, threads: int = 0, **chief_args):
    """The session of TF1 worker ``index``: the chief's initialises (and, given
    ``checkpoint_dir`` etc. in ``chief_args``, saves); the others wait for the chief.

    A worker that starts before the chief has initialised the variables polls every
    0.5 s, not every 30 s (``WorkerSessionCreator``'s default; the book chapter's
    ``Supervisor`` was given ``recovery_wait_secs=1`` for the same reason).
    """
    from tensorflow.python.training import session_manager  # private: only this session's

    v1 = tf.compat.v1
    filters = ["/job:ps", f"/job:worker/task:{index}"]
    config = v1.ConfigProto(device_filters=filters, inter_op_parallelism_threads=threads)
    if chief:
        return v1.train.MonitoredTrainingSession(
            master=master, is_chief=True, hooks=hooks, config=config, **chief_args
        )

    class Creator(v1.train.WorkerSessionCreator):
        def _get_session_manager(self):
            if not self._session_manager:
                self._session_manager = session_manager.SessionManager(
                    local_init_op=self._scaffold.local_init_op,
                    local_init_feed_dict=self._scaffold.local_init_feed_dict,
                    ready_op=self._scaffold.ready_op,
                    ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                    graph=v1.get_default_graph(),
                    recovery_wait_secs=0.5,
                )
            return self._session_manager

    return v1.train.MonitoredSession(
        session_creator=Creator(master=master, config=config), hooks=hooks
    )


def quiet_closed_queue_runners() -> None:
    """No traceback from a queue-runner thread cancelled because its session closed."""
    default = threading.excepthook

    def hook(args):
        if args.exc_type.__name__ == "CancelledError" and "QueueRunner" in args.thread.name:
            return
        default(args)

    threading.excepthook = hook


# ----------------------------------------------------------------------------- data


def accuracy(w, b, x, y) -> float:
    """Test accuracy of softmax regression ``(w, b)`` on ``(x, y)``, in NumPy."""
    return float(np.mean(np.argmax(x @ w + b, axis=1) == y))


def batches(x, y, batch: int, seed: int):
    """Endless shuffled batches (a new permutation each epoch)."""
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            take = order[start : start + batch]
            yield x[take], y[take]


# ----------------------------------------------------------------------------- the programs


def worker_share(program: str, global_batch: int) -> tuple[int, int, int]:
    """(workers, this worker's index, its examples per global batch) from ``TF_CONFIG``;
    ValueError, saying what is wrong, when it names no task or the batch does not split."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    if "task" not in config:
        raise ValueError(f"the {program} program needs TF_CONFIG with a cluster and a task")
    workers, index = len(config["cluster"]["worker"]), config["task"]["index"]
    what = f"--global_batch {global_batch}"
    return workers, index, checks.divides(global_batch, workers, what, f"over {workers} workers")


def mwms_main(argv: list[str]) -> int | contract.ThroughBarrier:
    """``mwms --out FILE [--steps --global_batch --lr --seed]``, with ``TF_CONFIG`` set.

    Worker ``w`` trains on its slice of every global batch (so the run equals one device on the
    whole batch), records the loss per step and saves its final weights to ``--out``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m dpkit.programs mwms",
        description="a MultiWorkerMirroredStrategy worker, reading TF_CONFIG",
    )
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--global_batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="where to save the final weights (.npz)")
    args = parser.parse_args(argv)
    batch = args.global_batch
    try:
        workers, index, per_worker = worker_share("mwms", batch)
    except ValueError as error:
        print(error, file=sys.stderr)
        return contract.Exit.USAGE

    x, y = softmax.digits_batches(batch, args.steps, args.seed)
    mine = slice(index * per_worker, (index + 1) * per_worker)
    x, y = x[:, mine], y[:, mine]  # this worker's slice of every global batch

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    print(f"joined the collective as worker {index} of {workers}", flush=True)
    w0, b0 = softmax.softmax_init(x.shape[-1], 10, args.seed)
    with strategy.scope():
        w, b = tf.Variable(w0), tf.Variable(b0)
    step = softmax.mirrored_step(strategy, w, b, args.lr, batch)
    started = time.perf_counter()
    for i in range(args.steps):
        loss = float(step(tf.constant(x[i]), tf.constant(y[i])))
        procs.record(
            contract.MirroredStep(step=i, loss=loss, seconds=time.perf_counter() - started)
        )
        if (i + 1) % max(1, args.steps // 4) == 0:
            print(f"step {i + 1}/{args.steps} loss {loss:.4f}", flush=True)
    np.savez(args.out, w=w.numpy(), b=b.numpy())
    procs.record(contract.Saved(done=args.steps, out=args.out))
    return contract.ThroughBarrier(contract.Exit.OK)  # it joined a collective


def tf1_main(argv: list[str]) -> int:
    """``tf1 --cluster JSON --index I [--steps N] [--sync]``: a TF1 between-graph replication
    worker (plain SGD or ``SyncReplicasOptimizer``) that steps once per line on stdin."""
    parser = argparse.ArgumentParser(
        prog="python -m dpkit.programs tf1",
        description="a TF1 between-graph replication worker (started by tasks.Group)",
    )
    parser.add_argument("--cluster", required=True, help="the ClusterSpec as JSON")
    parser.add_argument("--index", type=int, required=True)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--sync", action="store_true", help="use SyncReplicasOptimizer")
    args = parser.parse_args(argv)

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    spec, index = json.loads(args.cluster), args.index
    chief = index == 0
    made = {}

    def model():
        made["w"] = w = v1.get_variable("w", [4, 1], initializer=v1.zeros_initializer())
        return tf.reduce_mean((tf.matmul(tf.ones([8, 4]), w) - 1.0) ** 2)

    global_step, loss, opt, train_op = compat.worker_graph(spec, index, model, 0.01, args.sync)
    placement = {"global_step": global_step.device, "w": made["w"].device, "loss": loss.device}
    # num_tokens=0: no token before the first round, so a step returns only once its
    # round is applied (the default hands out one round of tokens up front)
    hooks = [opt.make_session_run_hook(is_chief=chief, num_tokens=0)] if args.sync else []
    with tf1_session("grpc://" + spec["worker"][index], index, chief, hooks) as sess:
        procs.record(contract.Placed(ready=index, placement=placement))
        for step in range(args.steps):
            sys.stdin.readline()  # Group.send: the caller steps the workers together
            sess.run(train_op)
            procs.record(contract.Stepped(stepped=step))
        sys.stdin.readline()
        procs.record(contract.GlobalStep(global_step=int(sess.run(global_step))))
    return contract.Exit.OK

"""The task every process of lessons 07, 08 and 10 trains: softmax regression on the digits.

Introduced in lesson 07. Every process (each task of a :class:`dpkit.tasks.Group`, the
parameter-server workers, the single-device reference a lesson compares with) takes the same
data and initial weights from :func:`digits`, :func:`digits_batches` and :func:`softmax_init`,
and trains them with the same steps: :func:`mirrored_step` (``MultiWorkerMirroredStrategy``)
and :func:`ps_step` (``ParameterServerStrategy``).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def digits(seed: int = 0):
    """``(x_train, y_train, x_test, y_test)``: the digits, flattened (float32, int32)."""
    from dpkit import data

    arrays = data.load("digits", seed=seed)
    flat = lambda x: x.reshape(len(x), -1).astype("float32")  # noqa: E731
    return flat(arrays.x_train), arrays.y_train.astype("int32"), flat(arrays.x_test), arrays.y_test


def digits_batches(global_batch: int, steps: int, seed: int = 0):
    """The first ``steps`` global batches of flattened digits: ``(x [steps, B, 784], y)``.

    Every worker and the single-device reference take their examples from here.
    """
    x, y, _, _ = digits(seed)
    n = global_batch * steps
    if n > len(x):
        raise ValueError(
            f"{steps} steps of {global_batch} examples need {n} digits, the training set has "
            f"{len(x)}; use fewer steps or a smaller batch."
        )
    return x[:n].reshape(steps, global_batch, -1), y[:n].reshape(steps, global_batch)


def softmax_init(features: int = 784, classes: int = 10, seed: int = 0):
    """Initial softmax-regression weights ``(w, b)``, the same in every process."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 0.01, size=(features, classes)).astype(np.float32)
    return w, np.zeros(classes, np.float32)


def mirrored_step(strategy, w, b, learning_rate: float, global_batch: int, global_step=None):
    """One ``MultiWorkerMirroredStrategy`` SGD step of softmax regression, as a ``tf.function``.

    ``step(x, y)`` takes this worker's slice of a global batch and returns the loss of the
    whole global batch: each worker's loss is divided by the *global* batch size, and the
    gradients are summed over all workers (the all-reduce), so every worker applies the
    same update, the one a single device would make on the whole batch. ``global_step``
    (a variable), if given, counts the steps.
    """

    @tf.function
    def step(xb, yb):
        def replica(xb, yb):
            with tf.GradientTape() as tape:
                losses = tf.nn.sparse_softmax_cross_entropy_with_logits(yb, tf.matmul(xb, w) + b)
                loss = tf.reduce_sum(losses) / global_batch
            grads = tape.gradient(loss, [w, b])
            # the all-reduce: every worker ends up with the sum over all workers
            grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
            w.assign_sub(learning_rate * grads[0])
            b.assign_sub(learning_rate * grads[1])
            if global_step is not None:
                global_step.assign_add(1)
            return loss

        return strategy.reduce("sum", strategy.run(replica, (xb, yb)), axis=None)

    return step


def ps_step(strategy, w, b, learning_rate: float, global_step):
    """One ``ParameterServerStrategy`` SGD step of softmax regression, as a ``tf.function``.

    ``step(iterator)`` runs on a worker, with the worker's next batch; the coordinator
    schedules it (``coordinator.schedule(step, (iterator,))``). The mean loss of the batch
    is its own: the workers step asynchronously, each against the variables on the ps.
    """

    @tf.function
    def step(iterator):
        def replica(xb, yb):
            with tf.GradientTape() as tape:
                losses = tf.nn.sparse_softmax_cross_entropy_with_logits(yb, tf.matmul(xb, w) + b)
                loss = tf.reduce_mean(losses)
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(learning_rate * gw)
            b.assign_sub(learning_rate * gb)
            global_step.assign_add(1)
            return loss

        return strategy.run(replica, next(iterator))

    return step

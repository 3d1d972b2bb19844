"""The independent reference for lesson 07's softmax regression trained across workers: one
device, the whole global batch, no interruption, in plain TensorFlow (tests of the mwms and
preempt programs compare their workers' weights and losses with it)."""

from __future__ import annotations

from dpkit import tasks


def one_device_sgd(global_batch: int, steps: int, lr: float):
    """(w, b, losses) after ``steps`` SGD steps on the digits batches the workers read."""
    import tensorflow as tf

    x, y = tasks.digits_batches(global_batch, steps)
    w0, b0 = tasks.softmax_init()
    w, b = tf.Variable(w0), tf.Variable(b0)
    losses = []
    for i in range(steps):
        with tf.GradientTape() as tape:
            logits = tf.matmul(x[i], w) + b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y[i], logits))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(lr * gw)
        b.assign_sub(lr * gb)
        losses.append(float(loss))
    return w, b, losses

"""The independent references for the softmax regression trained across workers: one
device, the whole global batch, no interruption: in plain TensorFlow (tests of the mwms and
preempt programs compare their workers' weights and losses with it) and in NumPy (the
launcher's mirrored runs, on loopback and under Slurm)."""

from __future__ import annotations

import numpy as np

from dpkit import softmax


def one_device_sgd(global_batch: int, steps: int, lr: float):
    """(w, b, losses) after ``steps`` SGD steps on the digits batches the workers read."""
    import tensorflow as tf

    x, y = softmax.digits_batches(global_batch, steps)
    w0, b0 = softmax.softmax_init()
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


def numpy_sgd(steps, batch, lr, seed):
    """Softmax regression trained by plain NumPy SGD on one device, on the batches of the
    launcher's mirrored flavour (``python -m dpkit task``): its whole global batch each step."""
    from dpkit import data

    arrays = data.load("digits", seed=seed)
    x = arrays.x_train.reshape(len(arrays.x_train), -1).astype(np.float64)
    y = arrays.y_train
    w, b = (v.astype(np.float64) for v in softmax.softmax_init(x.shape[1], 10, seed))
    rng = np.random.default_rng(seed)
    done = 0
    while done < steps:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            if done == steps:
                break
            take = order[start : start + batch]
            logits = x[take] @ w + b
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(batch), y[take]] -= 1.0
            w -= lr * x[take].T @ p / batch
            b -= lr * p.mean(axis=0)
            done += 1
    return w, b

"""Mixed precision under a strategy: the loss-scaled step and gradients sent in 16 bits
(lesson 10).

A ``mixed_bfloat16`` or ``mixed_float16`` dtype policy keeps the variables in float32 and
computes in 16 bits. float16 (IEEE 754 binary16) has 5 exponent bits to float32's 8
(bfloat16 keeps 8): values below its smallest normal number, 2**-14 (about 6e-5), lose
precision, and values below half its smallest subnormal 2**-24, about 3e-8, round to zero.
**Loss scaling** multiplies the loss by a large power of two before the backward pass, so
small gradients stay in float16's range, and divides the gradients by it before the update.
Keras 3's ``LossScaleOptimizer`` does both and adapts the scale: a step whose gradients are
not finite is skipped and the scale halved; after ``dynamic_growth_steps`` finite steps it
doubles. (Not to be confused with dividing the loss by the global batch, lesson 03.)

:func:`make_loss_scaled_step` is that step in a custom loop under a strategy;
:func:`all_reduce_in` sums gradients across replicas in a narrower dtype, halving the bytes
the all-reduce moves, as Horovod's fp16 compression does.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from dpkit.plumbing import checks


def make_loss_scaled_step(strategy, model, optimizer, loss_fn, global_batch_size: int):
    """A ``tf.function`` ``step(x, y, poison)`` that trains ``model`` under ``strategy``
    with a ``keras.optimizers.LossScaleOptimizer``.

    Each replica divides its summed per-example loss (``loss_fn(labels, logits)`` with
    ``reduction=None``, logits cast to float32) by ``global_batch_size``, multiplies it by
    ``poison`` (1.0 normally; ``inf`` makes every replica's gradients overflow, to watch the
    scale react), scales it with ``optimizer.scale_loss`` and applies the gradients; the
    optimizer divides them by the scale again. ``x``, ``y`` are distributed values. Returns
    the global batch's loss (unscaled).

    The optimizer applies the update inside a ``tf.cond``, so the all-reduce runs in a
    condition's branch: with the collective all-reduce ``MirroredStrategy`` picks for CPUs
    that step failed once in lesson 10's runs (cause not pinned down); give a strategy made
    with ``cross_device_ops=tf.distribute.ReductionToOneDevice()``. It also decides "finite" from
    replica 0's gradients before the all-reduce, so poison every replica, as this step does.

    Raises:
        ValueError: the optimizer is not a LossScaleOptimizer.
    """
    if not isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        raise ValueError(
            "optimizer must be a keras.optimizers.LossScaleOptimizer wrapping your optimizer."
        )
    global_batch_size = checks.whole(global_batch_size, "global_batch_size", 1, "e.g. 48")
    variables = model.trainable_variables
    if not optimizer.built:  # built in the strategy's scope before tracing, as fit does
        with strategy.scope():
            optimizer.build(variables)

    def replica_step(x, y, poison):
        with tf.GradientTape() as tape:
            logits = tf.cast(model(x, training=True), tf.float32)
            loss = tf.nn.compute_average_loss(
                loss_fn(y, logits), global_batch_size=global_batch_size
            )
            scaled = optimizer.scale_loss(loss * poison)
        grads = tape.gradient(scaled, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss * poison

    @tf.function
    def step(x, y, poison):
        per_replica = strategy.run(replica_step, args=(x, y, poison))
        return strategy.reduce("SUM", per_replica, axis=None)

    return step


def all_reduce_in(dtype, tensors):
    """Sum ``tensors`` across replicas, sent as ``dtype`` (e.g. ``tf.bfloat16``), returned in
    their own dtype. Call it in a replica context (inside ``strategy.run``)."""
    context = tf.distribute.get_replica_context()
    if context is None:
        raise ValueError("all_reduce_in runs inside strategy.run, in a replica context.")
    narrow = [tf.cast(t, dtype) for t in tensors]
    summed = context.all_reduce("SUM", narrow)
    return [tf.cast(s, t.dtype) for s, t in zip(summed, tensors)]

"""dpkit.mixed: the loss-scaled step against plain Adam on one device, and the rule of the
dynamic scale by hand; the 16-bit all-reduce against the float32 values."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit import checking


def tiny():
    import keras

    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)]
    )


def test_the_loss_scaled_step_is_adam_and_skips_an_overflow():
    import keras
    import tensorflow as tf

    from dpkit import mixed

    strategy = tf.distribute.MirroredStrategy(
        ["/cpu:0"], cross_device_ops=tf.distribute.ReductionToOneDevice()
    )
    reference = tiny()
    with strategy.scope():
        model = tiny()
        model.set_weights(reference.get_weights())
        optimizer = keras.optimizers.LossScaleOptimizer(
            keras.optimizers.Adam(0.01), dynamic_growth_steps=2
        )
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    step = mixed.make_loss_scaled_step(strategy, model, optimizer, loss_fn, 8)
    adam = keras.optimizers.Adam(0.01)
    rng = np.random.default_rng(0)
    scales, scale, run = [], 2.0**15, 0  # the rule by hand
    for poison in [1.0, np.inf, 1.0, 1.0, 1.0]:
        x = rng.normal(size=(8, 4)).astype(np.float32)
        y = rng.integers(0, 3, size=8)
        before = model.get_weights()
        step(x, y, tf.constant(poison, tf.float32))
        if np.isfinite(poison):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(loss_fn(y, reference(x)))
            grads = tape.gradient(loss, reference.trainable_variables)
            adam.apply_gradients(zip(grads, reference.trainable_variables))
            run += 1
            scale, run = (scale * 2, 0) if run == 2 else (scale, run)
        else:
            assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
            scale, run = scale / 2, 0
        scales.append(scale)
        assert checking.agree(model.get_weights(), reference.get_weights(), what="scaled step")
        assert float(optimizer.dynamic_scale.value.values[0]) == scale, scales


def test_the_step_wants_a_loss_scale_optimizer():
    import keras
    import tensorflow as tf

    from dpkit import mixed

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with pytest.raises(ValueError, match="LossScaleOptimizer"):
        mixed.make_loss_scaled_step(strategy, tiny(), keras.optimizers.Adam(), None, 8)


def test_all_reduce_in_bfloat16_rounds_to_eight_significant_bits():
    import tensorflow as tf

    from dpkit import memory, mixed

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    values = np.random.default_rng(0).normal(size=(5, 7)).astype(np.float32)

    @tf.function
    def reduce():
        return strategy.run(lambda: mixed.all_reduce_in(tf.bfloat16, [tf.constant(values)]))

    (summed,) = reduce()
    assert summed.dtype == tf.float32
    near = checking.agree(summed, values, ulps=2**16)  # 2**-7 of the largest value
    assert near and near.gap > 0, near
    assert memory.variable_bytes([tf.cast(values, tf.bfloat16)]) * 2 == values.nbytes
    with strategy.scope(), pytest.raises(ValueError, match="replica context"):
        mixed.all_reduce_in(tf.bfloat16, [tf.constant(values)])  # cross-replica context

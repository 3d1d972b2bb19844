"""dpkit.accumulation against one device training on the whole batch."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit import checking


def test_k_micro_batches_take_one_step_on_the_whole_batch():
    import keras
    import tensorflow as tf

    from dpkit import accumulation

    def model():
        return keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)]
        )

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    big = model()
    with strategy.scope():
        acc_model = model()
        acc_model.set_weights(big.get_weights())
        acc_adam = keras.optimizers.Adam(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    k, micro = 3, 5
    micro_step, apply_step, accumulators = accumulation.make_accumulating_steps(
        strategy, acc_model, acc_adam, loss_fn, micro, k
    )
    adam = keras.optimizers.Adam(0.01)
    rng = np.random.default_rng(0)
    for _ in range(2):
        x = rng.normal(size=(k * micro, 4)).astype(np.float32)
        y = rng.integers(0, 3, size=k * micro)
        for i in range(k):
            micro_step(x[i * micro : (i + 1) * micro], y[i * micro : (i + 1) * micro])
        apply_step()
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(loss_fn(y, big(x)))
        adam.apply_gradients(
            zip(tape.gradient(loss, big.trainable_variables), big.trainable_variables)
        )
        assert checking.agree(acc_model.get_weights(), big.get_weights(), what="accumulated")
        assert all(not np.any(a.numpy()) for a in accumulators), "accumulators not zeroed"
    with pytest.raises(ValueError, match="k"):
        accumulation.make_accumulating_steps(strategy, acc_model, acc_adam, loss_fn, micro, 0)


def test_collective_ops_counts_all_reduces_in_a_traced_function():
    import tensorflow as tf

    from dpkit import accumulation

    @tf.function
    def no_reduce(x):
        return x * 2

    @tf.function
    def one_reduce(x):  # traced only, never run
        return tf.raw_ops.CollectiveReduceV2(
            input=x,
            group_size=1,
            group_key=1,
            instance_key=1,
            ordering_token=[],
            merge_op="Add",
            final_op="Id",
        )

    x = tf.constant([1.0, 2.0])
    assert accumulation.collective_ops(no_reduce, x) == 0
    assert accumulation.collective_ops(one_reduce, x) == 1

"""dpkit.sharded against NumPy and against one device training on the whole batch."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit import checking


def test_shard_sizes_are_numpys_array_split():
    from dpkit import sharded

    for total, n in [(10, 3), (9, 3), (2, 4), (50890, 3), (7, 1)]:
        assert sharded.shard_sizes(total, n) == [len(p) for p in np.array_split(range(total), n)]
    with pytest.raises(ValueError, match="num_shards"):
        sharded.shard_sizes(10, 0)


def test_flatten_and_unflatten_are_inverses():
    import tensorflow as tf

    from dpkit import sharded

    parts = [tf.reshape(tf.range(6.0), (2, 3)), tf.constant([7.0, 8.0])]
    flat = sharded.flatten(parts)
    np.testing.assert_array_equal(flat.numpy(), np.r_[np.arange(6.0), 7.0, 8.0])
    back = sharded.unflatten(flat, [(2, 3), (2,)])
    for a, b in zip(back, parts):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="holds 8 values, the shapes 10"):
        sharded.unflatten(flat, [(2, 3), (4,)])


def test_reduce_scatter_sums_each_shard_and_all_gather_collects_them():
    import tensorflow as tf

    from dpkit import sharded

    rng = np.random.default_rng(0)
    vectors = [rng.normal(size=10).astype(np.float32) for _ in range(3)]
    devices, sizes = ["/cpu:0"] * 3, [4, 3, 3]
    summed = sharded.reduce_scatter([tf.constant(v) for v in vectors], devices, sizes)
    expected = np.split(np.sum(vectors, axis=0, dtype=np.float64), [4, 7])
    assert checking.agree(summed, expected)
    gathered = sharded.all_gather(summed, devices)
    assert all(checking.agree(g, np.concatenate(expected)) for g in gathered)
    with pytest.raises(ValueError, match="one vector and one shard size per device"):
        sharded.reduce_scatter([tf.constant(v) for v in vectors], devices, [5, 5])


def test_zero_one_takes_one_devices_adam_steps_with_a_third_of_the_slots_each():
    import keras
    import tensorflow as tf

    from dpkit import memory, sharded

    def model():
        return keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(3)]
        )

    big = model()
    start = big.get_weights()
    replicas = [model() for _ in range(3)]
    for r in replicas:
        r.set_weights(start)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    zero = sharded.ZeroOne(replicas, ["/cpu:0"] * 3, lambda: keras.optimizers.Adam(0.01))
    adam = keras.optimizers.Adam(0.01)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(size=(6, 4)).astype(np.float32)
        y = rng.integers(0, 3, size=6)
        zero.step(x, y, loss_fn)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(loss_fn(y, big(x)))
        adam.apply_gradients(
            zip(tape.gradient(loss, big.trainable_variables), big.trainable_variables)
        )
        for r in replicas:
            assert checking.agree(r.get_weights(), big.get_weights(), what="ZeRO-1 vs one device")
    num_params = 4 * 5 + 5 + 5 * 3 + 3  # 43: not a multiple of 3
    assert zero.sizes == [15, 14, 14]
    assert zero.slot_bytes() == [2 * 4 * s for s in (15, 14, 14)]
    assert sum(zero.slot_bytes()) == memory.bytes_per_parameter(0, 0) * num_params
    assert zero.shard_bytes() == [4 * s for s in (15, 14, 14)]  # a float32 copy of each shard
    # what the three devices hold in all: float32 weights and gradients on every device, the
    # slots and shard copies once; bytes_per_device's stage-1 count is the same per device
    held = sum(2 * memory.variable_bytes(r.trainable_variables) for r in replicas)
    held += sum(zero.slot_bytes()) + sum(zero.shard_bytes())
    assert held == 3 * 8 * num_params + (8 + 4) * num_params
    assert 3 * sharded.bytes_per_device(num_params, 3, 1) == pytest.approx(held)
    with pytest.raises(ValueError, match="does not split evenly"):
        zero.step(np.zeros((4, 4), np.float32), np.zeros(4, np.int64), loss_fn)


def test_bytes_per_device_by_hand_for_each_stage():
    from dpkit import sharded

    n = 4
    # float32 Adam: stages 1 and 2 also shard a float32 copy of the weights (4 bytes)
    hand = [16, 4 + 4 + (8 + 4) / n, 4 + (4 + 8 + 4) / n, 16 / n]
    for stage in range(4):
        assert sharded.bytes_per_device(10, n, stage) == pytest.approx(10 * hand[stage])
    assert sharded.bytes_per_device(10, 1, 3) == 160
    no_copy = [16, 4 + 4 + 8 / n, 4 + 12 / n, 16 / n]
    for stage in range(4):
        got = sharded.bytes_per_device(10, n, stage, shard_copy=0)
        assert got == pytest.approx(10 * no_copy[stage])
    with pytest.raises(ValueError, match="stage"):
        sharded.bytes_per_device(10, n, 4)
    with pytest.raises(ValueError, match="shard_copy"):
        sharded.bytes_per_device(10, n, 1, shard_copy=-4)


def test_bytes_per_device_gives_zeros_figure_one():
    from dpkit import sharded

    # Rajbhandari et al. 2020, Figure 1: 7.5 B parameters, 64 devices, K = 12 (mixed-precision
    # Adam): 120, 31.4, 16.6 and 1.9 GB per device for the baseline and the three stages
    gb = [
        sharded.bytes_per_device(7_500_000_000, 64, s, per_parameter=(2, 2, 12), shard_copy=0) / 1e9
        for s in range(4)
    ]
    assert [round(x, 1) for x in gb] == [120.0, 31.4, 16.6, 1.9]

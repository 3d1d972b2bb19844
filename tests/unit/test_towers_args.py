"""dpkit.towers: split sizes and the errors a learner meets (in-process, one device)."""

import numpy as np
import pytest
import tensorflow as tf

from dpkit import checking, models, towers


@pytest.mark.parametrize(
    "batch, n, weighted, sizes",
    [
        (64, 4, False, [16] * 4),
        (10, 4, True, [3, 3, 2, 2]),
        (4, 4, True, [1] * 4),
        (7, 1, False, [7]),
    ],
)
def test_shard_sizes(batch, n, weighted, sizes):
    assert towers.shard_sizes(batch, n, weighted=weighted) == sizes


def test_uneven_batch_names_the_nearest_valid_sizes():
    with pytest.raises(ValueError, match=r"use 8 or 12 \(multiples of 4\).*weighted=True"):
        towers.shard_sizes(10, 4)


@pytest.mark.parametrize("weighted", [False, True])
def test_batch_smaller_than_towers_never_makes_an_empty_tower(weighted):
    with pytest.raises(ValueError, match="at least one would get no examples"):
        towers.shard_sizes(3, 4, weighted=weighted)


@pytest.mark.parametrize("batch, n", [(0, 2), (8, 0), (8.0, 2), (True, 2), (8, "2")])
def test_bad_counts(batch, n):
    with pytest.raises(ValueError, match="whole number"):
        towers.shard_sizes(batch, n)


def test_split_batch_keeps_every_example_in_order():
    x = np.arange(10 * 2, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    xs, ys, weights = towers.split_batch(x, y, 4, weighted=True)
    np.testing.assert_array_equal(np.concatenate([t.numpy() for t in xs]), x)
    np.testing.assert_array_equal(np.concatenate([t.numpy() for t in ys]), y)
    assert weights == [0.3, 0.3, 0.2, 0.2]


def test_split_batch_refuses_mismatched_x_and_y():
    with pytest.raises(ValueError, match="x has 4 examples but y has 3"):
        towers.split_batch(np.zeros((4, 2)), np.zeros(3), 2)


@pytest.mark.parametrize("devices", ["/device:CPU:0", [], None])
def test_devices_must_be_a_list(devices):
    with pytest.raises(ValueError, match="non-empty list of device names"):
        towers.tower_gradients(None, None, np.zeros((2, 1)), np.zeros(2), devices)


def test_unknown_variable_home():
    with pytest.raises(ValueError, match="where_variables must be one of"):
        towers.variable_device(["/device:CPU:0"], "gpu7")


def test_make_parallel_needs_inputs_of_one_batch_size():
    with pytest.raises(ValueError, match="at least one keyword input"):
        towers.make_parallel(lambda: None, ["/device:CPU:0"])
    with pytest.raises(ValueError, match="different batch sizes"):
        towers.make_parallel(
            lambda a, b: a, ["/device:CPU:0"], a=tf.zeros((4, 1)), b=tf.zeros((3, 1))
        )


def test_unknown_batch_size_when_traced_says_what_to_do():
    @tf.function(input_signature=[tf.TensorSpec((None, 2)), tf.TensorSpec((None,))])
    def split(x, y):
        return towers.split_batch(x, y, 2)[0]

    with pytest.raises(ValueError, match="drop_remainder=True"):
        split(tf.zeros((4, 2)), tf.zeros(4))


def test_tower_step_on_one_device_equals_a_plain_step():
    """One tower is the ordinary training step (reference: a hand-written tape step)."""
    import keras

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.random((8, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, 8).astype(np.int32)
    model, ref = models.mnist_mlp(dropout=0.0), models.mnist_mlp(dropout=0.0)
    ref.set_weights(model.get_weights())
    step = towers.make_tower_train_step(model, keras.optimizers.SGD(0.1), ["/device:CPU:0"])
    step(x, y)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, ref(x, training=True))
    keras.optimizers.SGD(0.1).apply_gradients(
        zip(tape.gradient(loss, ref.trainable_variables), ref.trainable_variables)
    )
    check = checking.agree(model.get_weights(), ref.get_weights(), what="one tower vs Keras SGD")
    assert check, check

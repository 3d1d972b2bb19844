"""dpkit_checks.ex03: the checks pass a right answer and fail wrong ones, saying why.

The towers run on one device named four times (a unit test cannot split the CPU: TensorFlow
may already run in this process), with a small dense model."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from dpkit_checks import ex03

FOUR = ("/device:CPU:0",) * 4


def average(tower_grads, *, count=None, none=lambda v: None):
    """A right average (count=None), or one divided by a fixed count, or None replaced."""
    out = []
    for pairs in zip(*tower_grads):
        grads, variable = [g for g, _ in pairs], pairs[0][1]
        if grads[0] is None:
            out.append((none(variable), variable))
        else:
            out.append((tf.add_n(grads) / (count or len(grads)), variable))
    return out


def test_a_right_average_passes():
    assert "passed" in ex03.check_average_gradients(average)


def test_dividing_by_a_fixed_number_of_devices_fails():
    with pytest.raises(AssertionError, match=r"2 tower\(s\): .* 0.5 times the mean.*NUM_DEVICES"):
        ex03.check_average_gradients(lambda t: average(t, count=4))


def test_a_missing_gradient_must_stay_none():
    with pytest.raises(AssertionError, match=r"aux_bias has no gradient .* keep None"):
        ex03.check_average_gradients(lambda t: average(t, none=tf.zeros_like))


def test_an_average_that_cannot_take_none_says_where():
    def unguarded(tower_grads):
        return [(tf.add_n([g for g, _ in p]) / len(p), p[0][1]) for p in zip(*tower_grads)]

    with pytest.raises(AssertionError, match=r"3 tower\(s\), aux_bias None .* your code raised"):
        ex03.check_average_gradients(unguarded)


def test_an_average_written_into_the_first_tower_fails():
    def in_place(tower_grads):
        first = tower_grads[0]
        for k, pairs in enumerate(zip(*tower_grads)):
            if pairs[0][0] is not None:
                first[k] = (tf.add_n([g for g, _ in pairs]) / len(pairs), pairs[0][1])
        return first

    with pytest.raises(AssertionError, match=r"2 tower\(s\): your code changed tower_grads"):
        ex03.check_average_gradients(in_place)


def test_an_average_in_float64_fails():
    def wide(tower_grads):
        return [(None if g is None else tf.cast(g, tf.float64), v) for g, v in average(tower_grads)]

    with pytest.raises(AssertionError, match=r"average of kernel is float64, its variable float32"):
        ex03.check_average_gradients(wide)


@pytest.fixture(scope="module")
def small():
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5)])
    rng = np.random.default_rng(2)
    x = rng.normal(size=(66, 6)).astype(np.float32)
    y = rng.integers(0, 5, 66).astype(np.int32)
    return model, x, y


def step(model, optimizer, x, y, devices, *, global_batch=None, average=False, sizes=None):
    """A right step, or one with a fixed global batch, or one that also averages, or one on
    shards of other sizes (a function of the batch and the number of towers)."""
    batch = int(x.shape[0])
    sizes = sizes or (lambda b, n: [len(p) for p in np.array_split(np.arange(b), n)])
    sizes = sizes(batch, len(devices))
    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    tower_grads = []
    for device, xi, yi in zip(devices, tf.split(x, sizes), tf.split(y, sizes)):
        with tf.device(device), tf.GradientTape() as tape:
            losses = per_example(yi, model(xi, training=True))
            loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch or batch)
            tower_grads.append(tape.gradient(loss, model.trainable_variables))
    grads = [tf.add_n(list(g)) / (len(g) if average else 1) for g in zip(*tower_grads)]
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def test_a_right_step_passes(small):
    assert "[1, 2, 3, 4] towers" in ex03.check_tower_step(step, *small, FOUR)


def test_a_step_that_averages_twice_fails(small):
    def twice(*args):
        step(*args, average=True)

    with pytest.raises(AssertionError, match=r"batch of 32: .* 0.25 times .* not averaged as well"):
        ex03.check_tower_step(twice, *small, FOUR)


def test_a_fixed_global_batch_fails_on_a_partial_batch(small):
    def fixed(*args):
        step(*args, global_batch=32)

    with pytest.raises(AssertionError, match=r"batch of 10: .* 0.31 times .*GLOBAL_BATCH_SIZE"):
        ex03.check_tower_step(fixed, *small, FOUR)


def test_a_step_that_changes_the_learning_rate_fails_at_the_second_step(small):
    def faster(model, optimizer, *args):
        step(model, optimizer, *args)
        optimizer.learning_rate.assign(optimizer.learning_rate * 1.5)

    with pytest.raises(AssertionError, match=r"a second step .* differ from two steps"):
        ex03.check_tower_step(faster, *small, FOUR)


def test_a_global_batch_capped_at_32_fails_on_a_larger_batch(small):
    def capped(*args):
        step(*args, global_batch=min(int(args[2].shape[0]), 32))

    with pytest.raises(AssertionError, match=r"3 tower\(s\) on a batch of 44: .* 1.4 times"):
        ex03.check_tower_step(capped, *small, FOUR)


def test_the_remainder_on_the_last_tower_fails(small):
    def last(*args):
        step(*args, sizes=lambda b, n: [b // n] * (n - 1) + [b - b // n * (n - 1)])

    with pytest.raises(AssertionError, match=r"batch of 44: .* batches of \[14, 14, 16\]"):
        ex03.check_tower_step(last, *small, FOUR)


def test_strided_shards_of_numpy_batches_fail(small):
    def strided(model, optimizer, x, y, devices):
        n = len(devices)
        tower_grads = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.GradientTape() as tape:
                per_example = keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True, reduction=None
                )(y[i::n], model(x[i::n], training=True))
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=len(x))
                tower_grads.append(tape.gradient(loss, model.trainable_variables))
        grads = [tf.add_n(list(g)) for g in zip(*tower_grads)]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    with pytest.raises(AssertionError, match=r"batch of 32: the towers' shards, in order, are not"):
        ex03.check_tower_step(strided, *small, FOUR)


def test_a_plain_mean_of_uneven_shards_is_named(small):
    def plain(model, optimizer, x, y, devices):
        batch = int(x.shape[0])
        sizes = [len(p) for p in np.array_split(np.arange(batch), len(devices))]
        per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
        tower_grads = []
        for device, xi, yi in zip(devices, tf.split(x, sizes), tf.split(y, sizes)):
            with tf.device(device), tf.GradientTape() as tape:
                loss = tf.reduce_mean(per_example(yi, model(xi, training=True)))
                tower_grads.append(tape.gradient(loss, model.trainable_variables))
        grads = [tf.add_n(list(g)) / len(g) for g in zip(*tower_grads)]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    with pytest.raises(AssertionError, match=r"batch of 10: your step is the plain mean"):
        ex03.check_tower_step(plain, *small, FOUR)

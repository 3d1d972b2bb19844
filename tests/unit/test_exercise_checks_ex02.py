"""dpkit_checks.ex02: the checks pass a right answer and fail wrong ones, saying why.

The towers run on one device named four times (a unit test cannot split the CPU: TensorFlow
may already run in this process), with a small dense model; what a wrong device looks like
is shown on a recorder filled by hand."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from dpkit_checks import ex02

CPU = "/device:CPU:0"
FOUR = (CPU,) * 4


def split_evenly(x, y, num_towers):
    batch = int(x.shape[0])
    if batch % num_towers:
        lower = batch - batch % num_towers
        raise ValueError(
            f"{batch} does not split into {num_towers}: use {lower} or {lower + num_towers}"
        )
    return tf.split(x, num_towers), tf.split(y, num_towers)


def test_a_right_split_passes():
    assert "passed" in ex02.check_split_evenly(split_evenly)


def test_tensorflows_own_error_is_not_enough():
    def raw(x, y, num_towers):
        return tf.split(x, num_towers), tf.split(y, num_towers)

    with pytest.raises(AssertionError, match="raised InvalidArgumentError, not a ValueError"):
        ex02.check_split_evenly(raw)


def test_a_message_must_name_both_nearest_sizes():
    def vague(x, y, num_towers):
        if int(x.shape[0]) % num_towers:
            raise ValueError(f"use a multiple of {num_towers}")
        return tf.split(x, num_towers), tf.split(y, num_towers)

    with pytest.raises(AssertionError, match=r"'use a multiple of 4'.* 60 and 64"):
        ex02.check_split_evenly(vague)


def test_strided_shards_fail():
    def strided(x, y, n):
        split_evenly(x, y, n)  # the refusals
        return [x[i::n] for i in range(n)], [y[i::n] for i in range(n)]

    with pytest.raises(AssertionError, match="a batch of 64 on 2 towers: image shard 0 differs"):
        ex02.check_split_evenly(strided)


def test_dpkits_split_is_switched_off_even_under_another_name():
    from dpkit.towers import split_batch as mine

    def borrowed(x, y, n):
        return mine(x, y, n)[:2]

    with pytest.raises(AssertionError, match="calls dpkit's towers.split_batch"):
        ex02.check_split_evenly(borrowed)


def test_an_assert_is_not_a_refusal():
    def asserted(x, y, num_towers):
        batch = int(x.shape[0])
        lower = batch - batch % num_towers
        assert batch % num_towers == 0, f"use {lower} or {lower + num_towers}"
        return tf.split(x, num_towers), tf.split(y, num_towers)

    with pytest.raises(AssertionError, match=r"63 for 4 towers failed your assert .* ValueError"):
        ex02.check_split_evenly(asserted)


@pytest.fixture(scope="module")
def small():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5)])
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(16, 6)).astype(np.float32))
    y = tf.constant(rng.integers(0, 5, 16).astype(np.int32))
    return model, x, y


def towers(model, per_example_loss, x, y, devices, *, weigh=True, divide=1.0, training=True):
    """A right answer (weigh=True), or a plain mean of the towers, or one scaled, or one that
    calls the model with another `training`."""
    batch = int(x.shape[0])
    sizes = [len(p) for p in np.array_split(np.arange(batch), len(devices))]
    grads = []
    for device, xi, yi, size in zip(devices, tf.split(x, sizes), tf.split(y, sizes), sizes):
        with tf.device(device), tf.GradientTape() as tape:
            loss = tf.reduce_mean(per_example_loss(yi, model(xi, training=training)))
            g = tape.gradient(loss, model.trainable_variables)
        weight = size / batch if weigh else 1 / len(devices)
        grads.append([t * weight / divide for t in g])
    return [tf.add_n(list(g)) for g in zip(*grads)]


def test_right_towers_pass(small):
    assert "[1, 2, 3, 4] towers" in ex02.check_uneven_towers(towers, *small, FOUR)


def test_a_plain_mean_of_uneven_towers_fails(small):
    def plain(*args):
        return towers(*args, weigh=False)

    with pytest.raises(AssertionError, match=r"2 tower\(s\) on a batch of 9: .*plain mean"):
        ex02.check_uneven_towers(plain, *small, FOUR)


def test_a_scaled_answer_says_by_how_much(small):
    def quartered(*args):
        return towers(*args, divide=4.0)

    with pytest.raises(AssertionError, match=r"1 tower\(s\) on a batch of 7: .* 0.25 times"):
        ex02.check_uneven_towers(quartered, *small, FOUR)


def test_equal_splits_fail_on_a_batch_that_does_not_divide(small):
    def equal(model, loss, x, y, devices):
        xs, ys = tf.split(x, len(devices)), tf.split(y, len(devices))
        with tf.GradientTape() as tape:
            means = [tf.reduce_mean(loss(b, model(a, training=True))) for a, b in zip(xs, ys)]
            total = tf.add_n(means)
            total = total / len(devices)
        return tape.gradient(total, model.trainable_variables)

    with pytest.raises(AssertionError, match=r"batch of 9: your code raised Invalid.*sizes"):
        ex02.check_uneven_towers(equal, *small, FOUR)


def test_one_forward_pass_for_all_towers_fails(small):
    def one_pass(model, loss, x, y, devices):
        with tf.GradientTape() as tape:
            total = tf.reduce_mean(loss(y, model(x, training=True)))
        return tape.gradient(total, model.trainable_variables)

    with pytest.raises(AssertionError, match=r"2 tower\(s\) .* ran on batches of \[9\]"):
        ex02.check_uneven_towers(one_pass, *small, FOUR)


def test_towers_must_call_the_model_in_training_mode(small):
    def inference(*args):
        return towers(*args, training=None)

    with pytest.raises(AssertionError, match=r"tower 0 called the model with training=None"):
        ex02.check_uneven_towers(inference, *small, FOUR)


def test_towers_must_use_the_loss_they_are_given(small):
    def own_loss(model, loss, *args):
        mine = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
        return towers(model, mine, *args)

    with pytest.raises(AssertionError, match=r"never called per_example_loss, the argument"):
        ex02.check_uneven_towers(own_loss, *small, FOUR)


def test_a_loss_outside_its_tower_fails():
    devices = ["/device:CPU:0", "/device:CPU:1"]
    recorder = ex02.LossRecorder(None)
    recorder.ran = [("CPU", 0), ("CPU", 0)]
    with pytest.raises(AssertionError, match=r"tower 1's loss ran on \('CPU', 0\), not on its"):
        ex02.assert_losses(recorder, devices, "here")
    recorder.ran = [("CPU", 0)]
    with pytest.raises(AssertionError, match=r"per_example_loss ran 1 time\(s\) for 2 towers"):
        ex02.assert_losses(recorder, devices, "here")
    recorder.ran = [("CPU", 0), ("CPU", 1)]
    ex02.assert_losses(recorder, devices, "here")


def _filled(calls, backward):
    recorder = ex02.Recorder(None)
    recorder.calls, recorder.backward = calls, backward
    return recorder


def test_towers_on_the_wrong_device_or_backward_elsewhere_fail():
    x = np.arange(5)
    one, two = ("CPU", 0), ("CPU", 1)
    devices = ["/device:CPU:0", "/device:CPU:1"]
    same = _filled([(3, one, x[:3]), (2, one, x[3:])], {0: one, 1: one})
    with pytest.raises(AssertionError, match=r"the towers ran on \[\('CPU', 0\), \('CPU', 0\)\]"):
        ex02.assert_towers(same, x, devices, "here")
    late = _filled([(3, one, x[:3]), (2, two, x[3:])], {0: one, 1: one})
    with pytest.raises(AssertionError, match=r"tower 1 ran forward on .* backward pass ran on"):
        ex02.assert_towers(late, x, devices, "here")
    swapped = _filled([(3, one, x[2:]), (2, two, x[:2])], {0: one, 1: two})
    with pytest.raises(AssertionError, match=r"shards, in order, are not the batch"):
        ex02.assert_towers(swapped, x, devices, "here")
    ex02.assert_towers(
        _filled([(3, one, x[:3]), (2, two, x[3:])], {0: one, 1: two}), x, devices, ""
    )


def test_towers_on_devices_given_out_of_order_name_the_mistake():
    """The checks give the devices last first: towers on device number i, on the devices
    sorted, or all on one device are each told what they did."""
    x = np.arange(6)
    devices = ex02.reordered(["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"])
    assert devices == ["/device:CPU:2", "/device:CPU:1", "/device:CPU:0"]
    cpu = [("CPU", k) for k in range(3)]
    shards = [(2, x[:2]), (2, x[2:4]), (2, x[4:])]

    def ran(*where):
        calls = [(size, cpu[k], part) for (size, part), k in zip(shards, where)]
        return _filled(calls, {i: cpu[k] for i, k in enumerate(where)})

    for where, message in [
        ((0, 1, 2), r"tower i ran on device number i, .*not a name typed in \(f'/cpu:\{i\}'\)"),
        ((1, 2, 0), r"the right devices in another order"),
        ((2, 2, 2), r"every tower ran on \('CPU', 2\)"),
    ]:
        with pytest.raises(AssertionError, match=message):
            ex02.assert_towers(ran(*where), x, devices, "here")
    ex02.assert_towers(ran(2, 1, 0), x, devices, "")


def test_towers_traced_by_tf_function_are_seen_where_they_ran(small):
    """A traced op without a device request runs where the function is called: the check
    runs functions eagerly, so the recorder sees that device, not an empty request."""

    def traced(model, loss, x, y, devices):
        @tf.function
        def tower(xi, yi):
            with tf.GradientTape() as tape:
                total = tf.reduce_sum(loss(yi, model(xi, training=True))) / int(x.shape[0])
            return tape.gradient(total, model.trainable_variables)

        sizes = [len(p) for p in np.array_split(np.arange(int(x.shape[0])), len(devices))]
        grads = []
        for device, xi, yi in zip(devices, tf.split(x, sizes), tf.split(y, sizes)):
            with tf.device(device):
                grads.append(tower(xi, yi))
        return [tf.add_n(list(g)) for g in zip(*grads)]

    assert "passed" in ex02.check_uneven_towers(traced, *small, FOUR)
    assert not tf.config.functions_run_eagerly()

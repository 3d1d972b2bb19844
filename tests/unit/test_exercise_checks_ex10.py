"""dpkit_checks.ex10: the checks pass a right answer and fail wrong ones, saying why.

The shards live on one device named three times (a unit test cannot split the CPU:
TensorFlow may already run in this process)."""

import numpy as np
import pytest
import tensorflow as tf

from dpkit_checks import ex10

THREE = ("/device:CPU:0",) * 3


def zero1(
    grads, shards, optimizers, devices, *, reduce=True, divide=1, gather_last=True, sizes=None
):
    """A right ZeRO-1 update, or one without the reduce-scatter, with the sum divided, with
    the last shard left out of the all-gather, or with shard sizes of its own."""
    stale = tf.identity(shards[-1])
    sizes = sizes or [int(s.shape[0]) for s in shards]
    pieces = [tf.split(g, sizes) for g in grads]
    for c, device in enumerate(devices):
        with tf.device(device):
            shard_grad = tf.add_n([p[c] for p in pieces]) if reduce else pieces[c][c]
            optimizers[c].apply_gradients([(shard_grad / divide, shards[c])])
    whole = []
    for device in devices:
        with tf.device(device):
            last = shards[-1] if gather_last else stale
            whole.append(tf.concat([tf.identity(s) for s in shards[:-1]] + [tf.identity(last)], 0))
    return whole


def scaled(model, optimizer, loss_fn, x, y, scale, *, undo=1, check="all", partial=False):
    """A right loss-scaled step (undo=1, check="all"), or one that divides by scale**undo,
    that checks only the loss, the first or the last gradient for overflow, or that applies
    the finite gradients when another one overflowed (partial=True)."""
    with tf.GradientTape() as tape:
        logits = tf.cast(model(x, training=True), tf.float32)
        scaled_loss = loss_fn(y, logits) * scale
    grads = [g / scale**undo for g in tape.gradient(scaled_loss, model.trainable_variables)]
    ok = [bool(tf.reduce_all(tf.math.is_finite(g))) for g in grads]
    finite = {
        "all": all(ok),
        "loss": bool(tf.math.is_finite(scaled_loss)),
        "first": ok[0],
        "last": ok[-1],
    }[check]
    if finite:
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    elif partial and any(ok):
        pairs = [(g, v) for g, v, f in zip(grads, model.trainable_variables, ok) if f]
        optimizer.apply_gradients(pairs)
    return finite


def test_a_right_sharded_update_passes():
    assert "all gathered" in ex10.check_zero1_update(zero1, THREE)


def test_a_shard_updated_without_the_reduce_scatter_fails():
    with pytest.raises(AssertionError, match=r"device 0's own gradient only.*reduce-scatter"):
        ex10.check_zero1_update(lambda *a: zero1(*a, reduce=False), THREE)


def test_an_averaged_gradient_fails_under_sgd():
    with pytest.raises(AssertionError, match=r"sgd update.*it moved 0.5 times"):
        ex10.check_zero1_update(lambda g, s, o, d: zero1(g, s, o, d, divide=len(d)), THREE)


def test_the_last_shard_left_out_of_the_all_gather_fails():
    with pytest.raises(AssertionError, match=r"stale values in shard 0.*the last one too"):
        ex10.check_zero1_update(lambda *a: zero1(*a, gather_last=False), THREE)


def test_shards_sized_by_np_array_split_fail_when_the_larger_come_last():
    def array_split(grads, shards, optimizers, devices):
        n = int(grads[0].shape[0])
        sizes = [len(p) for p in np.array_split(np.arange(n), len(devices))]
        return zero1(grads, shards, optimizers, devices, sizes=sizes)

    with pytest.raises(AssertionError, match=r"failed for 7 parameters .*\[2, 2, 3\].*shape"):
        ex10.check_zero1_update(array_split, THREE)


def test_equal_shards_fail_on_a_count_the_devices_do_not_divide():
    def equal(grads, shards, optimizers, devices):
        size = int(grads[0].shape[0]) // len(devices)
        for c, piece in enumerate(zip(*[tf.split(g, [size] * len(devices)) for g in grads])):
            optimizers[c].apply_gradients([(tf.add_n(list(piece)), shards[c])])
        return [tf.concat(list(shards), 0)] * len(devices)

    with pytest.raises(AssertionError, match=r"failed for 11 parameters over 2 .*shards\[c\]"):
        ex10.check_zero1_update(equal, THREE)


def test_a_right_scaled_step_passes():
    assert "2**40 and a last layer's overflow skipped" in ex10.check_scaled_step(scaled)


def test_a_scale_never_undone_fails():
    with pytest.raises(AssertionError, match=r"scale 16 .*16 times as far.*never undone"):
        ex10.check_scaled_step(lambda *a: scaled(*a, undo=0))


def test_a_scale_undone_twice_fails():
    with pytest.raises(AssertionError, match=r"scale 16 .*0.0625 times as far.*undone twice"):
        ex10.check_scaled_step(lambda *a: scaled(*a, undo=2))


def test_checking_the_loss_for_overflow_fails():
    with pytest.raises(AssertionError, match=r"2\*\*40 .*returned True"):
        ex10.check_scaled_step(lambda *a: scaled(*a, check="loss"))


@pytest.mark.parametrize("check", ["first", "last"])
def test_checking_one_gradient_for_overflow_fails(check):
    with pytest.raises(
        AssertionError, match=r"the last layer's kernel gradient overflows.*returned True"
    ):
        ex10.check_scaled_step(lambda *a: scaled(*a, check=check))


def test_applying_the_finite_gradients_of_an_overflowed_step_fails():
    with pytest.raises(AssertionError, match=r"returned False but changed the weights"):
        ex10.check_scaled_step(lambda *a: scaled(*a, partial=True))


@pytest.mark.parametrize("seed", range(5))
def test_in_the_late_case_only_the_last_kernel_overflows_float16(seed):
    """The premise of the late case, from the float32 model: at a scale of 2**12 the last
    kernel's gradient exceeds float16's largest value (65504) many times over, and every other
    gradient and the scaled loss stay far below it."""
    import keras

    _, plain, x, y, _ = ex10.late_overflow_case(np.random.default_rng(seed))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        scaled_loss = loss_fn(y, plain(x, training=True)) * 2.0**12
    largest = [
        float(tf.reduce_max(tf.abs(g)))
        for g in tape.gradient(scaled_loss, plain.trainable_variables)
    ]
    assert largest[2] > 4 * 65504
    assert max(largest[:2] + largest[3:] + [float(scaled_loss)]) < 65504 / 4


def test_the_reference_adam_is_keras_adam():
    """The NumPy Adam the check compares with takes Keras 3's steps."""
    import keras

    rng = np.random.default_rng(0)
    w0 = rng.normal(size=5).astype(np.float32)
    grads = [rng.normal(size=5).astype(np.float32) for _ in range(3)]
    var, adam = tf.Variable(w0), keras.optimizers.Adam(**ex10.ADAM)
    for g in grads:
        adam.apply_gradients([(tf.constant(g), var)])
    expected = ex10.reference("adam", w0, grads)
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-5, atol=1e-6)

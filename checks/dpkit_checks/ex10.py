"""Checks of exercise 10 (making data parallelism pay).

One function per check cell of exercises/10_*.ipynb:

* :func:`check_zero1_update`: the sharded optimizer update (ZeRO stage 1), against Adam and
  SGD on the whole vector in NumPy (float64), for 1 to 3 devices and parameter counts that
  the device count does not divide, over several steps;
* :func:`check_scaled_step`: a loss-scaled step of a ``mixed_float16`` model, against the
  same step of a float32 copy without loss scaling, for several scales and one that makes
  float16 overflow.
"""

from __future__ import annotations

import numpy as np

from dpkit import checking, sharded
from dpkit_checks import switching

ADAM = dict(learning_rate=0.1, beta_1=0.9, beta_2=0.999, epsilon=1e-7)
SGD_RATE = 0.5


def _adam_numpy(w, grads_per_step, lr, beta_1, beta_2, epsilon):
    """Keras 3's Adam, step by step, in float64."""
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads_per_step, start=1):
        m += (g - m) * (1 - beta_1)
        v += (g * g - v) * (1 - beta_2)
        alpha = lr * np.sqrt(1 - beta_2**t) / (1 - beta_1**t)
        w = w - alpha * m / (np.sqrt(v) + epsilon)
    return w


def _run_zero1(update, sizes, kind, devices, rng, steps=2):
    """Run the learner's update on ``len(sizes)`` devices, device c holding a shard of
    ``sizes[c]`` values; return (returned vectors per step, shards, optimizers, start, summed
    gradients per step, local gradients per step, sizes, a description of the case)."""
    import keras
    import tensorflow as tf

    n, num_params = len(sizes), sum(sizes)
    start = rng.normal(size=num_params).astype(np.float32)
    shards, optimizers = [], []
    for device, piece in zip(devices, np.split(start, np.cumsum(sizes)[:-1])):
        with tf.device(device):
            shard = tf.Variable(piece)
            optimizer = (
                keras.optimizers.Adam(**ADAM) if kind == "adam" else keras.optimizers.SGD(SGD_RATE)
            )
            optimizer.build([shard])
        shards.append(shard)
        optimizers.append(optimizer)
    returned, summed, local = [], [], []
    for _ in range(steps):
        grads = [rng.normal(size=num_params).astype(np.float32) for _ in range(n)]
        tensors = []
        for device, g in zip(devices, grads):
            with tf.device(device):
                tensors.append(tf.constant(g))
        where = f"{num_params} parameters over {n} device(s) (shards of {sizes}), {kind}"
        try:
            with switching.switched_off(sharded, "reduce_scatter", "all_gather", "ZeroOne"):
                out = update(tensors, shards, optimizers, list(devices))
        except AssertionError:
            raise
        except Exception as error:  # noqa: BLE001 - any failure is the learner's to see
            raise AssertionError(
                f"your update failed for {where}: {type(error).__name__}: {error}. "
                "Shards can differ in size, the larger ones first or last: take each shard's "
                "size from the shard variables (shards[c].shape), not from the parameter and "
                "device counts (num_params // N, np.array_split, sharded.shard_sizes)."
            ) from None
        returned.append(out)
        summed.append(np.sum(np.array(grads, np.float64), axis=0))
        local.append(grads)
    return returned, shards, optimizers, start, summed, local, sizes, where


def reference(kind, start, grads_per_step):
    """The optimizer on the whole vector with the summed gradients, in float64."""
    w = start.astype(np.float64)
    if kind == "adam":
        return _adam_numpy(
            w,
            grads_per_step,
            ADAM["learning_rate"],
            ADAM["beta_1"],
            ADAM["beta_2"],
            ADAM["epsilon"],
        )
    for g in grads_per_step:
        w = w - SGD_RATE * g
    return w


def check_zero1_update(zero1_update, devices) -> str:
    """Run ``zero1_update(grads, shards, optimizers, devices)`` for 1, 2 and 3 devices (from
    ``devices``, reused if there are fewer), parameter counts they do not divide, in shards
    whose larger ones come first (as ``np.array_split`` cuts) or last, two steps, with Adam
    and with SGD. The reference is the optimizer on the whole vector with the summed
    gradients, in NumPy float64. Also checked: each device's optimizer stepped on its own
    shard, the shard variables hold the update, and the i-th vector returned lives on
    ``devices[i]``."""
    import tensorflow as tf

    devices = list(devices)
    rng = np.random.default_rng(10)
    # shard sizes per case: the larger shards first (np.array_split, sharded.shard_sizes),
    # then last (num_params // N each, the rest on the last device), so that only sizes taken
    # from the shards fit every case
    cases = [[10], [6, 5], [4, 4, 3], [2, 2, 3]]
    for case in cases:
        n, num_params = len(case), sum(case)
        on = [devices[i % len(devices)] for i in range(n)]
        for kind in ("adam", "sgd"):
            returned, shards, optimizers, start, summed, local, sizes, where = _run_zero1(
                zero1_update, case, kind, on, rng
            )
            out = returned[-1]
            if not isinstance(out, (list, tuple)) or len(out) != n:
                raise AssertionError(
                    f"for {where} your update returned {type(out).__name__} "
                    f"{'of length ' + str(len(out)) if hasattr(out, '__len__') else ''}: return "
                    "one whole weight vector per device (the all-gather), in device order."
                )
            expected = reference(kind, start, summed)
            own = reference(kind, start, [g[0] for g in local])  # device 0's gradient alone
            for c, optimizer in enumerate(optimizers):
                if int(optimizer.iterations.numpy()) != 2:
                    raise AssertionError(
                        f"for {where}, optimizer {c} took {int(optimizer.iterations.numpy())} "
                        "steps in 2 calls: each call, each device updates its own shard once "
                        "with its own optimizer (optimizers[c] on shards[c]); its slots are the "
                        "1/N you shard."
                    )
            bounds = np.cumsum([0] + sizes)
            for c, shard in enumerate(shards):
                part = slice(bounds[c], bounds[c + 1])
                got = shard.numpy()
                if checking.agree(got, expected[part]):
                    continue
                if n > 1 and c == 0 and checking.agree(got, own[part]):
                    raise AssertionError(
                        f"for {where}, shard 0 moved with device 0's own gradient only: sum "
                        "shard c of every device's gradient before updating it (reduce-scatter)."
                    )
                moved = np.linalg.norm(got - start[part]) / np.linalg.norm(
                    expected[part] - start[part]
                )
                raise AssertionError(
                    f"for {where}, shard {c} after 2 steps is not the {kind} update of the "
                    f"summed gradients (it moved {moved:.3g} times as far): use shard c of the sum "
                    "of every device's gradients, summed, not averaged, and each shard's own "
                    "slice (its size may differ from the others)."
                )
            for i, vector in enumerate(out):
                vector = tf.convert_to_tensor(vector)
                if tuple(vector.shape) != (num_params,):
                    raise AssertionError(
                        f"for {where}, device {i}'s vector has shape {tuple(vector.shape)}, not "
                        f"({num_params},): concatenate all {n} shards in order."
                    )
                for c in range(n):
                    part = slice(bounds[c], bounds[c + 1])
                    if not checking.agree(vector.numpy()[part], expected[part]):
                        raise AssertionError(
                            f"for {where}, device {i}'s copy holds stale values in shard {c} (or "
                            "another shard's): after the updates, gather every shard, in order, "
                            "into every device's copy (all-gather), the last one too."
                        )
                device = tf.DeviceSpec.from_string(on[i])
                placed = tf.DeviceSpec.from_string(vector.device)
                if (placed.device_type, placed.device_index) != (
                    device.device_type.upper() if device.device_type else None,
                    device.device_index,
                ):
                    raise AssertionError(
                        f"for {where}, vector {i} lives on {vector.device}, not on {on[i]}: "
                        "build device i's copy under tf.device(devices[i])."
                    )
    return "check 1 passed: each shard stepped on its slice of the summed gradients, all gathered"


def _scaled_models(rng):
    import keras

    def build(dtype):
        return keras.Sequential(
            [
                keras.Input((6,)),
                keras.layers.Dense(8, activation="relu", dtype=dtype),
                keras.layers.Dense(3, dtype=dtype),
            ]
        )

    mixed, plain = build("mixed_float16"), build("float32")
    start = [rng.normal(scale=0.5, size=w.shape).astype(np.float32) for w in plain.get_weights()]
    mixed.set_weights(start)
    plain.set_weights(start)
    return mixed, plain, start


def check_scaled_step(scaled_step) -> str:
    """Run ``scaled_step(model, optimizer, loss_fn, x, y, scale)`` on a ``mixed_float16``
    model with SGD (Adam would hide a scale left in the gradients: it divides it out) for
    scales 1, 2**4 and 2**12, 2**14 on a loss 1e-6 times smaller (whose gradients underflow
    float16 unless scaled) and 2**40, which overflows float16; last, 2**12 on inputs of about
    1000 and a small last kernel, where only the last layer's kernel gradient overflows (its
    largest value 10 times float16's range, every other gradient and the scaled loss under 5%
    of it: measured over 40 seeds), so that checking the first or the last gradient, the loss,
    or for NaN only lets it through. The reference is one SGD step of a float32 copy with no
    loss scaling; within 5% of its update (float16 rounds to 11 significant bits). The
    overflowing steps must return False and leave the weights alone; the others must return
    True."""
    import keras
    import tensorflow as tf

    rng = np.random.default_rng(12)
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def tiny_loss(labels, logits):  # its gradients underflow in float16 unless scaled
        return 1e-6 * cross_entropy(labels, logits)

    cases = [(1.0, cross_entropy), (2.0**4, cross_entropy), (2.0**12, cross_entropy)]
    cases += [(2.0**14, tiny_loss), (2.0**40, cross_entropy)]
    for scale, loss_fn in cases:
        mixed, plain, start = _scaled_models(rng)
        x = rng.normal(size=(16, 6)).astype(np.float32)
        y = rng.integers(0, 3, size=16)
        rate = SGD_RATE if loss_fn is cross_entropy else SGD_RATE * 1e6
        applied = scaled_step(mixed, keras.optimizers.SGD(rate), loss_fn, x, y, scale)
        if isinstance(applied, (np.bool_, tf.Tensor)):
            applied = bool(applied)  # a boolean tensor is an answer too
        after = mixed.get_weights()
        if scale == 2.0**40:
            if applied is not False:
                raise AssertionError(
                    f"with scale 2**40 float16's gradients overflow, and your step returned "
                    f"{applied!r}: return False when any unscaled gradient is not finite."
                )
            if not all(np.array_equal(a, b) for a, b in zip(after, start)):
                raise AssertionError(
                    "with scale 2**40 float16's gradients overflow, and your step still changed "
                    "the weights: check every gradient with tf.math.is_finite and skip the "
                    "update when one is not (the loss itself stays finite)."
                )
            continue
        with tf.GradientTape() as tape:
            loss = loss_fn(y, plain(x, training=True))
        grads = tape.gradient(loss, plain.trainable_variables)
        keras.optimizers.SGD(rate).apply_gradients(zip(grads, plain.trainable_variables))
        want = np.concatenate([(w - s).ravel() for w, s in zip(plain.get_weights(), start)])
        got = np.concatenate([(w - s).ravel() for w, s in zip(after, start)])
        if applied is not True:
            raise AssertionError(
                f"with scale {scale:g} the gradients are finite and your step returned "
                f"{applied!r}: return True when it applied the update."
            )
        ratio = np.linalg.norm(got) / np.linalg.norm(want)
        off = np.linalg.norm(got - want) / np.linalg.norm(want)
        if off <= 0.05:
            continue
        hint = (
            "multiply the loss (not the logits) by the scale inside the tape, and divide its "
            "gradients by the scale, once, before applying them"
        )
        if scale > 1 and abs(ratio / scale - 1) < 0.1:
            hint = "the scale was never undone: " + hint
        elif scale > 1 and abs(ratio * scale - 1) < 0.1:
            hint = "the scale was undone twice (or the loss never scaled): " + hint
        elif loss_fn is tiny_loss:
            hint = (
                "this loss is 1e-6 times smaller and its gradients round to zero in float16 "
                "unless the scale reaches the backward pass: multiply the loss inside the tape "
                "and divide the gradients after it"
            )
        raise AssertionError(
            f"with scale {scale:g} your step moved the weights {ratio:.3g} times as far as a "
            f"float32 SGD step without loss scaling (and differs by {off:.0%} of that step): "
            f"{hint}."
        )
    mixed, _, x, y, start = late_overflow_case(rng)
    _check_skipped(scaled_step, mixed, keras.optimizers.SGD(SGD_RATE), x, y, start)
    return (
        "check 2 passed: the scale undone at 1, 2**4, 2**12 and 2**14 (underflow); "
        "2**40 and a last layer's overflow skipped"
    )


def late_overflow_case(rng):
    """(mixed model, float32 model, x, y, start weights) where, at a loss scale of 2**12,
    only the last layer's kernel gradient overflows float16: inputs of about 1000 make the
    hidden activations large, and a last kernel 1e-3 times smaller keeps the logits, the
    gradients that flow back through it and the scaled loss small."""
    mixed, plain, start = _scaled_models(rng)
    x = 1000 * rng.normal(size=(16, 6)).astype(np.float32)
    y = rng.integers(0, 3, size=16)
    start[2] = start[2] * 1e-3
    mixed.set_weights(start)
    plain.set_weights(start)
    return mixed, plain, x, y, start


def _check_skipped(scaled_step, model, optimizer, x, y, start) -> None:
    """The case where only the last layer's kernel gradient overflows: the step must return
    False and leave every weight as it was."""
    import keras
    import tensorflow as tf

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    applied = scaled_step(model, optimizer, loss_fn, x, y, 2.0**12)
    if isinstance(applied, (np.bool_, tf.Tensor)):
        applied = bool(applied)
    where = (
        "with scale 2**12 on inputs of about 1000, the last layer's kernel gradient overflows "
        "float16 to inf while every other gradient and the scaled loss stay finite"
    )
    if applied is not False:
        raise AssertionError(
            f"{where}, and your step returned {applied!r}: test every gradient with "
            "tf.math.is_finite (not only the first or the last, not the loss, not NaN only) "
            "and return False when any one is not finite."
        )
    if not all(np.array_equal(a, b) for a, b in zip(model.get_weights(), start)):
        raise AssertionError(
            f"{where}, and your step returned False but changed the weights: when one gradient "
            "is not finite, skip the whole update (apply none of them, not the finite ones)."
        )

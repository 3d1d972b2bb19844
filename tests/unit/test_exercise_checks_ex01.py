"""The checks of exercise 01 pass right answers and fail wrong ones, saying why."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit_checks import ex01

# --- check 1: the decayed learning rate


def rate(step, initial_rate, decay_steps, decay_rate, staircase=False):
    periods = step // decay_steps if staircase else step / decay_steps
    return initial_rate * decay_rate**periods


def rate_in_float32(step, initial_rate, decay_steps, decay_rate, staircase=False):
    periods = math.floor(step / decay_steps) if staircase else step / decay_steps
    return np.float32(initial_rate) * np.float32(decay_rate) ** np.float32(periods)


@pytest.mark.parametrize("answer", [rate, rate_in_float32])
def test_check_1_passes_a_right_rate(answer):
    assert "Check 1 passed" in ex01.check_decayed_learning_rate(answer)


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda t, r, T, d, staircase=False: r * d ** (t / T), r"staircase=True: .*smoothly"),
        (lambda t, r, T, d, staircase=False: r * d ** (t // T), r"drops in stairs"),
        (lambda t, r, T, d, staircase=False: r * d**t, r"decays by decay_rate every step"),
        (lambda t, r, T, d, staircase=False: str(r), r"yours returns str '0\.1'"),
        (lambda t, r, T, d, staircase=False: r / (1 + d * t / T), r"Keras's is 9\.995919e-02$"),
    ],
)
def test_check_1_fails_a_wrong_rate(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex01.check_decayed_learning_rate(answer)


def test_check_1_refuses_keras_schedule_and_puts_it_back():
    import keras

    def keras_rate(step, initial_rate, decay_steps, decay_rate, staircase=False):
        schedule = keras.optimizers.schedules.ExponentialDecay(
            initial_rate, decay_steps, decay_rate, staircase=staircase
        )
        return float(schedule(step))

    with pytest.raises(AssertionError, match="calls Keras's or TF1's exponential decay"):
        ex01.check_decayed_learning_rate(keras_rate)
    assert math.isclose(keras_rate(64, 1.0, 64, 0.5), 0.5, rel_tol=1e-6)


def test_check_1_refuses_tf1_exponential_decay_and_puts_it_back():
    import tensorflow as tf

    def tf1_rate(step, initial_rate, decay_steps, decay_rate, staircase=False):
        decay = tf.compat.v1.train.exponential_decay  # TF's own copy of Keras 2's schedule
        return float(decay(initial_rate, step, decay_steps, decay_rate, staircase)())

    with pytest.raises(AssertionError, match="calls Keras's or TF1's exponential decay"):
        ex01.check_decayed_learning_rate(tf1_rate)
    assert math.isclose(tf1_rate(64, 1.0, 64, 0.5), 0.5, rel_tol=1e-6)


# --- check 2: the moving average


def average(shadow, value, decay, num_updates=None):
    if num_updates is not None:
        decay = min(decay, (1.0 + num_updates) / (10.0 + num_updates))
    return shadow - (1.0 - decay) * (shadow - value)


def test_check_2_passes_a_right_average():
    assert "Check 2 passed" in ex01.check_average_update(average)


def _truthy_count(shadow, value, decay, num_updates=None):
    if num_updates:
        decay = min(decay, (1.0 + num_updates) / (10.0 + num_updates))
    return shadow - (1.0 - decay) * (shadow - value)


def _in_place(shadow, value, decay, num_updates=None):
    shadow -= (1.0 - decay) * (shadow - value)
    return shadow


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda s, v, d, num_updates=None: s - (1 - d) * (s - v), r"num_updates=0\).*min\(decay"),
        (_truthy_count, r"num_updates=0\): yours keeps 0\.9900 .* TF keeps 0\.1000"),
        (lambda s, v, d, num_updates=None: d * v + (1 - d) * s, r"shares .* are swapped"),
        (_in_place, r"changed an array passed in"),
        (lambda s, v, d, num_updates=None: list(average(s, v, d, num_updates)), r"NumPy array"),
    ],
)
def test_check_2_fails_a_wrong_average(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex01.check_average_update(answer)


def test_check_2_refuses_tf_class_and_puts_it_back():
    import tensorflow as tf

    def with_tf(shadow, value, decay, num_updates=None):
        tf.train.ExponentialMovingAverage(decay)
        return average(shadow, value, decay, num_updates)

    with pytest.raises(AssertionError, match="calls TF's ExponentialMovingAverage"):
        ex01.check_average_update(with_tf)
    tf.train.ExponentialMovingAverage(0.9)  # works again


# --- check 3: gradient accumulation


def accumulating(scale="n", penalty="share", reset=True, split="array", clip=None, training=True):
    """make_accumulating_step, right by default; each argument makes one mistake."""
    import keras
    import tensorflow as tf

    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def make(model, optimizer, micro_batches):
        variables = model.trainable_variables
        sums = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]

        def step(x, y):
            if reset:
                for s in sums:
                    s.assign(tf.zeros_like(s))
            n, m = len(x), math.ceil(len(x) / micro_batches)
            parts = {
                "none": [(x, y)],
                "ceil": [(x[i : i + m], y[i : i + m]) for i in range(0, n, m)],
                "array": zip(np.array_split(x, micro_batches), np.array_split(y, micro_batches)),
            }[split]
            for xi, yi in parts:
                with tf.GradientTape() as tape:
                    total = tf.reduce_sum(per_example(yi, model(xi, training=training)))
                    loss = total / {"n": n, "64": 64, "own": len(xi) * micro_batches}[scale]
                    loss += {"share": sum(model.losses) / micro_batches, "none": 0.0}[penalty]
                for s, g in zip(sums, tape.gradient(loss, variables)):
                    s.assign_add(g)
            grads = [s.read_value() for s in sums]
            if clip:
                grads, _ = tf.clip_by_global_norm(grads, clip)
            optimizer.apply_gradients(zip(grads, variables))

        return step

    return make


def test_check_3_passes_a_right_step():
    assert "Check 3 passed" in ex01.check_accumulating_step(accumulating())


def test_check_3_passes_a_right_step_in_a_tf_function(capfd):
    import keras
    import tensorflow as tf

    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def make(model, optimizer, micro_batches):
        variables = model.trainable_variables
        sums = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]

        @tf.function
        def step(x, y):
            for s in sums:
                s.assign(tf.zeros_like(s))
            n = x.shape[0]
            sizes = [len(p) for p in np.array_split(np.arange(n), micro_batches)]
            for xi, yi in zip(tf.split(x, sizes), tf.split(y, sizes)):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(per_example(yi, model(xi, training=True))) / n
                    loss += sum(model.losses) / micro_batches
                for s, g in zip(sums, tape.gradient(loss, variables)):
                    s.assign_add(g)
            optimizer.apply_gradients(zip([s.read_value() for s in sums], variables))

        return step

    assert "Check 3 passed" in ex01.check_accumulating_step(make)
    assert "retracing" not in capfd.readouterr().err  # nbgrader fails a cell that warns


@pytest.mark.parametrize(
    "mistake, message",
    [
        ({"scale": "64"}, r"1 micro-batch.* step 1 on a batch of 10: .*loss by 64"),
        ({"scale": "own"}, r"step 2 on a batch of 9 \(tensors\): .*weighs the examples unequally"),
        ({"reset": False}, r"step 2 on a batch of 7 \(tensors\): .*plus the previous step's"),
        ({"penalty": "none"}, r"regularisation loss \(model\.losses\) 0 times"),
        ({"split": "none"}, r"2 micro-batches.*whole batch of 10 at once"),
        (
            {"split": "ceil"},
            r"batch of 4 \(tensors\): .*batches of \[2, 2\]; split the 4 .* into 3",
        ),
        ({"training": None}, r"step 1 on a batch of 10: .*with training=None: pass training=True"),
        ({"training": False}, r"with training=False: pass training=True"),
        (
            {"clip": 10.0},
            r"large gradients, step 1 .* times one step on the whole batch, in the same",
        ),
    ],
)
def test_check_3_fails_a_wrong_step(mistake, message):
    with pytest.raises(AssertionError, match=message):
        ex01.check_accumulating_step(accumulating(**mistake))


def test_check_3_fails_a_step_that_applies_per_micro_batch():
    import keras
    import tensorflow as tf

    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def make(model, optimizer, micro_batches):
        variables = model.trainable_variables

        def step(x, y):
            for xi, yi in zip(np.array_split(x, micro_batches), np.array_split(y, micro_batches)):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(per_example(yi, model(xi, training=True))) / len(x)
                    loss += sum(model.losses) / micro_batches
                optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

        return step

    with pytest.raises(AssertionError, match=r"2 micro-batches.* has made 2 updates"):
        ex01.check_accumulating_step(make)

"""Checks of exercise 01 (one device).

One function per check cell of exercises/01_*.ipynb. The references are TensorFlow's own:
Keras's ``ExponentialDecay`` (in float64), ``tf.train.ExponentialMovingAverage``, and one Keras
``train_on_batch`` step on the whole batch. Each check varies what an answer could get right by
accident (the defaults, early and late steps, batches that do not divide into micro-batches) and
compares a wrong answer with the usual mistakes to say which one it looks like.
"""

from __future__ import annotations

import contextlib
import math
from unittest import mock

import numpy as np

from dpkit import checking
from dpkit_checks import switching


def _call(what: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; an error it raises (other than a check's) becomes the check's."""
    try:
        return fn(*args, **kwargs)
    except AssertionError:
        raise
    except Exception as error:
        raise AssertionError(f"{what}: yours raised {type(error).__name__}: {error}") from None


@contextlib.contextmanager
def _refusing(classes, method: str, message: str):
    """While the block runs, ``<method>`` of each class raises an AssertionError saying
    ``message``: an alias of a class, a subclass or an instance refuses too."""

    def refused(*args, **kwargs):
        raise AssertionError(message)

    with contextlib.ExitStack() as stack:
        for cls in classes:
            stack.enter_context(mock.patch.object(cls, method, refused))
        yield


# --- Check 1: the decayed learning rate -------------------------------------------------------

#: (initial_rate, decay_steps, decay_rate, staircase or None for the default, steps)
_SCHEDULES = [
    (0.1, 100, 0.96, None, [0, 1, 50, 99, 100, 101, 250, 1000, 5000]),
    (1e-3, 64, 0.99, True, [0, 1, 32, 63, 64, 65, 127, 128, 1000, 10000]),
    (2.0, 7, 0.8, True, [0, 3, 6, 7, 10, 11, 13, 14, 30, 100]),
    (2.0, 7, 0.8, False, [0, 3, 7, 10, 11, 30, 100]),
    (0.05, 1, 0.5, False, [0, 1, 2, 5, 40]),
]


def _keras_rate(initial, decay_steps, decay_rate, staircase, step) -> float:
    """Keras's schedule in float64 (its dtype follows the initial rate's)."""
    import keras

    schedule = keras.optimizers.schedules.ExponentialDecay(
        np.float64(initial), decay_steps, decay_rate, staircase=bool(staircase)
    )
    return float(schedule(np.float64(step)))


def check_decayed_learning_rate(decayed_learning_rate) -> str:
    """Check ``decayed_learning_rate(step, initial_rate, decay_steps, decay_rate, staircase)``.

    Varies the initial rate, ``decay_steps`` (1, 7, 64, 100), ``decay_rate`` (0.5 to 0.99),
    ``staircase`` (left at its default, False, True) and the step (0, inside a period, either
    side of a period's end, up to 10,000). The reference is Keras's ``ExponentialDecay``
    evaluated in float64, whose ``__call__`` refuses to run while the answer does. The bar
    allows an answer computed in float32: the rounding of ``decay_rate`` grows with the power.
    """
    import inspect

    import keras
    import tensorflow as tf

    keys = [(*schedule[:4], step) for schedule in _SCHEDULES for step in schedule[4]]
    expected = {key: _keras_rate(*key) for key in keys}
    # tf.compat.v1.train.exponential_decay runs TF's own copy of Keras 2's class
    legacy = inspect.unwrap(tf.compat.v1.train.exponential_decay).__globals__
    legacy = getattr(legacy.get("learning_rate_schedule"), "ExponentialDecay", None)
    classes = [keras.optimizers.schedules.ExponentialDecay, *([legacy] if legacy else [])]
    refusal = "your function calls Keras's or TF1's exponential decay: compute the rate yourself"
    with _refusing(classes, "__call__", refusal):
        for initial, period, rate, staircase, steps in _SCHEDULES:
            kwargs = {} if staircase is None else {"staircase": staircase}
            args = f"initial_rate={initial}, decay_steps={period}, decay_rate={rate}"
            args += "" if staircase is None else f", staircase={staircase}"
            for step in steps:
                where = f"decayed_learning_rate({step}, ...) with {args}"
                value = _call(where, decayed_learning_rate, step, initial, period, rate, **kwargs)
                key = (initial, period, rate, staircase, step)
                _check_rate(where, value, expected[key], key)
    return f"Check 1 passed: {len(expected)} rates on {len(_SCHEDULES)} schedules agree with Keras"


def _check_rate(where, value, expected, key):
    """One rate of check 1 against Keras's ``expected``; ``key`` is the schedule and step."""
    try:  # a one-element array converts to float too, with a warning: ask for ndim first
        number = None if isinstance(value, (str, bytes)) or np.ndim(value) else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None:
        raise AssertionError(
            f"{where}: yours returns {type(value).__name__} {value!r}; return one number"
        )
    initial, period, rate, staircase, step = key
    ulps = 16 + 2 * step / period  # decay_rate's rounding to float32, raised to that power
    if checking.agree(number, expected, ulps=ulps):
        return
    floor, periods = math.floor(step / period), step / period
    next_step = "yours is Keras's at the next step: the first step is step 0"
    if staircase:
        suspects = [
            (
                periods,
                "yours decays smoothly; with staircase=True the rate drops only every "
                "decay_steps steps: floor the exponent",
            ),
            (
                round(periods),
                "yours rounds the exponent to the nearest whole period; staircase floors it",
            ),
            (math.ceil(periods), "yours rounds the exponent up; staircase floors it"),
            (math.floor((step + 1) / period), next_step),
            ((step - 1) // period, next_step.replace("next", "previous")),
        ]
    else:
        suspects = [
            ((step + 1) / period, next_step),
            (
                step,
                "yours decays by decay_rate every step; it should take decay_steps steps "
                "to shrink by decay_rate",
            ),
            (
                floor,
                "yours drops in stairs (the exponent floored); with staircase=False, "
                "Keras's rate changes smoothly at every step",
            ),
        ]
    suspects = [(initial * rate**power, why) for power, why in suspects]
    suspects.append((initial, "yours does not decay"))
    # A suspect equal to the reference (a staircase at a period's end) explains nothing.
    suspects = [s for s in suspects if not checking.agree(s[0], expected, ulps=ulps)]
    why = next((why for guess, why in suspects if checking.agree(number, guess, ulps=ulps)), None)
    raise AssertionError(
        f"{where}: yours is {number:.6e}, Keras's is {expected:.6e}" + (f": {why}" if why else "")
    )


# --- Check 2: the moving average ----------------------------------------------------------------

#: (decay, num_updates or "default", shape)
_AVERAGES = [
    (0.99, "default", (4,)),
    (0.9, None, (2, 3)),
    (0.99, 0, (4,)),
    (0.99, 1, (4,)),
    (0.9, 2, (3,)),
    (0.99, 5, (2, 2)),
    (0.999, 1000, (5,)),
    (0.99, 1000, (5,)),
    (0.999, 10**6, (3,)),
]


def _tf_average(shadow, value, decay, num_updates):
    """TF's shadow after one ``apply`` from ``shadow`` towards ``value``."""
    import tensorflow as tf

    weight = tf.Variable(np.asarray(shadow, np.float64))
    updates = None if num_updates is None else tf.Variable(num_updates, dtype=tf.int64)
    average = tf.train.ExponentialMovingAverage(decay, num_updates=updates)
    average.apply([weight])  # makes the shadow, equal to the weight
    weight.assign(np.asarray(value, np.float64))
    average.apply([weight])
    return average.average(weight).numpy()


def check_average_update(average_update) -> str:
    """Check ``average_update(shadow, value, decay, num_updates=None)``.

    Varies the decay (0.9, 0.99, 0.999), the update count (left at its default, None, 0, early
    counts where the count caps the decay, late ones where the decay caps it) and the arrays'
    shapes. The reference is ``tf.train.ExponentialMovingAverage`` applied once from the same
    shadow. The answer must return a new NumPy array and leave the arrays passed in as they were.
    """
    import tensorflow as tf

    rng = np.random.default_rng(1)
    cases = []
    for decay, count, shape in _AVERAGES:
        shadow, value = rng.normal(size=shape), rng.normal(size=shape)
        expected = _tf_average(shadow, value, decay, None if count == "default" else count)
        cases.append((decay, count, shadow, value, expected))
    refusal = "your function calls TF's ExponentialMovingAverage: write the update yourself"
    with _refusing([tf.train.ExponentialMovingAverage], "__init__", refusal):
        for case in cases:
            _check_average(average_update, *case)
    return f"Check 2 passed: {len(_AVERAGES)} updates agree with tf.train.ExponentialMovingAverage"


def _check_average(average_update, decay, count, shadow, value, expected):
    """One case of check 2: ``average_update`` against TF's shadow ``expected``."""
    args = f"decay={decay}" + ("" if count == "default" else f", num_updates={count}")
    where = f"average_update(shadow, value, {args})"
    shadow_in, value_in = shadow.copy(), value.copy()
    kwargs = {} if count == "default" else {"num_updates": count}
    mine = _call(where, average_update, shadow_in, value_in, decay, **kwargs)
    if not isinstance(mine, np.ndarray):
        raise AssertionError(
            f"{where}: yours returns {type(mine).__name__}; return a NumPy array, like "
            "the arrays passed in"
        )
    if not (np.array_equal(shadow_in, shadow) and np.array_equal(value_in, value)):
        raise AssertionError(f"{where}: yours changed an array passed in; return a new one")
    if mine.shape != expected.shape:
        raise AssertionError(f"{where}: yours has shape {mine.shape}, want {expected.shape}")
    if checking.agree(mine, expected):
        return
    # the share of the old shadow that the update keeps, yours and TF's
    kept = float(np.median((mine - value) / (shadow - value)))
    tf_kept = float(np.median((expected - value) / (shadow - value)))
    if kept > 1:
        raise AssertionError(f"{where}: yours moves the shadow away from the weight")
    hint, counted = "", count not in (None, "default")
    if math.isclose(kept, 1 - tf_kept, rel_tol=1e-6):
        hint = ": the shares of the old shadow and the weight are swapped"
    elif not counted:
        hint = ": without an update count the decay is `decay` itself"
    elif (
        math.isclose(kept, decay, rel_tol=1e-6) and min(decay, (1 + count) / (10 + count)) != decay
    ):
        hint = f": with num_updates={count} the decay is min(decay, (1 + n) / (10 + n))"
    elif math.isclose(kept, (1 + count) / (10 + count), rel_tol=1e-6):
        hint = ": the decay never exceeds `decay`"
    raise AssertionError(
        f"{where}: yours keeps {kept:.4f} of the old shadow, TF keeps {tf_kept:.4f}{hint}"
    )


# --- Check 3: gradient accumulation -----------------------------------------------------------

#: (optimizer, learning rate, micro-batches, regularised, batch sizes of the two steps,
#: large gradients: inputs 10 times as large, small first and large last kernels)
_ACCUMULATIONS = [
    ("SGD", 0.5, 1, True, (10, 7), False),
    ("SGD", 0.5, 2, True, (10, 9), False),
    ("SGD", 0.1, 3, True, (10, 8), True),
    ("SGD", 0.5, 2, False, (12, 11), False),
    ("Adam", 0.01, 2, True, (9, 12), False),
    ("Adam", 0.01, 3, True, (11, 4), False),
]
_FEATURES, _CLASSES = 6, 3


def _model(regularised: bool, seen: list | None):
    """A small classifier (tanh, so no gradient is exactly zero by chance); ``seen`` gets the
    size of every batch the model runs on, eagerly or in a graph, and its ``training`` flag."""
    import keras
    import tensorflow as tf

    class Seen(keras.layers.Layer):
        def call(self, x, training=None):
            if tf.executing_eagerly():
                seen.append((int(x.shape[0]), training))
                return x
            size = tf.py_function(
                lambda n: seen.append((int(n), training)) or n, [tf.shape(x)[0]], tf.int32
            )
            with tf.control_dependencies([size]):
                return tf.identity(x)

    regulariser = keras.regularizers.L2(0.05) if regularised else None
    layers = [
        keras.layers.Dense(8, activation="tanh", kernel_regularizer=regulariser),
        keras.layers.Dense(_CLASSES),
    ]
    return keras.Sequential(
        [keras.Input((_FEATURES,)), *([Seen()] if seen is not None else []), *layers]
    )


@contextlib.contextmanager
def _no_shortcuts(model):
    """Keras's own training loop on ``model`` and dpkit's finished steps refuse to run."""
    from dpkit import gradients, models, towers

    def keras_loop(*args, **kwargs):
        raise AssertionError(
            "your step calls Keras's own training loop (compile, fit or train_on_batch): "
            "write it with a tape"
        )

    for method in ("compile", "fit", "train_on_batch"):
        setattr(model, method, keras_loop)
    finished = [
        (towers, ("tower_gradients", "make_tower_train_step")),
        (gradients, ("average_gradients",)),
        (models, ("make_train_step",)),
    ]
    with contextlib.suppress(ImportError):  # lesson 10's module, where it is installed
        from dpkit import accumulation

        finished.append((accumulation, ("make_accumulating_steps",)))
    with contextlib.ExitStack() as stack:
        for module, names in finished:
            names = [name for name in names if hasattr(module, name)]
            stack.enter_context(switching.switched_off(module, *names))
        yield


def _flat(arrays) -> np.ndarray:
    return np.concatenate([np.asarray(a, np.float64).ravel() for a in arrays])


def _pieces(model, x, y):
    """Each example's cross-entropy gradient and the regularisation loss's, flattened (float64)."""
    import keras
    import tensorflow as tf

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    variables = model.trainable_variables
    per_example = []
    for i in range(len(x)):
        with tf.GradientTape() as tape:
            loss = loss_fn(y[i : i + 1], model(x[i : i + 1]))
        per_example.append(_flat(tape.gradient(loss, variables)))
    with tf.GradientTape() as tape:
        model(x[:1])
        penalty = tf.add_n(model.losses) if model.losses else tf.constant(0.0)
    grads = tape.gradient(penalty, variables)
    grads = [np.zeros(v.shape) if g is None else g for g, v in zip(grads, variables)]
    return np.stack(per_example, axis=1), _flat(grads)


def _explain_sgd(where, moved, rate, pieces, n, k, previous) -> str:
    """Say which mistake an SGD step's weight change ``moved`` looks like (see the module)."""
    per_example, penalty = pieces
    gradient = -moved / rate
    right = per_example.sum(axis=1) / n + penalty
    if previous is not None and checking.agree(gradient, right + previous, ulps=8192):
        return (
            f"{where}: your step applied this batch's gradient plus the previous step's: "
            "set the accumulated sums back to zero at the start of each step"
        )
    scale = gradient @ right / (right @ right)
    if penalty.any() and checking.agree(gradient, scale * right, ulps=8192):
        return (
            f"{where}: your step is {scale:.3g} times one step on the whole batch, in the same "
            "direction: do you scale or clip the summed gradients? Apply them as they are"
        )
    basis = np.column_stack([per_example, penalty])
    weights, *_ = np.linalg.lstsq(basis, gradient, rcond=None)
    if not checking.agree(basis @ weights, gradient, ulps=8192):
        cosine = gradient @ right / np.linalg.norm(gradient) / np.linalg.norm(right)
        return (
            f"{where}: your step is no mix of the examples' gradients (cosine {cosine:.4f} "
            "with the whole batch's): does it clip some gradients, or pair one with another "
            "variable?"
        )
    each, reg = weights[:-1], weights[-1]
    scale, problems = each.mean() * n, []
    if np.ptp(each) > 1e-3 * np.abs(each).max():
        problems.append(
            f"weighs the examples unequally (from {each.min() * n:.3g} to {each.max() * n:.3g} "
            "times 1/n each): a mean per micro-batch makes the examples of a small micro-batch "
            f"count more; divide each micro-batch's summed loss by the whole batch's size ({n})"
        )
    elif abs(scale - 1) > 1e-3:
        problems.append(
            f"divides each example's loss by {n / scale:.4g}; the batch holds {n} examples, so "
            f"its gradient is {scale:.3g} times the mean loss's (a constant batch size? "
            "micro-batch means summed?)"
        )
    if penalty.any() and abs(reg - 1) > 1e-3:
        times = "0" if abs(reg) < 1e-3 else f"{reg:.3g}"
        problems.append(
            f"counts the regularisation loss (model.losses) {times} times; it belongs once "
            f"in the step: add sum(model.losses) / {k} to each micro-batch's loss"
        )
    what = "; and it ".join(problems) or "differs from one step on the whole batch"
    return f"{where}: your step {what}"


def check_accumulating_step(make_accumulating_step) -> str:
    """Check ``make_accumulating_step(model, optimizer, micro_batches)`` (it returns ``step``).

    Each case builds a small classifier, gives your step and a twin of the model the same
    weights, and runs two steps on batches of different sizes, most of which do not divide
    into the micro-batches (unequal micro-batches): SGD and Adam, 1, 2 and 3 micro-batches,
    with and without an L2-regularised layer, and once with large gradients (which a clipped step
    would shrink). The reference is one Keras ``train_on_batch`` step of the twin on the whole
    batch (mean cross-entropy plus the regularisation losses). The check also asserts that the
    model ran in training mode on exactly ``micro_batches`` batches whose sizes add up to the
    batch's (a batch of 4 in 3, which micro-batches of ceil(n / k) would cut in 2), never on the
    whole batch, and that ``optimizer.iterations`` went up by one per step. For SGD, a wrong
    step is compared with each example's and the regularisation's gradient.
    """
    import tensorflow as tf

    rng = np.random.default_rng(3)
    # The check retraces a tf.function answer on purpose (new models, new batch sizes): keep
    # TensorFlow's retracing warning off stderr, where nbgrader would fail the cell for it.
    logger, level = tf.get_logger(), tf.get_logger().level
    logger.setLevel("ERROR")
    try:
        for case in _ACCUMULATIONS:
            _accumulation_case(make_accumulating_step, *case, rng)
    finally:
        logger.setLevel(level)
    return (
        f"Check 3 passed: {len(_ACCUMULATIONS)} cases of two steps each equal one Keras "
        "step on the whole batch"
    )


def _accumulation_case(make_accumulating_step, kind, rate, k, regularised, sizes, large, rng):
    """One case of check 3: two steps of yours against two of Keras on the whole batch."""
    import keras
    import tensorflow as tf

    case = f"{kind}, {k} micro-batch{'es' if k > 1 else ''}"
    case += ", a regularised layer" if regularised else ", no regularisation"
    case += ", large gradients" if large else ""
    seen: list[tuple] = []
    model, twin = _model(regularised, seen), _model(regularised, None)
    spreads = (0.05, 0.5, 4.0, 0.5) if large else (0.5,) * 4
    model.set_weights([rng.normal(0, s, w.shape) for s, w in zip(spreads, model.get_weights())])
    twin.set_weights(model.get_weights())
    optimizer = getattr(keras.optimizers, kind)(rate)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    twin.compile(optimizer=getattr(keras.optimizers, kind)(rate), loss=loss_fn, run_eagerly=True)
    previous = None  # the gradient of the step before, for SGD
    with _no_shortcuts(model):
        what = f"{case}: make_accumulating_step"
        step = _call(what, make_accumulating_step, model, optimizer, k)
        for number, n in enumerate(sizes, start=1):
            where = f"{case}, step {number} on a batch of {n}"
            x = rng.normal(0, 10 if large else 1, size=(n, _FEATURES)).astype(np.float32)
            y = rng.integers(0, _CLASSES, size=n).astype(np.int32)
            start = _flat(model.get_weights())
            pieces = _pieces(twin, x, y) if kind == "SGD" else None
            seen.clear()
            if number == 2:  # tensors, as a tf.data pipeline gives them
                where += " (tensors)"
                _call(where, step, tf.constant(x), tf.constant(y))
            else:
                _call(where, step, x, y)
            _check_micro_batches(where, list(seen), n, k)
            if int(optimizer.iterations) != number:
                raise AssertionError(
                    f"{where}: after {number} step(s) the optimizer has made "
                    f"{int(optimizer.iterations)} updates: apply the summed gradients "
                    "once per step, after the last micro-batch"
                )
            twin.train_on_batch(x, y)
            mine, ref = _flat(model.get_weights()), _flat(twin.get_weights())
            if not np.any(mine != start):
                raise AssertionError(
                    f"{where}: your step did not change the weights: does apply_gradients get "
                    "(gradient, variable) pairs, in that order?"
                )
            if checking.agree(mine, ref):
                previous = -(ref - start) / rate
                continue
            if kind == "SGD":
                raise AssertionError(
                    _explain_sgd(where, mine - start, rate, pieces, n, k, previous)
                )
            versus = "your weights vs one Adam step on the whole batch"
            raise AssertionError(f"{where}: {checking.agree(mine, ref, what=versus)}")


def _check_micro_batches(where, seen, n, k):
    modes = {training for _, training in seen} - {True}
    if modes:
        raise AssertionError(
            f"{where}: your step ran the model with training={modes.pop()}: pass training=True, "
            "as Keras's train_on_batch does (Dropout and BatchNormalization act on it)"
        )
    seen = [size for size, _ in seen]
    if n in seen and k > 1:
        raise AssertionError(
            f"{where}: your step ran the model on the whole batch of {n} at once; with "
            f"accumulation it runs only on the {k} micro-batches (the whole batch may not fit)"
        )
    if len(seen) != k or sum(seen) != n:
        raise AssertionError(
            f"{where}: your step ran the model on batches of {seen}; split the {n} examples "
            f"into {k} micro-batch{'es' if k > 1 else ''} whose sizes add up to {n}, and run "
            "each once"
        )

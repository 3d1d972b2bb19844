"""Checks of exercise 03 (gradient averaging).

One function per check cell of exercises/03_*.ipynb:

* :func:`check_average_gradients`: TF1's per-tower lists of ``(gradient, variable)`` pairs
  for 2, 3, 5 and 1 towers, some with a variable whose gradient is ``None`` in every tower,
  against NumPy's mean in float64;
* :func:`check_tower_step`: a whole training step, with the loss scaled by the global batch,
  for 1 to 4 towers on batches that mostly do not divide, against one SGD step of one device
  on the whole batch, then a second step.
"""

from __future__ import annotations

from dpkit_checks.ex02 import Recorder, assert_towers, reordered, run_answer

#: (towers, batch size) of check 2: one batch that divides, partial batches that do not, and
#: one larger than the notebook's GLOBAL_BATCH_SIZE of 32 (so a cap such as min(batch, 32)
#: shows), whose shards (15, 15, 14) also tell the remainder put on the last tower.
STEP_CASES = ((4, 32), (3, 10), (2, 7), (1, 5), (3, 44))
#: Towers of check 1, and whether a variable the loss does not use (None in every tower) is in.
AVERAGE_CASES = ((2, False), (3, True), (5, False), (1, True))
LEARNING_RATE = 0.1


# --- Check 1 -----------------------------------------------------------------------------


def _variables():
    """Four variables, two of one shape, so that a mix-up between them shows."""
    import keras
    import numpy as np

    shapes = {"kernel": (3, 2), "bias": (2,), "aux_bias": (2,), "scale": (4,)}
    return [keras.Variable(np.ones(s, np.float32), name=n) for n, s in shapes.items()]


def check_average_gradients(average_gradients) -> str:
    """Check 1: ``average_gradients(tower_grads)`` on lists of ``(gradient, variable)`` pairs
    from 2, 3, 5 and 1 towers (so that a fixed count such as NUM_DEVICES shows); in two of the
    cases one variable has ``None`` in every tower (the loss does not use it), which must stay
    ``None``. The reference is NumPy's mean of each variable's gradients, in float64; the
    variables must come back themselves, one pair each, in order."""
    import numpy as np
    import tensorflow as tf

    from dpkit import checking

    variables = _variables()
    rng = np.random.default_rng(3)
    for n, unused in AVERAGE_CASES:
        values = [
            [rng.normal(size=v.shape).astype(np.float32) for v in variables] for _ in range(n)
        ]
        skip = 2 if unused else None  # aux_bias
        tower_grads = [
            [
                (None if k == skip else tf.constant(g), v)
                for k, (g, v) in enumerate(zip(t, variables))
            ]
            for t in values
        ]
        what = f"{n} tower(s)" + (", aux_bias None in every tower" if unused else "")
        given = [list(t) for t in tower_grads]
        result = run_answer(average_gradients, tower_grads, what=what)
        result = list(result)
        kept = len(tower_grads) == len(given) and all(
            len(now) == len(before) and all(a is b for a, b in zip(now, before))
            for now, before in zip(tower_grads, given)
        )
        assert kept, (
            f"{what}: your code changed tower_grads: build a new list for the averages and "
            "leave the towers' lists as they were (their caller may still use them)"
        )
        assert len(result) == len(variables), (
            f"{what}: {len(result)} items for {len(variables)} variables: want one "
            "(gradient, variable) pair per variable (regroup the towers' lists by variable)"
        )
        for k, (item, var) in enumerate(zip(result, variables)):
            assert isinstance(item, (tuple, list)) and len(item) == 2, (
                f"{what}: for {var.path} you return a {type(item).__name__}, not a "
                "(gradient, variable) pair"
            )
            grad, mine = item
            assert mine is var, (
                f"{what}: the pair for {var.path} holds {getattr(mine, 'path', type(mine))}, "
                "not the variable itself: keep each variable beside its own average"
            )
            if k == skip:
                assert grad is None, (
                    f"{what}: {var.path} has no gradient in any tower, and you return a "
                    f"{type(grad).__name__}: keep None, so the optimizer skips it"
                )
                continue
            want = np.mean([np.asarray(t[k], np.float64) for t in values], axis=0)
            assert grad is not None, f"{what}: {var.path}'s average is None"
            dtype = tf.as_dtype(getattr(grad, "dtype", np.asarray(grad).dtype))
            assert dtype == var.dtype, (
                f"{what}: your average of {var.path} is {dtype.name}, its variable "
                f"{tf.as_dtype(var.dtype).name}: keep the gradients' dtype (TF1's "
                "apply_gradients aborts the process on a mismatch)"
            )
            grad = np.asarray(tf.convert_to_tensor(grad), np.float64)
            assert grad.shape == want.shape, f"{what}: {var.path} shape {grad.shape}"
            agreement = checking.agree(grad, want, what=f"{what}: {var.path} vs NumPy's mean")
            if agreement:
                continue
            scale = float(np.sum(grad * want) / np.sum(want * want))
            if checking.agree(grad, scale * want, ulps=1024):
                raise AssertionError(
                    f"{what}: your average of {var.path} is {scale:.2g} times the mean: divide "
                    "by the number of towers, len(tower_grads), not a fixed count such as "
                    "NUM_DEVICES"
                )
            raise AssertionError(str(agreement))
    return "Check 1 passed: the mean of 2, 3, 5 and 1 towers, variables kept, None kept"


# --- Check 2 -----------------------------------------------------------------------------


def _copy(model):
    import keras

    twin = keras.models.clone_model(model)
    twin.set_weights(model.get_weights())
    return twin


def _big_batch_step(model, optimizer, x, y):
    import keras
    import tensorflow as tf

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.device("/device:CPU:0"), tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def _one_step(step, model, optimizer, x, y, devices, what):
    recorder = Recorder(model)
    run_answer(step, recorder, optimizer, x, y, tuple(devices), what=what)
    assert_towers(recorder, x, devices, what)


def check_tower_step(fixed_tower_step, model, x, y, devices) -> str:
    """Check 2: ``fixed_tower_step(model, optimizer, x, y, devices)`` makes one SGD update
    equal to one device's on the whole batch, for 4 towers on 32 examples, 3, 2 and 1
    towers on partial batches of 10, 7 and 5, and 3 towers on 44 examples (as many towers as
    ``devices`` has; batches no larger than ``x``), then a second step on a batch of 12.
    Each case starts from a copy of ``model``; the reference is a copy trained on one device
    with the batch's mean loss. The towers get the first n of ``devices`` last first
    (``ex02.reordered``: device i is not CPU:i). The model is wrapped to see what ran: tower
    i on the i-th device given, forward (with ``training=True``) and backward, on the i-th
    of even shards in order; a wrong step's message names the likely mistake (a scale, a
    plain mean)."""
    import keras

    from dpkit import checking

    devices, tried = reordered(devices), []
    for n, batch in STEP_CASES:
        if n > len(devices) or batch > len(x):
            continue
        what = f"{n} tower(s) on a batch of {batch}"
        yours, reference = _copy(model), _copy(model)
        before = [v.numpy() for v in yours.trainable_variables]
        optimizer = keras.optimizers.SGD(LEARNING_RATE)
        _one_step(fixed_tower_step, yours, optimizer, x[:batch], y[:batch], devices[:n], what)
        updates = int(optimizer.iterations)
        assert updates == 1, f"{what}: one call of your step made {updates} optimizer updates"
        _big_batch_step(reference, keras.optimizers.SGD(LEARNING_RATE), x[:batch], y[:batch])
        mine = [v.numpy() for v in yours.trainable_variables]
        want = [v.numpy() for v in reference.trainable_variables]
        agreement = checking.agree(mine, want, what=f"{what}: weights vs one device's step")
        if not agreement:
            moved = [a - b for a, b in zip(mine, before)]
            wanted = [a - b for a, b in zip(want, before)]
            shards = (model, x[:batch], y[:batch])
            raise AssertionError(_diagnose(moved, wanted, n, batch, what, agreement, shards))
        tried.append(n)
    # A second step, on a batch of another size: nothing the first step left may change it.
    n, first, second = min(3, len(devices)), 10, 12
    what = f"a second step ({n} tower(s), a batch of {second} after one of {first})"
    yours, reference = _copy(model), _copy(model)
    optimizer, reference_optimizer = (keras.optimizers.SGD(LEARNING_RATE) for _ in range(2))
    for start, size in ((0, first), (first, second)):
        xb, yb = x[start : start + size], y[start : start + size]
        _one_step(fixed_tower_step, yours, optimizer, xb, yb, devices[:n], what)
        _big_batch_step(reference, reference_optimizer, xb, yb)
    agreement = checking.agree(yours.get_weights(), reference.get_weights(), what=what)
    assert agreement, (
        f"{what}: the weights differ from two steps of one device ({agreement}): does your "
        "step change something that the next step uses (the learning rate, a global)?"
    )
    return (
        f"Check 2 passed: one device's update for {sorted(set(tried))} towers, partial batches "
        "included, and a second step"
    )


def _diagnose(moved, wanted, n, batch, what, agreement, shards) -> str:
    """The likely mistake behind a step that moved the weights by ``moved``, not ``wanted``;
    ``shards`` is (the model before the step, the batch's x, its y)."""
    import numpy as np

    from dpkit import checking
    from dpkit_checks.ex02 import mean_loss_gradient, ratio

    scale = ratio(moved, wanted)
    # The moves are differences of weights, so the weights' rounding shows in them: 8192
    # float32 epsilons (1e-3 of a move) still tell a step scaled by a constant from another.
    if not checking.agree(moved, [scale * w for w in wanted], ulps=8192) or abs(scale - 1) < 0.01:
        model, x, y = shards
        sizes = [len(s) for s in np.array_split(np.arange(batch), n)]
        starts = np.cumsum([0, *sizes])
        grads = [mean_loss_gradient(model, x[a:b], y[a:b]) for a, b in zip(starts[:-1], starts[1:])]
        plain = [-LEARNING_RATE * sum(parts) / n for parts in zip(*grads)]
        if checking.agree(moved, plain, ulps=8192):
            return (
                f"{what}: your step is the plain mean of the towers' mean-loss gradients "
                f"(shards of {sizes}): an example of a small shard counts more; divide each "
                "tower's summed loss by this batch's size and add the towers' gradients"
            )
        return f"{agreement}: does every example count once, divided by this batch's size?"
    if n > 1 and abs(scale * n - 1) < 0.01:
        return (
            f"{what}: your step moves the weights {scale:.2g} times as far as one device on the "
            f"whole batch, 1/{n}: a loss divided by the global batch is meant to be summed over "
            "the towers, not averaged as well"
        )
    return (
        f"{what}: your step moves the weights {scale:.2g} times as far as one device on the "
        f"whole batch: divide the sum of the per-example losses by this batch's size "
        f"({batch}, x.shape[0]), once; a fixed GLOBAL_BATCH_SIZE, or a cap on it, is wrong on "
        "a batch of another size"
    )

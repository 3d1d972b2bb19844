"""Checks of exercise 02 (towers).

One function per check cell of exercises/02_*.ipynb:

* :func:`check_split_evenly`: shards against NumPy's ``array_split`` for several batch sizes
  and tower counts, and the refusal of batches that do not divide (its message must name the
  nearest sizes that work);
* :func:`check_uneven_towers`: towers on batches that do not divide, for 1 to 4 towers,
  against one device on the whole batch; what ran where is read from the model's calls, on
  devices given in an order of the check's (:func:`reordered`).

:class:`Recorder`, :func:`run_answer`, :func:`reordered`, :func:`mean_loss_gradient` and
:func:`ratio` serve exercise 03's step check too.
"""

from __future__ import annotations

import re

from dpkit_checks import switching

#: dpkit's finished versions of what exercise 02 asks for: off while a check runs the answer.
TOWERS_OFF = ("split_batch", "shard_sizes", "tower_gradients", "make_tower_train_step")
TOWERS_OFF += ("make_parallel",)
GRADIENTS_OFF = ("average_gradients", "average_concat_mean", "average_stack_mean")
GRADIENTS_OFF += ("average_add_n",)
#: How the message of a switched-off dpkit function starts (dpkit.checking's refusal).
REFUSED = "your code calls dpkit's"

#: (towers, batch size) of check 2 and exercise 03's step: batches that do not divide, one
#: that does, a tower of one example, and one tower alone.
CASES = ((1, 7), (2, 9), (3, 10), (4, 11), (4, 5), (3, 12))


def reordered(devices) -> list:
    """The devices a check hands the towers: the notebook's, last first. The process's
    logical devices are fixed once TensorFlow starts, so their order is what a check can
    vary: tower i's device is then not device i (CPU:3, CPU:2, ... on four), and a name typed
    in (f"/cpu:{i}"), the notebook's ``setup.devices[i]`` or no ``tf.device`` at all puts a
    tower where the check does not ask for it."""
    return list(devices)[::-1]


def run_answer(fn, *args, what: str):
    """``fn(*args)`` with dpkit's own versions switched off; an error of the answer's becomes
    an AssertionError that says ``what`` was being done.

    ``tf.function``s run eagerly meanwhile, so that a :class:`Recorder` sees where each op
    really ran (a traced op without a device request runs where the function is called)."""
    import tensorflow as tf

    from dpkit import gradients, towers

    eager = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        with (
            switching.switched_off(towers, *TOWERS_OFF),
            switching.switched_off(gradients, *GRADIENTS_OFF),
        ):
            return fn(*args)
    except AssertionError as error:
        if str(error).startswith(REFUSED):
            raise
        text = " ".join(str(error).split())[:200]
        raise AssertionError(f"{what}: your code failed an assert of its own: {text}") from None
    except Exception as error:  # noqa: BLE001  (the answer's error is the learner's to fix)
        hint = ""
        if "split" in str(error).lower() or "Split" in type(error).__name__:
            hint = (
                "; tf.split(x, n) needs a batch that divides by n: give it the list of "
                "shard sizes instead (np.array_split's sizes)"
            )
        text = " ".join(str(error).split())[:200]
        raise AssertionError(
            f"{what}: your code raised {type(error).__name__}: {text}{hint}"
        ) from None
    finally:
        tf.config.run_functions_eagerly(eager)


# --- Check 1 -----------------------------------------------------------------------------


def _batch(batch: int, seed: int = 0):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed + batch)
    x = rng.normal(size=(batch, 3, 2)).astype(np.float32)
    y = (np.arange(batch) * 7 % 11).astype(np.int32)  # labels that differ from their neighbours
    return tf.constant(x), tf.constant(y)


def check_split_evenly(split_evenly) -> str:
    """Check 1: ``split_evenly(x, y, n)`` returns ``(x_shards, y_shards)`` equal to NumPy's
    ``array_split`` for batches of 64, 30 and 12 on 1 to 12 towers, and raises a ValueError
    naming the two nearest batch sizes that divide (one below, one above) for batches of 63, 64,
    10, 25 and 50 on 4, 3, 4, 2 and 7 towers."""
    import numpy as np

    for batch, counts in ((64, (1, 2, 4, 8)), (30, (3, 5, 6)), (12, (12,))):
        x, y = _batch(batch)
        for n in counts:
            what = f"a batch of {batch} on {n} towers"
            result = run_answer(split_evenly, x, y, n, what=what)
            assert isinstance(result, (tuple, list)) and len(result) == 2, (
                f"{what}: return two lists, the image shards and the label shards"
            )
            for name, shards, whole in (("image", result[0], x), ("label", result[1], y)):
                shards = list(shards)
                assert len(shards) == n, f"{what}: {len(shards)} {name} shards, want {n}"
                for i, (mine, ref) in enumerate(zip(shards, np.array_split(whole.numpy(), n))):
                    mine = np.asarray(mine)
                    assert mine.shape == ref.shape and np.array_equal(mine, ref), (
                        f"{what}: {name} shard {i} differs from examples "
                        f"{i * len(ref)} to {(i + 1) * len(ref) - 1} of the batch, in order "
                        f"(yours has shape {mine.shape})"
                    )
    for batch, n in ((63, 4), (64, 3), (10, 4), (25, 2), (50, 7)):
        message = _refusal(split_evenly, batch, n)
        below = batch - batch % n
        named = {int(s) for s in re.findall(r"\d+", message)}
        assert {below, below + n} <= named, (
            f"a batch of {batch} for {n} towers: your message ({message!r}) should name the "
            f"two nearest batch sizes that would work, {below} and {below + n}"
        )
    return "Check 1 passed: equal shards in order; each refusal names the sizes that work"


def _refusal(split_evenly, batch: int, n: int) -> str:
    from dpkit import gradients, towers

    x, y = _batch(batch)
    what = f"a batch of {batch} for {n} towers"
    try:
        with (
            switching.switched_off(towers, *TOWERS_OFF),
            switching.switched_off(gradients, *GRADIENTS_OFF),
        ):
            split_evenly(x, y, n)
    except ValueError as error:
        return str(error)
    except AssertionError as error:
        if str(error).startswith(REFUSED):
            raise
        text = " ".join(str(error).split())[:200]
        raise AssertionError(
            f"{what} failed your assert ({text}), not a ValueError: an assert is switched off "
            "by python -O and is not what a caller catches; raise ValueError(...) instead"
        ) from None
    except Exception as error:  # noqa: BLE001
        raise AssertionError(
            f"{what} raised {type(error).__name__}, not a ValueError of your own that says "
            "what to do: check the remainder before you split"
        ) from None
    raise AssertionError(f"{what} does not divide, so split_evenly should raise ValueError")


# --- What ran where ------------------------------------------------------------------------


def where(device) -> tuple:
    """(type, index) of a device name: '/job:localhost/.../device:CPU:1' -> ('CPU', 1)."""
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(device or "")
    return (spec.device_type, spec.device_index)


class Recorder:
    """Stands in for a Keras model: notes each call's examples and the device its output was
    made on, and (through an identity with a custom gradient) where its backward pass ran."""

    def __init__(self, model):
        self.model, self.calls, self.backward, self.training = model, [], {}, []

    def __call__(self, inputs, *args, **kwargs):
        import numpy as np
        import tensorflow as tf

        outputs = self.model(inputs, *args, **kwargs)
        call = len(self.calls)
        self.training.append(kwargs.get("training", args[0] if args else None))
        try:  # a tensor or a NumPy array (exercise 03's batches are NumPy's)
            examples = np.asarray(inputs)
        except (TypeError, ValueError, NotImplementedError):  # a symbolic tensor
            examples = None
        self.calls.append((int(inputs.shape[0]), where(outputs.device), examples))

        @tf.custom_gradient
        def noted(t):  # passes values and gradients through, noting where the gradient ran
            def backward(upstream):
                self.backward[call] = where(upstream.device)
                return upstream

            return tf.identity(t), backward

        return noted(outputs)

    def __getattr__(self, name):
        return getattr(self.model, name)


def _misplaced(ran: list, wanted: list) -> str:
    """What towers that ran on ``ran`` (as many as ``wanted``) most likely did wrong."""
    if ran == [(want[0], k) for k, want in enumerate(wanted)]:
        return (
            "tower i ran on device number i, but the devices given come in another order "
            "(here the last first): run tower i under tf.device(devices[i]), the argument as "
            "given, not a name typed in (f'/cpu:{i}'), not the notebook's setup.devices, not "
            "the list sorted, and not without tf.device"
        )
    if len(ran) > 1 and len(set(ran)) == 1:
        return f"every tower ran on {ran[0]}: run tower i under tf.device(devices[i]), its own"
    if sorted(ran) == sorted(wanted):
        return (
            "the right devices in another order (sorted, or reversed?): tower i runs on "
            "devices[i], in the order the list gives"
        )
    return "run tower i under tf.device(devices[i])"


def assert_towers(recorder: Recorder, x, devices, what: str) -> None:
    """Call k of the model ran on devices[k], forward and backward, on the k-th of shards in
    order that hold every example once and differ in size by at most one."""
    import numpy as np

    batch, n = int(x.shape[0]), len(devices)
    sizes = [size for size, _, _ in recorder.calls]
    assert len(sizes) == n and sum(sizes) == batch and max(sizes) - min(sizes) <= 1, (
        f"{what}: the model ran on batches of {sizes}: one tower per device, each on its "
        f"own shard, the shards as even as they can be (sizes differing by at most one)"
    )
    ran = [device for _, device, _ in recorder.calls]
    wanted = [where(d) for d in devices]
    assert ran == wanted, f"{what}: the towers ran on {ran}, not on {wanted}: " + _misplaced(
        ran, wanted
    )
    seen = [examples for _, _, examples in recorder.calls]
    if all(s is not None for s in seen):
        assert np.array_equal(np.concatenate(seen), np.asarray(x)), (
            f"{what}: the towers' shards, in order, are not the batch: tower i takes the "
            "i-th slice, and every example goes to one tower"
        )
    for call, training in enumerate(recorder.training):
        assert training is True, (
            f"{what}: tower {call} called the model with training={training!r}: a training "
            "step calls model(x, training=True), or layers such as Dropout and BatchNormalization "
            "act as at inference and the gradients are not the training step's"
        )
    for call, device in enumerate(ran):
        assert call in recorder.backward, f"{what}: no gradient flowed back through tower {call}"
        assert recorder.backward[call] == device, (
            f"{what}: tower {call} ran forward on {device}, but its backward pass ran on "
            f"{recorder.backward[call]}: call tape.gradient inside the tower's tf.device block"
        )


# --- Check 2 -----------------------------------------------------------------------------


def _per_example_loss():
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")


class LossRecorder:
    """Stands in for ``per_example_loss``: notes the device each call's losses were made on."""

    def __init__(self, loss):
        self.loss, self.ran = loss, []

    def __call__(self, labels, logits, *args, **kwargs):
        losses = self.loss(labels, logits, *args, **kwargs)
        self.ran.append(where(losses.device))
        return losses


def assert_losses(recorder: LossRecorder, devices, what: str) -> None:
    """Tower k's per-example losses were computed once, on devices[k]."""
    wanted = [where(d) for d in devices]
    assert recorder.ran, (
        f"{what}: your code never called per_example_loss, the argument: the towers' losses "
        "must come from it (the check gives its own)"
    )
    assert len(recorder.ran) == len(wanted), (
        f"{what}: per_example_loss ran {len(recorder.ran)} time(s) for {len(wanted)} towers: "
        "call it once per tower, on that tower's labels and logits"
    )
    for k, (ran, want) in enumerate(zip(recorder.ran, wanted)):
        assert ran == want, (
            f"{what}: tower {k}'s loss ran on {ran}, not on its device {want}: compute the "
            "loss inside the tower's tf.device block, beside its forward pass"
        )


def mean_loss_gradient(model, x, y):
    """The gradient of the mean loss of (x, y) on one device, in float64."""
    import numpy as np
    import tensorflow as tf

    per_example = _per_example_loss()
    with tf.device("/device:CPU:0"), tf.GradientTape() as tape:
        loss = tf.reduce_mean(per_example(y, model(x, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)
    return [np.asarray(g, dtype=np.float64) for g in grads]


def ratio(mine, ref) -> float:
    """How many times ``ref`` the lists of arrays ``mine`` are, if they are a multiple of it
    (the least-squares scale <mine, ref> / <ref, ref>)."""
    import numpy as np

    num = sum(float(np.sum(a * b)) for a, b in zip(mine, ref))
    return num / sum(float(np.sum(b * b)) for b in ref)


def check_uneven_towers(tower_gradients, model, x, y, devices) -> str:
    """Check 2: ``tower_gradients(model, per_example_loss, x, y, devices)`` for 1, 2, 3 and 4
    towers (as many as ``devices`` has) on batches of 5 to 12 that mostly do not divide; the
    towers get the first n of ``devices`` last first (:func:`reordered`).

    The reference is the gradient of the mean loss of the whole batch, on one device. The
    model is wrapped so that the check sees what ran: one call per tower, tower i on
    ``devices[i]`` forward and backward, on the i-th of shards that differ by at most one,
    with ``training=True``; the loss is wrapped too: one call per tower, on its device.
    """
    import numpy as np

    from dpkit import checking

    devices = reordered(devices)
    tried = []
    for n, batch in CASES:
        if n > len(devices):
            continue
        xb, yb = x[:batch], y[:batch]
        what = f"{n} tower(s) on a batch of {batch}"
        recorder, losses = Recorder(model), LossRecorder(_per_example_loss())
        args = (recorder, losses, xb, yb, tuple(devices[:n]))
        yours = run_answer(tower_gradients, *args, what=what)
        assert_towers(recorder, xb, devices[:n], what)
        assert_losses(losses, devices[:n], what)
        reference = mean_loss_gradient(model, xb, yb)
        yours = list(yours) if isinstance(yours, (list, tuple)) else [yours]
        assert len(yours) == len(reference), (
            f"{what}: {len(yours)} gradients for {len(reference)} trainable variables: return "
            "one per variable, in model.trainable_variables order"
        )
        mine = [np.asarray(g, dtype=np.float64) for g in yours]
        for g, r, v in zip(mine, reference, model.trainable_variables):
            assert g.shape == r.shape, f"{what}: {v.path}'s gradient has shape {g.shape}"
        agreement = checking.agree(mine, reference, what=f"{what}: yours vs one device")
        if not agreement:
            raise AssertionError(_diagnose(mine, reference, model, xb, yb, n, what, agreement))
        tried.append(n)
    return f"Check 2 passed: equal to one device on the whole batch for {sorted(set(tried))} towers"


def _diagnose(mine, reference, model, x, y, n, what, agreement) -> str:
    import numpy as np

    from dpkit import checking

    scale = ratio(mine, reference)
    if checking.agree(mine, [scale * r for r in reference], ulps=8192) and abs(scale - 1) > 0.01:
        return (
            f"{what}: your gradients are {scale:.2g} times one device's on the whole batch: "
            "divide by the whole batch's size, once (not by a shard's size, the number of "
            "towers or a fixed number)"
        )
    sizes = [len(s) for s in np.array_split(np.arange(len(x)), n)]
    starts = np.cumsum([0, *sizes])
    shards = [mean_loss_gradient(model, x[a:b], y[a:b]) for a, b in zip(starts[:-1], starts[1:])]
    plain = [sum(parts) / n for parts in zip(*shards)]
    if checking.agree(mine, plain, ulps=1024):
        return (
            f"{what}: your gradients are the plain mean of the towers' (shards of {sizes}): "
            "every tower got the weight 1/N, so an example in a small shard counts more; weigh "
            "tower i by its share of the batch, b_i / B"
        )
    return f"{what}: your gradients differ from one device's on the whole batch ({agreement})"

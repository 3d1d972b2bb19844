"""Checks of exercise 04 (a MirroredStrategy input function and custom training step).

One function per check cell of exercises/04_*.ipynb:

* :func:`check_dataset_fn`: the learner's ``make_dataset_fn(features, labels, global_batch_size)``
  gives a ``dataset_fn(input_context)``, called with the ``InputContext`` a strategy passes (1
  to 4 replicas, 1 to 3 input pipelines, two global batches); the reference is arithmetic: one
  epoch, every example once over the pipelines, batches of ``global_batch_size / replicas``.
* :func:`check_train_step`: the learner's ``make_train_step(strategy, model, optimizer,
  global_batch_size)`` runs under ``MirroredStrategy`` over 1, 2 and 3 devices, fed per-replica
  batches of unequal sizes (the last one short), on a small model with L2-regularised kernels;
  the reference is one device stepping on the whole global batch.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np

from dpkit import checking
from dpkit_checks import mirrored, switching


@contextlib.contextmanager
def _reported(where: str, what: str):
    """An error the learner's code raises (other than a check's) as a failed check."""
    try:
        yield
    except AssertionError:
        raise
    except Exception as error:  # noqa: BLE001 - the learner's error, reported
        first = (str(error).strip() or "(no message)").splitlines()[0][:200]
        raise AssertionError(
            f"{where}, your {what} raised {type(error).__name__}: {first}"
        ) from None


# --- Check 1: the input function ------------------------------------------------------

#: Examples in the check's data set: 29 divides by no global batch, so the epoch ends short.
NUM_EXAMPLES = 29
#: (global batch, input pipelines, replicas): one machine (1 pipeline) with 1 to 3 replicas,
#: and 2 or 3 workers, each running one pipeline for its own replicas.
CONTEXTS = (
    (12, 1, 1),
    (12, 1, 2),
    (12, 1, 3),
    (12, 2, 2),
    (12, 3, 3),
    (12, 2, 4),
    (6, 1, 3),
    (6, 3, 3),
)


def _examples():
    """Features whose first column is the example's id, and the id as its label."""
    ids = np.arange(NUM_EXAMPLES)
    features = (ids[:, None] + np.array([0.0, 0.25, 0.5])).astype(np.float32)
    return features, ids.astype(np.int64)


def _one_epoch(dataset, where: str) -> tuple[list[int], list[int]]:
    """(batch sizes, ids in order) of one pass over ``dataset``; fails on a bad element."""
    import tensorflow as tf

    if not isinstance(dataset, tf.data.Dataset):
        raise AssertionError(
            f"{where}: dataset_fn returned a {type(dataset).__name__}, not a tf.data.Dataset"
        )
    sizes, ids = [], []
    for element in dataset:
        if not (isinstance(element, tuple) and len(element) == 2):
            raise AssertionError(
                f"{where}: each element of your dataset should be a (features, labels) pair"
            )
        x, y = (np.asarray(t) for t in element)
        if y.ndim == 2 and x.ndim == 1:
            raise AssertionError(
                f"{where}: your pairs are (labels, features): give (features, labels)"
            )
        if y.ndim != 1 or x.ndim != 2:
            raise AssertionError(
                f"{where}: an element has labels of shape {y.shape}, features of shape "
                f"{x.shape}: batch the examples (one batch per replica per step)"
            )
        if len(x) != len(y) or not np.array_equal(x[:, 0], y.astype(np.float32)):
            raise AssertionError(
                f"{where}: a batch's features do not belong to its labels: keep each example "
                "whole (shuffle and shard the (features, labels) pairs, not each on its own)"
            )
        sizes.append(len(y))
        ids.extend(int(i) for i in y)
        if len(ids) > 3 * NUM_EXAMPLES:
            raise AssertionError(
                f"{where}: your dataset goes on past {3 * NUM_EXAMPLES} examples, from "
                f"{NUM_EXAMPLES}: give one epoch (no repeat(); the training loop asks again)"
            )
    return sizes, ids


def check_dataset_fn(make_dataset_fn) -> str:
    """Check ``make_dataset_fn(features, labels, global_batch_size) -> dataset_fn``.

    Varies the global batch (12 and 6), the replicas (1 to 4) and the input pipelines
    (1 to 3), by calling ``dataset_fn`` with each ``tf.distribute.InputContext`` a strategy
    would pass, one per pipeline; the data are 29 examples, so an epoch ends on a short
    batch. Reference: every example exactly once over all the pipelines' epochs, and every
    batch but a pipeline's last of ``global_batch_size / replicas`` examples.
    """
    import tensorflow as tf

    features, labels = _examples()
    for global_batch, pipelines, replicas in CONTEXTS:
        per_replica = global_batch // replicas
        setting = (
            f"with a global batch of {global_batch}, {replicas} replica(s) and "
            f"{pipelines} input pipeline(s)"
        )
        seen: Counter = Counter()
        for pipeline in range(pipelines):  # each worker makes its own, in its own process
            dataset_fn = make_dataset_fn(features, labels, global_batch)
            if not callable(dataset_fn):
                raise AssertionError(
                    f"make_dataset_fn returned a {type(dataset_fn).__name__}: return the "
                    "function dataset_fn(input_context) that the strategy calls"
                )
            # (num_input_pipelines, input_pipeline_id, num_replicas_in_sync)
            context = tf.distribute.InputContext(pipelines, pipeline, replicas)
            where = f"{setting}, pipeline {pipeline}"
            with _reported(where, "dataset_fn"):
                sizes, ids = _one_epoch(dataset_fn(context), where)
            if any(s != per_replica for s in sizes[:-1]) or any(s > per_replica for s in sizes):
                raise AssertionError(
                    f"{where}: your batches hold {sizes} examples; each replica's batch is "
                    f"{global_batch} / {replicas} = {per_replica} (only the last may be short): "
                    "take it from input_context.get_per_replica_batch_size(global_batch_size)"
                )
            seen.update(ids)
        missing = [i for i in range(NUM_EXAMPLES) if seen[i] == 0]
        twice = sorted(i for i, count in seen.items() if count > 1)
        if twice:
            hint = (
                "each pipeline must keep only its shard, input_pipeline_id of "
                "num_input_pipelines (a shuffle before the shard needs a seed, or each pipeline "
                "shuffles differently)"
                if pipelines > 1
                else "give each example once per epoch"
            )
            raise AssertionError(
                f"{setting}, examples {twice[:6]} came {max(seen.values())} times in one "
                f"epoch: {hint}"
            )
        if missing:
            raise AssertionError(
                f"{setting}, {len(missing)} of {NUM_EXAMPLES} examples never came "
                f"(e.g. {missing[:6]}): shard by the input pipelines (input_pipeline_id of "
                "num_input_pipelines), not the replicas, and keep the last short batch"
            )
    return (
        "Check 1 passed: one epoch, every example once, per-replica batches, "
        "for 1 to 4 replicas on 1 to 3 pipelines"
    )


# --- Check 2: the training step -------------------------------------------------------

#: Each replica's share of the global batch: unequal, so that dividing by a replica's own
#: batch, or by the replicas' count times it, differs from dividing by the global batch.
SHARES = ((5,), (2, 5), (1, 4, 2))
#: The shares of the epoch's last batch, short of the global batch (still ``sum(SHARES[k])``).
SHORT = ((3,), (2, 3), (1, 2, 2))
LEARNING_RATE = 0.5
MOMENTUM = 0.5  # so that the second step depends on the optimizer's state
L2_RATE = 0.05
STEPS = 2  # on full global batches, then one on the short batch


def _model(start, seen=None):
    """The check's model at weights ``start``; its first layer, the identity, appends to
    ``seen`` each time it runs whether it ran in a replica (inside ``strategy.run``) and the
    ``training`` flag it was called with (the model has no Dropout for the weights to show it)."""
    import keras
    import tensorflow as tf

    class Where(keras.layers.Layer):
        def call(self, x, training=None):
            replica = tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context()
            (seen if seen is not None else []).append((replica, training))
            return x

    l2 = keras.regularizers.L2(L2_RATE)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            Where(),
            keras.layers.Dense(5, activation="tanh", kernel_regularizer=l2),
            keras.layers.Dense(3, kernel_regularizer=l2),
        ]
    )
    model.set_weights(start)
    return model


def _optimizer(variables):
    import keras

    optimizer = keras.optimizers.SGD(LEARNING_RATE, momentum=MOMENTUM)
    optimizer.build(variables)  # its momentum slots now, not inside the learner's tf.function
    return optimizer


def _data(shares, short, seed: int):
    """The start weights, and (x, y, shares) for STEPS global batches and one short one."""
    rng = np.random.default_rng(seed)
    shapes = [(4, 5), (5,), (5, 3), (3,)]
    start = [rng.normal(scale=0.7, size=s).astype(np.float32) for s in shapes]
    batches = [
        (rng.normal(size=(sum(s), 4)).astype(np.float32), rng.integers(0, 3, size=sum(s)), s)
        for s in (shares,) * STEPS + (short,)
    ]
    return start, batches


def _distribute(strategy, array, shares):
    """``array`` cut into the replicas' shares, as a strategy's per-replica value."""
    import tensorflow as tf

    cuts = np.cumsum((0,) + tuple(shares))

    def piece(context):
        k = context.replica_id_in_sync_group
        return tf.constant(array[cuts[k] : cuts[k + 1]])

    return strategy.experimental_distribute_values_from_function(piece)


def _gradient_parts(model, x, y, shares):
    """Flattened gradients at the model's weights, for the diagnosis of a wrong step:
    {name: vector} for the ways a replica could scale its loss, and the L2 terms'."""
    import keras
    import tensorflow as tf

    mean_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    cuts = np.cumsum((0,) + tuple(shares))
    n = len(shares)

    def grad(fn):
        with tf.GradientTape() as tape:
            value = fn()
        grads = tape.gradient(value, model.trainable_variables)
        flat = [
            np.zeros(v.shape) if g is None else g for g, v in zip(grads, model.trainable_variables)
        ]
        return np.concatenate([np.ravel(g) for g in flat]).astype(np.float64)

    def shard_means():
        parts = [
            mean_loss(y[cuts[k] : cuts[k + 1]], model(x[cuts[k] : cuts[k + 1]])) for k in range(n)
        ]
        return tf.add_n(parts)

    return {
        "global": grad(lambda: mean_loss(y, model(x))),
        "shard means summed": grad(shard_means),
        # also compute_average_loss without global_batch_size: shard sum / (shard * replicas)
        "shard means averaged": grad(lambda: shard_means() / n),
        "l2": grad(lambda: tf.add_n(model.losses)),
    }


_CE_MISTAKES = {
    "shard means summed": "each replica divided its loss by its own batch (tf.reduce_mean, or "
    "global_batch_size set to the replica's batch); the replicas' gradients are summed, so "
    "divide by the global batch: tf.nn.compute_average_loss(per_example, "
    "global_batch_size=global_batch_size)",
    "shard means averaged": "each replica divided its summed loss by its own batch times the "
    "replicas (the mean of the replicas' means, a Keras loss left to its own reduction, or "
    "compute_average_loss without global_batch_size), which is the global batch only when "
    "the shares are equal: pass global_batch_size=global_batch_size",
}


def _diagnose(moved, parts, n: int, global_batch: int) -> str:
    """Why ``moved`` (the learner's first update / -learning rate) differs, in words."""
    best = None
    for name in ("global", *_CE_MISTAKES):
        if name == "global":  # fit both: a multiple of the right cross-entropy, and of the L2
            basis = np.stack([parts[name], parts["l2"]], axis=1)
            (a, b), *_ = np.linalg.lstsq(basis, moved, rcond=None)
        else:  # a replica's scaling gone wrong in a known way, and some multiple of the L2
            a = 1.0
            (b,), *_ = np.linalg.lstsq(parts["l2"][:, None], moved - parts[name], rcond=None)
        residual = np.linalg.norm(a * parts[name] + b * parts["l2"] - moved)
        if best is None or residual < best[0]:
            best = (residual, name, a, b)
    residual, name, a, b = best
    if residual > 1e-3 * max(np.linalg.norm(moved), 1e-12):
        return (
            "look for a loss other than each replica's summed per-example losses divided by "
            "the global batch, plus the scaled L2 terms"
        )
    words = []
    if name == "global" and abs(a - 1) > 1e-3 and abs(a - b) < 1e-3:
        return (
            f"the whole step went {a:.2f} times as far as one device's: look for gradients "
            "summed twice (an all_reduce of your own before apply_gradients, which all-reduces "
            "them again), gradients applied twice, or a loss or learning rate scaled"
        )
    if name != "global":
        words.append(_CE_MISTAKES[name])
    elif abs(a - 1) > 1e-3:
        words.append(
            f"the cross-entropy moved the weights {a:.2f} times as far as one device on the "
            f"global batch: divide the per-example losses' sum by global_batch_size (the "
            f"argument, {global_batch} here, not a number of your own)"
        )
    if abs(b) < 1e-3:
        words.append(
            "the L2 terms did not move the weights: add "
            "tf.nn.scale_regularization_loss(model.losses) to the loss inside the tape"
        )
    elif abs(b - 1) > 1e-3:
        once = ", once per replica" if n > 1 and abs(b - n) < 1e-3 else ""
        words.append(
            f"the L2 terms counted {b:.2f} times{once}: the replicas' gradients are summed, "
            "so add tf.nn.scale_regularization_loss(model.losses), which divides by the "
            "replicas"
        )
    return "; ".join(words) or "compare your loss with one device's on the global batch"


def _as_float(loss, where: str) -> float:
    import tensorflow as tf

    if isinstance(loss, tf.distribute.DistributedValues):
        raise AssertionError(
            f"{where}, your step returned one loss per replica: return "
            "strategy.reduce('SUM', per_replica_losses, axis=None)"
        )
    value = np.asarray(loss)
    if value.shape != ():
        raise AssertionError(
            f"{where}, your step returned a loss of shape {value.shape}: want a scalar"
        )
    return float(value)


def _loss_hint(got: float, want: float, cross_entropy: float, n: int) -> str:
    if n > 1 and checking.agree(got * n, want):
        return (
            ": the replicas' losses were averaged, but each is already its share of the "
            "global batch's loss: reduce them with SUM"
        )
    if checking.agree(got, cross_entropy, ulps=1e4):
        return ": return the loss with its scaled L2 terms, the one the tape differentiated"
    return ""


@contextlib.contextmanager
def _quiet():
    """TensorFlow's Python warnings off: a check cell writes nothing to stderr, and a check
    run again and again makes new tf.functions of the same code (TensorFlow warns: retracing)."""
    import tensorflow as tf

    logger, level = tf.get_logger(), tf.get_logger().level
    logger.setLevel("ERROR")
    try:
        yield
    finally:
        logger.setLevel(level)


def check_train_step(make_train_step, devices) -> str:
    """Check ``make_train_step(strategy, model, optimizer, global_batch_size) -> train_step``.

    ``train_step(x, y)`` takes a strategy's per-replica batches and returns the global
    batch's loss. The check runs it under ``MirroredStrategy`` over the first 1, 2 and 3 of
    ``devices``, with per-replica batches of unequal sizes (:data:`SHARES`), for two steps of
    SGD with momentum and one on the epoch's short last batch (:data:`SHORT`), on a model
    whose two kernels carry L2 terms. Reference: the same model on one device stepping on
    the whole global batch with its mean cross-entropy plus the L2 terms once (on the short
    batch, the summed cross-entropy over the global batch, as compute_average_loss gives,
    or over the examples present); the weights after each step and the returned loss must
    agree with it (``checking.agree``), and the model must run inside ``strategy.run``, with
    ``training=True`` (recorded by its first layer).
    dpkit's own mirrored and accumulating steps are switched off.
    """
    from dpkit import accumulation, towers

    if len(devices) < len(SHARES[-1]):
        raise ValueError(
            f"check_train_step needs {len(SHARES[-1])} devices, got {len(devices)}: "
            "set NUM_DEVICES to 3 or more and restart the kernel"
        )
    with (
        _quiet(),
        switching.switched_off(towers, "make_mirrored_train_step"),
        switching.switched_off(accumulation, "make_accumulating_steps"),
    ):
        for seed, (shares, short) in enumerate(zip(SHARES, SHORT)):
            strategy = mirrored(devices[: len(shares)])
            _check_replicas(make_train_step, strategy, shares, short, seed)
    return (
        "Check 2 passed: three steps equal one device on the global batch, "
        "for 1, 2 and 3 replicas with unequal shares, the last batch short"
    )


def _check_replicas(make_train_step, strategy, shares, short, seed: int) -> None:
    """The learner's steps under ``strategy`` against one device's."""
    import keras
    import tensorflow as tf

    n, global_batch = len(shares), sum(shares)
    start, batches = _data(shares, short, seed)
    seen: list = []
    with strategy.scope():
        model = _model(start, seen)
        optimizer = _optimizer(model.trainable_variables)
    references = [_model(start) for _ in range(2)]  # a short batch over the global batch, its own
    optimizers = [_optimizer(reference.trainable_variables) for reference in references]
    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    setting = f"with {n} replica(s) taking {list(shares)} of a global batch of {global_batch}"
    with _reported(setting, "make_train_step"):
        train_step = make_train_step(strategy, model, optimizer, global_batch)
    for step, (x, y, cut) in enumerate(batches, start=1):
        where = f"{setting}, step {step}"
        if len(y) < global_batch:
            where += f" (the epoch's last batch, short: {list(cut)}, {len(y)} examples)"
        parts = _gradient_parts(references[0], x, y, shares) if step == 1 else None
        wants = []  # (weights, loss, cross-entropy) of each reference after its step
        for reference, opt, divisor in zip(references, optimizers, (global_batch, len(y))):
            with tf.GradientTape() as tape:
                ce = tf.reduce_sum(per_example(y, reference(x, training=True))) / divisor
                total = ce + tf.add_n(reference.losses)
            grads = tape.gradient(total, reference.trainable_variables)
            opt.apply_gradients(zip(grads, reference.trainable_variables))
            wants.append((reference.get_weights(), float(total), float(ce)))
        before = [np.array(w) for w in model.get_weights()]
        seen.clear()
        with _reported(where, "train_step"):
            loss = train_step(_distribute(strategy, x, cut), _distribute(strategy, y, cut))
        if not all(replica for replica, _ in seen):
            raise AssertionError(
                f"{where}, your step ran the model outside strategy.run, in one place on the "
                "whole batch: call it only in the replica function, strategy.run(replica_step, "
                "args=(x, y)), so that each replica computes on its own share"
            )
        modes = {training for _, training in seen} - {True}
        if modes:
            raise AssertionError(
                f"{where}, your step called the model with training={modes.pop()!r}: a training "
                "step calls model(x, training=True), or Dropout and BatchNormalization act as "
                "at inference"
            )
        after = model.get_weights()
        agreed = [checking.agree(after, w, what="weights vs one device") for w, _, _ in wants]
        if not any(agreed):
            if all(np.array_equal(a, b) for a, b in zip(after, before)):
                raise AssertionError(
                    f"{where}, your step left the weights of the model it was given as they "
                    "were: train `model`, the argument (made in strategy.scope()), not another"
                )
            if step == 1:  # the first momentum step is plain SGD: w - learning rate * gradient
                moved = np.concatenate([np.ravel(b - a) for a, b in zip(after, start)])
                why = _diagnose(moved / LEARNING_RATE, parts, n, global_batch)
            elif len(y) < global_batch:
                why = (
                    "the full batches agreed, so look at what depends on the batch's size: "
                    "divide the examples' summed losses by global_batch_size (or by the examples "
                    "present), and add the L2 terms once, apart from them "
                    "(tf.nn.scale_regularization_loss(model.losses)), not inside that division"
                )
            else:
                why = (
                    "the first step agreed, so look at what changes between calls "
                    "(the optimizer's state, its learning rate, the model)"
                )
            raise AssertionError(
                f"{where}: your weights differ from one device's on the global batch "
                f"({agreed[0]}): {why}"
            )
        _, want, want_ce = wants[0] if agreed[0] else wants[1]
        got = _as_float(loss, where)
        if not checking.agree(got, want, what="loss"):
            raise AssertionError(
                f"{where}: your step returned a loss of {got:.6g}; one device's on the "
                f"global batch (its mean cross-entropy plus the L2 terms) is {want:.6g}"
                + _loss_hint(got, want, want_ce, n)
            )

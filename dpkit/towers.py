"""Tower data parallelism: one replica of the model per device, each on its shard.

Introduced in lesson 02. A *tower* is one device's copy of the forward and
backward pass. All towers share one set of variables; each gets a shard of the
global batch, computes its loss and gradients on its device, and the averaged
gradients (``dpkit.gradients``) update the shared variables once.

Where the variables live is decided when the model is built: build it inside
``with variable_device(devices, "cpu")`` (the sources' usual choice, the CPU acts as
parameter server) or ``"device0"`` (the first device holds them and sends copies to
the others; on GPUs it then needs more memory than the rest).
"""

from __future__ import annotations

import contextlib

import keras
import numpy as np
import tensorflow as tf

from dpkit import gradients as _gradients
from dpkit.plumbing import checks

WHERE_VARIABLES = ("cpu", "device0")


def _batch_size(x) -> int:
    size = x.shape[0]
    if size is None:
        raise ValueError(
            "the batch size is unknown when the step is traced; give the dataset a fixed "
            "batch size (data.make_dataset(..., drop_remainder=True)) so it can be split."
        )
    return int(size)


def shard_sizes(batch_size: int, num_towers: int, *, weighted: bool = False) -> list[int]:
    """How many examples of a global batch each of ``num_towers`` towers gets: all the same,
    or (``weighted``) sizes that differ by at most one. A batch that does not divide evenly
    (unless ``weighted``) or that would leave a tower empty is a ``ValueError``."""
    batch_size = checks.whole(batch_size, "batch size", 1)
    num_towers = checks.whole(num_towers, "num_towers", 1)
    if batch_size < num_towers:
        raise ValueError(
            f"a batch of {batch_size} cannot feed {num_towers} towers: at least one would get "
            f"no examples (and a NaN loss); use a batch of at least {num_towers}."
        )
    if weighted:
        return [len(part) for part in np.array_split(np.arange(batch_size), num_towers)]
    what, into = f"a batch of {batch_size}", f"into {num_towers} towers"
    instead = ", or split_batch(..., weighted=True) for unequal shards averaged by size"
    return [checks.divides(batch_size, num_towers, what, into, instead)] * num_towers


def split_batch(x, y, num_towers: int, *, weighted: bool = False):
    """Split a batch (arrays or tensors with a known batch size) into one shard per tower.

    Returns ``(xs, ys, weights)``: lists of shards and one weight per tower, summing to 1.
    ``weighted`` allows unequal shards; the weights then say how much each tower's gradients
    count (its share of the batch).
    """
    size = _batch_size(x)
    if _batch_size(y) != size:
        raise ValueError(
            f"x has {size} examples but y has {_batch_size(y)}; pass matching batches."
        )
    sizes = shard_sizes(size, num_towers, weighted=weighted)
    weights = [s / size for s in sizes]
    return tf.split(x, sizes), tf.split(y, sizes), weights


def _is_float(var) -> bool:
    """Float state (batch-norm statistics) is averaged; integer state (RNG seeds) is not."""
    return "float" in str(var.dtype)


def _float_state(model):
    """Non-trainable float variables (batch-norm moving statistics) of a model."""
    return [v for v in model.non_trainable_variables if _is_float(v)]


def tower_gradients(model, loss_fn, x, y, devices, *, weighted: bool = False):
    """Each tower's gradients and loss, computed on its own device.

    Tower ``i`` runs under ``tf.device(devices[i])`` and ``tf.name_scope("tower_i")``,
    so its forward and backward ops are placed there. Models with batch
    normalisation are called statelessly, so no tower changes the moving
    statistics; the new statistics are returned instead (see :func:`make_tower_train_step`).
    ``loss_fn(labels, logits)`` returns a shard's mean loss.

    Returns ``(tower_grads, tower_losses, weights, tower_states)``: per tower, the list of
    gradients in ``model.trainable_variables`` order, the loss, its weight, and the new
    values of the batch-norm statistics (empty lists for models without them).
    """
    devices = checks.device_list(devices)
    xs, ys, weights = split_batch(x, y, len(devices), weighted=weighted)
    stateful = bool(_float_state(model))
    tower_grads, tower_losses, tower_states = [], [], []
    for i, (device, xi, yi) in enumerate(zip(devices, xs, ys)):
        with tf.device(device), tf.name_scope(f"tower_{i}"):
            with tf.GradientTape() as tape:
                if stateful:
                    logits, state = model.stateless_call(
                        [v.value for v in model.trainable_variables],
                        [v.value for v in model.non_trainable_variables],
                        xi,
                        training=True,
                    )
                else:
                    logits, state = model(xi, training=True), []
                loss = loss_fn(yi, logits)
            tower_grads.append(tape.gradient(loss, model.trainable_variables))
        tower_losses.append(loss)
        tower_states.append(list(state))
    return tower_grads, tower_losses, weights, tower_states


def variable_device(devices, where: str = "cpu") -> str:
    """The device that holds the variables: ``"cpu"`` or ``"device0"`` (the first device)."""
    devices = checks.device_list(devices)
    if where not in WHERE_VARIABLES:
        raise ValueError(f"where_variables must be one of {WHERE_VARIABLES}, got {where!r}.")
    return "/device:CPU:0" if where == "cpu" else devices[0]


@contextlib.contextmanager
def variables_on(devices, where: str = "cpu"):
    """Context manager: build the model inside it to put its variables on the CPU or device 0."""
    with tf.device(variable_device(devices, where)):
        yield


def _same_device(a: str, b: str) -> bool:
    spec_a, spec_b = tf.DeviceSpec.from_string(a), tf.DeviceSpec.from_string(b)
    return (spec_a.device_type, spec_a.device_index) == (spec_b.device_type, spec_b.device_index)


def make_tower_train_step(
    model,
    optimizer,
    devices,
    *,
    where_variables: str = "cpu",
    loss_fn=None,
    weighted: bool = False,
    return_tower_losses: bool = False,
):
    """A ``tf.function`` that trains ``model`` on one global batch with one tower per device.

    The step splits the batch, runs :func:`tower_gradients`, averages the gradients
    (by shard size) and the batch-norm statistics on the variables' device, and
    applies the gradients once. ``model``'s variables must live where ``where_variables``
    says (build it inside :func:`variables_on`); the optimizer's slots are made there too.
    ``loss_fn(labels, logits)`` defaults to sparse cross-entropy from logits; ``weighted``
    allows batches that do not divide evenly.

    Returns ``step(x, y) -> mean loss``, or ``-> (mean loss, vector of tower losses)`` with
    ``return_tower_losses`` (lesson 06 logs them).
    """
    devices = checks.device_list(devices)
    home = variable_device(devices, where_variables)
    stray = [v.path for v in model.variables if not _same_device(v.value.device, home)]
    if stray:
        raise ValueError(
            f"where_variables={where_variables!r} wants the variables on {home}, but "
            f"{len(stray)} live elsewhere (e.g. {stray[0]}); build the model inside "
            f"`with towers.variables_on(devices, {where_variables!r}):`."
        )
    loss_fn = loss_fn or keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.device(home):
        optimizer.build(model.trainable_variables)
    state_vars = model.non_trainable_variables

    @tf.function
    def step(x, y):
        tower_grads, losses, weights, states = tower_gradients(
            model, loss_fn, x, y, devices, weighted=weighted
        )
        with tf.device(home), tf.name_scope("average"):
            grads = _gradients.average_gradients(tower_grads, weights)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            for k, var in enumerate(state_vars):
                values = [s[k] for s in states] if states[0] else []
                if values and _is_float(var):
                    var.assign(tf.add_n([w * v for w, v in zip(weights, values)]))
                elif values:
                    var.assign(values[0])
            mean = tf.add_n([w * loss for w, loss in zip(weights, losses)])
            return (mean, tf.stack(losses)) if return_tower_losses else mean

    return step


def make_mirrored_train_step(
    model, optimizer, strategy, global_batch: int, *, loss_fn=None, global_loss: bool = True
):
    """The tower step as ``tf.distribute`` writes it (lesson 04), as a ``tf.function``
    ``step(x, y)`` (local tensors or distributed values) of ``model`` and ``optimizer`` made
    in ``strategy.scope()``. Each replica divides its examples' summed losses
    (``loss_fn(labels, logits)``, one per example) by ``global_batch`` and applies its
    gradients, which the optimizer all-reduces first. The step returns the global batch's
    loss, or with ``global_loss=False`` each replica's share (no extra all-reduce across
    workers). The doctor and the throughput runs set it against the tower step."""
    global_batch = checks.whole(global_batch, "global_batch", 1, "e.g. global_batch=256")
    cross_entropy = keras.losses.SparseCategoricalCrossentropy
    per_example = loss_fn or cross_entropy(from_logits=True, reduction="none")

    def replica(x, y):
        with tf.GradientTape() as tape:
            losses = per_example(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # all-reduces first
        return loss

    @tf.function
    def step(x, y):
        shares = strategy.run(replica, args=(x, y))
        return strategy.reduce("SUM", shares, axis=None) if global_loss else shares

    return step


def make_parallel(fn, devices, **inputs):
    """Run ``fn`` on every device, each on a slice of the inputs; concatenate the results.

    The PaddleFluid comparison's helper: every keyword input is split along its first axis
    into one piece per device, ``fn(**pieces)`` runs under that device (and a
    ``tower_i`` name scope), and the outputs are joined along the first axis. Use it
    for functions whose output has one row per example (per-example losses,
    predictions); shared variables come from ``fn``'s closure. The inputs must share one
    batch size, divisible by the number of devices.
    """
    devices = checks.device_list(devices)
    if not inputs:
        raise ValueError("make_parallel needs at least one keyword input to split, e.g. x=images.")
    sizes = {name: _batch_size(value) for name, value in inputs.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"inputs have different batch sizes {sizes}; they must match.")
    pieces = shard_sizes(next(iter(sizes.values())), len(devices))
    split = {name: tf.split(value, pieces) for name, value in inputs.items()}
    outputs = []
    for i, device in enumerate(devices):
        with tf.device(device), tf.name_scope(f"tower_{i}"):
            outputs.append(fn(**{name: parts[i] for name, parts in split.items()}))
    return tf.concat(outputs, axis=0)

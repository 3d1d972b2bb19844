"""Averaging gradients across towers, and all-reduce algorithms.

Introduced in lesson 03. Each tower computes the gradients of its own shard's
mean loss; averaging them (weighted by shard size when shards differ) gives the
gradient of the whole batch's mean loss, so N towers take the same step as one
device with the whole batch.

:func:`average_gradients` is the one to use. The three ``average_*`` functions
below it are the teaching versions from lesson 03: the three-GPU tutorial's expand_dims +
concat + mean, stack + mean, and add_n / N. They agree on dense gradients.
:func:`ring_all_reduce` sums one tensor per device the way NCCL's ring does (lesson 04).
"""

from __future__ import annotations

from dpkit.plumbing import checks


def _is_pair(item) -> bool:
    return isinstance(item, (tuple, list)) and len(item) == 2 and hasattr(item[1], "shape")


def _name(var) -> str:
    return getattr(var, "path", None) or getattr(var, "name", None) or repr(var)


def _check_weights(weights, num_towers: int) -> list[float] | None:
    if weights is None:
        return None
    weights = list(weights)
    if len(weights) != num_towers:
        raise ValueError(
            f"got {len(weights)} weights for {num_towers} towers; pass one weight per tower "
            "(e.g. its shard size, as towers.split_batch(..., weighted=True) returns)."
        )
    if any(not checks.is_real(w) or w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(
            f"weights must be non-negative numbers with a positive sum, got {weights}."
        )
    total = float(sum(weights))
    return [float(w) / total for w in weights]


def _sparse_mean(slices, fractions):
    """Weighted mean of IndexedSlices without making them dense.

    Concatenating the rows (scaled by each tower's fraction) gives a sparse
    tensor whose sum over repeated indices is the average. A linear update (SGD) sums the
    duplicates when it applies it; Adam does not (:func:`deduplicate`).
    """
    import tensorflow as tf  # here: calibrate (lesson 09) imports gradients without TF

    return tf.IndexedSlices(
        values=tf.concat([s.values * f for s, f in zip(slices, fractions)], axis=0),
        indices=tf.concat([s.indices for s in slices], axis=0),
        dense_shape=slices[0].dense_shape,
    )


def deduplicate(gradient):
    """An ``IndexedSlices`` with each index once, its rows summed (``tf.unique`` +
    ``tf.math.unsorted_segment_sum``); any other gradient unchanged.

    The sparse average of :func:`average_gradients` repeats a row for every tower that looked
    it up. Summing them is what the dense gradient holds, and what SGD's update does anyway;
    Keras 3's Adam instead squares each repeated row on its own (its second moment gets
    ``g1**2 + g2**2`` where the dense gradient gives ``(g1 + g2)**2``), a different step. So
    deduplicate a sparse gradient before an optimizer that is not linear in it (lesson 03).
    """
    import tensorflow as tf

    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    unique, position = tf.unique(gradient.indices)
    rows = tf.math.unsorted_segment_sum(gradient.values, position, tf.shape(unique)[0])
    return tf.IndexedSlices(rows, unique, gradient.dense_shape)


def _mean_of(grads, fractions, position: int, var_name: str):
    import tensorflow as tf  # here: calibrate (lesson 09) imports gradients without TF

    present = [g is not None for g in grads]
    if not any(present):
        return None  # the loss does not use this variable: nothing to apply
    if not all(present):
        missing = [i for i, p in enumerate(present) if not p]
        raise ValueError(
            f"gradient {position} ({var_name}) is None in tower(s) {missing} but not in the "
            "others; every tower must run the same model on its shard."
        )
    if all(isinstance(g, tf.IndexedSlices) for g in grads):
        return _sparse_mean(grads, fractions)
    # A mix of sparse and dense: make the sparse ones dense on purpose.
    dense = [tf.convert_to_tensor(g) for g in grads]
    shapes = {tuple(g.shape) for g in dense}
    if len(shapes) > 1:
        raise ValueError(
            f"gradient {position} ({var_name}) has different shapes in different towers "
            f"({sorted(shapes)}); the towers must share one set of variables."
        )
    if len(set(fractions)) == 1:  # equal shards: sum first, scale once
        return tf.add_n(dense) * fractions[0]
    return tf.add_n([g * f for g, f in zip(dense, fractions)])


def average_gradients(tower_grads, weights=None):
    """Average gradients across towers.

    Accepts both forms the sources use: a list (one entry per tower) of lists of
    ``(gradient, variable)`` pairs, as ``optimizer.compute_gradients`` returned in
    TF1, or a list of plain gradient lists, as ``tape.gradient`` returns, each tower's in
    the same variable order. ``weights`` (one per tower, e.g. shard sizes, normalised to sum
    to 1) weigh uneven splits; the default is the plain mean.

    Returns the same form as given. A gradient that is ``None`` in every tower stays
    ``None``; ``tf.IndexedSlices`` gradients stay sparse.
    """
    tower_grads = [list(t) for t in tower_grads]
    if not tower_grads:
        raise ValueError("average_gradients needs at least one tower's gradients, got none.")
    lengths = {len(t) for t in tower_grads}
    if len(lengths) > 1:
        raise ValueError(
            f"towers have different numbers of gradients ({[len(t) for t in tower_grads]}); "
            "each tower must differentiate the same list of variables."
        )
    num_towers = len(tower_grads)
    fractions = _check_weights(weights, num_towers) or [1.0 / num_towers] * num_towers
    first = tower_grads[0]
    pairs = bool(first) and _is_pair(first[0])
    if any(bool(t) and _is_pair(t[0]) != pairs for t in tower_grads):
        raise ValueError(
            "mix of (grad, var) pairs and plain gradients: pass one form for all towers."
        )

    averaged = []
    for position, entries in enumerate(zip(*tower_grads)):
        if pairs:
            grads = [g for g, _ in entries]
            var = entries[0][1]
            for tower, (_, other) in enumerate(entries):
                if other is not var:
                    raise ValueError(
                        f"position {position}: tower 0 has variable {_name(var)} but tower "
                        f"{tower} has {_name(other)}; towers must share their variables "
                        "(TF1: variable_scope(reuse=True); TF2: one model object)."
                    )
            averaged.append((_mean_of(grads, fractions, position, _name(var)), var))
        else:
            averaged.append(_mean_of(list(entries), fractions, position, f"#{position}"))
    return averaged


# --- Three teaching versions (lesson 03). Dense gradients, plain lists, equal weights. ---


def average_concat_mean(tower_grads):
    """The three-GPU tutorial's version: add a leading tower axis, concatenate, mean over it."""
    import tensorflow as tf  # here: calibrate (lesson 09) imports gradients without TF

    return [
        tf.reduce_mean(tf.concat([tf.expand_dims(g, 0) for g in grads], axis=0), axis=0)
        for grads in zip(*tower_grads)
    ]


def average_stack_mean(tower_grads):
    """``tf.stack`` does the expand_dims + concat in one op."""
    import tensorflow as tf  # here: calibrate (lesson 09) imports gradients without TF

    return [tf.reduce_mean(tf.stack(grads), axis=0) for grads in zip(*tower_grads)]


def average_add_n(tower_grads):
    """Sum with ``tf.add_n`` and divide: no (towers x ...) intermediate tensor."""
    import tensorflow as tf  # here: calibrate (lesson 09) imports gradients without TF

    return [tf.add_n(list(grads)) / len(grads) for grads in zip(*tower_grads)]


# --- All-reduce (lesson 04) ---


def ring_all_reduce(tensors, devices):
    """Sum one tensor per device with the ring algorithm; every device gets the sum.

    Each tensor is cut into N chunks. In N-1 *reduce-scatter* steps every device
    passes one chunk to its right-hand neighbour, which adds it to its own; then
    device i holds the complete sum of chunk (i + 1) mod N. In N-1 *all-gather*
    steps the completed chunks travel once more around the ring. Each device sends
    2(N-1)/N of the tensor in all, whatever N is. Returns N tensors, each the sum, the i-th
    placed on ``devices[i]``.
    """
    import numpy as np
    import tensorflow as tf  # here: calibrate (lesson 09) imports gradients without TF

    n = len(devices)
    if len(tensors) != n or n == 0:
        raise ValueError(f"need one tensor per device: got {len(tensors)} tensors, {n} devices.")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        raise ValueError(f"all tensors must have one shape to be summed, got {sorted(shapes)}.")
    shape = tensors[0].shape
    size = int(np.prod(shape)) if len(shape) else 1
    sizes = [len(part) for part in np.array_split(np.arange(size), n)]  # may include zeros
    chunks = []
    for device, tensor in zip(devices, tensors):
        with tf.device(device):
            chunks.append(tf.split(tf.reshape(tensor, [-1]), sizes))
    for step in range(n - 1):  # reduce-scatter
        sent = [chunks[i][(i - step) % n] for i in range(n)]
        for i in range(n):
            right, c = (i + 1) % n, (i - step) % n
            with tf.device(devices[right]):
                chunks[right][c] = chunks[right][c] + tf.identity(sent[i])
    for step in range(n - 1):  # all-gather
        sent = [chunks[i][(i + 1 - step) % n] for i in range(n)]
        for i in range(n):
            right, c = (i + 1) % n, (i + 1 - step) % n
            with tf.device(devices[right]):
                chunks[right][c] = tf.identity(sent[i])
    results = []
    for device, parts in zip(devices, chunks):
        with tf.device(device):
            results.append(tf.reshape(tf.concat(parts, axis=0), shape))
    return results


def all_reduce_seconds(
    algorithm: str,
    num_devices: int,
    message_bytes: float,
    link_bytes_per_sec: float,
    latency_sec: float = 0.0,
) -> float:
    """Time to all-reduce one message, by the bandwidth model of lesson 04.

    * ``"one_device"``: everyone sends to device 0, which sums and sends the result
      back: device 0's link carries 2(N-1) messages, one after another.
    * ``"ring"``: every link carries 2(N-1)/N of a message, all links at once,
      in 2(N-1) steps.

    ``link_bytes_per_sec`` is the bandwidth of one device's link; ``latency_sec`` is the
    fixed cost per step (per message sent).
    """
    if algorithm not in ("one_device", "ring"):
        raise ValueError(f"algorithm must be 'one_device' or 'ring', got {algorithm!r}.")
    if num_devices < 1 or message_bytes < 0 or link_bytes_per_sec <= 0:
        raise ValueError("need num_devices >= 1, message_bytes >= 0 and link_bytes_per_sec > 0.")
    n = num_devices
    if n == 1:
        return 0.0
    if algorithm == "one_device":
        return 2 * (n - 1) * (message_bytes / link_bytes_per_sec + latency_sec)
    return 2 * (n - 1) * (message_bytes / n / link_bytes_per_sec + latency_sec)

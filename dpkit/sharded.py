"""Sharded optimizer state, from scratch: the idea of ZeRO stage 1 (lesson 10).

Plain data parallelism keeps every optimizer slot on every device. Here the parameters,
flattened into one vector, are cut into N shards, and device c keeps the optimizer's slots
for shard c only. One step:

1. each replica computes the gradients of its share of the batch (divided by the global
   batch, so that they add up);
2. **reduce-scatter**: device c receives the sum of shard c of every replica's gradients
   (the first half of lesson 04's ring; each device sends (N-1)/N of the gradients);
3. device c updates its shard of the weights with its own optimizer;
4. **all-gather**: every device collects the N updated shards into its whole copy of the
   weights (the ring's second half).

The exchange moves the bytes of one all-reduce, and each device holds 1/N of the slots.
Device c updates its shard in a variable of its own, a float32 copy of 1/N of the weights
that the float32 replicas already hold: 4/N bytes per parameter more than the slots alone.
(In ZeRO, Rajbhandari et al. 2020, the replicas' weights are float16 and that float32 master
copy is part of the optimizer state it shards; here it is a duplicate.)
"""

from __future__ import annotations

import tensorflow as tf

from dpkit.plumbing import checks


def shard_sizes(num_values: int, num_shards: int) -> list[int]:
    """Sizes of ``num_shards`` contiguous shards of ``num_values`` values, as even as
    possible: the first ``num_values % num_shards`` shards hold one value more."""
    num_values = checks.whole(num_values, "num_values", 0, "the parameter count")
    n = checks.whole(num_shards, "num_shards", 1, "the device count")
    return [num_values // n + (1 if c < num_values % n else 0) for c in range(n)]


def flatten(tensors):
    """One float vector of every value of ``tensors``, in order."""
    return tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0)


def unflatten(vector, shapes) -> list:
    """Cut ``vector`` back into tensors of ``shapes`` (the inverse of :func:`flatten`)."""
    sizes = [int(tf.TensorShape(s).num_elements()) for s in shapes]
    if sum(sizes) != int(vector.shape[0]):
        raise ValueError(
            f"the vector holds {int(vector.shape[0])} values, the shapes {sum(sizes)}; pass the "
            "shapes it was flattened from."
        )
    return [tf.reshape(p, s) for p, s in zip(tf.split(vector, sizes), shapes)]


def reduce_scatter(vectors, devices, sizes) -> list:
    """Sum shard c of every vector on ``devices[c]``: returns N tensors, the c-th of
    ``sizes[c]`` values, placed on ``devices[c]``."""
    if not len(vectors) == len(devices) == len(sizes):
        raise ValueError(
            f"need one vector and one shard size per device: got {len(vectors)} vectors, "
            f"{len(devices)} devices, {len(sizes)} sizes."
        )
    pieces = [tf.split(v, sizes) for v in vectors]  # pieces[replica][shard]
    out = []
    for c, device in enumerate(devices):
        with tf.device(device):
            out.append(tf.add_n([tf.identity(p[c]) for p in pieces]))
    return out


def all_gather(shards, devices) -> list:
    """Every device's copy of the whole vector, shard c taken from ``shards[c]``: returns N
    vectors, the i-th placed on ``devices[i]``."""
    out = []
    for device in devices:
        with tf.device(device):
            out.append(tf.concat([tf.identity(s) for s in shards], axis=0))
    return out


class ZeroOne:
    """Data parallelism with the optimizer's slots sharded over the devices (ZeRO-1).

    Device c keeps its shard of the weights in a float32 variable of its own, which its
    optimizer updates and the all-gather reads (:meth:`shard_bytes`): with float32 replicas
    a duplicate of 1/N of the weights.

    Args:
        replicas: one Keras model per device, built on it, all with the same weights.
        devices: the devices, one per replica.
        make_optimizer: called once per device to make that device's optimizer (e.g.
            ``lambda: keras.optimizers.Adam(1e-3)``); device c's is built on shard c only.
    """

    def __init__(self, replicas, devices, make_optimizer):
        self.devices = checks.device_list(devices)
        if len(replicas) != len(self.devices):
            raise ValueError(f"need one replica per device: {len(replicas)} for {len(devices)}.")
        self.replicas = list(replicas)
        self.shapes = [v.shape for v in self.replicas[0].trainable_variables]
        start = flatten(self.replicas[0].trainable_variables)
        self.sizes = shard_sizes(int(start.shape[0]), len(self.devices))
        self.shards, self.optimizers = [], []
        for device, piece in zip(self.devices, tf.split(start, self.sizes)):
            with tf.device(device):
                shard = tf.Variable(piece, name="shard")
                optimizer = make_optimizer()
                optimizer.build([shard])
            self.shards.append(shard)
            self.optimizers.append(optimizer)

    def local_gradients(self, x, y, loss_fn) -> list:
        """Each replica's flattened gradients of its equal share of the batch ``x, y``,
        per-example losses (``loss_fn``, ``reduction=None``) summed over the global batch."""
        n, size = len(self.devices), int(x.shape[0])
        checks.divides(size, n, f"a batch of {size}", f"into {n} replicas")
        flats = []
        for replica, device, xs, ys in zip(
            self.replicas, self.devices, tf.split(x, n), tf.split(y, n)
        ):
            with tf.device(device), tf.GradientTape() as tape:
                loss = tf.reduce_sum(loss_fn(ys, replica(xs, training=True))) / size
                grads = tape.gradient(loss, replica.trainable_variables)
                flats.append(flatten(grads))
        return flats

    def step(self, x, y, loss_fn) -> None:
        """One training step on the global batch ``x, y``: local gradients, reduce-scatter,
        each shard updated by its own device's optimizer, all-gather into every replica."""
        summed = reduce_scatter(self.local_gradients(x, y, loss_fn), self.devices, self.sizes)
        for device, shard, optimizer, grad in zip(
            self.devices, self.shards, self.optimizers, summed
        ):
            with tf.device(device):
                optimizer.apply_gradients([(grad, shard)])
        for replica, device, whole in zip(
            self.replicas, self.devices, all_gather(self.shards, self.devices)
        ):
            with tf.device(device):
                for v, value in zip(replica.trainable_variables, unflatten(whole, self.shapes)):
                    v.assign(value)

    def slot_bytes(self) -> list[int]:
        """Bytes of optimizer slots each device holds."""
        from dpkit import memory

        return [memory.slot_bytes(o) for o in self.optimizers]

    def shard_bytes(self) -> list[int]:
        """Bytes of each device's copy of its shard of the weights."""
        from dpkit import memory

        return [memory.variable_bytes([s]) for s in self.shards]


def bytes_per_device(
    num_params: int, num_devices: int, stage: int = 1, per_parameter=(4, 4, 8), shard_copy=4
):
    """Bytes each device holds for ``num_params`` parameters when ZeRO stage ``stage``
    shards over ``num_devices``, before activations: stage 0 (plain data parallelism) shards
    nothing, stage 1 the optimizer's slots, stage 2 the gradients too, stage 3 the
    parameters too.

    ``per_parameter`` is (weights, gradients, optimizer state) in bytes per parameter: Adam
    in float32 by default. ``shard_copy`` is the bytes per parameter of the copy of its shard
    of the weights that each device's optimizer updates in stages 1 and 2, sharded like the
    slots: 4 for :class:`ZeroOne`'s float32 shard variable (in stage 3 the shard of the
    weights is that copy). ZeRO's own count (Rajbhandari et al. 2020, Figure 1) is mixed
    precision, ``per_parameter=(2, 2, 12), shard_copy=0``: its 12 bytes of optimizer state
    already hold the float32 master copy."""
    checks.whole(stage, "stage", 0, "1 for sharded optimizer state", maximum=3)
    n = checks.whole(num_devices, "num_devices", 1, "the device count")
    copy = checks.whole(shard_copy, "shard_copy", 0, "4 for a float32 copy, 0 for none")
    weights, grads, slots = per_parameter
    kept = (weights if stage < 3 else 0) + (grads if stage < 2 else 0) + (slots if stage < 1 else 0)
    sharded = weights + grads + slots - kept + (copy if stage in (1, 2) else 0)
    return checks.whole(num_params, "num_params", 0, "the parameter count") * (kept + sharded / n)

"""TensorFlow 1 graph-mode versions, for side-by-side runs with the TF2 code.

Introduced in lesson 02 (lesson 01 writes its TF1 graph inline first). Everything here
runs under ``tf.compat.v1`` in a graph of its own, so it does not disturb the notebook's
eager TF2 code.

* :func:`lenet5_tf1`: LeNet-5 with ``get_variable`` and raw ``tf.nn`` ops, as the
  sources' CIFAR-10 code writes models.
* :class:`TowerTrainer`: the three-GPU tutorial's multi-device trainer: the batch split with
  ``tf.split``, one tower per device under ``name_scope("tower_i")``, the variables
  shared through ``variable_scope`` reuse and pinned to a parameter device (the
  CPU), the towers' gradients averaged there and applied once.
* :func:`worker_graph`: one worker's graph under between-graph replication (lesson 07):
  variables on the ps tasks, plain or ``SyncReplicasOptimizer`` SGD.
"""

from __future__ import annotations

import tensorflow as tf

from dpkit.plumbing import checks

#: Op types that create variables; the device function sends them to the parameter device.
VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable")


def _layer(name, x, shape, init, conv, relu):
    v1 = tf.compat.v1
    with v1.variable_scope(name):
        if init is None:
            w = v1.get_variable("weights", shape, initializer=v1.glorot_uniform_initializer())
            b = v1.get_variable("biases", shape[-1:], initializer=v1.zeros_initializer())
        else:
            w = v1.get_variable("weights", initializer=tf.constant(init[0]))
            b = v1.get_variable("biases", initializer=tf.constant(init[1]))
        y = tf.nn.conv2d(x, w, strides=1, padding="SAME") if conv else tf.matmul(x, w)
        y = tf.nn.bias_add(y, b)
        return tf.nn.relu(y) if relu else y


def lenet5_tf1(images, weights=None, num_classes: int = 10):
    """LeNet-5 logits in TF1 style; same layout and variable order as ``models.lenet5``.

    ``images`` is ``[batch, height, width, channels]`` (height and width divisible by 4);
    ``weights``, 8 arrays (``keras_model.get_weights()``), to start from (default:
    Glorot-uniform weights and zero biases). The variables are ``conv1/weights``,
    ``conv1/biases``, ... ``logits/biases``.
    """
    _, h, w, c = images.shape
    init = [None] * 4 if weights is None else [weights[i : i + 2] for i in range(0, 8, 2)]
    x = _layer("conv1", images, [5, 5, c, 32], init[0], conv=True, relu=True)
    x = tf.nn.max_pool2d(x, 2, 2, "VALID")
    x = _layer("conv2", x, [5, 5, 32, 64], init[1], conv=True, relu=True)
    x = tf.nn.max_pool2d(x, 2, 2, "VALID")
    flat = (h // 4) * (w // 4) * 64
    x = tf.reshape(x, [-1, flat])
    x = _layer("fc1", x, [flat, 512], init[2], conv=False, relu=True)
    return _layer("logits", x, [512, num_classes], init[3], conv=False, relu=False)


def assign_to_device(device: str, ps_device: str = "/device:CPU:0"):
    """A device function: variables go to ``ps_device``, every other op to ``device``."""

    def place(op):
        node = op if hasattr(op, "type") else op.node_def
        return ps_device if node.type in VARIABLE_OPS else device

    return place


class TowerTrainer:
    """The sources' TF1 multi-device trainer, built in a graph of its own.

    Use as a context manager (it owns a ``Session``), or call :meth:`close`. One tower per
    device of ``devices``; ``global_batch_size`` divisible by their number;
    ``initial_weights``: a Keras model's weights to start from; ``optimizer``: ``"sgd"``
    (``GradientDescentOptimizer``) or ``"adam"`` (``AdamOptimizer``); ``ps_device``: where
    the variables and the averaging live; ``model_fn(images, weights, num_classes) ->
    logits``: default :func:`lenet5_tf1`.
    """

    def __init__(
        self,
        devices,
        global_batch_size: int,
        *,
        input_shape=(28, 28, 1),
        num_classes: int = 10,
        initial_weights=None,
        optimizer: str = "sgd",
        learning_rate: float = 0.01,
        ps_device: str = "/device:CPU:0",
        model_fn=None,
    ):
        from dpkit import gradients, towers

        devices = checks.device_list(devices)
        towers.shard_sizes(global_batch_size, len(devices))  # raises if it does not divide
        checks.one_of(optimizer, ("sgd", "adam"), "optimizer")
        v1 = tf.compat.v1
        model_fn = model_fn or lenet5_tf1
        self.devices = devices
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.images = v1.placeholder(tf.float32, [global_batch_size, *input_shape], "images")
            self.labels = v1.placeholder(tf.int32, [global_batch_size], "labels")
            with tf.device(ps_device):
                image_shards = tf.split(self.images, len(devices))
                label_shards = tf.split(self.labels, len(devices))
                self.global_step = v1.train.get_or_create_global_step()
                optimizers = {
                    "sgd": v1.train.GradientDescentOptimizer,
                    "adam": v1.train.AdamOptimizer,
                }
                opt = optimizers[optimizer](learning_rate)
            tower_grads, self.tower_losses = [], []
            for i, device in enumerate(devices):
                with v1.device(assign_to_device(device, ps_device)), tf.name_scope(f"tower_{i}"):
                    # Tower 0 creates the variables; the others reuse them.
                    with v1.variable_scope(v1.get_variable_scope(), reuse=i > 0):
                        logits = model_fn(image_shards[i], initial_weights, num_classes)
                    xent = tf.nn.sparse_softmax_cross_entropy_with_logits
                    loss = tf.reduce_mean(xent(labels=label_shards[i], logits=logits))
                    tower_grads.append(opt.compute_gradients(loss))
                self.tower_losses.append(loss)
            with tf.device(ps_device), tf.name_scope("average"):
                averaged = gradients.average_gradients(tower_grads)
                self.train_op = opt.apply_gradients(averaged, global_step=self.global_step)
                self.loss = tf.add_n(self.tower_losses) / len(devices)
            self.variables = v1.trainable_variables()
            init = v1.global_variables_initializer()
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)

    def step(self, x, y) -> float:
        """One training step on a global batch; returns the towers' mean loss."""
        _, loss = self.session.run([self.train_op, self.loss], {self.images: x, self.labels: y})
        return float(loss)

    def weights(self):
        """The current values of the trainable variables, in creation order."""
        return self.session.run(self.variables)

    def placement(self) -> dict[str, str]:
        """Device of every op in the graph, by op name (what the placement log would show)."""
        return {op.name: op.device for op in self.graph.get_operations()}

    def close(self) -> None:
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def worker_graph(cluster: dict, index: int, model, learning_rate: float, sync: bool, replicas=0):
    """One worker's TF1 graph under between-graph replication (the ``tf1`` program of lesson
    07, ``task --tf1`` of lesson 08): the variables on the ps, the computation on worker ``index``.

    ``model()``, called under ``replica_device_setter``, makes the variables and returns the
    loss, which plain SGD minimises, wrapped in ``SyncReplicasOptimizer`` if ``sync`` (one
    update per round of ``replicas`` gradients; ``0``: one from each worker). Returns
    ``(global_step, loss, optimizer, train_op)``.
    """
    v1 = tf.compat.v1
    device = v1.train.replica_device_setter(
        worker_device=f"/job:worker/task:{index}", cluster=tf.train.ClusterSpec(cluster)
    )
    with v1.device(device):
        global_step = v1.train.get_or_create_global_step()
        loss = model()
        opt = v1.train.GradientDescentOptimizer(learning_rate)
        if sync:
            workers = len(cluster["worker"])
            opt = v1.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=replicas or workers, total_num_replicas=workers
            )
        train_op = opt.minimize(loss, global_step=global_step)
    return global_step, loss, opt, train_op

"""Gradient accumulation under a strategy: k micro-batches, one update (lesson 10).

A global batch too big for the devices' memory is cut into ``k`` micro-batches. Each replica
adds up the gradients of its share of every micro-batch in variables of its own, with no
exchange of gradients; after the k-th the optimizer applies the sums once, so the replicas
all-reduce the gradients once per k micro-batches. (The micro-step returns the micro-batch's
loss summed over the replicas, ``strategy.reduce``: one number per replica copied across
devices each micro-step.) Each micro-batch's loss is divided by the whole
batch (``k`` times the micro-batch), so the sum is the gradient of the whole batch's mean
loss and the step is the one a device holding the whole batch would take.
"""

from __future__ import annotations

import tensorflow as tf

from dpkit.plumbing import checks


def make_accumulating_steps(strategy, model, optimizer, loss_fn, micro_batch_size: int, k: int):
    """Two ``tf.function`` steps for ``model`` under ``strategy``: ``micro_step(x, y)`` adds
    the gradients of one distributed micro-batch (of ``micro_batch_size`` examples over all
    replicas) to each replica's accumulators, and ``apply_step()`` applies the sums with
    ``optimizer`` (one all-reduce) and zeroes them. Call ``micro_step`` ``k`` times, then
    ``apply_step`` once. ``loss_fn(labels, logits)`` returns per-example losses
    (``reduction=None``). ``micro_step`` returns the micro-batch's loss summed over the
    replicas (a ``strategy.reduce``: a cross-device copy of one number per replica).

    Returns:
        ``(micro_step, apply_step, accumulators)``: the accumulators are sync-on-read
        variables, one per trainable variable, each replica holding its own sums.
    """
    micro_batch_size = checks.whole(micro_batch_size, "micro_batch_size", 1, "e.g. 48")
    k = checks.whole(k, "k", 1, "e.g. 4 micro-batches per step")
    variables = model.trainable_variables
    with strategy.scope():
        accumulators = [
            tf.Variable(
                tf.zeros(v.shape, v.dtype),
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
            )
            for v in variables
        ]
        if not optimizer.built:
            optimizer.build(variables)

    def replica_micro(x, y):
        with tf.GradientTape() as tape:
            per_example = loss_fn(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=k * micro_batch_size)
        for acc, g in zip(accumulators, tape.gradient(loss, variables)):
            acc.assign_add(g)  # this replica's copy only: no gradient leaves it
        return loss

    def replica_apply():
        sums = [tf.identity(acc) for acc in accumulators]  # this replica's own sums
        optimizer.apply_gradients(zip(sums, variables))  # the one all-reduce
        for acc in accumulators:
            acc.assign(tf.zeros_like(acc))

    @tf.function
    def micro_step(x, y):
        return strategy.reduce("SUM", strategy.run(replica_micro, args=(x, y)), axis=None)

    @tf.function
    def apply_step():
        strategy.run(replica_apply)

    return micro_step, apply_step, accumulators


def collective_ops(function, *args) -> int:
    """How many all-reduce ops (TensorFlow's collective reduce, NCCL's all-reduce) the
    ``tf.function`` ``function`` holds when traced for ``args``, in its graph and every
    function it calls."""
    graph_def = function.get_concrete_function(*args).graph.as_graph_def()
    nodes = list(graph_def.node)
    for f in graph_def.library.function:
        nodes.extend(f.node_def)
    return sum(1 for n in nodes if "AllReduce" in n.op or n.op.startswith("CollectiveReduce"))

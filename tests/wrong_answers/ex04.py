"""Wrong answers for exercises/04_all_reduce_and_mirrored.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "04_all_reduce_and_mirrored.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "regularisation added whole in every replica"

# Answer 1, the body of dataset_fn(input_context), as the solution writes it.
_DATASET = """
per_replica = {per_replica}
dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = {shard}
return {batch}
"""
_PER_REPLICA = "input_context.get_per_replica_batch_size(global_batch_size)"
_SHARD = "dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)"


def _dataset(per_replica=_PER_REPLICA, shard=_SHARD, batch="dataset.batch(per_replica)") -> str:
    return _DATASET.format(per_replica=per_replica, shard=shard, batch=batch)


# Answer 2, the body of make_train_step, as the solution writes it.
_STEP = """
def replica_step(x, y):
    with tf.GradientTape() as tape:
        per_example = per_example_loss(y, model(x, training=True))
        loss = {loss}
        loss += {l2}
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

@tf.function
def train_step(x, y):
    per_replica = strategy.run(replica_step, args=(x, y))
    return {reduce}

return train_step
"""
_LOSS = "tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)"
_L2 = "tf.nn.scale_regularization_loss(model.losses)"
_SUM = 'strategy.reduce("SUM", per_replica, axis=None)'


def _step(loss=_LOSS, l2=_L2, reduce=_SUM) -> str:
    return _STEP.format(loss=loss, l2=l2, reduce=reduce)


WRONG: list[Wrong] = [
    # 1. dataset_fn(input_context)
    Wrong(
        1,
        "no sharding",
        _dataset(shard="dataset"),
        check="1",
        expect=r"2 input pipeline\(s\), examples \[0, 1, .* came 2 times in one epoch: each "
        r"pipeline must keep only its shard",
    ),
    Wrong(
        1,
        "the global batch as the per-replica batch",
        _dataset(per_replica="global_batch_size"),
        check="1",
        expect=r"2 replica\(s\) and 1 input pipeline\(s\), pipeline 0: your batches hold "
        r"\[12, 12, 5\] examples; each replica's batch is 12 / 2 = 6",
    ),
    Wrong(
        1,
        "sharded by the replicas",
        _dataset(
            shard="dataset.shard(input_context.num_replicas_in_sync, "
            "input_context.input_pipeline_id)"
        ),
        check="1",
        expect=r"2 replica\(s\) and 1 input pipeline\(s\), 14 of 29 examples never came .*"
        r"shard by the input pipelines",
    ),
    Wrong(
        1,
        "a worker's batch: the global batch over the pipelines",
        _dataset(per_replica="global_batch_size // input_context.num_input_pipelines"),
        check="1",
        expect=r"2 replica\(s\) and 1 input pipeline\(s\), pipeline 0: your batches hold "
        r"\[12, 12, 5\]",
    ),
    Wrong(
        1,
        "last short batch dropped",
        _dataset(batch="dataset.batch(per_replica, drop_remainder=True)"),
        check="1",
        expect=r"1 replica\(s\) and 1 input pipeline\(s\), 5 of 29 examples never came .*"
        r"keep the last short batch",
    ),
    Wrong(
        1,
        "repeated for ever",
        _dataset(batch="dataset.batch(per_replica).repeat()"),
        check="1",
        expect=r"your dataset goes on past 87 examples, from 29: give one epoch",
    ),
    Wrong(
        1,
        "shuffled without a seed before the shard",
        _dataset(
            shard="dataset.shuffle(100).shard(input_context.num_input_pipelines, "
            "input_context.input_pipeline_id)"
        ),
        check="1",
        expect=r"2 input pipeline\(s\), examples .* came 2 times in one epoch: each pipeline "
        r"must keep only its shard.*a shuffle before the shard needs a seed",
    ),
    Wrong(
        1,
        "the notebook's GLOBAL_BATCH_SIZE, not the argument",
        _dataset(per_replica="GLOBAL_BATCH_SIZE // input_context.num_replicas_in_sync"),
        check="1",
        expect=r"global batch of 12, 1 replica\(s\) and 1 input pipeline\(s\), pipeline 0: "
        r"your batches hold \[29\] examples; each replica's batch is 12 / 1 = 12",
    ),
    Wrong(
        1,
        "labels shuffled apart from their features",
        """
        per_replica = input_context.get_per_replica_batch_size(global_batch_size)
        xs = tf.data.Dataset.from_tensor_slices(features).shuffle(100, seed=1)
        ys = tf.data.Dataset.from_tensor_slices(labels).shuffle(100, seed=2)
        dataset = tf.data.Dataset.zip((xs, ys))
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return dataset.batch(per_replica)
        """,
        check="1",
        expect=r"a batch's features do not belong to its labels",
    ),
    Wrong(
        1,
        "not batched",
        _dataset(batch="dataset"),
        check="1",
        expect=r"an element has labels of shape \(\), .*: batch the examples",
    ),
    # found by the red team (answers the check was not designed for)
    Wrong(
        1,
        "shard's arguments swapped",
        _dataset(
            shard="dataset.shard(input_context.input_pipeline_id, "
            "input_context.num_input_pipelines)"
        ),
        check="1",
        expect=r"pipeline 0, your dataset_fn raised InvalidArgumentError: .*num_shards = 0",
    ),
    Wrong(
        1,
        "a contiguous slice per pipeline",
        """
        per_replica = input_context.get_per_replica_batch_size(global_batch_size)
        n = len(labels) // input_context.num_input_pipelines
        part = slice(input_context.input_pipeline_id * n, (input_context.input_pipeline_id + 1) * n)
        dataset = tf.data.Dataset.from_tensor_slices((features[part], labels[part]))
        return dataset.batch(per_replica)
        """,
        check="1",
        expect=r"2 input pipeline\(s\), 1 of 29 examples never came \(e\.g\. \[28\]\)",
    ),
    # found by the second red team
    Wrong(
        1,
        "the pair given as (labels, features)",
        """
        per_replica = input_context.get_per_replica_batch_size(global_batch_size)
        dataset = tf.data.Dataset.from_tensor_slices((labels, features))
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return dataset.batch(per_replica)
        """,
        check="1",
        expect=r"pipeline 0: your pairs are \(labels, features\): give \(features, labels\)",
    ),
    Wrong(
        1,
        "an auto-shard option instead of shard",
        """
        per_replica = input_context.get_per_replica_batch_size(global_batch_size)
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        options = tf.data.Options()
        policy = tf.data.experimental.AutoShardPolicy.DATA
        options.experimental_distribute.auto_shard_policy = policy
        return dataset.with_options(options).batch(per_replica)
        """,
        check="1",
        expect=r"2 input pipeline\(s\), examples .* came 2 times in one epoch: each pipeline "
        r"must keep only its shard",
    ),
    # 2. make_train_step(strategy, model, optimizer, global_batch_size)
    Wrong(
        2,
        "reduce_mean instead of compute_average_loss",
        _step(loss="tf.reduce_mean(per_example)"),
        check="2",
        expect=r"with 2 replica\(s\) taking \[2, 5\] of a global batch of 7, step 1: your "
        r"weights differ .*each replica divided its loss by its own batch",
    ),
    Wrong(
        2,
        "global_batch_size set to the replica's batch",
        _step(
            loss="tf.nn.compute_average_loss(per_example, "
            "global_batch_size=tf.shape(per_example)[0])"
        ),
        check="2",
        expect=r"with 2 replica\(s\) .*each replica divided its loss by its own batch",
    ),
    Wrong(
        2,
        "regularisation added whole in every replica",
        _step(l2="tf.add_n(model.losses)"),
        check="2",
        expect=r"with 2 replica\(s\) .*the L2 terms counted 2\.00 times, once per replica",
    ),
    Wrong(
        2,
        "the replicas' losses reduced with MEAN",
        _step(reduce='strategy.reduce("MEAN", per_replica, axis=None)'),
        check="2",
        expect=r"with 2 replica\(s\) .*step 1: your step returned a loss of .*reduce them with SUM",
    ),
    Wrong(
        2,
        "compute_average_loss without the global batch",
        _step(loss="tf.nn.compute_average_loss(per_example)"),
        check="2",
        expect=r"with 2 replica\(s\) .*compute_average_loss without global_batch_size",
    ),
    Wrong(
        2,
        "the notebook's GLOBAL_BATCH_SIZE, not the argument",
        _step(loss="tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH_SIZE)"),
        check="2",
        expect=r"with 1 replica\(s\) .*the cross-entropy moved the weights 0\.10 times as far",
    ),
    Wrong(
        2,
        "no regularisation",
        _step(l2="0.0"),
        check="2",
        expect=r"with 1 replica\(s\) .*the L2 terms did not move the weights",
    ),
    Wrong(
        2,
        "one loss per replica returned",
        _step(reduce="per_replica"),
        check="2",
        expect=r"with 2 replica\(s\) .*your step returned one loss per replica",
    ),
    Wrong(
        2,
        "dpkit's make_mirrored_train_step",
        """
        from dpkit import towers

        return towers.make_mirrored_train_step(model, optimizer, strategy, global_batch_size)
        """,
        check="2",
        expect=r"your code calls dpkit's towers.make_mirrored_train_step",
    ),
    # found by the red team
    Wrong(
        2,
        "gradients all-reduced by hand before apply_gradients",
        _step().replace(
            "    optimizer.apply_gradients(",
            '    grads = tf.distribute.get_replica_context().all_reduce("SUM", grads)\n'
            "    optimizer.apply_gradients(",
        ),
        check="2",
        expect=r"with 2 replica\(s\) .*the whole step went 2\.00 times as far as one "
        r"device's: look for gradients summed twice",
    ),
    Wrong(
        2,
        "L2 terms added after the tape",
        """
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                per_example = per_example_loss(y, model(x, training=True))
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss + tf.nn.scale_regularization_loss(model.losses)

        @tf.function
        def train_step(x, y):
            return strategy.reduce("SUM", strategy.run(replica_step, args=(x, y)), axis=None)

        return train_step
        """,
        check="2",
        expect=r"with 1 replica\(s\) .*the L2 terms did not move the weights",
    ),
    # found by the second red team
    Wrong(
        2,
        "the L2 terms added to every example's loss",
        _step(
            loss="tf.nn.compute_average_loss(per_example + tf.add_n(model.losses), "
            "global_batch_size=global_batch_size)",
            l2="0.0",
        ),
        check="2",
        expect=r"with 1 replica\(s\) .*step 3 \(the epoch's last batch, short: \[3\], 3 examples\)"
        r": your weights differ .*add the L2 terms once, apart from them",
    ),
    Wrong(
        2,
        "one device's step on the gathered batch, outside strategy.run",
        """
        @tf.function
        def train_step(x, y):
            x = tf.concat(strategy.experimental_local_results(x), axis=0)
            y = tf.concat(strategy.experimental_local_results(y), axis=0)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(per_example_loss(y, model(x, training=True)))
                loss += tf.add_n(model.losses)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return train_step
        """,
        check="2",
        expect=r"with 1 replica\(s\) .*step 1, your step ran the model outside strategy\.run",
    ),
    Wrong(
        2,
        "dpkit's make_accumulating_steps with one micro-batch",
        """
        from dpkit import accumulation

        def with_l2(labels, logits):
            return per_example_loss(labels, logits) + tf.add_n(model.losses)

        micro_step, apply_step, _ = accumulation.make_accumulating_steps(
            strategy, model, optimizer, with_l2, global_batch_size, 1
        )

        def train_step(x, y):
            loss = micro_step(x, y)
            apply_step()
            return loss

        return train_step
        """,
        check="2",
        expect=r"your code calls dpkit's accumulation\.make_accumulating_steps",
    ),
    Wrong(
        2,
        "a Keras loss left to its own reduction",
        _step(
            loss="keras.losses.SparseCategoricalCrossentropy(from_logits=True)"
            "(y, model(x, training=True))"
        ),
        check="2",
        expect=r"with 2 replica\(s\) .*a Keras loss left to its own reduction",
    ),
    Wrong(
        2,
        "the global batch as the replica's batch times the replicas",
        _step(
            loss="tf.reduce_sum(per_example) / tf.cast("
            "tf.shape(per_example)[0] * strategy.num_replicas_in_sync, tf.float32)"
        ),
        check="2",
        expect=r"with 2 replica\(s\) taking \[2, 5\] .*which is the global batch only when the "
        r"shares are equal",
    ),
    # issue 46: the check's model has no Dropout; its first layer records the training flag
    Wrong(
        2,
        "the model called without training=True",
        _step().replace("model(x, training=True)", "model(x)"),
        check="2",
        expect=r"with 1 replica\(s\) taking \[5\] of a global batch of 5, step 1, your step "
        r"called the model with training=None",
    ),
    Wrong(
        2,
        "the model called with training=False",
        _step().replace("model(x, training=True)", "model(x, training=False)"),
        check="2",
        expect=r"step 1, your step called the model with training=False: a training step calls "
        r"model\(x, training=True\)",
    ),
]

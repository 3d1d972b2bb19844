"""Check 2b of exercise 08, in a fresh process with three logical CPUs (the rehearsal's
MirroredStrategy over 2 and 3 of them), with real worker processes after it: a correct answer
written here passes, through the rehearsal and then two MultiWorkerMirroredStrategy workers;
wrong ones fail with a message that names the mistake, in the rehearsal (no worker process
started) or, for a step applied on the chief only by the cluster's task id, in the workers;
no worker is left running. The checks that start no process:
tests/unit/test_exercise_checks_ex08.py."""

from __future__ import annotations

import keras
import tensorflow as tf

from tests.support import childproc


def dataset_fn(input_context, x, y, global_batch):
    examples = tf.data.Dataset.from_tensor_slices((x, y))
    mine = examples.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return mine.batch(input_context.get_per_replica_batch_size(global_batch))


def unsharded(input_context, x, y, global_batch):
    per_replica = input_context.get_per_replica_batch_size(global_batch)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(per_replica)


def replica_step(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def own_share(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example)  # its share times the replicas
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def no_training_flag(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        per_example = keras.losses.sparse_categorical_crossentropy(y, model(x), from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def worker_mean(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.reduce_mean(per_example)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def two_typed_in(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.reduce_sum(per_example) / tf.cast(2 * tf.shape(x)[0], tf.float32)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def replica_zero(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    grads = tape.gradient(loss, model.trainable_variables)
    if tf.distribute.get_replica_context().replica_id_in_sync_group == 0:
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def own_gradients(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    grads = tape.gradient(loss, model.trainable_variables)
    for variable, grad in zip(model.trainable_variables, grads):
        variable.assign_sub(optimizer.learning_rate * grad)
    return loss


def chief_only(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    grads = tape.gradient(loss, model.trainable_variables)
    if tf.distribute.get_strategy().cluster_resolver.task_id == 0:
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


#: name -> (dataset_fn, replica_step, whether worker processes run, what the check says)
CASES = {
    "right": ("dataset_fn", "replica_step", True, r"^passed: Check 2b passed$"),
    "per-worker mean": ("dataset_fn", "worker_mean", False, r"moved twice as far as one device"),
    "unsharded": ("unsharded", "replica_step", False, r"both workers trained on the same"),
    "2 typed in": ("dataset_fn", "two_typed_in", False, r"3 workers.*1\.5 times as far"),
    "replica 0 only": ("dataset_fn", "replica_zero", False, r"inside control flow"),
    "own gradients": ("dataset_fn", "own_gradients", False, r"worker 1's weights vs worker 0's"),
    "chief only": ("dataset_fn", "chief_only", True, r"collectives did not match.*chief only"),
    "own share": ("dataset_fn", "own_share", False, r"taking \[7, 3\].*own batch times the"),
    "no training flag": ("dataset_fn", "no_training_flag", False, r"with training=None"),
}


def test_two_workers_rehearse_then_run_two_processes():
    import re

    out = childproc.run(
        f"""
        import json
        from dpkit import devices
        setup = devices.setup(3)
        from dpkit_checks import ex08, workers
        from dpkit.plumbing import procs
        from tests.course import test_exercise_checks_ex08 as answers

        started, real = [], workers._two_processes
        def counted(*args):
            started.append(1)
            return real(*args)
        workers._two_processes = counted
        out = {{}}
        for name, (data, step, _, _) in {CASES!r}.items():
            before = len(started)
            try:
                said = "passed: " + ex08.check_two_workers(
                    getattr(answers, data), getattr(answers, step), setup.devices
                )
            except AssertionError as error:
                said = str(error)
            out[name] = [said, len(started) > before]
        out["live"] = procs.live()
        print(json.dumps(out))
        """,
        timeout=600,
    )
    for name, (_, _, processes, message) in CASES.items():
        said, started = out[name]
        assert re.search(message, said), f"{name}: {said}"
        assert started == processes, f"{name}: worker processes started: {started}"
    assert out["live"] == []

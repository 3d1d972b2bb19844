"""Check 2b of exercise 08 with real worker processes: two MultiWorkerMirroredStrategy workers
pass a correct answer written here, and fail wrong ones (a per-worker mean, an unsharded
input, gradients applied on the chief only) with a message that names the mistake; no worker
is left running. The checks that start no process: tests/unit/test_exercise_checks_ex08.py."""

from __future__ import annotations

import keras
import pytest
import tensorflow as tf

from dpkit.exercises import ex08
from dpkit.plumbing import procs


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


def worker_mean(model, optimizer, x, y, global_batch):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.reduce_mean(per_example)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
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


def test_two_workers_pass_a_correct_answer():
    assert ex08.check_two_workers(dataset_fn, replica_step) == "Check 2b passed"
    assert not procs.live()


@pytest.mark.parametrize(
    "data, step, message",
    [
        (dataset_fn, worker_mean, r"moved twice as far as one device's"),
        (unsharded, replica_step, r"both workers trained on the same examples"),
        (dataset_fn, chief_only, r"collectives did not match.*not on the chief only"),
    ],
    ids=["per-worker mean", "unsharded", "chief only"],
)
def test_two_workers_fail_wrong_answers(data, step, message):
    with pytest.raises(AssertionError, match=message):
        ex08.check_two_workers(data, step)
    assert not procs.live()

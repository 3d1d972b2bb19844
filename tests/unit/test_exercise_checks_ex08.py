"""The checks of exercise 08 that start no process: each passes a correct answer written here
and fails wrong ones with a message that names the mistake. Check 2b, which starts two
worker processes, is tested in tests/course/test_exercise_checks_ex08.py; its float64
reference is tested here against Keras on one device."""

from __future__ import annotations

import os
import shlex

import pytest

from dpkit import checking
from dpkit_checks import ex08, workers


def _lines(hosts, extra_flags, join=shlex.join):
    jobs = {job: addresses for job, addresses in hosts.items() if addresses}
    flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
    return [
        join(
            ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={i}"]
            + flags
            + extra_flags
        )
        for job, addresses in jobs.items()
        for i in range(len(addresses))
    ]


def good_commands(hosts, extra_flags=()):
    return _lines(hosts, list(extra_flags))


def test_shell_commands_passes_a_correct_answer():
    assert ex08.check_shell_commands(good_commands) == "Check 1 passed"


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda hosts, extra_flags=(): _lines(hosts, [] + extra_flags), r"raised TypeError"),
        (
            lambda hosts, extra_flags=(): _lines(hosts, list(extra_flags), join=" ".join),
            r"splits '--logdir=/shared/runs/run 2' at its spaces",
        ),
        (
            lambda hosts, extra_flags=(): _lines(
                hosts, list(extra_flags), join=lambda w: " ".join(f'"{x}"' for x in w)
            ),
            r"a shell acts on '\$'",
        ),
        (
            lambda hosts, extra_flags=(): _lines(
                hosts,
                list(extra_flags),
                join=lambda w: " ".join(shlex.quote(x) if " " in x else x for x in w),
            ),
            r"a shell acts on '\['",
        ),
    ],
    ids=["list+tuple", "unquoted", "double quotes", "only spaces quoted"],
)
def test_shell_commands_fails_wrong_answers(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex08.check_shell_commands(answer)


def test_the_shell_reader_sees_what_a_shell_acts_on():
    assert ex08._unquoted("a '[x]' \"y z\" \\$HOME") == ""
    assert ex08._unquoted('a "$HOME" [b] c;d') == "$[;"


def good_dataset_fn(input_context, x, y, global_batch):
    import tensorflow as tf

    examples = tf.data.Dataset.from_tensor_slices((x, y))
    mine = examples.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return mine.batch(input_context.get_per_replica_batch_size(global_batch))


def batch_then_shard(input_context, x, y, global_batch):  # also right: DATA auto-sharding's way
    import tensorflow as tf

    per_replica = input_context.get_per_replica_batch_size(global_batch)
    batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(per_replica)
    return batches.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)


def unsharded(input_context, x, y, global_batch):
    import tensorflow as tf

    per_replica = input_context.get_per_replica_batch_size(global_batch)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(per_replica)


def by_replica(input_context, x, y, global_batch):
    import tensorflow as tf

    examples = tf.data.Dataset.from_tensor_slices((x, y))
    mine = examples.shard(input_context.num_replicas_in_sync, input_context.input_pipeline_id)
    return mine.batch(input_context.get_per_replica_batch_size(global_batch))


def two_typed_in(input_context, x, y, global_batch):
    import tensorflow as tf

    examples = tf.data.Dataset.from_tensor_slices((x, y))
    mine = examples.shard(2, input_context.input_pipeline_id)
    return mine.batch(global_batch // 2)


@pytest.mark.parametrize("answer", [good_dataset_fn, batch_then_shard])
def test_dataset_fn_passes_correct_answers(answer):
    assert ex08.check_dataset_fn(answer) == "Check 2a passed"


@pytest.mark.parametrize(
    "answer, message",
    [
        (unsharded, r"2 workers.*both workers read the same examples \[0, 1, 2, 3, 4\]"),
        (by_replica, r"2 replica\(s\) each.*hold \[3, 3\] batches"),
        (two_typed_in, r"3 workers.*failed for input pipeline 2: InvalidArgumentError"),
    ],
    ids=["unsharded", "by replica", "two workers typed in"],
)
def test_dataset_fn_fails_wrong_answers(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex08.check_dataset_fn(answer)


def test_the_two_worker_reference_is_keras_sgd_on_one_device():
    import keras

    x, y, w, b = workers._problem()
    x, y = x[: workers._BATCH * workers._STEPS], y[: workers._BATCH * workers._STEPS]
    model = keras.Sequential(
        [keras.Input((workers._FEATURES,)), keras.layers.Dense(workers._CLASSES)]
    )
    model.set_weights([w, b])
    model.compile(
        optimizer=keras.optimizers.SGD(workers._LR),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    losses = []
    reference = workers._sgd(x, y, w, b, workers._BATCH, workers._LR, 1, losses=losses)
    first = model.evaluate(x[: workers._BATCH], y[: workers._BATCH], verbose=0)
    assert checking.agree(first, losses[0]), "the reference's loss is Keras's, before the step"
    model.fit(x, y, batch_size=workers._BATCH, epochs=1, shuffle=False, verbose=0)
    reference = workers._sgd(x, y, w, b, workers._BATCH, workers._LR, workers._STEPS)
    assert checking.agree(model.get_weights(), reference, ulps=1024)
    moved = checking.agree([w, b], reference, ulps=1024)
    assert not moved, "the reference should move the weights far from where they started"


def test_the_rehearsal_varies_what_the_notebook_fixes():
    """Its models' classes are not the demo's 3 and differ between the rehearsals; its
    unequal shares fill the global batch, so that a replica's own batch times the replicas
    is not the global batch; and the reference of that step tells the two apart."""
    import numpy as np

    classes = [workers._CLASSES_OF[n] for n in workers._REHEARSED]
    assert 3 not in classes and len(set(classes)) == len(classes)
    for n, shares in workers._SHARES.items():
        assert len(shares) == n and sum(shares) == n * workers._PER_WORKER
        assert len(set(shares)) > 1
    x, y, w, b = workers._problem(5)
    assert w.shape == (workers._FEATURES, 5) and b.shape == (5,) and 0 <= y.min() <= y.max() < 5
    plain = workers._sgd(x, y, w, b, 10, workers._LR, 1)
    mean = workers._sgd(x, y, w, b, 10, workers._LR, 1, weights=np.full(10, 0.1))
    assert checking.agree(mean, plain)
    own = np.repeat([1 / (7 * 2), 1 / (3 * 2)], [7, 3])
    assert not checking.agree(workers._sgd(x, y, w, b, 10, workers._LR, 1, weights=own), plain)


def test_a_failed_worker_is_told_what_to_look_at():
    from dpkit.plumbing import procs

    said = workers._failure(
        procs.TaskFailedError(
            "task worker:1 failed (exit code 1); its stderr:\nTraceback ...\n"
            "tensorflow.python.framework.errors_impl.InternalError: Graph execution error:\n"
            "Collective ops is aborted by: Collective instance 105 expected type 0\\nmore"
        )
    )
    assert "InternalError: Graph execution error: (Collective instance 105" in str(said)
    assert "not on the chief only" in str(said)
    said = workers._failure(procs.TaskFailedError("x\nNameError: name 'N' is not defined"))
    assert "nothing else from the notebook" in str(said)


def test_a_failed_rehearsal_names_the_mistake_or_leaves_it_to_the_workers():
    said = workers._rehearsal_failure(NameError("name 'GLOBAL_BATCH' is not defined"), 2)
    assert "failed: name 'GLOBAL_BATCH' is not defined; " in str(said)
    assert "nothing else from the notebook" in str(said)
    merge = RuntimeError("in user code:\n\n    RuntimeError: `merge_call` called while defining")
    assert "inside control flow" in str(workers._rehearsal_failure(merge, 2))
    rank = ValueError("in user code:\n    ValueError: Invalid value passed for `per_example_loss`.")
    said = str(workers._rehearsal_failure(rank, 3))
    assert "failed: ValueError: Invalid value passed for `per_example_loss`." in said
    assert "takes the per-example losses" in said
    # one process has no cluster resolver: the worker processes will judge this one
    none = AttributeError("'NoneType' object has no attribute 'task_id'")
    assert workers._rehearsal_failure(none, 2) is None


def test_the_rehearsal_asks_for_three_devices():
    with pytest.raises(ValueError, match=r"needs 3 devices, but it has 2: call devices.setup\(3\)"):
        workers._devices(["/device:CPU:0", "/device:CPU:1"])


def good_steps(logdir):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(logdir)
    (key,) = [k for k in reader.get_variable_to_shape_map() if k.split("/")[0] == "global_step"]
    return int(reader.get_tensor(key))


def save_counter(logdir):
    import tensorflow as tf

    return int(
        tf.train.load_checkpoint(logdir).get_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE")
    )


def first_other(logdir):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(logdir)
    keys = sorted(reader.get_variable_to_shape_map())
    (key, *_) = [k for k in keys if not k.startswith(("save_counter", "_CHECKPOINTABLE"))]
    return int(reader.get_tensor(key))


def _newest_by(key):
    """An answer that takes the checkpoint whose .index file is largest by ``key``."""

    def steps_from_checkpoint(logdir):
        import glob
        import os

        newest = max(glob.glob(os.path.join(logdir, "*.index")), key=key)
        return good_steps(newest.removesuffix(".index"))

    return steps_from_checkpoint


def _number(path):
    import re

    return int(re.findall(r"-(\d+)\.index$", path)[0])


def test_steps_from_checkpoint_passes_a_correct_answer():
    assert ex08.check_steps_from_checkpoint(good_steps) == "Check 3 passed"


@pytest.mark.parametrize(
    "answer, message",
    [
        (save_counter, r"you read 11: the number of saves"),
        (first_other, r"another int64 of the checkpoint \('epoch'\)"),
        (lambda logdir: 7, r"you read 7; ckpt-11 holds step 64"),
        (_newest_by(_number), r"you read 111, the step in ckpt-11.* the newest, ckpt-2, holds 40"),
        (_newest_by(os.path.getmtime), r"you read 111, the step in ckpt-11"),
    ],
    ids=["save_counter", "epoch", "typed in", "largest number", "newest file time"],
)
def test_steps_from_checkpoint_fails_wrong_answers(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex08.check_steps_from_checkpoint(answer)


def stub_step(model, optimizer, x, y, global_batch):
    raise NotImplementedError()


def test_two_workers_refuse_a_stub_before_starting_any_process():
    with pytest.raises(AssertionError, match=r"write replica_step first: it raises"):
        ex08.check_two_workers(good_dataset_fn, stub_step)

"""The checks of exercise 08 that start no process: each passes a correct answer written here
and fails wrong ones with a message that names the mistake. Check 2b, which starts two
worker processes, is tested in tests/process/test_exercise_checks_ex08.py; its float64
reference is tested here against Keras on one device."""

from __future__ import annotations

import shlex

import pytest

from dpkit import checking
from dpkit.exercises import ex08


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

    x, y, w, b = ex08._problem()
    model = keras.Sequential([keras.Input((ex08._FEATURES,)), keras.layers.Dense(ex08._CLASSES)])
    model.set_weights([w, b])
    model.compile(
        optimizer=keras.optimizers.SGD(ex08._LR),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(x, y, batch_size=ex08._BATCH, epochs=1, shuffle=False, verbose=0)
    reference = ex08._sgd(x, y, w, b, ex08._BATCH, ex08._LR, ex08._STEPS)
    assert checking.agree(model.get_weights(), reference, ulps=1024)
    moved = checking.agree([w, b], reference, ulps=1024)
    assert not moved, "the reference should move the weights far from where they started"


def test_a_failed_worker_is_told_what_to_look_at():
    from dpkit.plumbing import procs

    said = ex08._failure(
        procs.TaskFailedError(
            "task worker:1 failed (exit code 1); its stderr:\nTraceback ...\n"
            "tensorflow.python.framework.errors_impl.InternalError: Graph execution error:\n"
            "Collective ops is aborted by: Collective instance 105 expected type 0\\nmore"
        )
    )
    assert "InternalError: Graph execution error: (Collective instance 105" in str(said)
    assert "not on the chief only" in str(said)
    said = ex08._failure(procs.TaskFailedError("x\nNameError: name 'N' is not defined"))
    assert "nothing else from the notebook" in str(said)


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


def test_steps_from_checkpoint_passes_a_correct_answer():
    assert ex08.check_steps_from_checkpoint(good_steps) == "Check 3 passed"


@pytest.mark.parametrize(
    "answer, message",
    [
        (save_counter, r"you read 11: the number of saves"),
        (first_other, r"another int64 of the checkpoint \('epoch'\)"),
        (lambda logdir: 7, r"you read 7; ckpt-11 holds step 64"),
    ],
    ids=["save_counter", "epoch", "typed in"],
)
def test_steps_from_checkpoint_fails_wrong_answers(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex08.check_steps_from_checkpoint(answer)


def stub_step(model, optimizer, x, y, global_batch):
    raise NotImplementedError()


def test_two_workers_refuse_a_stub_before_starting_any_process():
    with pytest.raises(AssertionError, match=r"write replica_step first: it raises"):
        ex08.check_two_workers(good_dataset_fn, stub_step)

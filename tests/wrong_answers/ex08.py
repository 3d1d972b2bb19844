"""Wrong answers for exercises/08_beyond_one_machine.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "08_beyond_one_machine.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "the mean of the worker's own batch"

# shell_commands as the solution writes it, with its host flags and line words swappable
_LINES = """
jobs = {{job: addresses for job, addresses in hosts.items() if addresses}}
host_flags = [f"--{{job}}_hosts={{','.join(addresses)}}" for job, addresses in jobs.items()]
return [
    {join}(
        ["python", "-m", "dpkit", "task", f"--job_name={{job}}", f"--task_index={{index}}"]
        + {words}
    )
    for job, addresses in jobs.items()
    for index in range(len(addresses))
]
"""
# replica_step as the solution writes it, with its loss and its update swappable
_STEP = """
with tf.GradientTape() as tape:
    logits = model(x, training=True)
    per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
    loss = {loss}
grads = tape.gradient(loss, model.trainable_variables)
{update}
return loss
"""
_GLOBAL = "tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)"
_APPLY = "optimizer.apply_gradients(zip(grads, model.trainable_variables))"
_SHARD = "shard(input_context.num_input_pipelines, input_context.input_pipeline_id)"
_PER_REPLICA = "input_context.get_per_replica_batch_size(global_batch)"
_SPARSE = "keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)"
_ONE_HOT = "keras.losses.categorical_crossentropy(tf.one_hot(y, {}), logits, from_logits=True)"
_SHARES = (
    r"rehearsed as 2 workers in this process: a last step with the replicas taking \[7, 3\] of a "
    r"global batch of 10: .*each replica divided its summed loss by its own batch times the "
    r"replicas"
)

WRONG: list[Wrong] = [
    # 1. shell_commands
    Wrong(
        1,
        "list + extra_flags, which fails on the default ()",
        _LINES.format(join="shlex.join", words="host_flags + extra_flags"),
        check="1",
        expect=r"with extra_flags left out raised TypeError: can only concatenate list "
        r"\(not \"tuple\"\) to list; extra_flags may be any sequence",
    ),
    Wrong(
        1,
        "words joined without quoting",
        _LINES.format(join='" ".join', words="[*host_flags, *extra_flags]"),
        check="1",
        expect=r"a shell splits '--logdir=/shared/runs/run 2' at its spaces .*: quote each word",
    ),
    Wrong(
        1,
        "an empty --chief_hosts= kept",
        """
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in hosts.items()]
        return [
            shlex.join(
                ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
                + [*host_flags, *extra_flags]
            )
            for job, addresses in hosts.items()
            for index in range(len(addresses))
        ]
        """,
        check="1",
        expect=r"the launcher rejects it: --chief_hosts is empty",
    ),
    Wrong(
        1,
        "extra flags on the first line only",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        lines = [
            ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
            + host_flags
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        ]
        lines[0] += list(extra_flags)
        return [shlex.join(words) for words in lines]
        """,
        check="1",
        expect=r"--job_name=ps .*\nthe line lacks '--logdir=/shared/runs/run 2': every line ends "
        r"with extra_flags",
    ),
    Wrong(
        1,
        "extra flags as one word",
        _LINES.format(join="shlex.join", words='[*host_flags, " ".join(extra_flags)]'),
        check="1",
        expect=r"the line holds an empty word \(''\): leave out what is empty",
    ),
    Wrong(
        1,
        "one --JOB_hosts flag per address",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={a}" for job, addresses in jobs.items() for a in addresses]
        return [
            shlex.join(
                ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
                + [*host_flags, *extra_flags]
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        ]
        """,
        check="1",
        expect=r"the launcher reads the worker addresses \['dpkit-worker-1\.dpkit-worker:2222'\]; "
        r"the cluster has \['dpkit-worker-0",
    ),
    Wrong(
        1,
        "the whole line quoted as one word",
        _LINES.format(join='shlex.quote(" ".join', words="[*host_flags, *extra_flags])"),
        check="1",
        expect=r"a shell reads the first words as \['python -m dpkit task --job_name=chief",
    ),
    Wrong(
        1,
        "every word in double quotes",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        return [
            " ".join(
                f'"{word}"'
                for word in ["python", "-m", "dpkit", "task", f"--job_name={job}"]
                + [f"--task_index={index}", *host_flags, *extra_flags]
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        ]
        """,
        check="1",
        expect=r"a shell acts on '\$' in it .*: quote each word with shlex\.quote",
    ),
    Wrong(
        1,
        "only the words with a space quoted",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        return [
            " ".join(
                shlex.quote(word) if " " in word else word
                for word in ["python", "-m", "dpkit", "task", f"--job_name={job}"]
                + [f"--task_index={index}", *host_flags, *extra_flags]
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        ]
        """,
        check="1",
        expect=r"a shell acts on '\[' in it",
    ),
    Wrong(
        1,
        "one text, not a list of lines",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        return "\\n".join(
            shlex.join(
                ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
                + [*host_flags, *extra_flags]
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        )
        """,
        check="1",
        expect=r"return a list of lines, not <class 'str'>",
    ),
    Wrong(
        1,
        "task index counted across jobs",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        names = [job for job, addresses in jobs.items() for _ in addresses]
        return [
            shlex.join(
                ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
                + [*host_flags, *extra_flags]
            )
            for index, job in enumerate(names)
        ]
        """,
        check="1",
        expect=r"--job_name=ps --task_index=1 .*\nthe launcher rejects it: ",
    ),
    Wrong(
        1,
        "extra flags first",
        _LINES.format(join="shlex.join", words="[*host_flags]").replace(
            '"task", ', '"task", *extra_flags, '
        ),
        check="1",
        expect=r"the extra flags \('--logdir=/shared/runs/run 2', '--train_steps=500'\) come last|"
        r"the extra flags \['--logdir=/shared/runs/run 2', '--train_steps=500'\] come last",
    ),
    # 2. dataset_fn
    Wrong(
        2,
        "no shard: every worker reads everything",
        f"""
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        return examples.batch({_PER_REPLICA})
        """,
        check="2a",
        expect=r"2 workers, 1 replica\(s\) each, global batch 10: both workers read the same "
        r"examples \[0, 1, 2, 3, 4\]\.\.\.: give each its own shard",
    ),
    Wrong(
        2,
        "batched by the global batch",
        f"""
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        return examples.{_SHARD}.batch(global_batch)
        """,
        check="2a",
        expect=r"your batches hold \[5, 10\] examples; each replica takes global_batch / "
        r"num_replicas_in_sync = 5",
    ),
    Wrong(
        2,
        "two workers typed in",
        f"""
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        return examples.{_SHARD}.batch(global_batch // 2)
        """,
        check="2a",
        expect=r"3 workers, 1 replica\(s\) each, global batch 12: your batches hold \[2, 6\] "
        r"examples; each replica takes .* = 4",
    ),
    Wrong(
        2,
        "sharded by replica, not by input pipeline",
        f"""
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        mine = examples.shard(input_context.num_replicas_in_sync, input_context.input_pipeline_id)
        return mine.batch({_PER_REPLICA})
        """,
        check="2a",
        expect=r"2 workers, 2 replica\(s\) each, global batch 8: the workers' datasets hold "
        r"\[3, 3\] batches; each worker feeds its replicas 3 steps of 8 examples, 6 batches",
    ),
    Wrong(
        2,
        "each worker the contiguous half of the data",
        f"""
        n = len(x) // input_context.num_input_pipelines
        start = input_context.input_pipeline_id * n
        mine = tf.data.Dataset.from_tensor_slices((x[start : start + n], y[start : start + n]))
        return mine.batch({_PER_REPLICA})
        """,
        check="2a",
        expect=r"at step 0 the replicas read examples \[0, 1, 2, 3, 4, 15, 16, 17, 18, 19\]; one "
        r"device reads global batch 0",
    ),
    Wrong(
        2,
        "shuffled on each worker",
        f"""
        examples = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x))
        return examples.{_SHARD}.batch({_PER_REPLICA})
        """,
        check="2a",
        expect=r"(at step 0 the replicas read examples|both workers read the same examples)",
    ),
    Wrong(
        2,
        "the per-replica batch as global over workers",
        f"""
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        return examples.{_SHARD}.batch(global_batch // input_context.num_input_pipelines)
        """,
        check="2a",
        expect=r"2 workers, 2 replica\(s\) each, global batch 8: your batches hold \[4\] examples; "
        r"each replica takes global_batch / num_replicas_in_sync = 2",
    ),
    Wrong(
        2,
        "shard's arguments swapped",
        f"""
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        mine = examples.shard(input_context.input_pipeline_id, input_context.num_input_pipelines)
        return mine.batch({_PER_REPLICA})
        """,
        check="2a",
        expect=r"your dataset_fn failed for input pipeline 0: InvalidArgumentError: .*Number of "
        r"shards must be greater than zero",
    ),
    # 3. replica_step
    Wrong(
        3,
        "the mean of the worker's own batch",
        _STEP.format(loss="tf.reduce_mean(per_example)", update=_APPLY),
        check="2b",
        expect=r"the workers vs one device: differ .*moved twice as far as one device's: did "
        r"you divide the loss by the worker's own batch",
    ),
    Wrong(
        3,
        "the per-worker batch as global_batch_size",
        _STEP.format(
            loss="tf.nn.compute_average_loss(per_example, global_batch_size=tf.shape(x)[0])",
            update=_APPLY,
        ),
        check="2b",
        expect=r"moved twice as far as one device's",
    ),
    Wrong(
        3,
        "gradients applied on the chief only",
        _STEP.format(
            loss=_GLOBAL,
            update="if tf.distribute.get_strategy().cluster_resolver.task_id == 0:\n    " + _APPLY,
        ),
        check="2b",
        expect=r"a worker process failed: .*the workers' collectives did not match: .*not on the "
        r"chief only",
    ),
    Wrong(
        3,
        "Keras's mean loss fed to compute_average_loss",
        """
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            mean = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
            loss = tf.nn.compute_average_loss(mean, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
        """,
        check="2b",
        expect=r"before any worker process: your code failed: ValueError: Invalid value passed "
        r"for `per_example_loss`.*compute_average_loss takes the per-example losses",
    ),
    Wrong(
        3,
        "the notebook's GLOBAL_BATCH, not the argument",
        _STEP.format(
            loss="tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)",
            update=_APPLY,
        ),
        check="2b",
        expect=r"failed: name 'GLOBAL_BATCH' is not defined; .*nothing else from the notebook",
    ),
    Wrong(
        3,
        "the loss computed, never applied",
        _STEP.format(loss=_GLOBAL, update="del grads"),
        check="2b",
        expect=r"the weights never moved: apply the gradients",
    ),
    Wrong(
        3,
        "gradients all-reduced before apply_gradients",
        _STEP.format(
            loss=_GLOBAL,
            update='grads = tf.distribute.get_replica_context().all_reduce("sum", grads)\n'
            + _APPLY,
        ),
        check="2b",
        expect=r"moved twice as far .*or all-reduce the gradients before apply_gradients",
    ),
    Wrong(
        3,
        "each worker's own gradients, by assign_sub",
        _STEP.format(
            loss=_GLOBAL,
            update="for variable, grad in zip(model.trainable_variables, grads):\n"
            "    variable.assign_sub(optimizer.learning_rate * grad)",
        ),
        check="2b",
        expect=r"worker 1's weights vs worker 0's: differ .*Every worker applies the same update, "
        r"the gradients summed over the workers \(apply_gradients all-reduces them",
    ),
    Wrong(
        3,
        "two workers typed in: the worker's mean halved",
        _STEP.format(loss="tf.reduce_mean(per_example) / 2", update=_APPLY),
        check="2b",
        expect=r"rehearsed as 3 workers in this process: the workers vs one device: differ .*"
        r"moved 1\.5 times as far as one device's on 3 workers: is '2 workers' typed in",
    ),
    Wrong(
        3,
        "applied by replica 0 only",
        _STEP.format(
            loss=_GLOBAL,
            update="if tf.distribute.get_replica_context().replica_id_in_sync_group == 0:\n    "
            + _APPLY,
        ),
        check="2b",
        expect=r"before any worker process: your code failed: apply_gradients ran inside control "
        r"flow .*not on the chief only",
    ),
    Wrong(
        3,
        "gradients applied twice",
        _STEP.format(loss=_GLOBAL, update=_APPLY + "\n" + _APPLY),
        check="2b",
        expect=r"rehearsed as 2 workers .*moved twice as far as one device's: .*or apply them "
        r"twice\?",
    ),
    Wrong(
        3,
        "the summed loss, not divided",
        _STEP.format(loss="tf.reduce_sum(per_example)", update=_APPLY),
        check="2b",
        expect=r"moved 10 times as far as one device's, the global batch: divide the summed "
        r"loss by global_batch",
    ),
    Wrong(
        3,
        "the logits taken for probabilities",
        _STEP.format(loss=_GLOBAL, update=_APPLY).replace("from_logits=True", "from_logits=False"),
        check="2b",
        expect=r"the workers vs one device: differ .*the mean cross-entropy of the model's logits "
        r"\(from_logits=True\)",
    ),
    Wrong(
        3,
        "the per-example losses returned",
        _STEP.format(loss=_GLOBAL, update=_APPLY).replace("return loss", "return per_example"),
        check="2b",
        expect=r"your replica_step returns values of shape \(5,\), not one number",
    ),
    Wrong(
        3,
        "the worker's mean returned, not its share",
        _STEP.format(loss=_GLOBAL, update=_APPLY).replace(
            "return loss", "return tf.reduce_mean(per_example)"
        ),
        check="2b",
        expect=r"the losses returned, summed over the workers, vs one device's mean loss over "
        r"each global batch: differ .*return the loss you took the gradients of",
    ),
    # 4. steps_from_checkpoint
    Wrong(
        4,
        "save_counter, not the step",
        """
        reader = tf.train.load_checkpoint(logdir)
        return int(reader.get_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE"))
        """,
        check="3",
        expect=r"you read 11: the number of saves",
    ),
    Wrong(
        4,
        "the number in the file name",
        """
        return int(tf.train.latest_checkpoint(logdir).rsplit("-", 1)[1])
        """,
        check="3",
        expect=r"you read 11: the number of saves .*not the step saved in it, 7",
    ),
    Wrong(
        4,
        "the oldest checkpoint kept",
        """
        oldest = tf.train.get_checkpoint_state(logdir).all_model_checkpoint_paths[0]
        reader = tf.train.load_checkpoint(oldest)
        (key,) = [k for k in reader.get_variable_to_shape_map() if k.startswith("global_step")]
        return int(reader.get_tensor(key))
        """,
        check="3",
        expect=r"you read 31, the step in ckpt-9, an older checkpoint; the newest, ckpt-11, "
        r"holds 7",
    ),
    Wrong(
        4,
        "the last file name in sorted order",
        """
        import glob

        path = sorted(glob.glob(os.path.join(logdir, "*.index")))[-1].removesuffix(".index")
        reader = tf.train.load_checkpoint(path)
        (key,) = [k for k in reader.get_variable_to_shape_map() if k.startswith("global_step")]
        return int(reader.get_tensor(key))
        """,
        check="3",
        expect=r"you read 31, the step in ckpt-9, an older checkpoint",
    ),
    Wrong(
        4,
        "the TF2 key only",
        """
        reader = tf.train.load_checkpoint(logdir)
        return int(reader.get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE"))
        """,
        check="3",
        expect=r"a checkpoint saved by name \(TF1 Saver\): NotFoundError: .*; its keys are "
        r"\['global_step'\]",
    ),
    Wrong(
        4,
        "a numpy value, not an int",
        """
        reader = tf.train.load_checkpoint(logdir)
        (key,) = [k for k in reader.get_variable_to_shape_map() if k.split("/")[0] == "global_step"]
        return reader.get_tensor(key)
        """,
        check="3",
        expect=r"saved by object .*: return an int, not numpy\.int64 \(",
    ),
    Wrong(
        4,
        "the first variable that is not save_counter",
        """
        reader = tf.train.load_checkpoint(logdir)
        keys = sorted(reader.get_variable_to_shape_map())
        (key, *_) = [k for k in keys if not k.startswith(("save_counter", "_CHECKPOINTABLE"))]
        return int(reader.get_tensor(key))
        """,
        check="3",
        expect=r"you read 13, another int64 of the checkpoint \('epoch'\)",
    ),
    Wrong(
        4,
        "the largest number in the file names",
        """
        import glob
        import re

        paths = glob.glob(os.path.join(logdir, "*.index"))
        newest = max(paths, key=lambda p: int(re.findall(r"-(\\d+)\\.index$", p)[0]))
        reader = tf.train.load_checkpoint(newest.removesuffix(".index"))
        (key,) = [k for k in reader.get_variable_to_shape_map() if k.startswith("global_step")]
        return int(reader.get_tensor(key))
        """,
        check="3",
        expect=r"you read 111, the step in ckpt-11, an older checkpoint; the newest, ckpt-2, "
        r"holds 40: the folder's checkpoint file names it",
    ),
    Wrong(
        4,
        "the newest file by time",
        """
        import glob

        newest = max(glob.glob(os.path.join(logdir, "*.index")), key=os.path.getmtime)
        reader = tf.train.load_checkpoint(newest.removesuffix(".index"))
        (key,) = [k for k in reader.get_variable_to_shape_map() if k.startswith("global_step")]
        return int(reader.get_tensor(key))
        """,
        check="3",
        expect=r"you read 111, the step in ckpt-11, an older checkpoint; the newest, ckpt-2",
    ),
    Wrong(
        4,
        "the step of the first run typed in",
        "return 7",
        check="3",
        expect=r"you read 7; ckpt-11 holds step 64",
    ),
    Wrong(
        4,
        "restored into a new variable by object",
        """
        step = tf.Variable(0, dtype=tf.int64)
        checkpoint = tf.train.Checkpoint(global_step=step)
        checkpoint.restore(tf.train.latest_checkpoint(logdir)).expect_partial()
        return int(step.numpy())
        """,
        check="3",
        expect=r"you read 0 from TF1's checkpoint; its global step is 77",
    ),
    # issue 46: the rehearsal's models have 4 and 5 classes, its last step unequal shares,
    # and its first layer records the training flag
    Wrong(
        3,
        "compute_average_loss without the global batch",
        _STEP.format(loss="tf.nn.compute_average_loss(per_example)", update=_APPLY),
        check="2b",
        expect=_SHARES,
    ),
    Wrong(
        3,
        "the replica's summed loss over its batch times the replicas",
        _STEP.format(
            loss="tf.reduce_sum(per_example) / tf.cast(tf.shape(x)[0] * "
            "tf.distribute.get_replica_context().num_replicas_in_sync, tf.float32)",
            update=_APPLY,
        ),
        check="2b",
        expect=_SHARES,
    ),
    Wrong(
        3,
        "a one-hot of the demo's 3 classes",
        _STEP.format(loss=_GLOBAL, update=_APPLY).replace(_SPARSE, _ONE_HOT.format("3")),
        check="2b",
        expect=r"rehearsed as 2 workers .*target.shape=\(5, 3\), output.shape=\(5, 4\); the "
        r"check's model has 4 classes here, not the demo's 3",
    ),
    Wrong(
        3,
        "a one-hot as deep as the largest label",
        _STEP.format(loss=_GLOBAL, update=_APPLY).replace(
            _SPARSE, _ONE_HOT.format("tf.reduce_max(y) + 1")
        ),
        check="2b",
        expect=r"rehearsed as 2 workers .*the check's model has 4 classes here, .*not a count "
        r"typed in or read from the labels",
    ),
    Wrong(
        3,
        "the model called without training=True",
        _STEP.format(loss=_GLOBAL, update=_APPLY).replace("model(x, training=True)", "model(x)"),
        check="2b",
        expect=r"rehearsed as 2 workers in this process: your replica_step called the model with "
        r"training=None",
    ),
]

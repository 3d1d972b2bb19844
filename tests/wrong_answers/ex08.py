"""Wrong answers for exercises/08_beyond_one_machine.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "08_beyond_one_machine.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "save_counter, not the step"

WRONG: list[Wrong] = [
    # 1. tf_configs
    Wrong(
        1,
        "empty jobs kept",
        """
        return {
            f"{job}:{index}": json.dumps({"cluster": hosts, "task": {"type": job, "index": index}})
            for job, addresses in hosts.items()
            for index in range(len(addresses))
        }
        """,
        check="1",
        expect=r"worker:0: TensorFlow keeps \['chief', 'ps'\] as job\(s\) without tasks",
    ),
    Wrong(
        1,
        "tasks numbered across jobs",
        """
        jobs = {job: list(addresses) for job, addresses in hosts.items() if addresses}
        configs, index = {}, 0
        for job, addresses in jobs.items():
            for _ in addresses:
                task = {"type": job, "index": index}
                configs[f"{job}:{index}"] = json.dumps({"cluster": jobs, "task": task})
                index += 1
        return configs
        """,
        check="1",
        expect=r"index counted from 0 within each job: want \['chief:0', 'ps:0', 'worker:0', "
        r"'worker:1'\], got \['chief:0', 'ps:1', 'worker:2', 'worker:3'\]",
    ),
    Wrong(
        1,
        "dicts not JSON text",
        """
        jobs = {job: list(addresses) for job, addresses in hosts.items() if addresses}
        return {
            f"{job}:{index}": {"cluster": jobs, "task": {"type": job, "index": index}}
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        }
        """,
        check="1",
        expect=r"chief:0: return JSON text \(a str\), not <class 'dict'>",
    ),
    Wrong(
        1,
        "str() of a dict, not JSON",
        """
        jobs = {job: list(addresses) for job, addresses in hosts.items() if addresses}
        return {
            f"{job}:{index}": str({"cluster": jobs, "task": {"type": job, "index": index}})
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        }
        """,
        check="1",
        expect=r"TensorFlow cannot read .*Python's str\(\) of a dict, not JSON",
    ),
    Wrong(
        1,
        "each task's cluster holds its own job only",
        """
        jobs = {job: list(addresses) for job, addresses in hosts.items() if addresses}
        return {
            f"{job}:{index}": json.dumps(
                {"cluster": {job: addresses}, "task": {"type": job, "index": index}}
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        }
        """,
        check="1",
        expect=r"chief:0: TensorFlow reads the cluster \{'chief': .*\}; every task's TF_CONFIG "
        r"holds the whole cluster",
    ),
    Wrong(
        1,
        "the index as text, split from the name",
        """
        jobs = {job: list(addresses) for job, addresses in hosts.items() if addresses}
        names = [f"{job}:{i}" for job, addresses in jobs.items() for i in range(len(addresses))]
        configs = {}
        for name in names:
            job, index = name.split(":")
            configs[name] = json.dumps({"cluster": jobs, "task": {"type": job, "index": index}})
        return configs
        """,
        check="1",
        expect=r"the launcher rejects it: TF_CONFIG task index '0' is not a whole number",
    ),
    Wrong(
        1,
        "deletes empty jobs from the caller's dict",
        """
        for job in [job for job, addresses in hosts.items() if not addresses]:
            del hosts[job]
        return {
            f"{job}:{i}": json.dumps({"cluster": hosts, "task": {"type": job, "index": i}})
            for job, addresses in hosts.items()
            for i in range(len(addresses))
        }
        """,
        check="1",
        expect=r"tf_configs changed the dict passed in: its jobs were \{'chief': \[\], 'ps': \[\], "
        r"'worker': .*, now \{'worker': ",
    ),
    # 2. shell_commands
    Wrong(
        2,
        "words joined without quoting",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        return [
            " ".join(
                ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
                + [*host_flags, *extra_flags]
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        ]
        """,
        check="2",
        expect=r"a shell splits '--logdir=/shared/runs/run 2' at its space .*: quote each word",
    ),
    Wrong(
        2,
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
        check="2",
        expect=r"the launcher rejects it: --chief_hosts is empty",
    ),
    Wrong(
        2,
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
        check="2",
        expect=r"--job_name=ps .*\nthe line lacks '--logdir=/shared/runs/run 2': every line ends "
        r"with extra_flags",
    ),
    Wrong(
        2,
        "extra flags as one word",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        return [
            shlex.join(
                ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
                + [*host_flags, " ".join(extra_flags)]
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        ]
        """,
        check="2",
        expect=r"reaches the launcher inside the word '--logdir=/shared/runs/run 2 "
        r"--train_steps=500': each extra flag is a word of its own",
    ),
    Wrong(
        2,
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
        check="2",
        expect=r"the launcher reads the worker addresses \['dpkit-worker-1\.dpkit-worker:2222'\]; "
        r"the cluster has \['dpkit-worker-0",
    ),
    Wrong(
        2,
        "the whole line quoted as one word",
        """
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        host_flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in jobs.items()]
        return [
            shlex.quote(
                " ".join(
                    ["python", "-m", "dpkit", "task", f"--job_name={job}", f"--task_index={index}"]
                    + [*host_flags, *extra_flags]
                )
            )
            for job, addresses in jobs.items()
            for index in range(len(addresses))
        ]
        """,
        check="2",
        expect=r"a shell reads the first words as \['python -m dpkit task --job_name=chief",
    ),
    Wrong(
        2,
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
        check="2",
        expect=r"return a list of lines, not <class 'str'>",
    ),
    # 3. start the tasks (each attempt, and the rerun of the solution after it, starts a
    # cluster: keep this part of the table short)
    Wrong(
        3,
        "drops the quoted --logdir word (read in check 3b)",
        """
        for line in commands:
            args = [word for word in shlex.split(line)[4:] if " " not in word]
            group.start(launcher.parse(args, {}).name, "task", *args)
        """,
        check="3b",
        # first of part 3: the log folder is gone (the notebook's last cell removed it), so it
        # holds no checkpoint; after another part-3 attempt it holds an earlier run's
        expect=r"(holds no checkpoint, so there is none saved by the chief|an earlier run's "
        r"checkpoint: this run's chief wrote to 'runs/task').*the chief writes to the --logdir "
        r"of its line \(see check 3a\)",
    ),
    Wrong(
        3,
        "tasks named by line number",
        """
        for i, line in enumerate(commands):
            group.start(f"task{i}", "task", *shlex.split(line)[4:])
        """,
        check="3a",
        expect=r"the tasks are named \['task0', 'task1', 'task2', 'task3'\]; name each job:index",
    ),
    Wrong(
        3,
        "the whole line's words as arguments",
        """
        for line in commands:
            words = shlex.split(line)
            group.start(launcher.parse(words[4:], {}).name, "task", *words)
        """,
        check="3a",
        expect=r"task chief:0 got the arguments \['python', '-m', 'dpkit', 'task', .*they start "
        r'with "python -m dpkit task"',
    ),
    Wrong(
        3,
        "split at spaces, not as a shell would",
        """
        for line in commands:
            args = line.split()[4:]
            group.start(launcher.parse(args, {}).name, "task", *args)
        """,
        check="3a",
        expect=r"no task was started: .*the lines hold quoted words",
    ),
    Wrong(
        3,
        "drops the quoted --logdir word",
        """
        for line in commands:
            args = [word for word in shlex.split(line)[4:] if " " not in word]
            group.start(launcher.parse(args, {}).name, "task", *args)
        """,
        check="3a",
        expect=r"the chief wrote its checkpoints to 'runs/task', not to the log folder its line "
        r"names, '.*run 1'",
    ),
    # 4. steps_from_checkpoint
    Wrong(
        4,
        "save_counter, not the step",
        """
        reader = tf.train.load_checkpoint(logdir)
        return int(reader.get_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE"))
        """,
        check="3b",
        expect=r"you read 11: the number of saves",
    ),
    Wrong(
        4,
        "the number in the file name",
        """
        return int(tf.train.latest_checkpoint(logdir).rsplit("-", 1)[1])
        """,
        check="3b",
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
        check="3b",
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
        check="3b",
        expect=r"you read 31, the step in ckpt-9, an older checkpoint",
    ),
    Wrong(
        4,
        "the TF2 key only",
        """
        reader = tf.train.load_checkpoint(logdir)
        return int(reader.get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE"))
        """,
        check="3b",
        expect=r"a checkpoint saved by name \(TF1's Saver\): NotFoundError: .*; its keys are "
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
        check="3b",
        expect=r"saved by object .*: return an int, not numpy\.int64 \(",
    ),
]

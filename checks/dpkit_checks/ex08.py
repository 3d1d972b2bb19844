"""Checks of exercise 08 (beyond one machine): one function per check cell of
exercises/08_*.ipynb (each docstring says what it varies and what its reference is).

:func:`check_two_workers` rehearses in this process, then starts two worker processes: its
machinery is in :mod:`dpkit_checks.workers`.
"""

from __future__ import annotations

import glob
import os
import shlex
import tempfile
import time

import numpy as np

# ----------------------------------------------------------------------------- check 1

_HOSTS = {
    "chief": ["dpkit-chief-0.dpkit-chief:2222"],
    "ps": ["dpkit-ps-0.dpkit-ps:2222"],
    "worker": ["dpkit-worker-0.dpkit-worker:2222", "dpkit-worker-1.dpkit-worker:2222"],
}
_ODD_HOSTS = {"chief": [], "ps": ["[fd00::1]:2222"], "worker": ["[fd00::2]:2222", "[fd00::3]:2222"]}
_ODD_LOGDIR = "--logdir=/shared/runs/ana's run $1"  # and [...] above: a shell's file pattern
# characters a shell acts on when they are not quoted ($ and ` act inside "..." too)
_SPECIAL, _EXPANDS = set("*?[;&|<>()$`"), set("$`")


def _unquoted(line: str) -> str:
    """The characters of ``line`` a POSIX shell would act on (expand, glob, redirect)."""
    found, state, i = [], None, 0
    while i < len(line):
        c = line[i]
        if state == "'":
            state = None if c == "'" else state
        elif c == "\\":
            i += 1  # the next character is taken as it is ("\\" inside "..." too)
        elif state == '"':
            state = None if c == '"' else state
            found += [c] if c in _EXPANDS else []
        elif c in "'\"":
            state = c
        elif c in _SPECIAL:
            found.append(c)
        i += 1
    return "".join(dict.fromkeys(found))


def _words(line, extra: list[str]) -> list[str]:
    """The words a shell makes of ``line``: the program, its flags, then ``extra``."""
    assert isinstance(line, str), f"each line is a str, got {type(line).__name__}: {line!r}"
    try:
        words = shlex.split(line)
    except ValueError as error:
        raise AssertionError(
            f"{line}\na shell cannot split it ({error}): quote each word"
        ) from None
    special = _unquoted(line)
    assert not special, (
        f"{line}\na shell acts on {special!r} in it (patterns, variables, redirections): "
        "quote each word with shlex.quote (or the list with shlex.join)"
    )
    assert "" not in words, f"{line}\nthe line holds an empty word (''): leave out what is empty"
    assert words[:4] == ["python", "-m", "dpkit", "task"], (
        f"{line}\na shell reads the first words as {words[:4]}, not python -m dpkit task"
    )
    for flag in extra:
        inside = [word for word in words if flag in word and word != flag]
        if flag in words:
            continue
        assert not inside, (
            f"{line}\n{flag!r} reaches the launcher inside the word {inside[0]!r}: each extra "
            "flag is a word of its own"
        )
        assert flag.split()[0] not in words, (
            f"{line}\na shell splits {flag!r} at its spaces into {flag.split()}: quote each word"
        )
        raise AssertionError(f"{line}\nthe line lacks {flag!r}: every line ends with extra_flags")
    tail = words[len(words) - len(extra) :] if extra else []
    assert tail == list(extra), f"{line}\nthe extra flags {extra} come last (a later flag wins)"
    return words


def check_shell_commands(shell_commands) -> str:
    """``shell_commands(hosts, extra_flags=())``: one ``python -m dpkit task`` line per task.

    Varies: ``extra_flags`` left out (the default), a tuple, a list; a cluster with chief and
    ps, a TF1 one with an empty chief job, IPv6 addresses in brackets and a log folder with a
    space, a quote and a ``$``. Reference: each line split by ``shlex.split`` (as a shell
    would) and read by ``launcher.parse``, the launcher's own parser, with no environment.
    """
    from dpkit import launcher

    extra = ["--logdir=/shared/runs/run 2", "--train_steps=500"]
    cases = [
        (_HOSTS, None, "ps_strategy"),
        (_HOSTS, tuple(extra), "ps_strategy"),
        (_ODD_HOSTS, [_ODD_LOGDIR, "--tf1"], "tf1"),
    ]
    for hosts, flags, flavour in cases:
        given = {job: list(addresses) for job, addresses in hosts.items()}
        how = "extra_flags left out" if flags is None else f"extra_flags={flags!r}"
        try:
            lines = shell_commands(given) if flags is None else shell_commands(given, flags)
        except Exception as error:
            raise AssertionError(
                f"shell_commands(hosts) with {how} raised {type(error).__name__}: {error}; "
                "extra_flags may be any sequence: the default (), a tuple or a list"
            ) from None
        assert given == hosts, f"shell_commands changed the hosts passed in: now {given}"
        flags = list(flags or [])
        jobs = {job: addresses for job, addresses in hosts.items() if addresses}
        names = [f"{job}:{i}" for job, addresses in jobs.items() for i in range(len(addresses))]
        assert isinstance(lines, (list, tuple)), f"return a list of lines, not {type(lines)}"
        assert len(lines) == len(names), f"{len(names)} tasks, but {len(lines)} lines ({how})"
        started = []
        for line in lines:
            words = _words(line, flags)
            try:
                task = launcher.parse(words[4:], {})  # {}: no TF_CONFIG, the flags alone
            except launcher.LaunchError as error:
                raise AssertionError(f"{line}\nthe launcher rejects it: {error}") from None
            for job in sorted(set(jobs) | set(task.cluster)):
                assert task.cluster.get(job) == jobs.get(job), (
                    f"{line}\nthe launcher reads the {job} addresses {task.cluster.get(job)}; "
                    f"the cluster has {jobs.get(job)}"
                )
            assert task.flavour == flavour, f"{line}\nthe launcher runs {task.flavour}"
            if flags:
                want = flags[0].split("=", 1)[1]
                assert task.logdir == want, f"{line}\nthe launcher reads --logdir={task.logdir!r}"
            started.append(task.name)
        assert sorted(started) == sorted(names), f"the lines start {started}, not {names}"
    return "Check 1 passed"


# ----------------------------------------------------------------------------- check 2a


def _ids(dataset) -> list[np.ndarray]:
    """The example ids in each batch of ``dataset`` (of ``(x, y)``; x's column 0 is the id)."""
    out = []
    for element in dataset:
        assert isinstance(element, tuple) and len(element) == 2, (
            f"each element of your dataset is {type(element).__name__} {element!r:.80}; "
            "make it an (x, y) pair: from_tensor_slices((x, y))"
        )
        x, y = (np.asarray(t) for t in element)
        assert x.ndim == 2, (
            f"a batch of x has shape {x.shape}: batch the dataset (examples, features)"
        )
        ids = x[:, 0].astype(int)
        assert np.array_equal(y, ids % 7), "the labels in a batch are not those of its examples"
        out.append(ids)
    return out


def check_dataset_fn(dataset_fn) -> str:
    """``dataset_fn(input_context, x, y, global_batch)``: one worker's input.

    Called with the ``tf.distribute.InputContext`` of each worker of 2 workers, of 3 workers,
    and of 2 workers holding 2 replicas each (``num_replicas_in_sync`` 4), with global batches
    the notebook does not use. Reference: one device reads global batch k as examples
    ``k*B .. (k+1)*B - 1``; step k of a worker feeds its replicas its next batches, one each,
    so the replicas of every worker together must read exactly global batch k, in batches of
    B / num_replicas_in_sync.
    """
    import tensorflow as tf

    for workers, per_worker, batch, steps in [(2, 1, 10, 3), (3, 1, 12, 2), (2, 2, 8, 3)]:
        replicas = workers * per_worker
        where = f"{workers} workers, {per_worker} replica(s) each, global batch {batch}"
        n = steps * batch
        ids = np.arange(n)
        x = np.repeat(ids[:, None], 3, axis=1).astype(np.float32)  # column 0: the example's id
        y = (ids % 7).astype(np.int32)
        read = []
        for i in range(workers):
            context = tf.distribute.InputContext(workers, i, replicas)
            try:
                dataset = dataset_fn(context, x, y, batch)
                assert isinstance(dataset, tf.data.Dataset), (
                    f"dataset_fn returned {type(dataset).__name__}: return a tf.data.Dataset"
                )
                read.append(_ids(dataset.take(steps * per_worker)))  # a repeat() is fine
            except (tf.errors.OpError, ValueError, TypeError) as error:
                raise AssertionError(
                    f"{where}: your dataset_fn failed for input pipeline {i}: "
                    f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
                ) from None
        per_replica = batch // replicas
        sizes = sorted({len(b) for batches in read for b in batches})
        assert sizes == [per_replica], (
            f"{where}: your batches hold {sizes} examples; each replica takes global_batch / "
            f"num_replicas_in_sync = {per_replica} (input_context.get_per_replica_batch_size)"
        )
        if workers == 2 and np.array_equal(np.concatenate(read[0]), np.concatenate(read[1])):
            raise AssertionError(
                f"{where}: both workers read the same examples {read[0][0].tolist()}...: give "
                "each its own shard (dataset.shard(num_input_pipelines, input_pipeline_id))"
            )
        counts = [len(batches) for batches in read]
        assert counts == [steps * per_worker] * workers, (
            f"{where}: the workers' datasets hold {counts} batches; each worker feeds "
            f"its replicas {steps} steps of {batch} examples, {steps * per_worker} batches. "
            "Shard by input_context.num_input_pipelines and input_pipeline_id"
        )
        for k in range(steps):
            mine = [b for batches in read for b in batches[k * per_worker : (k + 1) * per_worker]]
            step = np.sort(np.concatenate(mine))
            assert np.array_equal(step, ids[k * batch : (k + 1) * batch]), (
                f"{where}: at step {k} the replicas read examples {step.tolist()}; one device "
                f"reads global batch {k}, {ids[k * batch : (k + 1) * batch].tolist()}. Shard "
                "the examples by input_pipeline_id of num_input_pipelines (not by replica), "
                "then batch, in order"
            )
    return "Check 2a passed"


# ----------------------------------------------------------------------------- check 2b


def check_two_workers(dataset_fn, replica_step, devices=None, timeout: float = 300.0) -> str:
    """``dataset_fn`` and ``replica_step`` as two ``MultiWorkerMirroredStrategy`` workers.

    Rehearses 2 and 3 workers as replicas of a ``MirroredStrategy`` over ``devices`` (3
    needed; by default TensorFlow's logical devices) in this process first, on models of 4
    and 5 classes, with a last step in unequal shares and the ``training`` flag recorded,
    then, for an answer that passes, runs two worker processes. Reference: plain SGD on one
    device over the global batches, in float64 NumPy. The machinery, and what it varies:
    :func:`dpkit_checks.workers.check_two_workers`.
    """
    from dpkit_checks import workers

    return workers.check_two_workers(dataset_fn, replica_step, devices, timeout)


# ----------------------------------------------------------------------------- check 3


def _read_step(steps_from_checkpoint, folder: str, saved_by: str) -> int:
    """``steps_from_checkpoint(folder)``, an int; its error, with the keys, as a failure."""
    import tensorflow as tf

    try:
        found = steps_from_checkpoint(folder)
    except Exception as error:
        keys = sorted(tf.train.load_checkpoint(folder).get_variable_to_shape_map())
        raise AssertionError(
            f"a checkpoint saved {saved_by}: {type(error).__name__}: {error}; its keys are {keys}"
        ) from None
    assert isinstance(found, int) and not isinstance(found, bool), (
        f"a checkpoint saved {saved_by}: return an int, not {type(found).__module__}."
        f"{type(found).__name__} ({found!r})"
    )
    return found


def check_steps_from_checkpoint(steps_from_checkpoint) -> str:
    """``steps_from_checkpoint(logdir)``: the global step saved in the newest checkpoint.

    Writes its own checkpoints, with steps it chose: by object (``tf.train.CheckpointManager``
    keeping the last three of eleven saves, so the newest, ``ckpt-11``, is not the last file
    by name, and ``save_counter`` and the file's number are not the step), next to an int64
    ``epoch`` that is not the step either; twice, with other steps, so a number typed in
    fails; a third time, then restarted from scratch in the same folder (the newest is
    ``ckpt-2``, after ``ckpt-11``, whose files are given a later time, as a copy would); and
    by name with TF1's ``Saver`` (key ``global_step``). Reference: the steps assigned before
    each save.
    """
    import logging

    import tensorflow as tf

    with tempfile.TemporaryDirectory(prefix="dpkit-ex08-") as work:
        # each run: its sessions, each (saves, {save: step}); the third restarted from scratch
        runs = [[(11, {9: 31, 10: 52, 11: 7})], [(11, {9: 5, 10: 3, 11: 64})]]
        runs.append([(11, {}), (2, {1: 20, 2: 40})])
        for run, sessions in enumerate(runs):
            folder = os.path.join(work, f"by-object-{run}")
            saves = {}  # file name -> (the step, the epoch) saved in it
            for count, steps in sessions:
                step, epoch = tf.Variable(0, dtype=tf.int64), tf.Variable(0, dtype=tf.int64)
                checkpoint = tf.train.Checkpoint(global_step=step, epoch=epoch)
                manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=3)
                for i in range(1, count + 1):
                    step.assign(steps.get(i, 100 + i))
                    epoch.assign(i + 2)
                    saves[os.path.basename(manager.save())] = (int(step.numpy()), i + 2)
            newest = os.path.basename(manager.latest_checkpoint)
            if len(sessions) > 1:  # copied to shared storage: an older file's time is newer
                later = time.time() + 60
                for path in glob.glob(os.path.join(folder, "ckpt-11.*")):
                    os.utime(path, (later, later))
            (want, epoch_saved), counter = saves[newest], int(newest.rsplit("-", 1)[1])
            read = _read_step(steps_from_checkpoint, folder, "by object (tf.train.Checkpoint)")
            older = [name for name, (saved, _) in saves.items() if name != newest and saved == read]
            assert not older, (
                f"you read {read}, the step in {older[0]}, an older checkpoint; the newest, "
                f"{newest}, holds {want}: the folder's checkpoint file names it "
                "(tf.train.latest_checkpoint), not the largest number, name or file time"
            )
            assert read != counter, (
                f"you read {read}: the number of saves (save_counter, and the number in "
                f"{newest}), not the step saved in it, {want}"
            )
            assert read != epoch_saved, (
                f"you read {read}, another int64 of the checkpoint ('epoch'): pick the global "
                f"step by its key; {newest} holds the step {want}"
            )
            assert read == want, f"you read {read}; {newest} holds step {want}"
        by_name = os.path.join(work, "by-name", "model.ckpt")
        v1, logger = tf.compat.v1, logging.getLogger("tensorflow")
        level = logger.level
        logger.setLevel(logging.ERROR)  # TF1's Saver warns that it is deprecated
        try:
            with tf.Graph().as_default(), v1.Session() as session:
                global_step = v1.train.get_or_create_global_step()
                session.run(global_step.assign(77))
                v1.train.Saver().save(session, by_name, global_step=global_step)
        finally:
            logger.setLevel(level)
        read = _read_step(steps_from_checkpoint, os.path.dirname(by_name), "by name (TF1 Saver)")
        assert read == 77, f"you read {read} from TF1's checkpoint; its global step is 77"
    return "Check 3 passed"

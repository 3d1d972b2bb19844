"""Checks of exercise 08 (beyond one machine): one function per check cell of
exercises/08_*.ipynb (each docstring says what it varies and what its reference is).

:func:`check_two_workers` starts two ``MultiWorkerMirroredStrategy`` worker processes
(through :mod:`dpkit.plumbing.procs`); they run this module, ``python -m
dpkit.exercises.ex08 SPEC``, with the learner's functions' source (:func:`_worker`).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shlex
import sys
import tempfile
import textwrap

import numpy as np

from dpkit import checking
from dpkit.plumbing import procs

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

_FEATURES, _CLASSES = 5, 3
#: global batch, steps and learning rate of the two-worker run (per worker 5: odd on purpose)
_BATCH, _STEPS, _LR = 10, 4, 0.5


def _source(function, what: str) -> tuple[str, str]:
    """``(name, source)`` of the learner's ``function``, to run in the worker processes."""
    function = inspect.unwrap(getattr(function, "python_function", function))
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError) as error:
        raise AssertionError(
            f"cannot read the source of {what} ({error}): define it with def in a cell; "
            "the check runs that source in two new processes"
        ) from None
    assert "raise NotImplementedError" not in source, f"write {what} first: it raises"
    return function.__name__, source


def _problem() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Examples ``x`` (float32) with labels from a random linear rule; starting ``w``, ``b``."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(_BATCH * _STEPS, _FEATURES)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(_FEATURES, _CLASSES)), axis=1).astype(np.int32)
    w = rng.normal(0, 0.3, size=(_FEATURES, _CLASSES)).astype(np.float32)
    b = rng.normal(0, 0.1, size=_CLASSES).astype(np.float32)
    return x, y, w, b


def _sgd(x, y, w, b, batch: int, lr: float, steps: int, take=None):
    """Plain SGD on the mean softmax cross-entropy, in float64: one device, batches in order.

    ``take(k)`` gives the indices of step k's batch (default: global batch k)."""
    w, b = w.astype(np.float64), b.astype(np.float64)
    for k in range(steps):
        rows = np.arange(k * batch, (k + 1) * batch) if take is None else take(k)
        xb, yb = x[rows].astype(np.float64), y[rows]
        logits = xb @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(yb)), yb] -= 1  # d(mean loss)/d(logits), times the batch size
        w, b = w - lr * xb.T @ p / len(yb), b - lr * p.mean(axis=0)
    return [w, b]


def _failure(error: procs.TaskFailedError) -> AssertionError:
    """What to tell the learner when a worker process failed."""
    text = str(error)
    raised = re.findall(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.*)$", text, re.MULTILINE)
    said = ": ".join(raised[-1]) if raised else text.splitlines()[0]
    aborted = re.findall(r"Collective ops is aborted by: (.*)", text)
    if aborted or re.search(r"Unavailable|DeadlineExceeded|[Ss]ocket closed", text):
        said += f" ({aborted[-1].split(chr(92) + 'n')[0][:200]})" if aborted else ""
        hint = (
            "the workers' collectives did not match: every worker runs the same step, and "
            "applies the gradients itself (apply_gradients all-reduces them across workers: "
            "not on the chief only)"
        )
    elif "NameError" in said:
        said = ", ".join(re.findall(r"name '\w+' is not defined", text)[-1:]) or said
        hint = (
            "the workers run your two functions' source in new processes, with tf, np and "
            "keras imported and nothing else from the notebook: use the arguments"
        )
    elif "compute_average_loss" in text:
        hint = "compute_average_loss takes the per-example losses (reduction=None), not their mean"
    else:
        hint = "the error names the line of your code (answer.py holds your two functions)"
    return AssertionError(f"a worker process failed: {said[:500]}; {hint}")


def check_two_workers(dataset_fn, replica_step, timeout: float = 300.0) -> str:
    """``dataset_fn`` and ``replica_step`` as two ``MultiWorkerMirroredStrategy`` workers.

    Starts two worker processes on localhost (``TF_CONFIG`` for each; this module is their
    program). Each builds a softmax-regression Keras model and plain SGD in the strategy's
    scope, from the same starting weights, reads its input from ``dataset_fn`` through
    ``distribute_datasets_from_function`` and runs ``replica_step(model, optimizer, x, y,
    global_batch)`` under ``strategy.run`` for a few steps, with a global batch the notebook
    does not use (5 examples per worker). Reference: plain SGD on one device over the global
    batches, in float64 NumPy; and each other. A miss is named by the same SGD gone wrong
    that it matches (twice the step, both workers on the same examples, no step).
    """
    sources = {
        what: _source(f, what)
        for what, f in [("dataset_fn", dataset_fn), ("replica_step", replica_step)]
    }
    x, y, w0, b0 = _problem()
    with tempfile.TemporaryDirectory(prefix="dpkit-ex08-") as work:
        np.savez(os.path.join(work, "data.npz"), x=x, y=y, w=w0, b=b0)
        with open(os.path.join(work, "answer.py"), "w") as f:  # a file: autograph reads it
            f.write("import keras\nimport numpy as np\nimport tensorflow as tf\n\n\n")
            f.write("\n\n".join(source for _, source in sources.values()))
        spec = os.path.join(work, "spec.json")
        with open(spec, "w") as f:
            json.dump({what: name for what, (name, _) in sources.items()} | {"folder": work}, f)
        addresses = [f"127.0.0.1:{procs.free_port()}" for _ in range(2)]
        argv = [sys.executable, "-m", __name__, spec]
        with procs.Group(timeout=timeout, echo=None) as group:
            for i in range(2):
                config = {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": i}}
                group.start(f"worker:{i}", argv, env={"TF_CONFIG": json.dumps(config)})
            try:
                group.wait()
            except procs.TaskFailedError as error:
                raise _failure(error) from None
            except TimeoutError:
                raise AssertionError(
                    f"the workers did not finish within {timeout:g} s: one waits in a "
                    "collective the other never runs. Every worker runs the same steps and "
                    "applies the gradients itself (not on the chief only)"
                ) from None
        finals = []
        for i in range(2):
            saved = np.load(os.path.join(work, f"worker{i}.npz"))
            finals.append([saved["w"], saved["b"]])
    # float32 SGD over a few steps against float64: a few rounding steps more than one sum
    same = checking.agree(finals[1], finals[0], what="worker 1's weights vs worker 0's", ulps=1024)
    lazy = [i for i in range(2) if np.array_equal(finals[i][0], w0)]
    assert same, f"{same}. Every worker applies the same update, the gradients summed over " + (
        f"the workers: worker {lazy[0]}'s weights never moved (not on the chief only)"
        if lazy
        else "the workers (apply_gradients all-reduces them; a variable's assign_sub does not)"
    )
    reference = _sgd(x, y, w0, b0, _BATCH, _LR, _STEPS)
    got = checking.agree(finals[0], reference, what="the workers vs one device", ulps=1024)
    if got:
        return "Check 2b passed"
    half = _BATCH // 2
    wrong = {
        "the weights moved twice as far as one device's: did you divide the loss by the "
        "worker's own batch (reduce_mean, or global_batch_size set to the per-worker batch; "
        "compute_average_loss(per_example, global_batch_size=global_batch) divides by the "
        "global one), or all-reduce the gradients before apply_gradients, which does it "
        "again?": _sgd(x, y, w0, b0, _BATCH, 2 * _LR, _STEPS),
        "both workers trained on the same examples: shard the input, each worker its own "
        "(dataset.shard(num_input_pipelines, input_pipeline_id))": _sgd(
            x, y, w0, b0, half, _LR, _STEPS, take=lambda k: np.arange(k * half, (k + 1) * half)
        ),
        "the weights never moved: apply the gradients (optimizer.apply_gradients)": [w0, b0],
    }
    for why, weights in wrong.items():
        if checking.agree(finals[0], weights, ulps=1024):
            raise AssertionError(f"{got}: {why}")
    raise AssertionError(
        f"{got}: the step should be one device's on the whole global batch: the mean loss "
        "over the global batch (compute_average_loss), its gradients applied on every worker"
    )


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
    fails; and by name with TF1's ``Saver`` (key ``global_step``). Reference: the steps
    assigned before each save.
    """
    import logging

    import tensorflow as tf

    with tempfile.TemporaryDirectory(prefix="dpkit-ex08-") as work:
        for run, steps in enumerate([{9: 31, 10: 52, 11: 7}, {9: 5, 10: 3, 11: 64}]):
            folder = os.path.join(work, f"by-object-{run}")
            step, epoch = tf.Variable(0, dtype=tf.int64), tf.Variable(0, dtype=tf.int64)
            checkpoint = tf.train.Checkpoint(global_step=step, epoch=epoch)
            manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=3)
            saves = {}  # file name -> the step saved in it
            for i in range(1, 12):
                step.assign(steps.get(i, 100 + i))
                epoch.assign(i + 2)
                saves[os.path.basename(manager.save())] = int(step.numpy())
            newest = os.path.basename(manager.latest_checkpoint)
            read = _read_step(steps_from_checkpoint, folder, "by object (tf.train.Checkpoint)")
            older = [name for name, saved in saves.items() if name != newest and saved == read]
            assert not older, (
                f"you read {read}, the step in {older[0]}, an older checkpoint; the newest, "
                f"{newest}, holds {saves[newest]}: tf.train.latest_checkpoint finds it"
            )
            assert read != len(saves), (
                f"you read {read}: the number of saves (save_counter, and the number in "
                f"{newest}), not the step saved in it, {saves[newest]}"
            )
            assert read != len(saves) + 2, (
                f"you read {read}, another int64 of the checkpoint ('epoch'): pick the global "
                f"step by its key; {newest} holds the step {saves[newest]}"
            )
            assert read == saves[newest], f"you read {read}; {newest} holds step {saves[newest]}"
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


def _worker(spec_path: str) -> None:
    """One worker of :func:`check_two_workers` (``python -m dpkit.exercises.ex08 SPEC``)."""
    with open(spec_path) as f:
        spec = json.load(f)
    import keras
    import tensorflow as tf

    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    data = np.load(os.path.join(spec["folder"], "data.npz"))
    import importlib.util

    where = importlib.util.spec_from_file_location(
        "answer", os.path.join(spec["folder"], "answer.py")
    )
    answer = importlib.util.module_from_spec(where)
    where.loader.exec_module(answer)
    dataset_fn = getattr(answer, spec["dataset_fn"])
    replica_step = getattr(answer, spec["replica_step"])
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = keras.Sequential([keras.Input((_FEATURES,)), keras.layers.Dense(_CLASSES)])
        optimizer = keras.optimizers.SGD(_LR)
    model.set_weights([data["w"], data["b"]])
    x, y = data["x"], data["y"]
    batches = iter(
        strategy.distribute_datasets_from_function(lambda ctx: dataset_fn(ctx, x, y, _BATCH))
    )

    @tf.function
    def step(xb, yb):
        strategy.run(lambda xr, yr: replica_step(model, optimizer, xr, yr, _BATCH), (xb, yb))

    for _ in range(_STEPS):
        step(*next(batches))
    w, b = model.get_weights()
    np.savez(os.path.join(spec["folder"], f"worker{index}.npz"), w=w, b=b)


if __name__ == "__main__":
    procs.watch_parent()  # exit when the check that started us dies
    _worker(sys.argv[1])
    # the normal exit: TensorFlow's shutdown barrier waits for the other worker

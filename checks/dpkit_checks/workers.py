"""The check of a multi-worker answer (exercise 08): a rehearsal in this process, then two workers.

Starting two worker processes costs two TensorFlow imports; most wrong answers already show
on two replicas of a ``MirroredStrategy`` in this process, so the check rehearses there first
and starts the workers only for an answer that passes the rehearsal.

The rehearsal runs the same source the workers would (the learner's two functions, written
to a file with ``tf``, ``np`` and ``keras`` imported), as 2 and then 3 workers of one
replica each: ``dataset_fn`` is called with each worker's ``InputContext`` and each replica
is fed its worker's batches, then a last global batch in unequal shares; it varies the class
count and records the ``training`` flag, which nothing in a softmax regression's weights
would show. Two or three workers in one process are still not two processes: what only a
cluster shows (a step applied on the chief only, read from the cluster resolver) is left to
the worker processes, ``python -m dpkit_checks.workers SPEC`` (:func:`_worker`).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import sys
import tempfile
import textwrap

import numpy as np

from dpkit import checking
from dpkit.plumbing import procs
from dpkit_checks import mirrored

#: features, and classes of the worker processes' model (the notebook's demo has 3)
_FEATURES, _CLASSES = 5, 4
#: per-worker batch (odd on purpose), steps and learning rate; the two-worker run's global
#: batch is 2 * _PER_WORKER, the rehearsal's 2 and 3 times it
_PER_WORKER, _STEPS, _LR = 5, 4, 0.5
_BATCH = 2 * _PER_WORKER
_REHEARSED = (2, 3)  # workers rehearsed in this process: 3 catches a '2 workers' typed in
#: {workers rehearsed: the classes of their model}: a class count typed in fits one at most
_CLASSES_OF = {2: _CLASSES, 3: 5}
#: {workers rehearsed: the replicas' unequal shares of the global batch of a last step, fed
#: without dataset_fn}: a replica's own batch times the replicas is then not the global batch
_SHARES = {2: (7, 3), 3: (2, 8, 5)}
_ULPS = 1024  # float32 SGD over a few steps against float64: a few rounding steps more


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


def _problem(classes: int = _CLASSES) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Examples ``x`` (float32, enough for every run) with labels of ``classes`` classes from a
    random linear rule; starting ``w``, ``b``."""
    rng = np.random.default_rng(8 + classes)
    rows = max(_REHEARSED) * _PER_WORKER * (_STEPS + 1)
    x = rng.normal(size=(rows, _FEATURES)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(_FEATURES, classes)), axis=1).astype(np.int32)
    w = rng.normal(0, 0.3, size=(_FEATURES, classes)).astype(np.float32)
    b = rng.normal(0, 0.1, size=classes).astype(np.float32)
    return x, y, w, b


def _sgd(x, y, w, b, batch: int, lr: float, steps: int, take=None, losses=None, weights=None):
    """Plain SGD on the mean softmax cross-entropy, in float64: one device, batches in order.

    ``take(k)`` gives the indices of step k's batch (default: global batch k); each step's
    mean loss, before its update, is appended to ``losses`` if given; ``weights`` (one per
    example of a batch) replace the mean's 1 / batch."""
    w, b = w.astype(np.float64), b.astype(np.float64)
    for k in range(steps):
        rows = np.arange(k * batch, (k + 1) * batch) if take is None else take(k)
        xb, yb = x[rows].astype(np.float64), y[rows]
        logits = xb @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        if losses is not None:
            losses.append(-np.mean(np.log(p[np.arange(len(yb)), yb])))
        p[np.arange(len(yb)), yb] -= 1  # d(loss)/d(logits), each example's, unweighted
        p *= (np.full(len(yb), 1 / len(yb)) if weights is None else np.asarray(weights))[:, None]
        w, b = w - lr * xb.T @ p, b - lr * p.sum(axis=0)
    return [w, b]


_MISMATCH = (
    "the workers' collectives did not match: every worker runs the same step, and applies "
    "the gradients itself (apply_gradients all-reduces them across workers: not on the "
    "chief only)"
)
_NOTEBOOK = (
    "the workers run your two functions' source in new processes, with tf, np and keras "
    "imported and nothing else from the notebook: use the arguments"
)
_RANK = "compute_average_loss takes the per-example losses (reduction=None), not their mean"


def _failure(error: procs.TaskFailedError) -> AssertionError:
    """What to tell the learner when a worker process failed."""
    text = str(error)
    raised = re.findall(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.*)$", text, re.MULTILINE)
    said = ": ".join(raised[-1]) if raised else text.splitlines()[0]
    aborted = re.findall(r"Collective ops is aborted by: (.*)", text)
    if aborted or re.search(r"Unavailable|DeadlineExceeded|[Ss]ocket closed", text):
        said += f" ({aborted[-1].split(chr(92) + 'n')[0][:200]})" if aborted else ""
        hint = _MISMATCH
    elif "NameError" in said:
        said = ", ".join(re.findall(r"name '\w+' is not defined", text)[-1:]) or said
        hint = _NOTEBOOK
    elif "compute_average_loss" in text:
        hint = _RANK
    else:
        hint = "the error names the line of your code (answer.py holds your two functions)"
    return AssertionError(f"a worker process failed: {said[:500]}; {hint}")


def _rehearsal_failure(error: Exception, workers: int) -> AssertionError | None:
    """What to tell the learner when the rehearsal raised ``error``; None to leave the
    verdict to the worker processes (an error that may come from rehearsing in one process:
    a cluster resolver it does not have, say)."""
    text = f"{type(error).__name__}: {error}"
    raised = re.findall(r"^\s*(\w+(?:Error|Exception)): (.*)$", text, re.MULTILINE)
    said = ": ".join(raised[-1])[:300] if raised else text.splitlines()[0][:300]
    if isinstance(error, NameError) or "is not defined" in text:
        said, hint = (re.findall(r"name '\w+' is not defined", text)[-1:] or [said])[0], _NOTEBOOK
    elif "`merge_call` called while defining" in text:
        said = "apply_gradients ran inside control flow (an if, a loop, a nested tf.function)"
        hint = (
            "every worker applies the gradients, every step, unconditionally: apply_gradients "
            "all-reduces them across the workers (not on the chief only)"
        )
    elif "compute_average_loss" in text or "per_example_loss" in text:
        hint = _RANK
    elif re.search(rf"\d, ?{_CLASSES_OF[workers]}\b", text):  # a shape (batch, classes)
        hint = (
            f"the check's model has {_CLASSES_OF[workers]} classes here, not the demo's 3: take "
            "the labels as they are (sparse_categorical_crossentropy) or the class count from "
            "the logits (logits.shape[-1]), not a count typed in or read from the labels"
        )
    else:
        return None
    return AssertionError(
        f"rehearsed as {workers} workers in this process, before any worker process: "
        f"your code failed: {said}; {hint}"
    )


def _answer(folder: str):
    """The module ``answer.py`` in ``folder``: the learner's two functions."""
    where = importlib.util.spec_from_file_location("answer", os.path.join(folder, "answer.py"))
    answer = importlib.util.module_from_spec(where)
    where.loader.exec_module(answer)
    return answer


def _model(strategy, w, b, seen=None):
    """The softmax-regression model (as many classes as ``b``) and plain SGD, in ``strategy``'s
    scope, from ``w``, ``b``; given a list ``seen``, its first layer appends to it the
    ``training`` flag of each call (traced), which nothing else in this model would show."""
    import keras

    class Watch(keras.layers.Layer):
        def call(self, inputs, training=None):
            seen.append(training)
            return inputs

    watch = [] if seen is None else [Watch()]
    with strategy.scope():
        model = keras.Sequential([keras.Input((_FEATURES,)), *watch, keras.layers.Dense(len(b))])
        optimizer = keras.optimizers.SGD(_LR)
    model.set_weights([w, b])
    if seen is not None:
        seen.clear()  # the calls that built the model
    return model, optimizer


def _rehearse(answer, names, workers: int, x, y, w0, b0, seen: list):
    """``workers`` workers of one replica each, in this process: each replica's weights after
    the steps on ``dataset_fn``'s batches, each step's losses returned by the replicas, summed
    (None if they return nothing), and a function that takes one more step, on the next
    global batch cut into the unequal shares of :data:`_SHARES`, and returns the weights and
    the loss after it. The model's calls append their training flags to ``seen``."""
    import tensorflow as tf

    strategy = mirrored(names[:workers])
    model, optimizer = _model(strategy, w0, b0, seen)
    batch = workers * _PER_WORKER
    iterators = [
        iter(answer.dataset_fn(tf.distribute.InputContext(workers, i, workers), x, y, batch))
        for i in range(workers)
    ]

    @tf.function
    def step(xb, yb):
        out = strategy.run(
            lambda xr, yr: answer.replica_step(model, optimizer, xr, yr, batch), (xb, yb)
        )
        return None if out is None else strategy.reduce("SUM", out, axis=None)

    def weights():
        parts = [strategy.experimental_local_results(v.value) for v in model.trainable_variables]
        return [[np.asarray(part[i]) for part in parts] for i in range(workers)]

    def feed(mine):  # mine[i]: replica i's (x, y)
        xb, yb = (
            strategy.experimental_distribute_values_from_function(
                lambda context, part=part: mine[context.replica_id_in_sync_group][part]
            )
            for part in (0, 1)
        )
        loss = step(xb, yb)
        return None if loss is None else np.asarray(loss, dtype=np.float64)

    def uneven():
        cuts = _STEPS * batch + np.cumsum((0, *_SHARES[workers]))
        loss = feed([(tf.constant(x[a:z]), tf.constant(y[a:z])) for a, z in zip(cuts, cuts[1:])])
        return weights(), loss

    losses = [feed([next(iterator) for iterator in iterators]) for _ in range(_STEPS)]
    return weights(), losses, uneven


def _verdict(finals, x, y, w0, b0, workers: int, where: str) -> None:
    """Raise what is wrong with ``finals`` (each worker's weights) of ``workers`` workers,
    against plain SGD on one device over the same global batches; name the miss."""
    for i in range(1, workers):
        same = checking.agree(
            finals[i], finals[0], what=f"{where}worker {i}'s weights vs worker 0's", ulps=_ULPS
        )
        lazy = [k for k in range(workers) if np.array_equal(finals[k][0], w0)]
        assert same, f"{same}. Every worker applies the same update, the gradients summed " + (
            f"over the workers: worker {lazy[0]}'s weights never moved (not on the chief only)"
            if lazy
            else "over the workers (apply_gradients all-reduces them; a variable's assign_sub "
            "does not)"
        )
    batch = workers * _PER_WORKER
    reference = _sgd(x, y, w0, b0, batch, _LR, _STEPS)
    got = checking.agree(finals[0], reference, what=f"{where}the workers vs one device", ulps=_ULPS)
    if got:
        return
    times = "twice" if workers == 2 else f"{workers} times"
    wrong = {
        f"the weights moved {times} as far as one device's: did you divide the loss by the "
        "worker's own batch (reduce_mean, or global_batch_size set to the per-worker batch; "
        "compute_average_loss(per_example, global_batch_size=global_batch) divides by the "
        "global one), or all-reduce the gradients before apply_gradients, which does it "
        "again" + (", or apply them twice?" if workers == 2 else "?"): _sgd(
            x, y, w0, b0, batch, workers * _LR, _STEPS
        ),
        "both workers trained on the same examples: shard the input, each worker its own "
        "(dataset.shard(num_input_pipelines, input_pipeline_id))": _sgd(
            x,
            y,
            w0,
            b0,
            _PER_WORKER,
            _LR,
            _STEPS,
            take=lambda k: np.arange(k * _PER_WORKER, (k + 1) * _PER_WORKER),
        ),
        "the weights never moved: apply the gradients (optimizer.apply_gradients)": [w0, b0],
    }
    wrong[
        f"the weights moved {batch} times as far as one device's, the global batch: divide "
        "the summed loss by global_batch (compute_average_loss does)"
    ] = _sgd(x, y, w0, b0, batch, batch * _LR, _STEPS)
    if workers != 2:
        wrong[
            f"the weights moved {workers / 2:g} times as far as one device's on {workers} "
            "workers: is '2 workers' typed in (a loss divided by twice the worker's batch)? "
            "Divide by the global batch, global_batch, whatever the number of workers"
        ] = _sgd(x, y, w0, b0, batch, workers / 2 * _LR, _STEPS)
    for why, weights in wrong.items():
        if checking.agree(finals[0], weights, ulps=_ULPS):
            raise AssertionError(f"{got}: {why}")
    raise AssertionError(
        f"{got}: the step should be one device's on the whole global batch: the mean "
        "cross-entropy of the model's logits (from_logits=True) over the global batch "
        "(compute_average_loss), its gradients applied once, on every worker"
    )


def _returned(losses, x, y, w0, b0, workers: int, where: str) -> None:
    """Raise unless the losses the replicas returned, summed over them, are each step's mean
    loss over the global batch (one device's, before its update)."""
    expected: list = []
    _sgd(x, y, w0, b0, workers * _PER_WORKER, _LR, _STEPS, losses=expected)
    assert all(loss is not None for loss in losses), (
        f"{where}your replica_step returns nothing: return the loss you took the gradients of"
    )
    shapes = {loss.shape for loss in losses}
    assert shapes == {()}, (
        f"{where}your replica_step returns values of shape {sorted(shapes)[0]}, not one "
        "number: return the loss you took the gradients of, not the per-example losses"
    )
    got = checking.agree(
        losses,
        expected,
        what=f"{where}the losses returned, summed over the workers, vs one "
        "device's mean loss over each global batch",
        ulps=_ULPS,
    )
    assert got, (
        f"{got}: return the loss you took the gradients of (compute_average_loss's): each "
        "worker's share, so that the shares add up to the global batch's mean"
    )


def _uneven(uneven, before, x, y, workers: int, where: str) -> None:
    """Raise unless ``uneven()``, the step on unequal shares (:data:`_SHARES`), takes worker
    0's weights ``before`` where one device's step on that global batch takes them, and the
    losses the replicas return add up to its mean loss."""
    shares, batch = _SHARES[workers], workers * _PER_WORKER
    rows = np.arange(_STEPS * batch, (_STEPS + 1) * batch)
    expected: list = []
    want = _sgd(x, y, *before, batch, _LR, 1, take=lambda k: rows, losses=expected)
    where += f"a last step with the replicas taking {list(shares)} of a global batch of {batch}: "
    try:
        after, loss = uneven()
    except Exception as error:
        said = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        raise AssertionError(f"{where}your code failed: {said}") from None
    got = checking.agree(after[0], want, what=f"{where}the weights vs one device's", ulps=_ULPS)
    if not got:
        own = np.repeat([1 / (share * workers) for share in shares], shares)
        mistake = _sgd(x, y, *before, batch, _LR, 1, take=lambda k: rows, weights=own)
        raise AssertionError(
            f"{got}: each replica divided its summed loss by its own batch times the replicas "
            "(compute_average_loss without global_batch_size, or len(x) * num_replicas_in_sync), "
            "which is the global batch only when every replica gets as many examples: pass "
            "global_batch_size=global_batch"
            if checking.agree(after[0], mistake, ulps=_ULPS)
            else f"{got}: divide each replica's summed per-example losses by global_batch, "
            "whatever its share of the batch"
        )
    got = checking.agree(
        loss, expected[0], what=f"{where}the losses returned, summed, vs one device's", ulps=_ULPS
    )
    assert got, (
        f"{got}: return the loss you took the gradients of (compute_average_loss's), each "
        "replica's share of the global batch's mean"
    )


def _devices(devices) -> list[str]:
    """The device names the rehearsal runs on: ``devices``, or TensorFlow's logical devices."""
    import tensorflow as tf

    if devices is None:
        kind = "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
        devices = [d.name for d in tf.config.list_logical_devices(kind)]
    names = list(devices)
    if len(names) < max(_REHEARSED):
        raise ValueError(
            f"check 2b rehearses 2 and 3 workers as replicas in this process, which needs "
            f"{max(_REHEARSED)} devices, but it has {len(names)}: call devices.setup(3) in "
            "the Setup, before any other TensorFlow code (then restart the kernel)"
        )
    return names


def check_two_workers(dataset_fn, replica_step, devices=None, timeout: float = 300.0) -> str:
    """``dataset_fn`` and ``replica_step`` as ``MultiWorkerMirroredStrategy`` workers.

    First a rehearsal in this process (:func:`_rehearse`): 2, then 3 workers of one replica
    each as a ``MirroredStrategy`` over ``devices`` (default: TensorFlow's logical devices;
    3 are needed), on models of 4 and 5 classes (not the demo's 3), then one more step whose
    global batch the replicas share unequally (:data:`_SHARES`); the model's first layer
    records the ``training`` flag it is called with. An answer that fails it fails here,
    before any process starts. Then two worker processes on localhost (``TF_CONFIG`` for
    each; this module is their program). Each builds a softmax-regression Keras model and
    plain SGD in the strategy's scope, from the same starting weights, reads its input from
    ``dataset_fn`` through ``distribute_datasets_from_function`` and runs
    ``replica_step(model, optimizer, x, y, global_batch)`` under ``strategy.run`` for a few
    steps, with global batches the notebook does not use (5 examples per worker). Reference,
    in both: plain SGD on one device over the global batches, in float64 NumPy; and each
    other. A miss is named by the same SGD gone wrong that it matches (the step times the
    workers, or times 3/2 on 3 workers, both workers on the same examples, no step, a
    replica's loss divided by its own share times the replicas).
    """
    sources = {
        what: _source(f, what)
        for what, f in [("dataset_fn", dataset_fn), ("replica_step", replica_step)]
    }
    names = _devices(devices)
    with tempfile.TemporaryDirectory(prefix="dpkit-ex08-") as work:
        with open(os.path.join(work, "answer.py"), "w") as f:  # a file: autograph reads it
            f.write("import keras\nimport numpy as np\nimport tensorflow as tf\n\n\n")
            f.write("\n\n".join(source for _, source in sources.values()))
            f.write(f"\n\ndataset_fn = {sources['dataset_fn'][0]}\n")
            f.write(f"replica_step = {sources['replica_step'][0]}\n")
        answer = _answer(work)
        unequal = []  # after both rehearsals, so that their equal shares say what they can
        for workers in _REHEARSED:
            where = f"rehearsed as {workers} workers in this process: "
            x, y, w0, b0 = _problem(_CLASSES_OF[workers])
            seen: list = []
            try:
                equal, losses, uneven = _rehearse(answer, names, workers, x, y, w0, b0, seen)
            except AssertionError:
                raise
            except Exception as error:
                failure = _rehearsal_failure(error, workers)
                if failure is None:
                    break  # the worker processes will say what they make of it
                raise failure from None
            modes = set(seen) - {True}
            assert not modes, (
                f"{where}your replica_step called the model with training={modes.pop()!r}: a "
                "training step calls model(x, training=True), or Dropout and BatchNormalization "
                "act as at inference (this model has neither: its weights would not show it)"
            )
            _verdict(equal, x, y, w0, b0, workers, where)
            _returned(losses, x, y, w0, b0, workers, where)
            unequal.append((uneven, equal[0], x, y, workers, where))
        for case in unequal:
            _uneven(*case)
        x, y, w0, b0 = _problem()
        finals = _two_processes(work, x, y, w0, b0, timeout)
    _verdict(finals, x, y, w0, b0, 2, "")
    return "Check 2b passed"


def _two_processes(work: str, x, y, w0, b0, timeout: float) -> list[list[np.ndarray]]:
    """Each worker's final weights, from two worker processes run on ``work``'s answer."""
    np.savez(os.path.join(work, "data.npz"), x=x, y=y, w=w0, b=b0)
    addresses = [f"127.0.0.1:{procs.free_port()}" for _ in range(2)]
    argv = [sys.executable, "-m", __name__, work]
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
                f"the workers did not finish within {timeout:g} s: one waits in a collective "
                "the other never runs. Every worker runs the same steps and applies the "
                "gradients itself (not on the chief only)"
            ) from None
    finals = []
    for i in range(2):
        saved = np.load(os.path.join(work, f"worker{i}.npz"))
        finals.append([saved["w"], saved["b"]])
    return finals


def _worker(folder: str) -> None:
    """One worker of :func:`check_two_workers` (``python -m dpkit_checks.workers FOLDER``)."""
    import tensorflow as tf

    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    data = np.load(os.path.join(folder, "data.npz"))
    answer = _answer(folder)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    model, optimizer = _model(strategy, data["w"], data["b"])
    x, y = data["x"], data["y"]
    batches = iter(
        strategy.distribute_datasets_from_function(
            lambda context: answer.dataset_fn(context, x, y, _BATCH)
        )
    )

    @tf.function
    def step(xb, yb):
        strategy.run(lambda xr, yr: answer.replica_step(model, optimizer, xr, yr, _BATCH), (xb, yb))

    for _ in range(_STEPS):
        step(*next(batches))
    w, b = model.get_weights()
    np.savez(os.path.join(folder, f"worker{index}.npz"), w=w, b=b)


if __name__ == "__main__":
    procs.watch_parent()  # exit when the check that started us dies
    _worker(sys.argv[1])
    # the normal exit: TensorFlow's shutdown barrier waits for the other worker

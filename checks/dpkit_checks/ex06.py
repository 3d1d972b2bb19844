"""Checks of exercise 06 (TensorBoard), one function per check cell of exercises/06_*.ipynb:
summaries against NumPy's statistics (check 1), a reader against the values written in several
event files (check 2), a distributed loop's logged loss against one device's in NumPy (check 3)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import tempfile
import warnings
from pathlib import Path

import numpy as np

from dpkit import checking
from dpkit_checks import switching


@contextlib.contextmanager
def _quiet():
    """TensorFlow's warnings off stderr: nbgrader gives no points to a cell that writes there."""
    import tensorflow as tf

    logger, level = tf.get_logger(), tf.get_logger().level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _call(what, fn, *args, notes=None):
    """fn(*args), any error turned into an AssertionError that names ``what`` and adds the
    note of ``notes`` ({error type: what it most likely means}) for its type."""
    try:
        return fn(*args)
    except AssertionError:
        raise
    except Exception as error:
        note = next((f": {n}" for kind, n in (notes or {}).items() if isinstance(error, kind)), "")
        raise AssertionError(f"{what} raised {type(error).__name__}: {error}{note}") from error


# --- Check 1: my_variable_summaries ------------------------------------------------------


def _tensors() -> dict:
    """A kernel-like tensor (mean near 0), the same shifted by 0.1, and an odd-sized bias."""
    rng = np.random.default_rng(6)
    kernel = (rng.normal(size=(5, 5, 1, 32)) * 0.2).astype(np.float32)
    return {
        "conv1_kernel": kernel,
        "shifted_kernel": kernel + np.float32(0.1),
        "dense_bias": (rng.normal(size=7) * 0.05 - 0.3).astype(np.float32),
    }


#: Standard deviations gone wrong: {what it is: its value, of the values x}.
_NOT_STDDEV = {
    "the sample standard deviation (divided by n - 1); the task asks for the population one": (
        lambda x: x.std(ddof=1)
    ),
    "the variance, the square of the standard deviation": lambda x: x.var(),
    "the root mean square of the values, not centred on their mean": lambda x: np.sqrt(
        np.mean(x**2)
    ),
    "the mean absolute distance from the mean, not the root mean square one": lambda x: np.abs(
        x - x.mean()
    ).mean(),
}


def check_variable_summaries(my_variable_summaries) -> str:
    """Check 1: the tags sit under the scope, and the values equal NumPy's statistics.

    Writes three tensors (a kernel with mean near 0, the same shifted, a 7-value bias) at
    steps 3 and 11, dpkit's ``variable_summaries`` switched off; reads them back and compares
    each statistic with NumPy's in float64, the histogram with ``np.histogram``.
    """
    import tensorflow as tf

    from dpkit import summaries

    tensors, steps = _tensors(), {"conv1_kernel": 3, "shifted_kernel": 3, "dense_bias": 11}
    default_step = tf.summary.experimental.get_step()
    with tempfile.TemporaryDirectory() as folder, _quiet():
        writer = tf.summary.create_file_writer(folder)
        try:
            with writer.as_default(), switching.switched_off(summaries, "variable_summaries"):
                for name, tensor in tensors.items():
                    _call("my_variable_summaries", my_variable_summaries, tensor, name, steps[name])
        finally:
            writer.close()
            step_left = tf.summary.experimental.get_step()
            tf.summary.experimental.set_step(default_step)  # put back for the notebook
        logs = summaries.read(folder)["."]
    assert step_left is default_step, (
        f"my_variable_summaries left TensorFlow's default summary step at {step_left!r} (it was "
        f"{default_step!r}): every later summary of the program that gives no step would be "
        "written at that step. Give each write its step and leave the default alone"
    )
    outside = sorted(t for t in [*logs.scalars, *logs.histograms] if t.split("/")[0] not in tensors)
    assert not outside, (
        f"the tags {outside} are not under the name scopes {list(tensors)}: "
        "TensorBoard groups a tensor's summaries by the scope they were written in"
    )
    for name, tensor in tensors.items():
        _check_summaries(logs, name, tensor.astype(np.float64), steps[name])
    return "Check 1 passed"


def _check_summaries(logs, name, reference, step) -> None:
    r = reference
    expected = {"mean": r.mean(), "stddev": r.std(), "min": r.min(), "max": r.max()}
    size = np.abs(reference).max()  # the values' own size sets every bar
    for stat, value in expected.items():
        tag = f"{name}/{stat}"
        assert tag in logs.scalars, (
            f"no scalar {tag!r} in the writer the check set as the default; "
            f"it got {sorted(logs.scalars)}"
        )
        steps, values = logs.scalar(tag)
        assert steps.tolist() == [step], f"{tag}: written at steps {steps.tolist()}, not [{step}]"
        if stat == "stddev":
            for what, formula in _NOT_STDDEV.items():
                wrong = formula(reference)
                # only a formula far (ten bars) from the right value can be told apart from it
                if not checking.agree(wrong, value, ulps=10 * checking.DEFAULT_ULPS):
                    assert not checking.agree(values[0], wrong, scale=value), (
                        f"{tag}: {values[0]:.8f} is {what}"
                    )
        check = checking.agree(values[0], value, what=f"{tag} vs NumPy", scale=size)
        assert check, f"{tag}: {values[0]:.8f}, NumPy says {value:.8f} ({check})"
    tag = f"{name}/histogram"
    assert tag in logs.histograms, f"no histogram {tag!r}; you wrote {sorted(logs.histograms)}"
    written = [h.step for h in logs.histograms[tag]]
    assert written == [step], f"{tag}: written at steps {written}, not [{step}]"
    (histogram,) = logs.histograms[tag]
    assert histogram.total == reference.size, (
        f"{tag} counts {histogram.total} values, the tensor has {reference.size}"
    )
    assert len(histogram.counts) >= 10, (
        f"{tag} has {len(histogram.counts)} bucket(s): too few to show how the values spread; "
        "tf.summary.histogram's default bucket count does"
    )
    spans = [histogram.edges[0], histogram.edges[-1]]
    span_check = checking.agree(spans, [reference.min(), reference.max()], scale=size)
    assert span_check, (
        f"{tag} spans [{spans[0]:.6f}, {spans[1]:.6f}] and the values "
        f"[{reference.min():.6f}, {reference.max():.6f}]: it shows some other tensor"
    )
    counts, _ = np.histogram(reference, bins=histogram.edges)
    assert np.abs(histogram.counts - counts).sum() <= 2, (  # a value on an edge may go either way
        f"{tag}: the buckets hold other counts than NumPy's histogram of the values"
    )


# --- Check 2: read_scalars ---------------------------------------------------------------

#: The tag check 2 reads most: 10,500 values, more than a reader keeps if told 10,000.
TAG = "loss"
VALUES = 10_500


def _value(k: int) -> float:
    """The k-th value written: a float32, alternating in sign, on no grid of round numbers."""
    return float(np.float32((0.01 * k**1.3 - 2.0) * (-1) ** k))


def _write_events(folder: Path, stamp: int, scalars: dict) -> str:
    """Write ``{tag: [(step, value), ...]}`` to an event file of ``folder`` stamped ``stamp``
    as TF2's writer does (a float32 tensor in ``tensor_content``, the scalars plugin's
    metadata), the tags' events interleaved; return the file's name."""
    import tensorflow as tf
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2

    meta = summary_pb2.SummaryMetadata(plugin_data={"plugin_name": "scalars"})
    kind = types_pb2.DT_FLOAT
    name = f"events.out.tfevents.{stamp}.host.v2"
    folder.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(folder / name)) as out:
        out.write(
            event_pb2.Event(wall_time=stamp, file_version="brain.Event:2").SerializeToString()
        )
        rows = [(k, t, *p) for t, pairs in scalars.items() for k, p in enumerate(pairs)]
        for k, tag, step, value in sorted(rows, key=lambda row: row[0]):
            content = np.float32(value).tobytes()
            tensor = tensor_pb2.TensorProto(dtype=kind, tensor_shape={}, tensor_content=content)
            event = event_pb2.Event(wall_time=stamp + k / 100, step=step)
            event.summary.value.add(tag=tag, tensor=tensor, metadata=meta)
            out.write(event.SerializeToString())
    return name


def _event_folders(root: Path) -> dict:
    """Write check 2's folders; return {(folder, tag): {file name: [(step, value)]}}."""
    steps = [3 * k + k % 2 for k in range(VALUES)]  # uneven steps
    pairs = [(s, _value(k)) for k, s in enumerate(steps)]
    # Two runs' writers in one folder, their steps interleaved (the newer file holds steps
    # older than the other's last), and a writer between them without the tag.
    first = [p for k, p in enumerate(pairs) if k % 15 < 7]
    second = [p for k, p in enumerate(pairs) if k % 15 >= 7]
    accuracy = [(s, float(np.float32(0.5 + s / 1e4))) for s in steps[::15]]
    smoothed = [(s, float(np.float32(v / 3))) for s, v in pairs[::30]]
    train = [{TAG: first, "smoothed_loss": smoothed}, {"accuracy": accuracy}]
    train.append({"accuracy": accuracy[:9], TAG: second})
    # Another folder, a scoped tag, and a restart from step 487: it logs steps 487 to 967
    # again, the first two values as before; its sub-folder is another run, not part of it.
    evaluation = [(40 * k + 7, float(np.float32(1.0 / (k + 1.5)))) for k in range(25)]
    restart = evaluation[12:14] + [(s, float(np.float32(v * 0.9))) for s, v in evaluation[14:]]
    _write_events(root / "eval" / "older_run", 1600000000, {"eval/loss": [(5, 9.5), (45, 8.25)]})
    return {
        (root / "train", TAG): {
            _write_events(root / "train", 1700000100 + 100 * k, scalars): scalars.get(TAG, [])
            for k, scalars in enumerate(train)
        },
        (root / "eval", "eval/loss"): {
            _write_events(root / "eval", stamp, {"eval/loss": p, "eval/accuracy": accuracy}): p
            for stamp, p in [(1700000400, evaluation), (1700000500, restart)]
        },
    }


def check_read_scalars(read_scalars) -> str:
    """Check 2: every value of a tag, from every event file of a folder, in order of step.

    ``train`` holds three event files: two runs' writers whose steps interleave (10,500
    values of ``loss`` in all, more than a reader capped at 10,000 keeps) and one without
    the tag; ``eval`` a scoped tag in two files (a restart logs 13 steps again, two with the
    same values) and a sub-folder, another run. Reference: the values written.
    """
    from dpkit import summaries

    with tempfile.TemporaryDirectory() as root, _quiet():
        cases = _event_folders(Path(root))
        for (folder, tag), files in cases.items():
            with switching.switched_off(summaries, "read"):
                what = f"read_scalars({folder.name!r}, {tag!r})"
                result = _call(what, read_scalars, str(folder), tag, notes=_READ_ERRORS)
            _compare_scalars(result, files, what)
    return f"Check 2 passed: {VALUES} values from 3 event files, and a restarted run"


#: What a reader's error most likely means, by its type.
_READ_ERRORS = {
    KeyError: "the reader holds no events of the kind you asked for under the tag. It has not "
    "read the files (Reload); or you asked for TF1 scalars (TensorFlow 2 writes a scalar "
    "summary as a tensor event, which the reader lists under Tags()['tensors']); or you read "
    "a file that does not hold the tag (a folder's files need not all hold every tag)",
    IndexError: "a TF2 scalar's tensor_proto keeps its value as bytes in tensor_content: its "
    "float_val list is empty",
}


def _compare_scalars(result, files: dict, what: str) -> None:
    written = sorted(p for pairs in files.values() for p in pairs)
    steps_w, values_w = [s for s, _ in written], [v for _, v in written]
    assert isinstance(result, (tuple, list)) and len(result) == 2, (
        f"{what}: return (steps, values), two lists; you returned a {type(result).__name__}"
    )
    steps, values = result
    assert isinstance(steps, list) and isinstance(values, list), (
        f"{what}: return two lists, not a {type(steps).__name__} and a {type(values).__name__}"
    )
    assert len(steps) == len(values), f"{what}: {len(steps)} steps but {len(values)} values"
    for name, items, fits, need in [
        ("steps", steps, (int,), "Python ints: a step is a whole number"),
        ("values", values, (int, float), "plain Python numbers"),
    ]:
        bad = [x for x in items if type(x) is bool or not isinstance(x, fits)]
        kind = f"{type(bad[0]).__module__}.{type(bad[0]).__name__}" if bad else ""
        assert not bad, f"{what}: {name} holds {kind} items ({bad[0]!r}): return {need}"
    yours = list(zip(steps, values))
    one = [n for n, pairs in files.items() if yours and set(yours) <= set(pairs)]
    assert len(files) == 1 or not one, (
        f"{what}: your {len(yours)} values all come from one event file ({one[0]}) of the "
        f"{len(files)} in the folder, which hold {len(written)}: a folder gets a file per "
        "writer and per restart; read every one"
    )
    assert yours, f"{what}: you read no values; {len(written)} were written under this tag"
    if len(yours) < len(written) and set(yours) <= set(written):
        assert set(steps) != set(steps_w), (  # every step there, some of its values not
            f"{what}: {len(yours)} values at the {len(set(steps_w))} steps, of the "
            f"{len(written)} written: a run restarted from a checkpoint logs some steps again, "
            "in a file of its own, and each is a value written: keep them all, not one a step "
            "(a dict by step) nor one of each pair (a set)"
        )
        raise AssertionError(
            f"{what}: read {len(yours)} of the {len(written)} values written: of each kind of "
            "event, the reader keeps a random sample per tag, as many as size_guidance says (10 "
            "tensors unless told). Mind the kind of event a scalar is stored as, and keep every "
            "one, however many a run logs"
        )
    extra = sorted(set(yours) - set(written))
    if sorted(yours) == written:
        assert steps == steps_w, (
            f"{what}: the (step, value) pairs are right but in another order (yours start at "
            f"steps {steps[:4]}): return them in the order of their steps"
        )
    if steps == steps_w and sorted(yours) != written and sorted(values) == sorted(values_w):
        k = next(k for k, (v, w) in enumerate(zip(values, values_w)) if v != w)
        raise AssertionError(
            f"{what}: the values are those written, but not each at its own step: at step "
            f"{steps[k]} you return {values[k]!r}, written there was {values_w[k]!r}. Keep each "
            "value with its step"
        )
    for places in range(7):
        assert sorted(values) != sorted(round(w, places) for w in values_w), (
            f"{what}: your values are rounded to {places} decimal places: return them as stored"
        )
    if extra:
        raise AssertionError(
            f"{what}: you return {len(extra)} (step, value) pair(s) never written under this tag "
            f"in this folder, e.g. {extra[0]}: read only the tag asked for (not tags that "
            "contain it), and only the folder's own files (a sub-folder is another run)"
        )
    assert sorted(yours) == written, (  # in order of step (asserted above); ties either way
        f"{what}: your (step, value) pairs differ from those written ({len(yours)} read, "
        f"{len(written)} written; the first difference at position "
        f"{next(k for k, (a, b) in enumerate(zip(sorted(yours) + [None], written)) if a != b)})"
    )


# --- Check 3: train_and_log --------------------------------------------------------------

#: Check 3's data: 31 examples in global batches of 12, so the last batch holds 7 and
#: splits unevenly over 2 or 3 replicas; a linear model trained by SGD at this rate.
EXAMPLES, GLOBAL_BATCH, FEATURES, OUTPUTS, RATE = 31, 12, 4, 2, 0.1
#: {replicas: the optimizer's iterations when the check starts (a resumed run at 7 and 12)}
STARTS = {1: 7, 2: 0, 3: 12}


def _problem():
    rng = np.random.default_rng(60)
    x, y = (rng.normal(size=(EXAMPLES, n)).astype(np.float32) for n in (FEATURES, OUTPUTS))
    kernel = (rng.normal(size=(FEATURES, OUTPUTS)) * 0.5).astype(np.float32)
    bias = (rng.normal(size=OUTPUTS) * 0.1).astype(np.float32)
    return x, y, kernel, bias


def reference_losses():
    """One device on each global batch, in float64 NumPy: the loss before each SGD step
    (per example, the mean squared error over the outputs; averaged over the batch), and the
    weights after the last step."""
    x, y, kernel, bias = _problem()
    w, b, losses = kernel.astype(np.float64), bias.astype(np.float64), []
    for start in range(0, EXAMPLES, GLOBAL_BATCH):
        xb, yb = x[start : start + GLOBAL_BATCH], y[start : start + GLOBAL_BATCH]
        error = xb @ w + b - yb
        losses.append(float(np.mean(np.mean(error**2, axis=1))))
        grad = 2 * error / OUTPUTS / len(xb)  # d loss / d output
        w, b = w - RATE * xb.T @ grad, b - RATE * grad.sum(axis=0)
    return losses, [w, b]


def _events(folder: Path, tag: str) -> list:
    """[(step, value)] of ``tag`` in the event files of ``folder``, in file order, read with
    TensorBoard's event protocol buffer (not the learner's reader, not dpkit's)."""
    import tensorflow as tf
    from tensorboard.compat.proto import event_pb2

    files = [tf.data.TFRecordDataset(str(path)) for path in sorted(folder.glob("*tfevents*"))]
    events = [event_pb2.Event.FromString(record.numpy()) for file in files for record in file]
    tensors = [(int(e.step), v.tensor) for e in events for v in e.summary.value if v.tag == tag]
    return [(step, float(tf.make_ndarray(tensor))) for step, tensor in tensors]


def _in_a_thread(train_and_log, *args) -> bool:
    """Run the loop in a thread of its own, and say whether it left a default writer there:
    TensorFlow keeps the default writer and step per thread, so none outlives the check."""
    import tensorflow as tf

    def run():
        _call("train_and_log", train_and_log, *args)
        try:  # a write given no writer returns False when there is no default writer
            return bool(tf.summary.scalar("check_probe", 0.0, step=0))
        except Exception:  # a default writer left behind, and closed
            return True

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def check_logged_training(train_and_log, make_replica_step, devices) -> str:
    """Check 3: one loss per step, at the optimizer's step, equal to one device's big-batch loss.

    On 1, 2 and 3 replicas of a MirroredStrategy trains a linear model on 31 examples in
    global batches of 12 (the last, of 7, splits unevenly), the optimizer's step starting at
    7, 0 and 12 (a resumed run); reads the ``loss`` events back with TensorBoard's protocol
    buffers before closing the writer. Reference: the same SGD on one device in NumPy.
    """
    import keras
    import tensorflow as tf

    names = list(devices)
    if len(names) < 3:
        raise ValueError(f"check 3 needs 3 devices, got {len(names)}: devices.setup(3) first")
    x, y, kernel, bias = _problem()
    expected, final = reference_losses()
    with _quiet():
        for replicas, start in STARTS.items():
            strategy = tf.distribute.MirroredStrategy(
                names[:replicas], cross_device_ops=tf.distribute.ReductionToOneDevice()
            )
            with strategy.scope():
                model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(OUTPUTS)])
                model.set_weights([kernel, bias])
                optimizer = keras.optimizers.SGD(RATE)
                optimizer.build(model.trainable_variables)
                optimizer.iterations.assign(start)
            batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
            dataset = strategy.experimental_distribute_dataset(batches)
            replica_step = make_replica_step(model, optimizer)
            with tempfile.TemporaryDirectory() as folder:
                writer = tf.summary.create_file_writer(folder)
                try:
                    left = _in_a_thread(
                        train_and_log, strategy, replica_step, optimizer, dataset, writer
                    )
                    logged = _events(Path(folder), "loss")
                    try:  # a closed writer refuses to be the default, or to write
                        with writer.as_default():
                            closed = not tf.summary.scalar("check_open", 0.0, step=0)
                    except Exception:
                        closed = True
                finally:
                    writer.close()
            what = f"on {replicas} replica(s), the optimizer at step {start}"
            assert not closed, (
                f"{what}: train_and_log closed the writer it was given: the caller may write "
                "more with it (test results, the next epoch); flush it, do not close it"
            )
            assert not left, (
                f"{what}: train_and_log left its writer as TensorFlow's default writer "
                "(set_as_default): every later summary of the program, of any writer-less "
                "code, would go to it. Write inside `with writer.as_default():`, which also "
                "flushes it on the way out"
            )
            _compare_logged(logged, expected, start, replicas, what)
            weights = checking.agree([v.numpy() for v in model.trainable_variables], final)
            assert weights, (
                f"{what}: after your loop the weights differ from one device's after "
                f"{len(expected)} SGD steps ({weights}): run replica_step once per global batch"
            )
    return "Check 3 passed: one loss per step, equal to one device's, on 1, 2 and 3 replicas"


def _compare_logged(logged, expected, start, replicas, what) -> None:
    steps = list(range(start, start + len(expected)))
    if not logged:
        raise AssertionError(
            f"{what}: the writer holds no scalar tagged 'loss': write it with "
            "tf.summary.scalar('loss', ...) while the writer is the default (writer.as_default())"
        )
    per_step = {s: [v for t, v in logged if t == s] for s, _ in logged}
    many = {s: len(v) for s, v in per_step.items() if len(v) > 1}
    assert not many, (
        f"{what}: you wrote {max(many.values())} losses at step {min(many)}: write the loss once "
        "per step, after reducing it across the replicas (a summary per replica, or per "
        "replica's result, gives TensorBoard several points at one step)"
    )
    yours = sorted(per_step)
    if yours != steps:
        hint = "number each loss with the optimizer's iterations read before its update"
        if yours == list(range(len(yours))) and start:
            hint = f"your steps start at 0, the optimizer's at {start} (a resumed run): take the "
            hint += "step from optimizer.iterations"
        elif yours == [s + 1 for s in steps]:
            hint = "each is one ahead: read optimizer.iterations before the update, not after"
        raise AssertionError(f"{what}: you logged steps {yours}, expected {steps}: {hint}")
    values = [per_step[s][0] for s in steps]
    scale = max(abs(e) for e in expected)
    close = [bool(checking.agree(v, e, scale=scale)) for v, e in zip(values, expected)]
    if all(close):
        return
    k = close.index(False)
    hint = (
        "log the global loss: every replica's per-example losses averaged over the whole "
        "global batch, as one device would compute it"
    )
    ratio = values[k] / expected[k]
    split = f", split unevenly over {replicas} replicas" if replicas > 1 else ""
    if all(close[:-1]):
        hint = (
            f"right on the full batches, wrong on the last one ({EXAMPLES % GLOBAL_BATCH} "
            f"examples{split}): average over the examples of the batch you got, not over "
            "replicas (a mean of means weighs a replica with fewer examples as much) nor over "
            "a fixed batch size"
        )
    elif replicas > 1 and abs(ratio - replicas) < 0.05 * replicas:
        hint = f"{ratio:.2f} times the loss: you summed the replicas' means"
    raise AssertionError(
        f"{what}: at step {steps[k]} you logged {values[k]:.6f}, one device on the global "
        f"batch gives {expected[k]:.6f}: {hint}"
    )

"""Exercise 06's checks 1 and 2 pass a right answer and fail wrong ones, saying why.

(Check 3 needs three devices, fixed once per process: tests/course/test_exercise_checks_ex06.py.)
"""

from __future__ import annotations

import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util

from dpkit_checks import ex06


def summaries_with(std=None, scoped=True):
    """my_variable_summaries, with the standard deviation given by ``std(values, mean)``."""

    def write(values, name, step):
        values = tf.cast(tf.convert_to_tensor(values), tf.float32)
        with tf.name_scope(name if scoped else ""):
            mean = tf.reduce_mean(values)
            deviation = std or (lambda v, m: tf.sqrt(tf.reduce_mean(tf.square(v - m))))
            tf.summary.scalar("mean", mean, step=step)
            tf.summary.scalar("stddev", deviation(values, mean), step=step)
            tf.summary.scalar("max", tf.reduce_max(values), step=step)
            tf.summary.scalar("min", tf.reduce_min(values), step=step)
            tf.summary.histogram("histogram", values, step=step)

    return write


def test_variable_summaries_right():
    assert ex06.check_variable_summaries(summaries_with()) == "Check 1 passed"


@pytest.mark.parametrize(
    "answer, message",
    [
        (summaries_with(std=lambda v, m: tf.math.reduce_variance(v)), r"stddev: .* the variance"),
        (summaries_with(scoped=False), r"are not under the name scopes"),
        (
            summaries_with(
                std=lambda v, m: tf.sqrt(
                    tf.reduce_sum(tf.square(v - m)) / (tf.cast(tf.size(v), tf.float32) - 1)
                )
            ),
            r"sample standard deviation",
        ),
    ],
)
def test_variable_summaries_wrong(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex06.check_variable_summaries(answer)


def reader(guidance=0, newest_only=False, order_by_step=True, one_a_step=False):
    def read_scalars(folder, tag):
        path = str(folder)
        if newest_only:
            path = sorted(tf.io.gfile.glob(f"{folder}/*tfevents*"))[-1]
        sizes = {event_accumulator.TENSORS: guidance} if guidance is not None else None
        accumulator = event_accumulator.EventAccumulator(path, size_guidance=sizes)
        accumulator.Reload()
        events = accumulator.Tensors(tag)
        if order_by_step:
            events = sorted(events, key=lambda e: e.step)
        if one_a_step:  # a restarted run's second value at a step replaces its first
            events = list({e.step: e for e in events}.values())
        steps = [int(e.step) for e in events]
        return steps, [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events]

    return read_scalars


def test_read_scalars_right():
    assert ex06.check_read_scalars(reader()).startswith("Check 2 passed")


@pytest.mark.parametrize(
    "answer, message",
    [
        (reader(guidance=1000), r"read 1000 of the 10500 values written"),
        (reader(guidance=10000), r"read 10000 of the 10500 values written"),
        (reader(one_a_step=True), r"25 values at the 25 steps, of the 38 written: a run restarted"),
        (reader(newest_only=True), r"your 5600 values all come from one event file"),
        (reader(order_by_step=False), r"right but in another order"),
    ],
)
def test_read_scalars_wrong(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex06.check_read_scalars(answer)


def test_event_files_written_by_the_check_read_as_tf_summary_writes_them(tmp_path):
    """Check 2 writes its event files from protocol buffers (fast): TensorBoard's reader must
    see in them what it sees in the file of tf.summary.scalar."""
    pairs = [(3, 0.25), (7, -1.5), (8, 1e-3)]
    writer = tf.summary.create_file_writer(str(tmp_path / "tf"))
    with writer.as_default():
        for step, value in pairs:
            tf.summary.scalar("loss", value, step=step)
    writer.close()
    ex06._write_events(tmp_path / "ours", 1700000000, {"loss": pairs})
    seen = {}
    for name in ("tf", "ours"):
        reader = event_accumulator.EventAccumulator(str(tmp_path / name), {"tensors": 0})
        reader.Reload()
        events = reader.Tensors("loss")
        protos = [(e.step, e.tensor_proto.SerializeToString()) for e in events]
        seen[name] = reader.Tags()["tensors"], reader.SummaryMetadata("loss"), protos
    assert seen["ours"] == seen["tf"]
    assert [p.step for p in reader.Tensors("loss")] == [s for s, _ in pairs]


def test_reference_losses_are_one_device_on_each_global_batch():
    """The NumPy reference of check 3 against TensorFlow on one device (no strategy)."""
    x, y, kernel, bias = ex06._problem()
    losses, (w, b) = ex06.reference_losses()
    weights = [tf.Variable(kernel), tf.Variable(bias)]
    optimizer = tf.keras.optimizers.SGD(ex06.RATE)
    found = []
    for start in range(0, ex06.EXAMPLES, ex06.GLOBAL_BATCH):
        xb, yb = x[start : start + ex06.GLOBAL_BATCH], y[start : start + ex06.GLOBAL_BATCH]
        with tf.GradientTape() as tape:
            out = tf.matmul(xb, weights[0]) + weights[1]
            loss = tf.reduce_mean(tf.reduce_mean(tf.square(out - yb), axis=-1))
        found.append(float(loss))
        optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights))
    assert ex06.checking.agree(found, losses)
    assert ex06.checking.agree([v.numpy() for v in weights], [w, b])
    assert len(losses) == 3  # two full batches of 12 and a last one of 7

"""Exercise 06's check 3 passes a right loop and fails wrong ones, saying why.

It trains on 1, 2 and 3 replicas of three logical devices, which a process can set up only
before TensorFlow starts: so the answers run in one child process of their own.
"""

from __future__ import annotations

import re

import pytest

from tests.support import childproc

CHILD = """
import json
import tensorflow as tf
from dpkit import devices
names = devices.setup(3).devices
from dpkit_checks import ex06


def make_replica_step(model, optimizer):
    def replica_step(x, y):
        n = tf.distribute.get_replica_context().all_reduce(
            "sum", tf.cast(tf.shape(x)[0], tf.float32))
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(x, training=True) - y), axis=-1)
            loss = tf.reduce_sum(per_example) / n
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return per_example
    return replica_step


def loop(reduce, at_before=True, after=None):
    def train_and_log(strategy, replica_step, optimizer, dataset, writer):
        @tf.function
        def step(x, y):
            at = tf.identity(optimizer.iterations)
            loss = reduce(strategy, strategy.run(replica_step, args=(x, y)))
            with writer.as_default():
                tf.summary.scalar("loss", loss, step=at if at_before else optimizer.iterations)
        for x, y in dataset:
            step(x, y)
        if after:
            after(writer)
    return train_and_log


MEAN = tf.distribute.ReduceOp.MEAN
answers = {
    "right": loop(lambda s, v: s.reduce(MEAN, v, axis=0)),
    "mean of means": loop(
        lambda s, v: s.reduce(MEAN, s.run(tf.reduce_mean, args=(v,)), axis=None)),
    "sum of means": loop(
        lambda s, v: s.reduce("SUM", s.run(tf.reduce_mean, args=(v,)), axis=None)),
    "step after the update": loop(lambda s, v: s.reduce(MEAN, v, axis=0), at_before=False),
    "closed": loop(lambda s, v: s.reduce(MEAN, v, axis=0), after=lambda w: w.close()),
    "left as the default": loop(
        lambda s, v: s.reduce(MEAN, v, axis=0), after=lambda w: w.set_as_default()),
}
said = {}
for name, answer in answers.items():
    try:
        said[name] = ex06.check_logged_training(answer, make_replica_step, names)
    except AssertionError as error:
        said[name] = str(error)
# the loops ran in threads of their own: this thread has no default writer, no default step
said["default writer here"] = bool(tf.summary.scalar("probe", 0.0, step=0))
said["default step here"] = repr(tf.summary.experimental.get_step())
print(json.dumps(said))
"""


@pytest.fixture(scope="module")
def said():
    return childproc.run(CHILD, timeout=300)


def test_the_right_loop_passes(said):
    assert said["right"].startswith("Check 3 passed"), said["right"]


@pytest.mark.parametrize(
    "name, message",
    [
        ("mean of means", r"on 2 replica\(s\).*right on the full batches, wrong on the last one"),
        ("sum of means", r"on 2 replica\(s\).*2\.00 times the loss: you summed"),
        ("step after the update", r"you logged steps \[8, 9, 10\], expected \[7, 8, 9\]"),
        ("closed", r"on 1 replica\(s\).*closed the writer it was given: .*do not close it"),
        ("left as the default", r"left its writer as TensorFlow's default writer"),
    ],
)
def test_a_wrong_loop_fails_saying_why(said, name, message):

    assert re.search(message, said[name]), said[name]


def test_a_default_writer_left_by_a_loop_does_not_outlive_the_check(said):
    assert said["default writer here"] is False
    assert said["default step here"] == "None"

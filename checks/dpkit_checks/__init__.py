"""The course's checker: the exercises' checks, one module per exercise notebook.

A check cell in ``exercises/NN_*.ipynb`` is a few lines that call one function here with the
learner's answer, e.g. ``ex03.check_average_gradients(average_gradients)``. The function runs
the answer on inputs it varies (sizes, device and tower counts, shapes that do not divide,
the defaults), compares what it gives with an independent reference, and raises an
AssertionError that says what is wrong and where to look. A curious learner can read how
they are checked; tests/unit/test_exercise_checks_*.py shows each check failing on wrong
answers.

This package is apart from dpkit, the learner's library: it is its own distribution
(``dpkit-checks``, in ``checks/``), installed with the course (``make env``, the exercises'
Colab install cell, Binder), never by ``pip install dpkit``. It imports dpkit; dpkit and the
lessons never import it. Besides ``ex01`` ... ``ex10`` it holds ``workers`` (the worker
program of exercise 08's multi-worker check, ``python -m dpkit_checks.workers``) and
``switching`` (what switches dpkit's finished versions off while a check runs an answer).
"""

_MIRRORED: dict = {}  # MirroredStrategy per device tuple, made once per process


def mirrored(devices):
    """A MirroredStrategy over ``devices`` for a check, reusing the one made before in this
    process. Strategies over different device sets in one process must not share collective
    keys (TensorFlow's ring all-reduce on CPUs), so these sum on one device: the same sum."""
    import tensorflow as tf

    key = tuple(devices)
    if key not in _MIRRORED:
        _MIRRORED[key] = tf.distribute.MirroredStrategy(
            list(devices), cross_device_ops=tf.distribute.ReductionToOneDevice()
        )
    return _MIRRORED[key]

"""What the summaries tests share: a run written with known values (scalars, a histogram
whose buckets were counted by hand), read back by the unit tests and served by TensorBoard in
the process tests."""

import pytest

SCALAR_STEPS = [0, 3, 7]
SCALAR_VALUES = {"train": [0.5, -1.25, 2.0], "test": [1.5, 0.25, -3.0]}
# Ten values chosen so that 4 buckets over [0, 3] hold 1, 2, 3 and 4 of them, none on an edge
# the reader could round either way: edges 0, 0.75, 1.5, 2.25, 3.
HISTOGRAM_VALUES = [0.0, 1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0]
HISTOGRAM_EDGES = [0.0, 0.75, 1.5, 2.25, 3.0]
HISTOGRAM_COUNTS = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def known_run(tmp_path_factory):
    """A run with hand-chosen scalars, a histogram, variable summaries, an image and text."""
    import numpy as np  # here, not on import: conftest.py loads this module for every run
    import tensorflow as tf

    from dpkit import summaries

    root = tmp_path_factory.mktemp("runs")
    run = summaries.open_run("known", "run1", root=root)
    for name, values in SCALAR_VALUES.items():
        with run.writer(name).as_default():
            for step, value in zip(SCALAR_STEPS, values):
                tf.summary.scalar("loss", value, step=step)
    with run.train.as_default(step=5):
        tf.summary.histogram("hand/histogram", HISTOGRAM_VALUES, buckets=4)
        summaries.variable_summaries(tf.Variable([1.0, 2.0, 3.0, 4.0]), name="weights")
        image = np.arange(2 * 4 * 3, dtype=np.uint8).reshape(1, 2, 4, 3) * 10
        tf.summary.image("inputs", image)
        tf.summary.text("note", "towers: **2**")
    with run.writer("towers").as_default(step=5):
        summaries.tower_scalars([1.0, 3.0, 8.0])
        summaries.tower_scalars([1.0, 3.0], loss=2.5, name="weighted")
    run.close()
    return run, summaries.read(run.dir)

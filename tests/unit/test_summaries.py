"""dpkit.summaries in this process: what is written is what is read back (values and
statistics worked out by hand against TensorBoard's reader), and bad runs and folders named.

Where the towers' ops run and TensorBoard's serving: tests/process/test_summaries.py.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from dpkit import summaries
from tests.support.summaries_run import (
    HISTOGRAM_COUNTS,
    HISTOGRAM_EDGES,
    HISTOGRAM_VALUES,
    SCALAR_STEPS,
    SCALAR_VALUES,
)


def test_scalars_read_back_as_written(known_run):
    _, logs = known_run
    assert sorted(logs) == ["test", "towers", "train"]
    for name, values in SCALAR_VALUES.items():
        steps, read = logs[name].scalar("loss")
        assert steps.tolist() == SCALAR_STEPS
        assert read.tolist() == values  # these floats are exact in float32


def test_histogram_reads_back_with_hand_counted_buckets(known_run):
    _, logs = known_run
    (hist,) = logs["train"].histograms["hand/histogram"]
    assert hist.step == 5
    assert hist.counts.tolist() == HISTOGRAM_COUNTS
    assert np.allclose(hist.edges, HISTOGRAM_EDGES)
    assert hist.total == len(HISTOGRAM_VALUES)
    assert np.allclose(hist.quantiles([0.0, 1.0]), [0.0, 3.0])


def test_variable_summaries_match_statistics_worked_out_by_hand(known_run):
    _, logs = known_run
    train = logs["train"]
    expected = {"mean": 2.5, "stddev": math.sqrt(1.25), "min": 1.0, "max": 4.0}
    for stat, value in expected.items():
        steps, values = train.scalar(f"weights/{stat}")
        assert steps.tolist() == [5]
        assert values[0] == pytest.approx(value, rel=1e-6), stat
    (hist,) = train.histograms["weights/histogram"]
    assert hist.total == 4 and hist.edges[0] == 1.0 and hist.edges[-1] == 4.0


def test_tower_scalars_write_each_tower_and_the_average(known_run):
    _, logs = known_run
    towers = logs["towers"]
    for i, value in enumerate([1.0, 3.0, 8.0]):
        assert towers.scalar(f"tower_{i}/loss")[1].tolist() == [value]
    assert towers.scalar("loss")[1].tolist() == [4.0]  # (1 + 3 + 8) / 3
    assert towers.scalar("weighted")[1].tolist() == [2.5]  # the average given, not the mean
    assert towers.scalar("tower_1/weighted")[1].tolist() == [3.0]


def test_images_and_text_read_back(known_run):
    _, logs = known_run
    ((step, images),) = logs["train"].images["inputs"]
    expected = np.arange(24, dtype=np.uint8).reshape(2, 4, 3) * 10
    assert step == 5 and len(images) == 1 and np.array_equal(images[0], expected)
    assert logs["train"].texts["note"] == [(5, "towers: **2**")]


def test_unknown_tag_lists_the_tags_there_are(known_run):
    _, logs = known_run
    with pytest.raises(KeyError, match=r"no scalar tagged 'accuracy'.*'loss'"):
        logs["test"].scalar("accuracy")


def test_a_named_run_is_not_written_twice(known_run):
    run, _ = known_run
    with pytest.raises(ValueError, match="already holds event files.*name=None"):
        summaries.open_run("known", "run1", root=run.dir.parent.parent)


@pytest.mark.parametrize("bad", ["", "a/b", "..", "with space", 5])
def test_bad_run_names(tmp_path, bad):
    with pytest.raises(ValueError, match="folder name"):
        summaries.open_run("lesson", bad, root=tmp_path)


def test_dated_runs_get_their_own_folders(tmp_path):
    first = summaries.open_run("lesson", root=tmp_path, writers=())
    second = summaries.open_run("lesson", root=tmp_path, writers=())
    assert first.dir != second.dir and first.dir.parent == second.dir.parent == tmp_path / "lesson"


def test_summaries_without_a_writer_say_how_to_set_one():
    with pytest.raises(RuntimeError, match=r"no default summary writer.*as_default"):
        summaries.variable_summaries(tf.constant([1.0]), name="w", step=0)


@pytest.mark.parametrize("call", [summaries.read, summaries.launch])
def test_missing_logdir_is_named_with_the_fix(tmp_path, call):
    with pytest.raises(ValueError, match=r"does not exist; pass the folder your writers write to"):
        call(tmp_path / "nowhere")


@pytest.mark.parametrize("call", [summaries.read, summaries.launch])
def test_empty_logdir_is_named_with_the_fix(tmp_path, call):
    (tmp_path / "train").mkdir()
    with pytest.raises(ValueError, match=r"holds no TensorBoard event files.*write summaries"):
        call(tmp_path)
    assert summaries.running() == []


def test_trace_graph_refuses_eager_functions(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with pytest.raises(ValueError, match=r"not one; decorate it with @tf.function"):
        summaries.trace_graph(lambda: 1, writer=writer)


# --- Two devices, in a child process ------------------------------------------------------


# --- Launching TensorBoard ----------------------------------------------------------------


def test_each_name_of_the_package_loads_from_its_home_and_a_typo_is_named():
    import importlib

    for name, home in summaries.HOMES.items():
        value = getattr(summaries, name)
        assert value is getattr(importlib.import_module(f"dpkit.summaries.{home}"), name), name
    with pytest.raises(AttributeError, match="no attribute 'runs_rot'"):
        summaries.runs_rot  # noqa: B018
    assert set(summaries.HOMES) <= set(dir(summaries))

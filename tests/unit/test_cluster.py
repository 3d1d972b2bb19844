"""dpkit.cluster's checks in this process: bad LocalCluster arguments refused, naming the fix,
before anything starts; task names in their three spellings. Tasks up and down, faults and
real training: tests/process/test_cluster.py."""

from __future__ import annotations

import pytest

from dpkit import cluster

pytestmark = pytest.mark.filterwarnings("ignore:dpkit.cluster:UserWarning")


@pytest.fixture
def no_tasks():
    yield
    assert cluster.live_tasks() == [], "a task child outlived its test"


# ----------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_workers": 0}, "num_workers must be a whole number >= 1"),
        ({"num_workers": 2.0}, "num_workers must be a whole number >= 1"),
        ({"num_workers": 1, "num_ps": -1}, "num_ps must be a whole number >= 0"),
        ({"num_workers": 15, "num_ps": 2}, "more than a local cluster should hold (at most 16"),
        ({"num_workers": 1, "mode": "threads"}, "unknown mode 'threads'; choose one of process"),
        ({"num_workers": 1, "start_timeout": 0}, "start_timeout must be a positive number"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(no_tasks, kwargs, message):
    with pytest.raises(ValueError) as error:
        cluster.LocalCluster(**kwargs)
    assert message in str(error.value)
    assert "e.g." in str(error.value) or "choose one of" in str(error.value)  # names the fix


@pytest.mark.parametrize("task", ["worker", "worker:x", ("worker",), (1, "worker"), 3])
def test_unreadable_task_names_say_how_to_write_one(task):
    with pytest.raises(ValueError, match=r"write it as \('worker', 1\) or 'worker:1'"):
        cluster.parse_task(task)


def test_task_names_in_all_three_spellings():
    assert cluster.parse_task("worker:1") == ("worker", 1)
    assert cluster.parse_task(("ps", 0)) == ("ps", 0)
    assert cluster.parse_task("/job:worker/task:2") == ("worker", 2)


# ----------------------------------------------------------------------------- up and down


# ----------------------------------------------------------------------------- faults


# ----------------------------------------------------------------------------- real training


# ----------------------------------------------------------------------------- nbval timeout

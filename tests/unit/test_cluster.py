"""dpkit.cluster's checks in this process: bad LocalCluster arguments refused, naming the fix,
before anything starts; task names in their three spellings. Tasks up and down, faults and
real training: tests/process/test_cluster.py."""

from __future__ import annotations

import pytest

from dpkit import cluster
from dpkit.plumbing import quota

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


# ----------------------------------------------------------------------------- memory


def pod(memory):
    """2 cores and 24 GiB with a container memory limit ``memory`` (None: none)."""
    return quota.Quota(2, None, memory, 24 * 2**30)


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_workers_that_fit_is_the_most_whose_memory_by_hand_fits(workers):
    by_hand = quota.TF_SHARED_BYTES + quota.KERNEL_BYTES + workers * quota.TF_CHILD_BYTES
    assert cluster.workers_that_fit(pod(by_hand))[0] == workers
    assert cluster.workers_that_fit(pod(by_hand + quota.TF_CHILD_BYTES - 1))[0] == workers


def test_a_binder_pod_holds_the_two_workers_the_lesson_needs():
    fit, why = cluster.workers_that_fit(pod(2 * 2**30))
    assert fit == 2
    assert why.startswith("2.0 GiB of memory (a container limit): up to 2 worker processes")
    assert "more than there is" not in why


def test_too_little_memory_still_allows_two_workers_and_warns():
    fit, why = cluster.workers_that_fit(pod(2**30))
    assert fit == 2 and why.endswith("more than there is, so the lesson may run out of memory)")


def test_without_a_limit_the_cluster_size_caps_the_workers():
    assert cluster.workers_that_fit(pod(None))[0] == cluster.MAX_TASKS - 2  # 24 GiB holds 14
    unknown = quota.Quota(2, None, None, None)
    assert cluster.workers_that_fit(unknown) == (14, "memory unknown: up to 14 worker processes")

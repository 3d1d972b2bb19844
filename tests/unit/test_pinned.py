"""dpkit.pinned in this process: bad arguments refused with the problem named, the contenders'
names, and a comparison's rates, medians and speedups against arithmetic by hand.
A real run of pinned workers: tests/process/test_pinned.py."""

import pytest

from dpkit import pinned
from dpkit.plumbing import procs, quota


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(model="resnet"), "unknown model 'resnet'"),
        (dict(workers=1), "workers must be a whole number >= 2"),
        (dict(workers=10_000), "a pinned worker needs a core of its own"),
        (dict(workers=2, global_batch=255), "does not split evenly over 2 workers"),
        (dict(rounds=0), "rounds must be a whole number >= 1"),
        (dict(window_steps=1.5), "window_steps must be a whole number"),
        (dict(warmup_steps=0), "warmup_steps must be a whole number >= 1"),
        (dict(timeout=-1), "timeout must be a positive number of seconds"),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, message):
    if kwargs.get("workers") == 2 and len(pinned.usable_cores()) < 2:
        pytest.skip("needs 2 usable cores to reach the batch check")
    with pytest.raises(ValueError, match=message):
        pinned.compare(**kwargs)


def test_contender_names_say_what_runs():
    assert pinned.contender_names(4) == [
        "1 process, 1 thread",
        "1 process, 4 threads",
        "4 pinned workers",
    ]


def test_comparison_arithmetic_by_hand():
    c = pinned.Comparison("lenet5", 100, 2, 2)
    c.seconds = {"1 process, 1 thread": [2.0, 4.0, 2.0], "2 pinned workers": [1.0, 1.0, 2.0]}
    assert c.rates("2 pinned workers") == [200.0, 200.0, 100.0]
    assert c.median("1 process, 1 thread") == 100.0
    assert c.interval("2 pinned workers") == (100.0, 200.0)
    assert c.speedups("2 pinned workers") == [2.0, 4.0, 1.0]  # paired per round
    assert c.speedup("2 pinned workers") == 2.0


def limits(memory=None, stated=None):
    """A machine of 2 cores and 24 GiB with a container limit ``memory``."""
    return quota.Quota(2, None, memory, 24 * 2**30, stated)


def test_schedule_runs_the_contenders_at_once_where_they_fit():
    plan = pinned.schedule(2, limits())
    assert plan.at_once
    assert plan.reason.startswith("24.0 GiB of memory: 4 TensorFlow processes")


def test_schedule_runs_them_one_at_a_time_in_a_small_pod():
    plan = pinned.schedule(2, limits(2 * 2**30))
    assert not plan.at_once
    assert plan.reason.startswith("2.0 GiB of memory (a container limit)")
    assert plan.reason.endswith("so the contenders run one at a time")


def test_schedule_follows_the_stated_limit_and_warns_when_even_one_contender_is_too_big():
    plan = pinned.schedule(2, limits(stated=2**30))
    assert not plan.at_once and "(DPKIT_MEMORY_LIMIT)" in plan.reason
    assert plan.reason.endswith("(even 2 at a time may not fit)")


def test_schedule_draws_the_line_where_the_processes_need_no_more_than_there_is():
    need = quota.TF_SHARED_BYTES + quota.KERNEL_BYTES + 4 * quota.TF_CHILD_BYTES  # 2 workers + 2
    assert pinned.schedule(2, limits(need)).at_once
    assert not pinned.schedule(2, limits(need - 1)).at_once
    assert pinned.schedule(2, quota.Quota(2, None, None, None)).at_once  # unknown: as asked


@pytest.mark.parametrize("at_once, batches", [(True, [3]), (False, [1, 1, 1])])
def test_compare_measures_the_contenders_together_or_one_by_one(monkeypatch, at_once, batches):
    """The schedule's choice (asked for when at_once is None) decides how compare groups the
    contenders; no process starts here (Group.start and the measuring are stand-ins)."""
    if len(pinned.usable_cores()) < 2:
        pytest.skip("needs 2 usable cores")
    monkeypatch.setattr(pinned, "schedule", lambda workers: pinned.Schedule(at_once, "why"))
    monkeypatch.setattr(procs.Group, "start", lambda self, name, argv, **kwargs: 0)
    measured = []
    monkeypatch.setattr(
        pinned, "_measure", lambda group, result, tasks_of, *a: measured.append(list(tasks_of))
    )
    said = []
    result = pinned.compare(workers=2, global_batch=32, echo=said.append)
    assert [len(names) for names in measured] == batches
    assert [name for names in measured for name in names] == pinned.contender_names(2)
    assert said[0] == "why" and result.at_once is at_once


# ----------------------------------------------------------------------------- topology


def fake_sysfs(root, siblings: dict[int, str]):
    """A /sys/devices/system/cpu with each CPU's thread_siblings_list as Linux writes it."""
    for cpu, text in siblings.items():
        folder = root / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "thread_siblings_list").write_text(text + "\n")
    return str(root)


@pytest.mark.parametrize(
    "siblings, cores, groups, words",
    [
        # 2 cores x 2 threads, Intel's numbering: CPU n and n + 2 share a core
        (
            {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"},
            [0, 1],
            [[0, 2], [1, 3]],
            "4 logical CPU(s) on 2 physical core(s) (2 hardware threads per core",
        ),
        # Colab's 2 vCPUs: two threads of one core
        ({0: "0-1", 1: "0-1"}, [0], [[0, 1]], "2 logical CPU(s) on 1 physical core(s) (2 hard"),
        # 2 cores, one thread each (this kind of machine)
        ({0: "0", 1: "1"}, [0, 1], [[0], [1]], "2 logical CPU(s) on 2 physical core(s), so"),
    ],
)
def test_one_pinned_worker_per_physical_core(tmp_path, monkeypatch, siblings, cores, groups, words):
    sysfs = fake_sysfs(tmp_path, siblings)
    monkeypatch.setattr(pinned.os, "sched_getaffinity", lambda pid: set(siblings), raising=False)
    monkeypatch.setattr(quota, "read", lambda: quota.Quota(len(siblings), None, None, None))
    assert pinned.physical_cores(sorted(siblings), sysfs) == groups
    assert pinned.usable_cores(sysfs) == cores
    text = pinned.describe_cores(sysfs)
    assert f"at most {len(cores)} pinned worker(s), one per core: {cores}" in text
    assert words in text
    # 2 workers: one per core where there are 2; on Colab's one core, its 2 threads, said so
    monkeypatch.setattr(pinned, "SYSFS_CPU", sysfs)
    monkeypatch.setattr(pinned, "usable_cores", lambda sysfs=sysfs: cores)
    shared = len(cores) < 2
    assert pinned.cores_for(2) == ([0, 1] if shared else cores[:2])
    assert ("share one core, so expect no speed-up" in text) == shared


def test_one_core_and_one_thread_cannot_hold_two_workers(tmp_path, monkeypatch):
    sysfs = fake_sysfs(tmp_path, {0: "0"})
    monkeypatch.setattr(pinned.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(quota, "read", lambda: quota.Quota(1, None, None, None))
    monkeypatch.setattr(pinned, "SYSFS_CPU", sysfs)
    monkeypatch.setattr(pinned, "usable_cores", lambda sysfs=sysfs: [0])
    with pytest.raises(ValueError, match=r"may use only 1 core\(s\) \[0\]"):
        pinned.cores_for(2)


def test_a_quota_cuts_the_cores_and_unreadable_topology_counts_each_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(pinned.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.setattr(quota, "read", lambda: quota.Quota(3, 1.5, None, None))
    missing = str(tmp_path / "no-sysfs")
    assert pinned.physical_cores([0, 1, 2], missing) == [[0], [1], [2]]
    assert pinned.usable_cores(missing) == [0]
    assert "the container's CPU quota allows no more" in pinned.describe_cores(missing)


def test_a_comparisons_results_file_holds_the_checksums_not_the_weight_arrays():
    import json

    import numpy as np

    result = pinned.Comparison("lenet5", 32, 2, 2, checksums={"a": [1.5]})
    result.weights["a"] = [[np.ones((3, 3), np.float32)]]
    fields = result.as_dict()
    assert "weights" not in fields and fields["checksums"] == {"a": [1.5]}
    json.dumps(fields)  # what benchmarks/pinned_workers.py writes

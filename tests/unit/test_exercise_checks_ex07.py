"""Exercise 07's checks pass a right answer and fail wrong ones, saying why."""

from __future__ import annotations

import json
import math
import os

import pytest

from dpkit_checks import ex07


def tf_config(check_index=True, key="index", sort=False, mutate=False, jobs=None):
    def make_tf_config(cluster_dict, task_type, index):
        if sort:  # each job's addresses sorted: the index no longer names the same address
            cluster_dict = {job: sorted(addresses) for job, addresses in cluster_dict.items()}
        if mutate:
            cluster_dict.setdefault("evaluator", [])
        if task_type not in cluster_dict:
            raise ValueError(
                f"no job {task_type!r}; the cluster has {jobs or sorted(cluster_dict)}"
            )
        size = len(cluster_dict[task_type])
        if check_index and not 0 <= index < size:
            raise ValueError(f"{task_type} index must be 0 to {size - 1}, got {index}")
        return json.dumps({"cluster": cluster_dict, "task": {"type": task_type, key: index}})

    return make_tf_config


def test_tf_config_right_and_environment_kept(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "kept")
    assert ex07.check_tf_config(tf_config()).startswith("Check 1 passed")
    assert os.environ["TF_CONFIG"] == "kept"


@pytest.mark.parametrize(
    "answer, message",
    [
        (tf_config(check_index=False), r"chief index 1 must raise ValueError"),
        (tf_config(key="id"), r"TensorFlow reads the task as chief:None"),
        (lambda c, t, i: {"cluster": c, "task": {"type": t, "index": i}}, r"return JSON text"),
        (tf_config(sort=True), r"a task's index is its place in its job's list"),
        (tf_config(mutate=True), r"changed the cluster_dict it was given, to .*'evaluator': \[\]"),
        (  # names every job the clusters have, and some this one lacks
            tf_config(jobs="chief, ps or worker"),
            r"the error for 'evaluator', a job the cluster lacks, also names \['chief', 'ps'\]",
        ),
    ],
)
def test_tf_config_wrong(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex07.check_tf_config(answer)
    assert "evaluator" not in ex07.CLUSTERS["ps_cluster"]  # the check's own clusters are intact


def test_tf_config_clusters_list_addresses_out_of_order():
    """Else an answer that sorts each job's addresses would pass."""
    assert any(a != sorted(a) for c in ex07.CLUSTERS.values() for a in c.values())


def test_predict_ps_right():
    answer = lambda names, num_ps: {n: k % num_ps for k, n in enumerate(names)}  # noqa: E731
    assert ex07.check_predict_ps(answer).startswith("Check 2 passed")


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda names, num_ps: {n: (k + 1) % num_ps for k, n in enumerate(names)}, "you predict 1"),
        (lambda names, num_ps: {n: k % 2 for k, n in enumerate(names)}, r"3 ps: m_scale"),
        (
            lambda names, num_ps: {
                n: 0 if n == "global_step" else k % num_ps for k, n in enumerate(names)
            },
            r"global_step, variable 4 .* predict 0: the global step takes its turn",
        ),
        (
            lambda names, num_ps: {n: k % num_ps for k, n in enumerate(sorted(names))},
            r"global_step, variable 0 in creation order, is on ps task 0",
        ),
    ],
)
def test_predict_ps_wrong(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex07.check_predict_ps(answer)


def shards(rounding=math.ceil, longer_first=True, bytes_each=None, kind=tuple):
    def shard_shapes(shape, dtype, min_shard_bytes, max_shards):
        import numpy as np

        rows = shape[0]
        size = math.prod(shape) * (bytes_each or np.dtype(dtype).itemsize)
        count = max(1, min(rows, max_shards, rounding(size / min_shard_bytes)))
        base, extra = divmod(rows, count)
        longer = range(extra) if longer_first else range(count - extra, count)
        return [kind((base + (k in longer), *shape[1:])) for k in range(count)]

    return shard_shapes


def test_shard_shapes_right():
    assert ex07.check_shard_shapes(shards()).startswith("Check 3 passed")


@pytest.mark.parametrize(
    "answer, message",
    [
        (shards(rounding=math.floor), r"3 shard\(s\), TensorFlow cuts 4: .*rounds that up"),
        (shards(longer_first=False), r"the longer shards come first"),
        (shards(bytes_each=4), r"\(10, 3\), 'float64', 48, 4\): 3 shard\(s\), TensorFlow cuts 4"),
        (
            shards(kind=list),
            r"\[\[500, 64\], \[500, 64\]\]: a shard's shape is a list, not a tuple",
        ),
    ],
)
def test_shard_shapes_wrong(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex07.check_shard_shapes(answer)


def test_reference_shards_split_as_parameter_server_strategy_does():
    """10 rows in 4 shards: 3, 3, 2, 2, as parameter_server_strategy_v2.py's comment says."""
    assert ex07.reference_shards((10, 3), "float64", 48, 4) == [(3, 3), (3, 3), (2, 3), (2, 3)]
    assert ex07.reference_shards((16, 8), "float32", 64 * 1024, 4) == [(16, 8)]

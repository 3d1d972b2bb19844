"""Checks of exercise 07 (parameter servers).

One function per check cell of exercises/07_*.ipynb: the learner's ``TF_CONFIG`` text read
back by TensorFlow's own parser, for every task of three clusters (check 1); the ps task
TF1's ``replica_device_setter`` really gives each variable of a graph (check 2); and the
shards ``ParameterServerStrategy`` cuts a variable into, from TensorFlow's own partitioner
object and TF1's partitioned variables (check 3). None starts a server or a process.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re

import numpy as np

#: Check 1's clusters: a ps cluster, a worker-only (MultiWorkerMirrored) one, one with 4 ps.
#: A task's index is its place in its job's list, which need not be sorted.
CLUSTERS = {
    "ps_cluster": {
        "chief": ["127.0.0.1:2220"],
        "ps": ["127.0.0.1:2222", "127.0.0.1:2221"],
        "worker": ["127.0.0.1:2225", "127.0.0.1:2223", "127.0.0.1:2224"],
    },
    "workers_only": {"worker": [f"10.0.0.{k}:2222" for k in range(1, 5)]},
    "many_ps": {
        "chief": ["host0:3000"],
        "worker": ["host1:3000"],
        "ps": [f"host{k}:3000" for k in (5, 2, 4, 3)],
    },
}


#: The job names a message may mention: those of TensorFlow's clusters.
_JOBS = ("chief", "ps", "worker", "evaluator")


def _read_back(text):
    """(cluster dict, task type, task id) that TensorFlow reads from TF_CONFIG=text."""
    import tensorflow as tf

    saved = os.environ.get("TF_CONFIG")
    try:
        os.environ["TF_CONFIG"] = text
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return resolver.cluster_spec().as_dict(), resolver.task_type, resolver.task_id
    finally:
        if saved is None:
            os.environ.pop("TF_CONFIG", None)
        else:
            os.environ["TF_CONFIG"] = saved


def _outcome(make_tf_config, cluster, job, index):
    """(text, None) if make_tf_config returns, (None, message) if it raises ValueError. It is
    given a copy of ``cluster``, which it must leave as it was."""
    given = copy.deepcopy(cluster)
    try:
        return make_tf_config(given, job, index), None
    except ValueError as error:
        return None, str(error)
    except Exception as error:
        raise AssertionError(
            f"{job}:{index} raised {type(error).__name__} ({error}), not a ValueError"
        ) from error
    finally:
        assert given == cluster, (
            f"{job}:{index}: make_tf_config changed the cluster_dict it was given, to {given}: "
            "the launcher uses the same dict for every task's TF_CONFIG; leave it as it is"
        )


def _check_text(text, cluster, job, index) -> None:
    where = f"{job}:{index} of {sorted(cluster)} jobs"
    assert isinstance(text, str), f"return JSON text (json.dumps), not {type(text).__name__}"
    try:
        written = json.loads(text)
    except json.JSONDecodeError as bad_json:
        raise AssertionError(
            f"{where}: your text is not JSON ({bad_json.msg}): {text[:60]}... "
            "Python's str() of a dict is not JSON; json.dumps writes JSON"
        ) from None
    task = written.get("task", {}) if isinstance(written, dict) else {}
    if isinstance(task, dict) and "index" in task:
        kind = type(task["index"]).__name__
        assert kind == "int", f"{where}: the task index is written as a {kind}, not an int"
    spec, task_type, task_id = _read_back(text)
    same = {job: sorted(a) for job, a in spec.items()} == {j: sorted(a) for j, a in cluster.items()}
    order = ": a task's index is its place in its job's list; keep the order given" * same
    assert spec == cluster, f"{where}: TensorFlow reads the cluster {spec}{order}"
    assert (task_type, task_id) == (job, index), (
        f"{where}: TensorFlow reads the task as {task_type}:{task_id} from {text}"
    )


def check_tf_config(make_tf_config) -> str:
    """Check 1: TensorFlow reads the cluster and the task back, for every task of 3 clusters.

    Sets ``TF_CONFIG`` to the learner's text for every task of three clusters (with and
    without a chief and ps, 1 to 4 tasks a job) and asks ``TFConfigClusterResolver``, the
    parser every strategy uses, what it reads; then asks for tasks past either end of each
    job and for jobs a cluster lacks, which must raise ValueError naming the valid range or
    the jobs there are (and no other job: a list typed in names jobs of another cluster).
    ``TF_CONFIG`` is left as it was found.
    """
    before = os.environ.get("TF_CONFIG")
    try:
        for cluster in CLUSTERS.values():
            for job, addresses in cluster.items():
                for index in range(len(addresses)):
                    text, error = _outcome(make_tf_config, cluster, job, index)
                    assert error is None, (
                        f"{job}:{index} is a task of {sorted(cluster)}, yet you raised: {error}"
                    )
                    _check_text(text, cluster, job, index)
        after = os.environ.get("TF_CONFIG")
    finally:
        if before is None:
            os.environ.pop("TF_CONFIG", None)
        else:
            os.environ["TF_CONFIG"] = before
    assert after == before, (
        "make_tf_config changed os.environ['TF_CONFIG']: return the text and leave setting it "
        "to the process that runs the task"
    )
    for cluster in CLUSTERS.values():
        for job, addresses in cluster.items():
            size = len(addresses)
            for bad in (size, size + 1, -1):
                _, error = _outcome(make_tf_config, cluster, job, bad)
                assert error is not None, (
                    f"{job} index {bad} must raise ValueError: the job {job!r} has {size} task(s)"
                )
                assert f"0 to {size - 1}" in error, (
                    f"name the valid range '0 to {size - 1}' of job {job!r} in the message: {error}"
                )
        for job in ("evaluator", "ps", "chief"):
            if job in cluster:
                continue
            _, error = _outcome(make_tf_config, cluster, job, 0)
            assert error is not None, f"a job the cluster lacks ({job!r}) must raise ValueError"
            unnamed = [name for name in cluster if name not in error]
            assert not unnamed, (
                f"the error for a job the cluster lacks should name the jobs it has "
                f"({', '.join(cluster)}); yours says: {error}"
            )
            strangers = [
                name
                for name in _JOBS
                if name not in (job, *cluster) and re.search(rf"\b{name}\b", error)
            ]
            assert not strangers, (
                f"the error for {job!r}, a job the cluster lacks, also names {strangers}, "
                f"which this cluster does not have either (it has {', '.join(cluster)}): name "
                f"the jobs of cluster_dict, not a list typed in; yours says: {error}"
            )
    return "Check 1 passed: every task of 3 clusters, and the jobs and indexes they lack"


# --- Check 2: predict_ps -----------------------------------------------------------------

#: Check 2's graphs: (ps tasks, variables in creation order, the global step made "first",
#: "last" (when the training op is built) or not at all).
GRAPHS = [
    (2, {"conv1/kernel": [5, 5, 1, 32], "conv1/bias": [32], "dense/kernel": [784, 10]}, "first"),
    (3, {"z_embedding": [50, 8], "a_bias": [8], "m_scale": [], "b_out": [8, 2]}, "last"),
    (1, {"w": [4, 4], "b": [4]}, "first"),
    (4, {f"layer{k}/{p}": [3] for k in range(3) for p in ("w", "b")}, None),
]


def _placed(num_ps, shapes, global_step):
    """{variable name: the ps task replica_device_setter gives it}, in creation order."""
    import tensorflow as tf

    v1 = tf.compat.v1
    if num_ps == 3:  # a ClusterSpec rather than a count: the setter reads the ps from it
        cluster = tf.train.ClusterSpec(
            {"ps": [f"127.0.0.1:223{k}" for k in range(3)], "worker": ["127.0.0.1:2240"]}
        )
        setter = v1.train.replica_device_setter(cluster=cluster, worker_device="/job:worker")
    else:
        setter = v1.train.replica_device_setter(ps_tasks=num_ps)
    with tf.Graph().as_default(), v1.device(setter):
        made = [v1.train.get_or_create_global_step()] if global_step == "first" else []
        made += [v1.get_variable(name, shape) for name, shape in shapes.items()]
        made += [v1.train.get_or_create_global_step()] if global_step == "last" else []
    placed = {}
    for variable in made:
        spec = tf.DeviceSpec.from_string(variable.device)
        assert spec.job == "ps", f"TensorFlow put {variable.op.name} on {variable.device!r}"
        placed[variable.op.name] = spec.task or 0
    return placed


def check_predict_ps(predict_ps) -> str:
    """Check 2: your prediction equals the ps task replica_device_setter gives each variable.

    Builds four TF1 graphs (no session, no server: placement is decided when an op is made)
    under ``replica_device_setter`` with 1, 2, 3 (from a ``ClusterSpec``) and 4 ps, of 3 to 6
    variables with names out of alphabetical order, with the global step made first, last
    or not at all, and reads each variable's task from its ``.device``.
    """
    for num_ps, shapes, global_step in GRAPHS:
        actual = _placed(num_ps, shapes, global_step)
        try:
            predicted = predict_ps(list(actual), num_ps)
        except Exception as error:
            raise AssertionError(
                f"predict_ps({list(actual)}, {num_ps}) raised {type(error).__name__}: {error}"
            ) from error
        assert isinstance(predicted, dict), (
            f"return a dict {{name: task}}, not a {type(predicted).__name__}"
        )
        missing = [name for name in actual if name not in predicted]
        assert not missing, f"{num_ps} ps: you predict no task for {missing}"
        assert set(predicted) == set(actual), (
            f"{num_ps} ps: no variables {set(predicted) - set(actual)}"
        )
        wrong = [name for name, task in actual.items() if predicted[name] != task]
        alone = wrong if wrong == ["global_step"] else []  # the only miss is the global step
        for order, (name, task) in enumerate(actual.items()):
            yours = predicted[name]
            assert hasattr(yours, "__index__") and not isinstance(yours, bool), (
                f"{name}: {yours!r}; predict the index of the ps task, an int"
            )
            note = ": the global step takes its turn like any variable" * (name in alone)
            assert yours == task, (
                f"{num_ps} ps: {name}, variable {order} in creation order, is on ps task "
                f"{task}; you predict {yours}{note}"
            )
    return "Check 2 passed: 4 graphs on 1 to 4 ps"


# --- Check 3: shard_shapes ---------------------------------------------------------------

#: Check 3's variables: (shape, dtype, min_shard_bytes, max_shards), with why each is here.
VARIABLES = [
    ((1000, 64), "float32", 64 * 1024, 2),  # lesson 07's embedding: 4 wanted, 2 allowed
    ((1000, 64), "float32", 64 * 1024, 8),  # 3.9 shards' worth: rounded up, to 4
    ((10, 3), "float64", 48, 4),  # 10 rows in 4: 3, 3, 2, 2
    ((8, 4), "float32", 32, 8),  # exactly 4 shards' worth: 4, not 5
    ((7, 5), "float32", 20, 3),  # 7 rows in 3: 3, 2, 2
    ((3, 4), "float32", 4, 8),  # more shards' worth than rows: one row each
    ((100,), "float16", 64, 4),  # one axis; 2 bytes an element
    ((5, 2, 3), "int8", 10, 2),  # three axes; 1 byte an element
    ((16, 8), "float32", 64 * 1024, 4),  # smaller than one shard: not cut
    ((1000, 64), "float32", 1024, 1),  # one ps: never cut
    ((9, 2), "float64", 40, 5),  # 3.6 shards' worth: 4 shards of 3, 2, 2, 2 rows
]


def reference_shards(shape, dtype, min_shard_bytes, max_shards) -> list:
    """The shard shapes, from TensorFlow: how many from the ``MinSizePartitioner`` object
    itself (it takes a shape and a dtype; no cluster), how they split from a TF1 partitioned
    variable of that many shards. ``ParameterServerStrategy`` splits the same way: the first
    ``rows % shards`` shards one row longer (parameter_server_strategy_v2.py,
    ``_create_variable``)."""
    import tensorflow as tf

    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=min_shard_bytes, max_shards=max_shards
    )
    shards = partitioner(tf.TensorShape(shape), tf.as_dtype(dtype))[0]
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        variable = v1.get_variable(
            "table",
            shape,
            tf.as_dtype(dtype),
            initializer=v1.zeros_initializer(),
            partitioner=v1.fixed_size_partitioner(shards),
        )
        parts = list(variable) if shards > 1 else [variable]
        return [tuple(part.shape.as_list()) for part in parts]


def check_shard_shapes(shard_shapes) -> str:
    """Check 3: your shards are the ones TensorFlow cuts, for 11 variables.

    Varies the shape (1 to 3 axes; rows that divide and rows that do not), the dtype (1, 2,
    4 and 8 bytes), ``min_shard_bytes`` (an exact multiple of the size, a fraction, more
    than the whole) and ``max_shards`` (1 to 8, fewer and more than the rows). Reference:
    :func:`reference_shards`, TensorFlow's partitioner object and TF1's partitioned variable.
    """
    for shape, dtype, min_bytes, max_shards in VARIABLES:
        call = f"shard_shapes({shape}, {dtype!r}, {min_bytes}, {max_shards})"
        expected = reference_shards(shape, dtype, min_bytes, max_shards)
        try:
            yours = shard_shapes(shape, dtype, min_bytes, max_shards)
        except Exception as error:
            raise AssertionError(f"{call} raised {type(error).__name__}: {error}") from error
        assert isinstance(yours, (list, tuple)), (
            f"{call}: return a list of shard shapes, not a {type(yours).__name__}"
        )
        lists = [s for s in yours if not isinstance(s, tuple)]
        assert not lists, (
            f"{call}: {yours!r}: a shard's shape is a {type(lists[0]).__name__}, not a tuple: "
            "return each shape as a tuple, as the task asks (compared with a tuple, a list is "
            "never equal: [3, 64] != (3, 64))"
        )
        shapes = list(yours)
        odd = [d for s in shapes for d in s if isinstance(d, bool) or not hasattr(d, "__index__")]
        assert not odd, f"{call}: {yours!r}: a shape holds whole numbers, not {odd[0]!r}"
        rows = [s[0] for s in shapes if s]
        size = math.prod(shape) * np.dtype(dtype).itemsize  # bytes
        if len(shapes) != len(expected):
            hint = ""
            if len(shapes) > shape[0] or len(shapes) > max_shards:
                hint = f": no more shards than max_shards ({max_shards}) or rows ({shape[0]})"
            elif len(expected) == math.ceil(size / min_bytes) and len(shapes) in (
                size // min_bytes,
                size // min_bytes + 1,
            ):
                hint = (
                    f": the variable is {size} bytes, {size / min_bytes:g} times "
                    "min_shard_bytes; TensorFlow rounds that up"
                )
            elif len(shapes) == 1:
                hint = (
                    f": a variable this big is cut (bytes = elements x {np.dtype(dtype).itemsize})"
                )
            raise AssertionError(
                f"{call}: {len(shapes)} shard(s), TensorFlow cuts {len(expected)}{hint}"
            )
        assert all(s[1:] == tuple(shape[1:]) for s in shapes), (
            f"{call}: {shapes}: TensorFlow cuts along the first axis only; every shard keeps "
            f"the other axes {tuple(shape[1:])}"
        )
        if sorted(rows) == sorted(r for r, *_ in expected):
            assert shapes == expected, (
                f"{call}: {shapes}, TensorFlow's are {expected}: the longer shards come first"
            )
        assert shapes == expected, (
            f"{call}: shards of {rows} rows ({sum(rows)} in all), TensorFlow's are "
            f"{[r for r, *_ in expected]} of {shape[0]}: it cuts {shape[0]} rows into shards "
            "that differ by a row at most"
        )
    return f"Check 3 passed: the shards of {len(VARIABLES)} variables"

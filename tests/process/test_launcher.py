"""The task launcher (``python -m dpkit task``): its checks, and training runs it drives.

Bad flags: every mistake the issue names (unknown job, index out of range, host list empty
or malformed, port not a number) and the inconsistent combinations get their own case,
checked for the words that name the problem. Training: each flavour runs as separate
processes on loopback and is checked against an independent reference (NumPy SGD on the
same batches, TensorFlow's own TF_CONFIG resolver, the checkpoint read back by TF).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dpkit import checking, launcher, tasks
from tests.procs import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOSTS = ["--ps_hosts=10.0.0.1:2222", "--worker_hosts=10.0.0.2:2222,10.0.0.3:2222"]
PS = [*HOSTS, "--chief_hosts=10.0.0.4:2222"]


def config(task_type="worker", index=0, **cluster):
    cluster = cluster or {"worker": ["10.0.0.2:2222", "10.0.0.3:2222"]}
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


BAD = {
    "unknown job": (
        ["--job_name=master", "--task_index=0", *PS],
        {},
        "unknown --job_name 'master'",
    ),
    "index out of range": (
        ["--job_name=worker", "--task_index=2", *PS],
        {},
        "task index 2 is out of range: --worker_hosts lists 2 worker",
    ),
    "negative index": (
        ["--job_name=worker", "--task_index=-1", *PS],
        {},
        "--task_index must be >= 0",
    ),
    "index not a number": (
        ["--job_name=worker", "--task_index=one", *PS],
        {},
        "--task_index must be a whole number",
    ),
    "worker list empty": (
        ["--job_name=ps", "--task_index=0", "--ps_hosts=a:1", "--worker_hosts="],
        {},
        "--worker_hosts is empty",
    ),
    "no workers": (
        ["--job_name=ps", "--task_index=0", "--ps_hosts=a:1"],
        {},
        "--worker_hosts is missing or empty",
    ),
    "no port": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=10.0.0.2"],
        {},
        "'10.0.0.2' is not HOST:PORT (no port)",
    ),
    "port not a number": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=10.0.0.2:two"],
        {},
        "the port 'two' in '10.0.0.2:two' is not a number",
    ),
    "port out of range": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=10.0.0.2:70000"],
        {},
        "outside 1-65535",
    ),
    "empty entry": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,,b:2"],
        {},
        "has an empty entry",
    ),
    "bad host": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=bad_host!:2222"],
        {},
        "is not a host name or address",
    ),
    "same address twice": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,a:1"],
        {},
        "the address a:1 is given to worker:0 and worker:1",
    ),
    "chief without chief_hosts": (
        ["--job_name=chief", "--task_index=0", *HOSTS],
        {},
        "--chief_hosts is missing or empty",
    ),
    "two chiefs": (
        ["--job_name=chief", "--task_index=0", *HOSTS, "--chief_hosts=c:1,d:1"],
        {},
        "a cluster has one chief",
    ),
    "ps without a chief": (
        ["--job_name=worker", "--task_index=0", *HOSTS],
        {},
        "needs a chief to run ParameterServerStrategy",
    ),
    "tf1 with a chief": (["--tf1", "--job_name=worker", "--task_index=0", *PS], {}, "no chief job"),
    "tf1 without ps": (
        ["--tf1", "--job_name=worker", "--task_index=0", "--worker_hosts=a:1"],
        {},
        "--tf1 needs at least one ps",
    ),
    "sync with ParameterServerStrategy": (
        ["--sync_replicas", "--job_name=worker", "--task_index=0", *PS],
        {},
        "--sync_replicas belongs to the TF1 flavour",
    ),
    "aggregate more than workers": (
        ["--tf1", "--sync_replicas", "--replicas_to_aggregate=3"]
        + ["--job_name=worker", "--task_index=0", *HOSTS],
        {},
        "--replicas_to_aggregate=3 is more than the 2 workers",
    ),
    "no job name": (["--task_index=0", *PS], {}, "--job_name is missing"),
    "no task at all": ([], {}, "no task given"),
    "unknown flag": (["--jobname=ps"], {}, "unrecognized arguments: --jobname=ps"),
    "zero steps": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1", "--train_steps=0"],
        {},
        "--train_steps must be >= 1",
    ),
    "batch does not split": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,b:1,c:1", "--batch_size=64"],
        {},
        "--batch_size=64 does not split evenly over 3 workers",
    ),
    "TF_CONFIG not JSON": ([], {"TF_CONFIG": "{cluster: worker}"}, "TF_CONFIG is not valid JSON"),
    "TF_CONFIG without task": (
        [],
        {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]}})},
        'TF_CONFIG has no "task"',
    ),
    "TF_CONFIG unknown type": (
        [],
        {"TF_CONFIG": config("evaluator")},
        "task type 'evaluator' is not ps, worker or chief",
    ),
    "TF_CONFIG index out of range": (
        [],
        {"TF_CONFIG": config("worker", 5)},
        "task index 5 is out of range: TF_CONFIG cluster 'worker' lists 2",
    ),
    "TF_CONFIG bad port": (
        [],
        {"TF_CONFIG": config(worker=["a:port"])},
        "the port 'port' in 'a:port' is not a number",
    ),
    "TF_CONFIG master job": (
        [],
        {"TF_CONFIG": config(master=["a:1"], worker=["b:1"])},
        "'master' is called 'chief' now",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_task_is_refused_with_the_problem_named(case):
    argv, environ, words = BAD[case]
    with pytest.raises(launcher.LaunchError) as error:
        launcher.parse(argv, environ)
    assert words in str(error.value)


def test_the_command_line_exits_2_with_the_error_before_importing_tensorflow():
    code = (
        "import sys\n"
        "from dpkit import __main__ as m\n"
        "code = m.main(['task', '--job_name=worker', '--task_index=3', '--worker_hosts=a:1'])\n"
        "print(code, 'tensorflow' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.stdout.split() == ["2", "False"]
    assert "error: task index 3 is out of range" in out.stderr


def test_flags_and_tf_config_describe_the_same_task():
    by_flags = launcher.parse(["--job_name=worker", "--task_index=1", *PS], {})
    again = launcher.parse([], {"TF_CONFIG": by_flags.tf_config()})
    assert (again.job, again.index, again.cluster, again.flavour) == (
        "worker",
        1,
        {"chief": ["10.0.0.4:2222"], "ps": ["10.0.0.1:2222"], "worker": by_flags.cluster["worker"]},
        "ps_strategy",
    )
    assert (by_flags.source, again.source) == ("flags", "TF_CONFIG")
    # flags win over a TF_CONFIG left in the environment, and the task says so
    mixed = launcher.parse(["--job_name=ps", "--task_index=0", *PS], {"TF_CONFIG": config()})
    assert mixed.name == "ps:0" and any("TF_CONFIG is set but ignored" in n for n in mixed.notes)


def test_tf_config_agrees_with_tensorflows_own_resolver(monkeypatch):
    import tensorflow as tf

    task = launcher.parse(["--job_name=worker", "--task_index=1", *PS], {})
    monkeypatch.setenv("TF_CONFIG", task.tf_config())
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert resolver.cluster_spec().as_dict() == task.cluster
    assert (resolver.task_type, resolver.task_id) == ("worker", 1)


@pytest.mark.parametrize(
    "argv, flavour, chief, trains",
    [
        (["--job_name=chief", "--task_index=0", *PS], "ps_strategy", True, True),
        (["--job_name=worker", "--task_index=0", *PS], "ps_strategy", False, False),
        (["--job_name=ps", "--task_index=0", *PS], "ps_strategy", False, False),
        (["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,b:1"], "mirrored", True, True),
        (["--tf1", "--job_name=worker", "--task_index=0", *HOSTS], "tf1", True, True),
        (["--tf1", "--job_name=worker", "--task_index=1", *HOSTS], "tf1", False, True),
        (["--tf1", "--job_name=ps", "--task_index=0", *HOSTS], "tf1", False, False),
    ],
)
def test_the_cluster_decides_the_flavour_and_the_roles(argv, flavour, chief, trains):
    task = launcher.parse(argv, {})
    assert (task.flavour, task.is_chief, task.trains) == (flavour, chief, trains)


# ----------------------------------------------------------------------------- real runs


def hosts(n):
    return ",".join(f"127.0.0.1:{free_port()}" for _ in range(n))


def start(group, task_args, names, extra):
    for name in names:
        job, index = name.split(":")
        group.start(name, "task", f"--job_name={job}", f"--task_index={index}", *task_args, *extra)


def final_record(group, name):
    return next(r for r in reversed(group.records[name]) if r.get("done"))


def read_checkpoint(logdir):
    """(w, b, global step) of the newest checkpoint, read by TensorFlow's reader."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(logdir)
    names = reader.get_variable_to_shape_map()
    key = {n.split("/")[0]: n for n in names if not n.startswith("_")}
    return (
        reader.get_tensor(key["w"]),
        reader.get_tensor(key["b"]),
        int(reader.get_tensor(key["global_step"])),
    )


def numpy_sgd(steps, batch, lr, seed):
    """Softmax regression trained by plain NumPy SGD on one device, on the launcher's batches."""
    from dpkit import data

    arrays = data.load("digits", seed=seed)
    x = arrays.x_train.reshape(len(arrays.x_train), -1).astype(np.float64)
    y = arrays.y_train
    w, b = (v.astype(np.float64) for v in tasks.softmax_init(x.shape[1], 10, seed))
    rng = np.random.default_rng(seed)
    done = 0
    while done < steps:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            if done == steps:
                break
            take = order[start : start + batch]
            logits = x[take] @ w + b
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(batch), y[take]] -= 1.0
            w -= lr * x[take].T @ p / batch
            b -= lr * p.mean(axis=0)
            done += 1
    return w, b


def test_mirrored_workers_equal_one_device_numpy_sgd_and_resume_exactly(tmp_path):
    workers = hosts(2)
    logdir = tmp_path / "run"
    common = [f"--worker_hosts={workers}", f"--logdir={logdir}", "--batch_size=32"]
    common += ["--learning_rate=0.3", "--checkpoint_every=20", "--log_every=10"]
    names = ["worker:0", "worker:1"]
    with tasks.Group(timeout=120, echo=None) as group:
        start(group, common, names, ["--train_steps=30"])
        group.wait()
    with tasks.Group(timeout=120, echo=None) as group:  # fresh ports, same logdir: resume
        common[0] = f"--worker_hosts={hosts(2)}"
        start(group, common, names, ["--train_steps=50"])
        group.wait()
        done = [final_record(group, n) for n in names]
    w, b, step = read_checkpoint(logdir)
    w_ref, b_ref = numpy_sgd(50, 32, 0.3, 0)
    assert step == 50 and [d["global_step"] for d in done] == [50, 50]
    # 50 SGD steps, each adding its own rounding to weights the next step starts from.
    check = checking.agree([w, b], [w_ref, b_ref], what="50 synchronous steps vs NumPy", ulps=1024)
    assert check, check
    assert done[0]["accuracy"] == done[1]["accuracy"] > 0.85
    assert list((logdir / "train").iterdir()), "no TensorBoard events"
    assert not [p for p in logdir.iterdir() if p.name.startswith("tmp-")]


# 200 asynchronous steps, each worker drawing its own data order, end anywhere from 0.83 to
# 0.95 here; untrained weights score 0.08
ASYNC_200_ACCURACY = 0.75


def ps_cluster() -> list[str]:
    """Host flags of one ps, two workers and a chief, on fresh loopback ports."""
    return [f"--ps_hosts={hosts(1)}", f"--worker_hosts={hosts(2)}", f"--chief_hosts={hosts(1)}"]


def test_parameter_server_strategy_trains_to_the_last_step_and_servers_leave(tmp_path):
    logdir = tmp_path / "run"
    names = ["ps:0", "worker:0", "worker:1", "chief:0"]
    with tasks.Group(timeout=120, echo=None) as group:
        start(group, ps_cluster(), names, [f"--logdir={logdir}", "--train_steps=200"])
        codes = group.wait()  # servers exit by themselves once the chief has gone
        done = final_record(group, "chief:0")
    assert codes == dict.fromkeys(names, 0)
    w, b, step = read_checkpoint(logdir)
    assert step == done["global_step"] == 200
    from dpkit import data

    arrays = data.load("digits", seed=0)
    x_test = arrays.x_test.reshape(len(arrays.x_test), -1)
    accuracy = float(np.mean(np.argmax(x_test @ w + b, axis=1) == arrays.y_test))
    assert accuracy == pytest.approx(done["accuracy"]) and accuracy > ASYNC_200_ACCURACY
    # run again on the finished checkpoint (fresh ports): the chief has nothing left to train
    # and comes and goes at once, yet the servers see it and leave (they used to wait 60 s
    # for it and fail)
    with tasks.Group(timeout=120, echo=None) as group:
        start(group, ps_cluster(), names, [f"--logdir={logdir}", "--train_steps=200"])
        assert group.wait() == dict.fromkeys(names, 0)
        again = final_record(group, "chief:0")
    assert again["global_step"] == 200 and again["accuracy"] == pytest.approx(accuracy)
    assert read_checkpoint(logdir)[2] == 200


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_tf1_between_graph_trains_with_worker_0_as_chief(tmp_path, sync):
    logdir = tmp_path / "run"
    cluster = ["--tf1", f"--ps_hosts={hosts(1)}", f"--worker_hosts={hosts(2)}"]
    cluster += ["--sync_replicas"] if sync else []
    names = ["ps:0", "worker:1", "worker:0"]
    with tasks.Group(timeout=150, echo=None) as group:
        start(group, cluster, names, [f"--logdir={logdir}", "--train_steps=100"])
        codes = group.wait()
        done = final_record(group, "worker:0")
        helper = final_record(group, "worker:1")
    assert codes == dict.fromkeys(names, 0)
    w, b, step = read_checkpoint(logdir)
    assert step == done["global_step"]
    # sync: one update per round of 2 gradients, so exactly the last step. async: both
    # workers' steps count, and a worker stops only once it has seen step 100; the step it
    # fetches with train_op may be read before its own increment lands, so under load each of
    # the 2 workers can take up to 2 steps past the one that reached 100.
    if sync:
        assert step == 100, f"sync ended at global step {step}, not 100"
    else:
        assert 100 <= step <= 104, f"async ended at global step {step}, not in 100-104"
    assert helper["mine"] > 0, "worker 1 did no step"
    # sync averages two gradients per update, as one big batch would, so it reaches what
    # single-device training does; async applies each worker's gradient as it comes, against
    # weights that may have moved meanwhile, so how good the model gets depends on the
    # scheduler. What async guarantees is that it learns: far above chance (0.1).
    assert done["accuracy"] > (0.85 if sync else 0.5)

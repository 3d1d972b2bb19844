"""The task launcher (``python -m dpkit task``) in child processes on loopback: a bad index
exits 2 before TensorFlow is imported; mirrored workers against NumPy SGD on the same batches,
and resumed; ParameterServerStrategy and TF1 runs against the checkpoint read back by TF.
Its flag and TF_CONFIG checks: tests/unit/test_launcher.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dpkit import checking, tasks
from dpkit.plumbing import contract
from tests.support.cluster_runs import ASYNC_200_ACCURACY, final_record, read_checkpoint
from tests.support.machine import free_port
from tests.support.paths import ROOT
from tests.support.softmax_reference import numpy_sgd


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
    assert out.stdout.split() == [str(contract.Exit.USAGE.value), "False"]
    assert "error: task index 3 is out of range" in out.stderr


# ----------------------------------------------------------------------------- real runs


def hosts(n):
    return ",".join(f"127.0.0.1:{free_port()}" for _ in range(n))


def start(group, task_args, names, extra):
    for name in names:
        job, index = name.split(":")
        group.start(name, "task", f"--job_name={job}", f"--task_index={index}", *task_args, *extra)


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

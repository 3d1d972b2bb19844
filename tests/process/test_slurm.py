"""Lesson 08's Slurm job on a real Slurm: munged, slurmctld and slurmd started on this machine
(tools/one_node_slurm.py, apt-get installing them where missing), the workbook's task program
queued with sbatch as a two-task MultiWorkerMirroredStrategy job. Its workers must hold the
weights of plain NumPy SGD on the whole batch; a cancelled job must leave no task process;
the daemons must be gone afterwards. Skips, saying why, where Slurm cannot run (not root, no
apt-get), unless DPKIT_REQUIRE_SLURM is set (.ci/run), where it fails. make test-slurm runs
this file; dpkit.slurm's checks without Slurm:
tests/unit/test_slurm.py."""

from __future__ import annotations

import os
import sys
import time

import psutil
import pytest

from dpkit import checking, slurm
from tests.support.cluster_runs import read_checkpoint
from tests.support.paths import ROOT
from tests.support.softmax_reference import numpy_sgd
from tools.one_node_slurm import OneNodeSlurm, Unavailable

QUIET = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    one = OneNodeSlurm(tmp_path_factory.mktemp("slurm"))
    try:
        one.start()
    except Unavailable as error:
        one.stop()
        if os.environ.get("DPKIT_REQUIRE_SLURM"):  # .ci/run: a skip would hide the failure
            pytest.fail(f"DPKIT_REQUIRE_SLURM is set, but no Slurm could start: {error}")
        pytest.skip(f"no Slurm here: {error}")
    yield one
    one.stop()


def job(cluster, folder, steps, **kwargs):
    """Write and queue a job of the launcher under --slurm; its id and output file."""
    flags = [f"--logdir={folder / 'run'}", f"--train-steps={steps}", "--batch-size=32"]
    flags += ["--learning-rate=0.3", "--log-every=10", "--checkpoint-every=20"]
    script = folder / "job.sh"
    output = folder / "slurm-%j.out"
    text = slurm.batch_script(flags, python=sys.executable, output=str(output), **kwargs)
    script.write_text(text)
    job_id = slurm.submit(script, env={**cluster.env, **QUIET}, cwd=ROOT)
    return job_id, folder / f"slurm-{job_id}.out"


def task_processes(marker: str) -> list[psutil.Process]:
    """Live processes whose command line holds ``marker`` (a job's own logdir)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in proc.info["cmdline"] or ()):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def test_two_slurm_tasks_train_to_the_weights_of_numpy_sgd_on_the_whole_batch(cluster, tmp_path):
    port = slurm.PORT_BASE + 20000 + os.getpid() % 10000  # two tasks: port and port + 1
    job_id, output = job(cluster, tmp_path, 30, tasks_per_node=2, port_base=port)
    final = slurm.wait(job_id, cluster.env, timeout=240)
    log = output.read_text(errors="replace")
    assert final == "COMPLETED", log[-2000:]
    for name, offset in (("worker:0", 0), ("worker:1", 1)):
        assert (
            f"{name} " in log and f"address {cluster.node}:{port + offset}, task from Slurm" in log
        )
    w, b, step = read_checkpoint(tmp_path / "run")
    w_ref, b_ref = numpy_sgd(30, 32, 0.3, 0)
    assert step == 30
    check = checking.agree([w, b], [w_ref, b_ref], what="30 Slurm steps vs NumPy", ulps=1024)
    assert check, check


def test_scancel_leaves_no_task_process_behind(cluster, tmp_path):
    port = slurm.PORT_BASE + 30000 + os.getpid() % 10000
    job_id, output = job(cluster, tmp_path, 10**6, tasks_per_node=2, port_base=port)
    marker = str(tmp_path / "run")
    deadline = time.monotonic() + 120
    while "training with" not in (output.read_text() if output.exists() else ""):
        assert time.monotonic() < deadline, f"job {job_id} never started training"
        assert slurm.state(job_id, cluster.env) in ("PENDING", "CONFIGURING", "RUNNING")
        time.sleep(0.5)
    assert len(task_processes(marker)) >= 2  # both tasks, each a python -m dpkit task
    slurm.cancel(job_id, cluster.env)
    assert slurm.wait(job_id, cluster.env, timeout=60) == "CANCELLED"
    deadline = time.monotonic() + 30  # KillWait (5 s) between SIGTERM and SIGKILL, and reaping
    while task_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not task_processes(marker), "a task of the cancelled job is still running"


def test_the_daemons_stop_and_are_reaped(cluster):
    daemons = [cluster.procs[name].pid for name in cluster.running()]
    assert len(daemons) == 3
    cluster.stop()
    assert cluster.running() == []
    assert not [pid for pid in daemons if psutil.pid_exists(pid)]

"""dpkit.tasks with real task processes: MultiWorkerMirroredStrategy workers against one device
on the whole batch in plain TensorFlow; a failing task reported with its stderr and the others
killed; a timeout, or the death of the process that started it, leaves no task. The argument
checks: tests/unit/test_tasks.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from dpkit import checking, tasks
from dpkit.plumbing import contract, procs
from tests.support import childproc, machine, softmax_reference


def _mwms_group(tmp_path, steps, global_batch, lr, workers=2, **kwargs):
    ports = [machine.free_port() for _ in range(workers)]
    spec = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    group = tasks.Group(**kwargs)
    for i in range(workers):
        config = json.dumps({"cluster": spec, "task": {"type": "worker", "index": i}})
        args = ["--steps", steps, "--global_batch", global_batch, "--lr", lr]
        group.start(
            f"worker:{i}", "mwms", *args, "--out", tmp_path / f"w{i}.npz", env={"TF_CONFIG": config}
        )
    return group


def test_mwms_workers_match_one_device_on_the_whole_batch(tmp_path):
    steps, batch, lr = 6, 32, 0.2
    logs = []
    with _mwms_group(tmp_path, steps, batch, lr, echo=logs.append) as group:
        assert group.wait() == {"worker:0": 0, "worker:1": 0}
    assert any(line.startswith("[worker:1] joined the collective") for line in logs)
    # the independent reference: one device, the whole global batch, plain TensorFlow
    w, b, losses = softmax_reference.one_device_sgd(batch, steps, lr)
    for i in range(2):
        saved = np.load(tmp_path / f"w{i}.npz")
        check = checking.agree([saved["w"], saved["b"]], [w, b], what=f"worker {i}'s weights")
        assert check, check
        recorded = [r["loss"] for r in group.records[f"worker:{i}"] if "loss" in r]
        check = checking.agree(recorded, losses, what=f"worker {i}'s losses vs one process")
        assert check, check


def _lonely_worker(group, tmp_path):
    """Worker 1 of a two-worker MultiWorkerMirroredStrategy job whose worker 0 never starts."""
    spec = {"worker": [f"127.0.0.1:{machine.free_port()}", f"127.0.0.1:{machine.free_port()}"]}
    config = json.dumps({"cluster": spec, "task": {"type": "worker", "index": 1}})
    group.start("worker:1", "mwms", "--out", tmp_path / "w1.npz", env={"TF_CONFIG": config})


def test_a_failing_task_is_reported_with_its_stderr_and_the_others_killed(tmp_path):
    group = tasks.Group(timeout=60, echo=None)
    with group:
        # no TF_CONFIG: the program refuses to start
        group.start("worker:0", "mwms", "--out", tmp_path / "w.npz", env={"TF_CONFIG": ""})
        _lonely_worker(group, tmp_path)  # waits for a peer that never comes
        other = group.pids["worker:1"]
        # what each task was started with, as text, for a message about a failed one
        assert group.arguments["worker:0"] == ["--out", str(tmp_path / "w.npz")]
        with pytest.raises(
            tasks.TaskFailedError, match=r"(?s)task worker:0 failed .*needs TF_CONFIG"
        ):
            group.wait()
    assert machine.wait_gone(other, 60)


def test_a_timeout_stops_every_task(tmp_path):
    with tasks.Group(timeout=3, echo=None) as group:
        _lonely_worker(group, tmp_path)
        pid = group.pids["worker:1"]
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="waiting for 'done' from task worker:1 took more"):
            group.wait_for("worker:1", contract.Saved)
        # it gave up (after 3 s, much later on a busy machine) instead of waiting for ever
        assert time.monotonic() - start < 120
    assert machine.gone(pid)


def test_a_task_dies_with_the_process_that_started_it():
    code = """
        import json, sys, time
        from dpkit import tasks
        group = tasks.Group(echo=None)
        spec = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
        config = json.dumps({"cluster": spec, "task": {"type": "worker", "index": 1}})
        group.start("worker:1", "mwms", "--out", "/dev/null", env={"TF_CONFIG": config})
        print(json.dumps(group.pids), flush=True)
        time.sleep(600)
    """
    import textwrap

    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=childproc.ROOT,
        env=procs.child_env(),
    )
    try:
        pid = json.loads(parent.stdout.readline())["worker:1"]
        assert not machine.gone(pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        parent.stdout.close()
    assert machine.wait_gone(pid, 60), "the task outlived its parent (the watchdog did not fire)"

"""dpkit.cluster with task processes: up and down with no orphans (also after Ctrl-C, kill -9
and an nbval cell timeout), ports retried, tasks killed and restarted, and real
ParameterServerStrategy training that runs every scheduled step and resumes from its last
checkpoint. The argument checks: tests/unit/test_cluster.py."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import time
import warnings

import pytest

from dpkit import cluster
from dpkit.plumbing import contract, procs
from tests.support import childproc, machine

pytestmark = pytest.mark.filterwarnings("ignore:dpkit.cluster:UserWarning")


@pytest.fixture
def no_tasks():
    yield
    assert cluster.live_tasks() == [], "a task child outlived its test"


# ----------------------------------------------------------------------------- arguments


# ----------------------------------------------------------------------------- up and down


@pytest.fixture(scope="class")
def shared():
    """One cluster for a class's tests, started without GRPC_FAIL_FAST in the environment:
    ``(cluster, its tasks' PIDs, this process's GRPC_FAIL_FAST once it started)``."""
    assert cluster.live_tasks() == [], "a task child of an earlier test is still running"
    with pytest.MonkeyPatch.context() as env:
        env.delenv(contract.GRPC_FAIL_FAST, raising=False)
        with cluster.LocalCluster(num_workers=2, num_ps=1, chief=True) as c:
            # test_down leaves the with block first: a second time is safe
            yield c, list(c.pids.values()), os.environ.get(contract.GRPC_FAIL_FAST)


def _environ(pid: int) -> dict[bytes, bytes]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)


class TestOneCluster:
    """One cluster (a ps, two workers, a chief slot) for these tests, in this order: up, a
    worker killed and restarted, the ps killed, then down. Each task's server imports
    TensorFlow (about 5 s of one core), so they share its three servers."""

    def test_up(self, shared):
        c, pids, _ = shared
        assert sorted(c.pids) == ["ps:0", "worker:0", "worker:1"]
        assert all(not machine.gone(pid) for pid in pids)
        assert all(cluster.port_answers(c.addresses[t]) for t in c.pids)
        assert set(c.addresses) == {"chief:0", "ps:0", "worker:0", "worker:1"}
        assert all(a.startswith("127.0.0.1:") for a in c.addresses.values())
        config = c.tf_config("worker", 1)
        assert config["task"] == {"type": "worker", "index": 1}
        assert config["cluster"]["worker"][1] == c.addresses["worker:1"]
        assert json.loads(c.tf_config("chief", 0, as_json=True))["task"]["type"] == "chief"
        with pytest.raises(ValueError, match="no task worker:2"):
            c.tf_config("worker", 2)

    @pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc (Linux)")
    def test_every_task_and_this_process_get_grpc_fail_fast_use_caller(self, shared):
        # TensorFlow's parameter-server tutorial asks for it on every task and the coordinator.
        c, _, here = shared
        for task, pid in c.pids.items():
            assert _environ(pid).get(contract.GRPC_FAIL_FAST.encode()) == b"use_caller", task
        assert here == "use_caller"

    def test_kill_and_restart_a_worker_on_the_same_port(self, shared):
        c, _, _ = shared
        address, old = c.addresses["worker:1"], c.pids["worker:1"]
        c.kill(("worker", 1))
        assert machine.gone(old) and "worker:1" not in c.pids
        assert not cluster.port_answers(address)
        new = c.restart("worker:1")
        assert new != old and c.pids["worker:1"] == new
        assert c.addresses["worker:1"] == address and cluster.port_answers(address)
        with pytest.raises(ValueError, match="no task worker:5"):
            c.kill("worker:5")

    def test_a_missing_ps_is_a_clear_error_within_the_deadline(self, shared):
        c, _, _ = shared
        c.kill("ps:0")
        start = time.monotonic()
        with pytest.raises(cluster.ClusterNotReadyError, match=r"task ps:0 at 127\.0\.0\.1:\d+"):
            c.make_strategy(timeout=1.0)
        assert time.monotonic() - start < 3

    def test_down_leaves_no_process(self, shared):
        c, first, _ = shared
        pids = first + list(c.pids.values())  # the restarted worker's too
        c.__exit__(None, None, None)  # what the end of the with block does
        assert all(machine.gone(pid) for pid in pids)
        assert all(machine.group_gone(pid) for pid in pids)
        assert cluster.live_tasks() == []


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc (Linux)")
def test_a_grpc_fail_fast_already_set_is_left_alone(monkeypatch, no_tasks):
    # (unset, every task gets use_caller: TestOneCluster)
    monkeypatch.setenv(contract.GRPC_FAIL_FAST, "true")
    with cluster.LocalCluster(num_workers=1, num_ps=0) as c:
        assert _environ(c.pids["worker:0"])[contract.GRPC_FAIL_FAST.encode()] == b"true"
    assert os.environ[contract.GRPC_FAIL_FAST] == "true"


def test_an_exception_inside_with_still_kills_every_task(no_tasks):
    with pytest.raises(ZeroDivisionError), cluster.LocalCluster(num_workers=1) as c:
        pids = list(c.pids.values())
        raise ZeroDivisionError
    assert len(pids) == 2 and all(machine.gone(pid) for pid in pids)


def test_the_first_cluster_warns_that_servers_are_open_to_the_network(monkeypatch, no_tasks):
    # start() warns before it starts anything: given a port that is always taken, it then
    # fails in a moment (the server program finds the port taken before importing TensorFlow)
    monkeypatch.setattr(cluster, "_warned", False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(cluster, "free_port", lambda host: taken.getsockname()[1])
        never = pytest.raises(cluster.ClusterNotReadyError, match="found no free ports")
        warned = pytest.warns(UserWarning, match="no authentication and listen on all network")
        with warned, never:
            cluster.LocalCluster(num_workers=1, num_ps=0).start()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(cluster.ClusterNotReadyError, match="found no free ports"):
                cluster.LocalCluster(num_workers=1, num_ps=0).start()


PARENT = """
import json, signal, sys, time
# Ctrl-C must raise KeyboardInterrupt even where this test runs in the background (a
# non-interactive shell's background job, a test-runner worker) with SIGINT ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
from dpkit import cluster
with cluster.LocalCluster(num_workers=1, num_ps=1) as c:
    print(json.dumps(list(c.pids.values())), flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill -9"])
def test_an_interrupted_or_killed_parent_leaves_no_task(how):
    parent = subprocess.Popen(
        [sys.executable, "-W", "ignore", "-c", PARENT],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=childproc.ROOT,
        env=procs.child_env(),
    )
    pids = []
    try:
        pids = json.loads(parent.stdout.readline())
        assert len(pids) == 2 and all(not machine.gone(pid) for pid in pids)
        parent.send_signal(how)
        parent.wait(timeout=120)  # generous: a busy machine is slow, not wrong
        # SIGINT: the with block kills them; SIGKILL: each child's watchdog sees its parent go
        assert all(machine.wait_gone(pid, 60, group=True) for pid in pids), "a task outlived it"
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
        for pid in pids:
            if not machine.group_gone(pid):
                os.killpg(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- faults


def test_a_taken_port_is_retried_on_another(monkeypatch, no_tasks):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        handed = [port]
        real = cluster.free_port
        monkeypatch.setattr(
            cluster, "free_port", lambda host: handed.pop() if handed else real(host)
        )
        with cluster.LocalCluster(num_workers=1, num_ps=1) as c:
            assert handed == [], "the taken port was never tried"
            assert c.addresses["ps:0"] != f"127.0.0.1:{port}"
            assert all(cluster.port_answers(a) for a in c.addresses.values())
            assert all(not machine.gone(pid) for pid in c.pids.values())


def test_a_task_that_never_starts_is_named(monkeypatch, no_tasks):
    # every attempt gets the same taken port: the ps can never bind
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(cluster, "free_port", lambda host: port)
        with pytest.raises(cluster.ClusterNotReadyError, match="found no free ports"):
            cluster.LocalCluster(num_workers=1, num_ps=0).start()


# ----------------------------------------------------------------------------- real training

TRAIN = """
import json, os, threading, time
import numpy as np
import tensorflow as tf
from dpkit import cluster

STEPS = {steps}
with cluster.LocalCluster(num_workers={workers}, num_ps=1, chief={chief}) as c:
    coordinator = c.make_coordinator()
    strategy = coordinator.strategy
    with strategy.scope():
        w = tf.Variable(tf.zeros([8, 1]))
        steps_run = tf.Variable(0, dtype=tf.int64)
    x = tf.random.stateless_normal([64, 8], seed=(1, 2))
    y = tf.reduce_sum(x, axis=1, keepdims=True)

    @tf.function
    def step():
        def replica():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
            w.assign_sub(0.05 * tape.gradient(loss, w))
            steps_run.assign_add(1)
            return loss
        return strategy.run(replica)

    results = [coordinator.schedule(step) for _ in range(STEPS)]
    at_kill = killed_gone = None
    if {kill}:
        while int(steps_run.read_value()) < 5:
            time.sleep(0.05)
        killed = c.pids["worker:1"]
        c.kill("worker:1")
        at_kill = int(steps_run.read_value())
        killed_gone = not os.path.exists(f"/proc/{killed}")
    coordinator.join()
    losses = [float(r.fetch()) for r in results]
    done = int(steps_run.read_value())
    # the loss of the weights the ps holds now, next to the loss of the zeros it started
    # from: the closures' own losses come in schedule order, not in the order they ran (a
    # closure retried on a late worker runs last)
    trained = w.read_value().numpy()
    x, y = x.numpy(), y.numpy()
    out = dict(w_device=w.device, done=done, at_kill=at_kill, killed_gone=killed_gone,
               fetched=len(losses),
               start=float(np.mean(y ** 2)), end=float(np.mean((x @ trained - y) ** 2)))
names = ("WorkerClosure", "WorkerPreemption")
threads = [t.name for t in threading.enumerate() if t.name.startswith(names) and t.is_alive()]
out["threads_left"] = threads
print(json.dumps(out), flush=True)
os._exit(0)
"""


def _train(**values) -> dict:
    code = TRAIN
    for name, value in values.items():
        code = code.replace("{" + name + "}", repr(value))
    return childproc.run(code, timeout=120)


def test_ps_strategy_trains_every_scheduled_step_with_variables_on_the_ps():
    out = _train(steps=20, workers=1, chief=False, kill=False)  # one server fewer
    assert "/job:ps/" in out["w_device"]
    assert out["done"] == 20 and out["fetched"] == 20
    assert out["end"] < out["start"] / 2, f"the loss went from {out['start']} to {out['end']}"
    assert out["threads_left"] == [], "coordinator threads outlived shutdown"


def test_a_worker_killed_mid_training_the_other_finishes_every_step():
    out = _train(steps=200, workers=2, chief=True, kill=True)
    assert out["killed_gone"] and out["at_kill"] < 200, "no worker died mid-training"
    # a step cut short on the killed worker is run again elsewhere, so >= not ==
    assert out["fetched"] == 200 and out["done"] >= 200
    # only the killed worker's loop (and the handler waiting for it to return) can be left
    assert "WorkerClosureProcessingLoop-0" not in out["threads_left"]
    assert set(out["threads_left"]) <= {"WorkerClosureProcessingLoop-1", "WorkerPreemptionHandler"}


IN_PROCESS = """
import json
import tensorflow as tf
from dpkit import cluster

c = cluster.LocalCluster(num_workers=2, num_ps=1, mode="in_process").start()
coordinator = c.make_coordinator()
strategy = coordinator.strategy
with strategy.scope():
    steps_run = tf.Variable(0, dtype=tf.int64)

@tf.function
def step():
    strategy.run(lambda: steps_run.assign_add(1))

for _ in range(10):
    coordinator.schedule(step)
coordinator.join()
out = {"done": int(steps_run.read_value()), "device": steps_run.device,
       "threads": c.inter_op_threads_per_task, "pids": c.pids}
for attempt in (lambda: c.kill("worker:0"),
                lambda: cluster.LocalCluster(num_workers=1, mode="in_process").start()):
    try:
        attempt()
    except RuntimeError as error:
        out.setdefault("errors", []).append(str(error))
c.shutdown()
print(json.dumps(out), flush=True)
import os; os._exit(0)
"""


def test_in_process_cluster_trains_and_refuses_what_it_cannot_do():
    out = childproc.run(IN_PROCESS, timeout=120)
    assert out["done"] == 10 and "/job:ps/" in out["device"]
    assert out["threads"] == 3 and out["pids"] == {}
    kill, second = out["errors"]
    assert "in-process servers cannot be stopped" in kill and "mode='process'" in kill
    assert "already holds an in-process cluster" in second and "restart the kernel" in second


def test_a_task_that_crashes_is_reported_with_its_stderr(no_tasks):
    # a worker told that the cluster has no worker job: TensorFlow refuses to start it
    lines = queue.Queue()
    argv = procs.program_argv(
        contract.Program.SERVER, json.dumps({"ps": ["127.0.0.1:1"]}), "worker", 0, 0
    )
    task = procs.Child(argv, name="worker:0", kind="cluster", lines=lines)
    try:
        records = []
        while (item := lines.get(timeout=30))[1] is not None:  # until its stdout ends
            records.append(procs.parse_record(item[1]))
        assert not any(r and r.get("ready") for r in records), "it said it was ready"
        assert task.wait(timeout=30) == 1
        assert "task worker:0:" in task.tail() and "worker" in task.tail()
    finally:
        task.close()
    assert machine.gone(task.pid)


PS_KILL = """
import json, os, time
import tensorflow as tf
from dpkit import cluster

with cluster.LocalCluster(num_workers=2, num_ps=1) as c:
    coordinator = c.make_coordinator()
    strategy = coordinator.strategy
    with strategy.scope():
        steps_run = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def step():
        strategy.run(lambda: steps_run.assign_add(1))

    for _ in range(20):
        coordinator.schedule(step)
    while int(steps_run.read_value()) < 5:
        time.sleep(0.05)
    c.kill("ps:0")
    start = time.perf_counter()
    # keep work queued after the kill (a fixed queue could drain before the kill lands,
    # and join would rightly succeed); schedule or join raises the first failure
    try:
        while time.perf_counter() - start < 30:
            coordinator.schedule(step)
            time.sleep(0.005)
        coordinator.join()
        out = {"error": None}
    except tf.errors.UnavailableError as error:
        out = {"error": type(error).__name__, "seconds": time.perf_counter() - start}
    try:
        c.check(timeout=1)
    except cluster.ClusterNotReadyError as error:
        out["check"] = str(error)
print(json.dumps(out), flush=True)
os._exit(0)
"""


def test_a_killed_ps_fails_training_within_seconds_and_check_names_it():
    out = childproc.run(PS_KILL, timeout=120)
    assert out["error"] == "UnavailableError", "30 s of steps ran on with the ps dead"
    assert out["seconds"] < 10, f"the dead ps was noticed after {out['seconds']:.1f} s"
    assert out["check"].startswith("task ps:0 at 127.0.0.1:")


PS_RESUME = """
import json, os, sys, tempfile, time
import tensorflow as tf
from dpkit import cluster

TOTAL, EVERY = 60, 10
directory = tempfile.mkdtemp()
x = tf.random.stateless_normal([64, 8], seed=(1, 2))
y = tf.reduce_sum(x, axis=1, keepdims=True)

def build(c):
    coordinator = c.make_coordinator()
    strategy = coordinator.strategy
    with strategy.scope():
        w = tf.Variable(tf.zeros([8, 1]))
        done = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def step():
        def replica():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
            w.assign_sub(0.01 * tape.gradient(loss, w))
            done.assign_add(1)
        strategy.run(replica)

    manager = tf.train.CheckpointManager(tf.train.Checkpoint(w=w, done=done), directory, 3)
    return coordinator, step, w, done, manager

out = {}
# chief=True: the coordinator keeps one address, which the restarted ps can reach
with cluster.LocalCluster(num_workers=2, num_ps=1, chief=True) as c:
    coordinator, step, w, done, manager = build(c)
    try:
        for round_ in range(TOTAL // EVERY):
            for _ in range(EVERY):
                coordinator.schedule(step)
            if round_ == 3:  # the fourth round never completes
                time.sleep(0.2)
                c.kill("ps:0")
            coordinator.join()
            manager.save()
    except tf.errors.UnavailableError:
        out["error"] = "UnavailableError"
    path = tf.train.latest_checkpoint(directory)
    reader = tf.train.load_checkpoint(path)
    keys = reader.get_variable_to_shape_map()
    saved = {k.split("/")[0]: reader.get_tensor(k) for k in keys if k.endswith("VARIABLE_VALUE")}
    out["saved_done"] = int(saved["done"])
    c.restart("ps:0")
    coordinator, step, w, done, manager = build(c)
    manager.restore_or_initialize()
    out["restored_done"] = int(done.numpy())
    out["restored_w_equal"] = bool((w.numpy() == saved["w"]).all())
    while int(done.numpy()) < TOTAL:
        for _ in range(EVERY):
            coordinator.schedule(step)
        coordinator.join()
        manager.save()
    out["final_done"] = int(done.numpy())
print(json.dumps(out), flush=True)
os._exit(0)
"""


def test_after_a_ps_dies_training_resumes_from_the_last_checkpoint_losing_no_step():
    out = childproc.run(PS_RESUME, timeout=180)
    assert out["error"] == "UnavailableError"
    # every step completed before the last checkpoint is in the resumed state
    assert out["saved_done"] == 30 and out["restored_done"] == 30
    assert out["restored_w_equal"], "the restored weights differ from the checkpoint's"
    # and the steps cut off by the failure are run again, once: exactly TOTAL in the end
    assert out["final_done"] == 60


# ----------------------------------------------------------------------------- nbval timeout

TIMED_OUT_NOTEBOOK = [
    # no `with`: the worst case, a cluster left running when the cell is cut off
    "import json, sys, time\nfrom dpkit import cluster\n"
    "c = cluster.LocalCluster(num_workers=1, num_ps=1).start()\n"
    "open({path!r}, 'w').write(json.dumps(c.pids))",
    "time.sleep(600)",
]


def test_a_cell_timeout_under_nbval_leaves_no_task(tmp_path):
    import nbformat

    from tests.support.notebooks import nbio

    pids_file = tmp_path / "pids.json"
    sources = [src.format(path=str(pids_file)) for src in TIMED_OUT_NOTEBOOK]
    cells = [nbformat.v4.new_code_cell(src) for src in sources]
    notebook = tmp_path / "timeout.ipynb"
    nbio.write(nbformat.v4.new_notebook(cells=cells), notebook)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(notebook), "--nbval-lax", "--nbval-current-env"]
        # The timeout cuts off the second cell (a sleep); the first starts a cluster, whose
        # tasks import TensorFlow: about 30 s with the kernel's start at load 5-7 on 2 cores.
        # 60 leaves it room and still ends the sleep early.
        + ["--nbval-cell-timeout=60", "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=procs.child_env(),
    )
    assert proc.returncode != 0 and "Timeout" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    pids = json.loads(pids_file.read_text())
    assert sorted(pids) == ["ps:0", "worker:0"]
    left = [pid for pid in pids.values() if not machine.wait_gone(pid, 60)]
    assert left == [], f"task processes outlived the timed-out notebook: {left}"

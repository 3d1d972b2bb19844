"""TF1 between-graph replication on a dpkit.cluster: global step in async vs sync mode.

The seeds' claim: with ``replica_device_setter`` and plain SGD (async) the global step
counts every worker's steps; with ``SyncReplicasOptimizer`` it counts rounds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from dpkit import cluster
from tests import childproc, procs

pytestmark = pytest.mark.filterwarnings("ignore:dpkit.cluster:UserWarning")

STEPS = 5

WORKER = """
import json, sys
import tensorflow as tf

v1 = tf.compat.v1
v1.disable_eager_execution()
spec, index = json.loads(sys.argv[1]), int(sys.argv[2])
sync, steps = sys.argv[3] == "sync", int(sys.argv[4])
chief = index == 0
device = v1.train.replica_device_setter(
    worker_device=f"/job:worker/task:{index}", cluster=tf.train.ClusterSpec(spec))
with v1.device(device):
    global_step = v1.train.get_or_create_global_step()
    w = v1.get_variable("w", [4, 1], initializer=v1.zeros_initializer())
    x = tf.ones([8, 4])
    loss = tf.reduce_mean((tf.matmul(x, w) - 1.0) ** 2)
    opt = v1.train.GradientDescentOptimizer(0.01)
    if sync:
        opt = v1.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=2, total_num_replicas=2)
    train_op = opt.minimize(loss, global_step=global_step)
# num_tokens=0: no token before the first round, so a step returns only once its round
# is applied (the default hands out one round of tokens up front).
hooks = [opt.make_session_run_hook(is_chief=chief, num_tokens=0)] if sync else []
config = v1.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
with v1.train.MonitoredTrainingSession(
    master="grpc://" + spec["worker"][index], is_chief=chief, hooks=hooks, config=config
) as sess:
    print(json.dumps({"ready": index}), flush=True)
    for step in range(steps):
        sys.stdin.readline()  # the test steps the workers in lockstep (see the test)
        sess.run(train_op)
        print(json.dumps({"stepped": step}), flush=True)
    sys.stdin.readline()
    print(json.dumps({"global_step": int(sess.run(global_step))}), flush=True)
import os; os._exit(0)
"""


def _start(spec, index, mode):
    return subprocess.Popen(
        [sys.executable, "-W", "ignore", "-c", WORKER, json.dumps(spec), str(index), mode]
        + [str(STEPS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=childproc.ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(childproc.ROOT)},
        start_new_session=True,
    )


def _read(proc, key):
    for line in proc.stdout:
        if key in json.loads(line):
            return json.loads(line)[key]
    raise AssertionError(f"a worker client ended without reporting {key!r}")


def _say(client):
    client.stdin.write("\n")
    client.stdin.flush()


@pytest.mark.parametrize("mode, expected", [("async", 2 * STEPS), ("sync", STEPS)])
def test_global_step_counts_every_step_async_and_rounds_sync(mode, expected):
    clients = []
    try:
        with cluster.LocalCluster(num_workers=2, num_ps=1) as c:
            chief = _start(c.cluster, 0, mode)
            clients.append(chief)
            _read(chief, "ready")  # the chief initialises the variables first
            clients.append(_start(c.cluster, 1, mode))
            _read(clients[1], "ready")
            # Lockstep: with replicas_to_aggregate=2 a fast worker could take both tokens
            # of a round and push a stale gradient, which is dropped; the seeds' claim is
            # about workers that each do one step per round.
            for step in range(STEPS):
                for client in clients:
                    _say(client)
                assert [_read(client, "stepped") for client in clients] == [step, step]
            _say(chief)
            assert _read(chief, "global_step") == expected
    finally:
        for client in clients:
            if client.poll() is None:
                os.killpg(client.pid, signal.SIGKILL)
            client.wait()
            client.stdin.close()
            client.stdout.close()
            assert procs.gone(client.pid)

"""TF1 between-graph replication on a dpkit.cluster: global step in async vs sync mode.

The seeds' claim: with ``replica_device_setter`` and plain SGD (async) the global step
counts every worker's steps; with ``SyncReplicasOptimizer`` it counts rounds. The expected
numbers come from that claim, not from running the code.
"""

from __future__ import annotations

import json

import pytest

from dpkit import cluster, tasks
from dpkit.plumbing import contract
from tests.support import machine

pytestmark = pytest.mark.filterwarnings("ignore:dpkit.cluster:UserWarning")

STEPS = 5


@pytest.mark.parametrize("mode, expected", [("async", 2 * STEPS), ("sync", STEPS)])
def test_global_step_counts_every_step_async_and_rounds_sync(mode, expected):
    sync = ["--sync"] if mode == "sync" else []
    with cluster.LocalCluster(num_workers=2, num_ps=1) as c, tasks.Group(timeout=90) as g:
        names = ["worker:0", "worker:1"]
        for i, name in enumerate(names):
            args = ["--cluster", json.dumps(c.cluster), "--index", i, "--steps", STEPS, *sync]
            g.start(name, contract.Program.TF1, *args)
            ready = g.wait_for(name, contract.Placed)  # the chief initialises the variables first
        assert "/job:ps/" in ready.placement["w"]
        assert "/job:ps/" in ready.placement["global_step"]
        # Lockstep: with replicas_to_aggregate=2 a fast worker could take both tokens of
        # a round and push a stale gradient, which is dropped; the seeds' claim is about
        # workers that each do one step per round.
        for step in range(STEPS):
            for name in names:
                g.send(name)
            assert [g.wait_for(name, contract.Stepped).stepped for name in names] == [step, step]
        g.send("worker:0")
        assert g.wait_for("worker:0", contract.GlobalStep).global_step == expected
        pids = list(g.pids.values())
    assert all(machine.gone(pid) for pid in pids)

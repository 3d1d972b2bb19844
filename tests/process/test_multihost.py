"""The task launcher across hosts: each task in a network namespace of its own.

A namespace has its own interfaces, addresses, routes and ports, so to TensorFlow it is a
separate machine: every task here listens on the *same* port, 2222, at its own address,
which no single host could do, and the bytes counted on the ps's interface show the
traffic really crossed the (virtual) wire. The hosts hang off one bridge, like machines on
a switch; "cutting a worker off" takes its cable out (the link goes down; the process
keeps running and is never told).

Two runs across these hosts: ParameterServerStrategy, stalled by a worker cut off and then
resumed to the last step, and asynchronous TF1 training that goes on without the worker cut
off; in each the ps's interface counts every update's bytes. The same launcher on loopback,
each run to its last step (and TF1 synchronous): tests/process/test_launcher.py.

Needs root and ``ip`` (iproute2); skipped with the reason elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from dpkit import data, tasks
from dpkit.plumbing import contract
from tests.support.cluster_runs import final_record, read_checkpoint

PORT = 2222


def _why_not() -> str | None:
    if not shutil.which("ip"):
        return "no `ip` command (Debian package iproute2) to make network namespaces"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    probe = f"dpkit-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"this machine does not allow network namespaces: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


REASON = _why_not()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def ip(*args, ok=True):
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if ok and done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


class Hosts:
    """Network namespaces on one bridge: ``hosts.address("ps")``, ``hosts.cut("w1")``."""

    def __init__(self, names):
        pid = os.getpid()
        self.tag = f"dk{pid % 100000}"
        self.subnet = f"10.{20 + pid % 200}.{(pid // 200) % 250}"
        self.names = list(names)
        self.bridge = f"{self.tag}br"

    def namespace(self, name):
        return f"dpkit-{self.tag}-{name}"

    def cable(self, name):  # the host end of the veth pair
        return f"{self.tag}v{self.names.index(name)}"

    def address(self, name):
        return f"{self.subnet}.{10 + self.names.index(name)}"

    def __enter__(self):
        try:
            ip("link", "add", self.bridge, "type", "bridge")
            ip("link", "set", self.bridge, "up")
            for name in self.names:
                ns = self.namespace(name)
                ip("netns", "add", ns)
                ip(
                    "link",
                    "add",
                    self.cable(name),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    ns,
                )
                ip("link", "set", self.cable(name), "master", self.bridge, "up")
                ip("-n", ns, "addr", "add", f"{self.address(name)}/24", "dev", "eth0")
                ip("-n", ns, "link", "set", "eth0", "up")
                ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for name in self.names:
            ip("link", "del", self.cable(name), ok=False)
            ip("netns", "del", self.namespace(name), ok=False)
        ip("link", "del", self.bridge, ok=False)

    def wrap(self, name):
        return ["ip", "netns", "exec", self.namespace(name)]

    def cut(self, name, up=False):
        ip("link", "set", self.cable(name), "up" if up else "down")

    def received(self, name) -> int:
        out = ip("-n", self.namespace(name), "-s", "link", "show", "eth0")
        lines = out.splitlines()
        at = next(i for i, line in enumerate(lines) if line.strip().startswith("RX:"))
        return int(lines[at + 1].split()[0])


def start(group, hosts, layout, extra):
    """One launcher per host; ``layout`` maps host name -> task name; same port everywhere."""
    cluster = {}
    for host, task in layout.items():
        job, _ = task.split(":")
        cluster.setdefault(job, []).append(f"{hosts.address(host)}:{PORT}")
    flags = [f"--{job}_hosts={','.join(addresses)}" for job, addresses in cluster.items()]
    for host, task in layout.items():
        job, index = task.split(":")
        group.start(
            task,
            "task",
            f"--job_name={job}",
            f"--task_index={index}",
            *flags,
            *extra,
            wrap=hosts.wrap(host),
        )


def accuracy_on_test_set(w, b) -> float:
    arrays = data.load("digits", seed=0)
    x = arrays.x_test.reshape(len(arrays.x_test), -1)
    return float(np.mean(np.argmax(x @ w + b, axis=1) == arrays.y_test))


PS_LAYOUT = {"chief": "chief:0", "ps": "ps:0", "w0": "worker:0", "w1": "worker:1"}
TF1_LAYOUT = {"ps": "ps:0", "w0": "worker:0", "w1": "worker:1"}


def test_a_worker_cut_off_stalls_parameter_server_training_and_the_rerun_resumes(tmp_path):
    logdir = tmp_path / "run"
    run = [f"--logdir={logdir}", "--train_steps=600", "--log_every=20", "--checkpoint_every=50"]
    with Hosts(PS_LAYOUT) as hosts:
        with tasks.Group(timeout=150, echo=None) as group:
            start(group, hosts, PS_LAYOUT, [*run, "--stall_timeout=8"])
            while group.wait_for("chief:0", contract.TaskProgress).step < 120:
                pass
            hosts.cut("w1")  # its cable out: no error reaches anyone, packets just vanish
            with pytest.raises(tasks.TaskFailedError) as failed:
                group.wait()
        # the coordinator waits for the step it gave worker 1; the stall timeout ends it
        # and names the task that does not answer
        message = str(failed.value)
        assert "task chief:0 failed (exit code 1)" in message
        assert f"these tasks do not answer: worker:1 ({hosts.address('w1')}:{PORT})" in message
        _, _, saved = read_checkpoint(logdir)
        assert saved >= 100 and saved % 50 == 0 and saved < 600
        hosts.cut("w1", up=True)  # cable back in; start the job again on the same logdir
        with tasks.Group(timeout=150, echo=None) as group:
            start(group, hosts, PS_LAYOUT, run)
            codes = group.wait()  # every task ends by itself, the servers after the chief
            done = final_record(group, "chief:0")
            first = group.records["chief:0"][0]["step"]
        received = hosts.received("ps")
    assert codes == dict.fromkeys(PS_LAYOUT.values(), 0)
    w, b, step = read_checkpoint(logdir)
    assert step == done["global_step"] == 600
    assert saved < first <= saved + 20, "the rerun did not start from the checkpoint"
    assert accuracy_on_test_set(w, b) == pytest.approx(done["accuracy"])
    assert done["accuracy"] > 0.85
    # the variables live on the ps: every step's gradients reached it over the wire
    # (each of the 600 updates carries a 784x10 float32 gradient, 31 kB)
    assert received > 600 * 784 * 10 * 4


def test_a_worker_cut_off_does_not_stop_asynchronous_tf1_training(tmp_path):
    logdir = tmp_path / "run"
    with Hosts(TF1_LAYOUT) as hosts, tasks.Group(timeout=150, echo=None) as group:
        run = ["--tf1", f"--logdir={logdir}", "--train_steps=400", "--log_every=20"]
        start(group, hosts, TF1_LAYOUT, run)
        while group.wait_for("worker:1", contract.TaskProgress).step < 60:
            pass
        hosts.cut("w1")
        codes = group.wait()
        chief, lost = final_record(group, "worker:0"), final_record(group, "worker:1")
        received = hosts.received("ps")
    assert codes == dict.fromkeys(TF1_LAYOUT.values(), 0)
    # async: worker 0 goes on alone to the last step; worker 1's last steps never landed
    assert 400 <= chief["global_step"] <= 401
    assert lost["global_step"] < 400
    assert chief["accuracy"] > 0.85
    w, b, step = read_checkpoint(logdir)
    assert step == chief["global_step"]
    # the variables live on the ps: each of the 400 updates crossed the wire to it
    assert received > 400 * 784 * 10 * 4

"""dpkit.summaries with child processes: where the towers' ops run (two devices, in a child),
and TensorBoard served on 127.0.0.1 only, reused, replaced and reaped.

References: the hand-written run's values against TensorBoard's own HTTP API; each shard's
loss computed by the model directly, and towers.make_tower_train_step's update, for the
logged tower step. What is read back in this process: tests/unit/test_summaries.py.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

from dpkit import checking, summaries
from dpkit.plumbing import procs
from tests.support import childproc, machine
from tests.support.summaries_run import (
    SCALAR_STEPS,
    SCALAR_VALUES,
)

# --- Two devices, in a child process ------------------------------------------------------

TOWERS_CHILD = """
import json, tempfile
import keras, numpy as np, tensorflow as tf
from dpkit import checking, devices, models, summaries, towers

devs = list(devices.setup(2).devices)
keras.utils.set_random_seed(0)
tf.config.experimental.enable_op_determinism()
rng = np.random.default_rng(0)
x = rng.random((16, 28, 28, 1), dtype=np.float32)
y = rng.integers(0, 10, 16).astype(np.int32)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
with towers.variables_on(devs, "cpu"):
    model, twin = models.lenet5(), models.lenet5()
twin.set_weights(model.get_weights())
shard_losses = [float(loss_fn(y[i * 8:(i + 1) * 8], model(x[i * 8:(i + 1) * 8]))) for i in (0, 1)]

run = summaries.open_run("child", root=tempfile.mkdtemp())
step = summaries.make_logged_tower_step(model, keras.optimizers.SGD(0.1), devs)
loss, tower_losses = summaries.trace_graph(step, x, y, writer=run.train, name="tower_step")
reference = towers.make_tower_train_step(twin, keras.optimizers.SGD(0.1), devs)
reference_loss = float(reference(x, y))
weights_agree = checking.agree(model.get_weights(), twin.get_weights(), what="logged vs tower step")
trace = summaries.profile_steps(step, [(x, y)] * 2, run.dir / "train")
profiled = summaries.read_profile(trace)

(step_number, meta), = summaries.read(run.dir)["train"].graphs["tower_step"]
placed = summaries.placement(meta)

def index(device):
    spec = tf.DeviceSpec.from_string(device)
    return (spec.device_type, spec.device_index)

conv_devices = {
    i: sorted({index(op.device) for op in placed
               if "Conv2D" in op.type and op.name.startswith(f"tower_{i}/")})
    for i in (0, 1)
}
print(json.dumps({
    "devices": [index(d) for d in devs],
    "step": step_number,
    "conv_devices": {str(i): d for i, d in conv_devices.items()},
    "ops_per_device": {str(index(d)): sum(index(op.device) == index(d) for op in placed)
                       for d in devs},
    "tower_losses": [float(v) for v in tower_losses],
    "shard_losses": shard_losses,
    "loss": float(loss),
    "reference_loss": reference_loss,
    "weights_agree": [bool(weights_agree), str(weights_agree)],
    "profiled_convs": sorted({op.name.split("/")[0] for op in profiled
                              if op.type == "_FusedConv2D"}),
    "profiled_sends": sum(op.type == "_Send" for op in profiled),
}))
"""


@pytest.fixture(scope="module")
def two_towers():
    return childproc.run(TOWERS_CHILD, timeout=300)


def test_graph_trace_has_each_towers_convolutions_on_its_own_device(two_towers):
    devices = [tuple(d) for d in two_towers["devices"]]
    assert len(set(devices)) == 2 and two_towers["step"] == 0
    for i, device in enumerate(devices):  # one tower per device, and each tower on one device
        assert [tuple(d) for d in two_towers["conv_devices"][str(i)]] == [device]
    assert all(count > 0 for count in two_towers["ops_per_device"].values())


def test_logged_tower_step_returns_each_shards_loss(two_towers):
    shards = two_towers["shard_losses"]
    for got, want, what in [
        (two_towers["tower_losses"], shards, "each tower's loss vs its shard's"),
        (two_towers["loss"], np.mean(shards), "the step's loss vs the shards' mean"),
        (two_towers["loss"], two_towers["reference_loss"], "vs towers.make_tower_train_step"),
    ]:
        check = checking.agree(got, want, what=what)
        assert check, check
    ok, says = two_towers["weights_agree"]  # the same update as towers.make_tower_train_step
    assert ok, says


def test_profile_trace_shows_both_towers_and_the_transfers(two_towers):
    assert two_towers["profiled_convs"] == ["tower_0", "tower_1"]
    assert two_towers["profiled_sends"] > 0  # data crossing between the two devices


# --- Launching TensorBoard ----------------------------------------------------------------


def _get_json(url: str):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.skipif(os.name != "posix", reason="checks processes through POSIX process groups")
def test_launch_serves_on_loopback_only_is_reused_replaced_and_stopped(known_run):
    run, _ = known_run
    board = summaries.launch(run.dir)
    try:
        assert board.running() and board.url.startswith("http://127.0.0.1:")
        socket.create_connection(("127.0.0.1", board.port), timeout=5).close()
        others = machine.addresses_besides_loopback_one()
        assert others, "no address besides 127.0.0.1 to prove nothing listens there"
        for address in others:
            with pytest.raises(OSError):
                socket.create_connection((address, board.port), timeout=3).close()
        # TensorBoard serves what was written (its own HTTP API as the reader).
        served = _get_json(f"{board.url}data/plugin/scalars/scalars?run=train&tag=loss")
        assert [(s, v) for _, s, v in served] == list(zip(SCALAR_STEPS, SCALAR_VALUES["train"]))
        assert summaries.launch(run.dir) is board  # reused
        fresh = summaries.launch(run.dir, replace=True)
        assert fresh.pid != board.pid and machine.group_gone(board.pid)
        assert summaries.running() == [fresh]
    finally:
        stopped = summaries.stop()
    assert stopped == 1 and summaries.running() == []
    assert machine.gone(fresh.pid) and machine.group_gone(fresh.pid)  # the data server went with it


LAUNCHER = """
import sys, time
from dpkit import summaries
board = summaries.launch(sys.argv[1])
print(board.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(os.name != "posix", reason="checks processes through POSIX process groups")
def test_tensorboard_ends_when_its_parent_is_killed(known_run):
    run, _ = known_run
    env = procs.child_env()
    parent = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(run.dir)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        said = parent.stdout.readline()  # launch prints where it listens, then the pid
        pid = int(parent.stdout.readline())
        assert said.startswith("TensorBoard started at http://127.0.0.1:"), said
        assert f"(pid {pid})" in said, said
        assert not machine.gone(pid)
        parent.send_signal(signal.SIGKILL)  # no atexit, no finally: only the pipe closes
        parent.wait(timeout=60)
        assert machine.wait_gone(pid, 60, group=True), "TensorBoard outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if "pid" in locals() and not machine.group_gone(pid):
            os.killpg(pid, signal.SIGKILL)  # do not leave it behind when the test fails

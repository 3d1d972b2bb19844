"""dpkit.devices.Plan.calls for GPUs, in this process: the printed tf.config calls are the ones
setup makes, recorded by a stand-in for ``tf.config`` (this machine has no GPU to run them),
and each printed line is Python. The CPU recipe run: tests/process/test_devices_calls.py."""

import ast
from types import SimpleNamespace

import pytest

from dpkit import devices


class _Recorder:
    """Stands in for tf.config on a machine with GPUs and writes each call as Python."""

    def __init__(self, num_gpus):
        self.gpus = [SimpleNamespace(name=f"/physical_device:GPU:{i}") for i in range(num_gpus)]
        self.lines = []
        self.visible, self.splits = num_gpus, {}
        self.experimental = SimpleNamespace(set_memory_growth=self._growth)

    def _index(self, device):
        return self.gpus.index(device)

    def _growth(self, device, enable):
        self.lines.append(
            f"tf.config.experimental.set_memory_growth(gpus[{self._index(device)}], {enable})"
        )

    def list_physical_devices(self, kind):
        return self.gpus if kind == "GPU" else [SimpleNamespace(name="/physical_device:CPU:0")]

    def set_visible_devices(self, devs, kind):
        assert devs == self.gpus[: len(devs)], "setup shows a prefix of the GPUs"
        self.lines.append(f'tf.config.set_visible_devices(gpus[:{len(devs)}], "{kind}")')
        self.visible = len(devs)

    def set_logical_device_configuration(self, dev, configs):
        limits = {c.memory_limit for c in configs}
        assert len(limits) == 1, "every logical GPU gets the same limit"
        (limit,) = limits
        self.lines.append(
            f"tf.config.set_logical_device_configuration(gpus[{self._index(dev)}], "
            f"[tf.config.LogicalDeviceConfiguration(memory_limit={limit})] * {len(configs)})"
        )
        self.splits[self._index(dev)] = len(configs)

    def list_logical_devices(self, kind):
        # as TensorFlow numbers them: the visible GPUs in order, each split in its pieces
        count = sum(self.splits.get(i, 1) for i in range(self.visible))
        return (
            [SimpleNamespace(name=f"/device:GPU:{i}") for i in range(count)]
            if kind == "GPU"
            else []
        )

    LogicalDeviceConfiguration = staticmethod(
        lambda memory_limit=None: SimpleNamespace(memory_limit=memory_limit)
    )


@pytest.mark.parametrize("n, num_gpus", [(4, 1), (4, 2), (3, 2), (7, 3), (4, 4), (2, 8), (1, 1)])
def test_printed_gpu_calls_are_the_calls_setup_makes(monkeypatch, n, num_gpus):
    tf = pytest.importorskip("tensorflow")
    fake = _Recorder(num_gpus)
    monkeypatch.setattr(tf, "config", fake)
    monkeypatch.setattr(devices, "_current", None)
    devices.setup(n, gpu_memory_mb=512)
    printed = devices.plan(n, num_gpus, gpu_memory_mb=512).calls
    assert printed[0] == 'gpus = tf.config.list_physical_devices("GPU")'
    assert list(printed[1:]) == fake.lines


def test_setup_on_a_gpu_says_what_it_did(monkeypatch, capsys):
    """Colab's case: one GPU split in four; setup prints the split and the calls it made."""
    tf = pytest.importorskip("tensorflow")
    fake = _Recorder(1)
    monkeypatch.setattr(tf, "config", fake)
    monkeypatch.setattr(devices, "_current", None)
    devices.setup(4, gpu_memory_mb=512)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "devices.setup(4): GPU 0 split into 4 logical GPUs of 512 MB each: "
        "the compute underneath is 1 GPU, not 4. The calls it made:"
    )
    assert [line.strip() for line in out[2:]] == fake.lines  # after the listing line


@pytest.mark.parametrize("n, num_gpus", [(3, 0), (4, 1), (4, 8)])
def test_printed_calls_are_python(n, num_gpus):
    for line in devices.plan(n, num_gpus).calls:
        ast.parse(line)  # raises SyntaxError if a line is not valid Python


def test_split_gpu_gets_a_limit_and_no_memory_growth():
    # TensorFlow refuses memory growth on a GPU split into logical devices
    # ("Cannot set memory growth on device when virtual devices configured").
    split = devices.plan(4, 1, gpu_memory_mb=2048).calls
    assert not any("set_memory_growth" in line for line in split)
    assert "memory_limit=2048" in split[-1] and split[-1].endswith("* 4)")
    whole = devices.plan(3, 3).calls
    assert sum("set_memory_growth" in line for line in whole) == 3

"""dpkit.devices in this process: the case each machine gets, the GPU calls setup makes (a
stand-in for ``tf.config``), the spread over every GPU against the rule written another way,
and the errors for bad counts and memory. setup in a fresh TensorFlow:
tests/process/test_devices.py."""

from types import SimpleNamespace

import pytest

from dpkit import devices


@pytest.mark.parametrize(
    "n, gpus, case, device_type",
    [
        (4, 0, "logical_cpus", "CPU"),
        (1, 0, "logical_cpus", "CPU"),
        (4, 1, "logical_gpus", "GPU"),
        (4, 2, "logical_gpus", "GPU"),  # fewer GPUs than asked: split every GPU
        (4, 4, "physical_gpus", "GPU"),
        (2, 8, "physical_gpus", "GPU"),
    ],
)
def test_plan_picks_the_case_for_the_machine(n, gpus, case, device_type):
    p = devices.plan(n, gpus)
    assert (p.case, p.device_type, p.num_devices) == (case, device_type, n)
    assert (p.gpu_memory_mb is not None) == (case == "logical_gpus")


@pytest.mark.parametrize(
    "bad, words",
    [
        (0, "at least 1"),
        (-3, "at least 1"),
        (2.0, "whole number"),
        ("2", "whole number"),
        (True, "whole number"),
        (None, "whole number"),
        (devices.MAX_DEVICES + 1, "maximum"),
    ],
)
def test_bad_device_counts_are_named(bad, words):
    with pytest.raises(ValueError, match=words) as info:
        devices.setup(bad)
    assert "devices.setup(" in str(info.value) or "use 2 to 8" in str(info.value)


def test_bad_gpu_memory_is_named():
    with pytest.raises(ValueError, match="gpu_memory_mb must be a whole number >= 1"):
        devices.plan(2, 1, gpu_memory_mb=0)


class _FakeConfig:
    """Stands in for tf.config on a machine with GPUs (none here): records what setup asks."""

    def __init__(self, num_gpus):
        self.gpus = [SimpleNamespace(name=f"/physical_device:GPU:{i}") for i in range(num_gpus)]
        self.calls = []
        self.visible, self.splits = num_gpus, {}
        self.experimental = SimpleNamespace(
            set_memory_growth=lambda d, on: self.calls.append(("growth", d.name, on))
        )

    def list_physical_devices(self, kind):
        return self.gpus if kind == "GPU" else [SimpleNamespace(name="/physical_device:CPU:0")]

    def set_visible_devices(self, devs, kind):
        self.calls.append(("visible", [d.name for d in devs], kind))
        self.visible = len(devs)

    def set_logical_device_configuration(self, dev, configs):
        self.calls.append(("split", dev.name, [c.memory_limit for c in configs]))
        self.splits[dev.name] = len(configs)

    def list_logical_devices(self, kind):
        # as TensorFlow numbers them: the visible GPUs in order, each split in its pieces
        count = sum(self.splits.get(g.name, 1) for g in self.gpus[: self.visible])
        return (
            [SimpleNamespace(name=f"/device:GPU:{i}") for i in range(count)]
            if kind == "GPU"
            else []
        )

    LogicalDeviceConfiguration = staticmethod(
        lambda memory_limit=None: SimpleNamespace(memory_limit=memory_limit)
    )


@pytest.mark.parametrize("num_gpus", [1, 2, 4])
def test_gpu_cases_ask_tensorflow_for_the_right_devices(monkeypatch, num_gpus):
    tf = pytest.importorskip("tensorflow")
    fake = _FakeConfig(num_gpus)
    monkeypatch.setattr(tf, "config", fake)
    monkeypatch.setattr(devices, "_current", None)
    r = devices.setup(4, gpu_memory_mb=512)
    if num_gpus >= 4:
        assert r.case == "physical_gpus"
        assert ("visible", [g.name for g in fake.gpus[:4]], "GPU") in fake.calls
        assert not any(c[0] == "split" for c in fake.calls)
    else:  # every GPU is used, split as evenly as possible (written out by hand)
        assert r.case == "logical_gpus"
        names = [g.name for g in fake.gpus]
        assert ("visible", names, "GPU") in fake.calls
        pieces = {1: [4], 2: [2, 2]}[num_gpus]
        for name, k in zip(names, pieces):
            assert ("split", name, [512] * k) in fake.calls
        assert r.physical == tuple(names)
        assert r.physical_index == {1: (0, 0, 0, 0), 2: (0, 0, 1, 1)}[num_gpus]
    assert r.devices == tuple(f"/device:GPU:{i}" for i in range(4))


def test_describe_before_setup_says_what_to_do(monkeypatch):
    monkeypatch.setattr(devices, "_current", None)
    with pytest.raises(RuntimeError, match="call devices.setup"):
        devices.describe()


def _independent_spread(n, num_gpus):
    """The rule written another way: deal the n devices out like cards, one per GPU in turn
    (GPU 0 first), then sort, so each GPU's devices are numbered together."""
    if num_gpus == 0:
        return (0,) * n
    if num_gpus >= n:
        return tuple(range(n))
    dealt = [i % num_gpus for i in range(n)]
    return tuple(sorted(dealt))


@pytest.mark.parametrize("num_gpus", range(9))
@pytest.mark.parametrize("n", range(1, 9))
def test_physical_index_spreads_over_every_gpu_8x8(n, num_gpus):
    p = devices.plan(n, num_gpus)
    assert p.physical_index == _independent_spread(n, num_gpus)
    counts = [p.physical_index.count(i) for i in range(min(n, num_gpus) or 1)]
    assert sum(counts) == n and max(counts) - min(counts) <= 1  # as even as possible
    assert p.num_physical == (min(n, num_gpus) or 1)  # every GPU used (or the one CPU)
    if p.case == "logical_gpus":
        assert f"not {n}" in p.explanation and str(p.num_physical) in p.explanation
        assert ("waits for the busier" in p.explanation) == (n % num_gpus != 0)


def test_four_devices_on_two_gpus():
    assert devices.plan(4, 2).physical_index == (0, 0, 1, 1)
    assert devices.plan(3, 2).physical_index == (0, 0, 1)

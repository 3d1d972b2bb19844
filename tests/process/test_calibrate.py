"""dpkit.calibrate with two pinned worker processes: a real measurement gives a latency, a
bandwidth and times that grow with size, fitted as fit_alpha_beta fits the medians, and leaves
no child behind; a worker that fails is reported and reaped. The fit:
tests/unit/test_calibrate.py."""

import math

import pytest

from dpkit import calibrate, pinned, tasks
from dpkit.plumbing import procs
from tests.support import machine

ALPHA, BETA = 250e-6, 2.5e-9  # 250 us per step, 400 MB/s per link


def test_a_real_measurement_between_two_pinned_workers():
    if len(pinned.usable_cores()) < 2:
        pytest.skip("two pinned workers need 2 usable cores")
    lines = []
    sizes = [4096, 262144, 16 << 20]
    c = calibrate.measure(workers=2, sizes_bytes=sizes, repeats=2, echo=lines.append)
    assert procs.live("task") == []
    assert c.workers == 2 and c.sizes_bytes == sizes and c.pinned == pinned.can_pin()
    assert [len(s) for s in c.raw_seconds] == [2, 2, 2]
    assert all(min(s) <= m <= max(s) for s, m in zip(c.raw_seconds, c.seconds))
    assert c.alpha_s > 0 and 0 < c.bandwidth_bytes_per_s < math.inf
    assert c.seconds[-1] > c.seconds[0]  # 4096 times the bytes takes longer
    assert c.matmul_flops_per_s > 0
    assert c.cores == pinned.usable_cores()[:2]
    assert any(line.startswith("16.0 MB: ") for line in lines)
    # the fit is the one fit_alpha_beta gives on the medians
    assert (c.alpha_s, c.beta_s_per_byte) == calibrate.fit_alpha_beta(sizes, c.seconds, 2)


def test_a_worker_that_fails_is_reported_and_reaped(monkeypatch):
    if len(pinned.usable_cores()) < 2:
        pytest.skip("two pinned workers need 2 usable cores")
    started = []
    real_start = procs.Group.start

    def start(self, name, argv, **kwargs):
        if name == "worker 1":  # a core nobody has
            argv = [*argv, "--core", "9999"]
        started.append(real_start(self, name, argv, **kwargs))
        return started[-1]

    monkeypatch.setattr(procs.Group, "start", start)
    with pytest.raises(tasks.TaskFailedError, match="(?s)worker 1.*Invalid argument"):
        calibrate.measure(sizes_bytes=[4096, 8192], repeats=1, timeout=300)
    assert len(started) == 2 and all(machine.wait_gone(pid, 60) for pid in started)

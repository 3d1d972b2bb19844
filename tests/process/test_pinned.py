"""dpkit.pinned with real pinned worker processes, the contenders one at a time (each one's
processes gone before the next starts): every worker ends with the same weights, the same
(rel 1e-4) as one process on the whole batch; a worker that fails is reported and reaped.
The contenders at once, as lesson 05 runs them where the memory allows: its nbval-checked
cell (every pinned worker ends with the same sum of weights). Argument checks,
arithmetic and the schedule: tests/unit/test_pinned.py."""

import pytest

from dpkit import checking, pinned, tasks
from dpkit.plumbing import contract, procs
from tests.support import machine


def test_one_at_a_time_starts_each_contender_after_the_last_has_gone(monkeypatch):
    if len(pinned.usable_cores()) < 2:
        pytest.skip("pinned workers need at least 2 usable cores")
    started = []  # (task, pids of earlier tasks still running when it started)
    real_start = procs.Group.start

    def start(self, name, argv, **kwargs):
        running = [pid for _, pid in started if not machine.gone(pid)]
        pid = real_start(self, name, argv, **kwargs)
        started.append((name, pid))
        overlaps.append((name, running))
        return pid

    overlaps = []
    monkeypatch.setattr(procs.Group, "start", start)
    result = pinned.compare(
        model="lenet5", global_batch=32, workers=2, rounds=2, window_steps=2, at_once=False
    )
    names = pinned.contender_names(2)
    assert [task for task, _ in started] == [names[0], names[1], f"{names[2]} #0", f"{names[2]} #1"]
    # the baseline was gone when the threads started, both when the workers started; the
    # second worker starts beside the first, its partner in the collective
    assert [len(running) for _, running in overlaps] == [0, 0, 0, 1]
    assert not result.at_once and "one at a time" in result.table().splitlines()[0]
    assert list(result.seconds) == names
    assert all(len(s) == 2 and min(s) > 0 for s in result.seconds.values())
    # LeNet-5 has no dropout, so every process computes the same arithmetic: one process on
    # the whole batch (1 thread, then n threads) is the reference for the pinned workers
    one, threads = result.checksums[names[0]][0], result.checksums[names[1]][0]
    workers = result.checksums[names[2]]
    assert len(workers) == result.workers and len(set(workers)) == 1
    assert workers[0] == pytest.approx(one, rel=1e-4) and threads == pytest.approx(one, rel=1e-4)
    # and weight by weight: each worker's model is the one process's, to float rounding
    reference = result.weights[names[0]][0]
    assert len(reference) == 8  # LeNet-5: four layers' kernels and biases
    for held in [*result.weights[names[2]], result.weights[names[1]][0]]:
        assert checking.agree(held, reference, ulps=1024), checking.agree(held, reference)
    # the bar is tight enough to see a 0.1% change of every weight
    assert not checking.agree(held, [w * 0.999 for w in reference], ulps=1024)
    assert result.pinned == pinned.can_pin()


def test_a_worker_that_fails_is_reported_and_reaped(monkeypatch):
    if len(pinned.usable_cores()) < 2:
        pytest.skip("pinned workers need at least 2 usable cores")
    started = []
    real_start = procs.Group.start

    def start(self, name, argv, **kwargs):
        if "pinned workers #1" in name:  # a core nobody has
            argv = procs.program_argv(contract.Program.PINNED, "--core", "9999")
        started.append(real_start(self, name, argv, **kwargs))
        return started[-1]

    monkeypatch.setattr(procs.Group, "start", start)
    with pytest.raises(tasks.TaskFailedError, match="pinned workers #1"):
        pinned.compare(model="mnist_mlp", global_batch=64, rounds=1, window_steps=1, timeout=300)
    assert all(machine.wait_gone(pid, 60) for pid in started)

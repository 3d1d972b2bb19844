"""dpkit.pinned with real pinned worker processes: every worker ends with the same weights, the
same (rel 1e-4) as one process on the whole batch; a worker that fails is reported and
reaped. Argument checks and arithmetic: tests/unit/test_pinned.py."""

import pytest

from dpkit import pinned, tasks
from dpkit.plumbing import contract, procs
from tests.support import machine


def test_pinned_workers_train_the_same_model_as_one_process():
    if len(pinned.usable_cores()) < 2:
        pytest.skip("pinned workers need at least 2 usable cores")
    # LeNet-5 has no dropout, so every process computes the same arithmetic
    result = pinned.compare(model="lenet5", global_batch=32, rounds=2, window_steps=2)
    names = pinned.contender_names(result.workers)
    assert list(result.seconds) == names
    assert all(len(s) == 2 and min(s) > 0 for s in result.seconds.values())
    workers = result.checksums[names[2]]
    assert len(workers) == result.workers and len(set(workers)) == 1
    # one process on the whole batch (1 thread, then n threads) is the reference
    one, threads = result.checksums[names[0]][0], result.checksums[names[1]][0]
    assert workers[0] == pytest.approx(one, rel=1e-4) and threads == pytest.approx(one, rel=1e-4)
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

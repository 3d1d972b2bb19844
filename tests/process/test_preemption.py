"""dpkit.preemption.run_job with real worker processes: one of two MultiWorkerMirroredStrategy
workers gets SIGTERM; PreemptionCheckpointHandler saves and both exit with TensorFlow's code 42;
the job started again on the same folder restores and finishes. Every step is taken once, and
the weights and losses are those of one device on the whole batch in plain TensorFlow."""

from __future__ import annotations

import numpy as np

from dpkit import checking, preemption
from dpkit.plumbing import contract, procs
from tests.support import softmax_reference

STEPS, SIGTERM_AFTER, BATCH, LR = 8, 3, 32, 0.1


def test_a_preempted_job_saves_exits_and_finishes_every_step_once(tmp_path):
    folder = str(tmp_path / "job")
    first = preemption.run_job(
        folder, steps=STEPS, global_batch=BATCH, learning_rate=LR,
        sigterm_after=SIGTERM_AFTER, wait_for_exit=True, timeout=180, echo=None,
    )  # fmt: skip
    assert first.exit_codes == {"worker:0": contract.Exit.PREEMPTED, "worker:1": 42}
    assert first.exit_fn_codes == [42, 42]
    # the handler takes one more step after the signal, then saves (both workers agree)
    assert first.preempted == [SIGTERM_AFTER + 1] * 2
    assert first.steps == [list(range(SIGTERM_AFTER + 1))] * 2
    assert not first.finished
    second = preemption.run_job(  # stopped once both saved their weights: no shutdown wait
        folder, steps=STEPS, global_batch=BATCH, learning_rate=LR, timeout=180, echo=None
    )
    assert second.finished
    assert second.restored == [SIGTERM_AFTER + 1] * 2
    for i in range(2):
        assert first.steps[i] + second.steps[i] == list(range(STEPS))  # each step once
    assert procs.live() == []

    # the independent reference: one device, the whole global batch, no interruption
    w, b, losses = softmax_reference.one_device_sgd(BATCH, STEPS, LR)
    for i in range(2):
        check = checking.agree(second.weights(i), [w, b], what=f"worker {i}'s final weights")
        assert check, check
        recorded = first.losses[i] + second.losses[i]
        check = checking.agree(np.array(recorded), np.array(losses), what=f"worker {i}'s losses")
        assert check, check

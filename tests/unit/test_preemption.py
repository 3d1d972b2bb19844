"""dpkit.preemption in this process: BackupAndRestore after a crash against an uninterrupted
fit, with the steps each run took counted by hand; the argument checks of run_job (before any
process starts) and how it reads the workers' records. The two-worker SIGTERM run:
tests/process/test_preemption.py."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit import checking, preemption
from dpkit.plumbing import contract

BATCH, STEPS_PER_EPOCH, EPOCHS = 8, 4, 3


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH * STEPS_PER_EPOCH, 5)).astype("float32")
    return x, rng.integers(0, 3, size=len(x)).astype("int32")


def _maker():
    import keras

    keras.utils.set_random_seed(0)
    first = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3)])
    start = [w.copy() for w in first.get_weights()]

    def make():
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3)])
        model.set_weights(start)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(keras.optimizers.Adam(0.05), loss)
        return model

    return make


def _uninterrupted(make, x, y):
    model = make()
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    return model


@pytest.mark.parametrize("crash_after", [6, 4])  # mid-epoch 1; the end of epoch 0
def test_resumed_at_its_epoch_equals_the_uninterrupted_fit(tmp_path, crash_after):
    make, (x, y) = _maker(), _data()
    reference = _uninterrupted(make, x, y)
    resumed = preemption.fit_crashed_and_resumed(
        make, x, y, backup_dir=str(tmp_path / "backup"), crash_after=crash_after,
        batch_size=BATCH, epochs=EPOCHS,
    )  # fmt: skip
    every = [(e, b) for e in range(EPOCHS) for b in range(STEPS_PER_EPOCH)]
    assert resumed.before == every[:crash_after]
    # by hand: it starts again at batch 0 of the epoch it crashed in, even after that epoch's
    # last step (crash_after=4): the backup is written at the epoch's end, which never came
    crashed_epoch = every[crash_after - 1][0]
    assert resumed.after == [s for s in every if s[0] >= crashed_epoch]
    assert resumed.iterations == EPOCHS * STEPS_PER_EPOCH == int(reference.optimizer.iterations)
    check = checking.agree(resumed.model.get_weights(), reference.get_weights())
    assert check, check
    assert not (tmp_path / "backup").exists()  # deleted at the end of the finished fit


def test_saving_every_step_takes_the_crashed_epochs_steps_twice(tmp_path):
    make, (x, y) = _maker(), _data()
    reference = _uninterrupted(make, x, y)
    crash_after = STEPS_PER_EPOCH + 2  # two steps into epoch 1
    resumed = preemption.fit_crashed_and_resumed(
        make, x, y, backup_dir=str(tmp_path / "backup"), crash_after=crash_after,
        save_freq=1, batch_size=BATCH, epochs=EPOCHS,
    )  # fmt: skip
    assert resumed.taken_twice() == [(1, 0), (1, 1)]  # by hand: the epoch's first two
    assert resumed.iterations == EPOCHS * STEPS_PER_EPOCH + 2
    check = checking.agree(resumed.model.get_weights(), reference.get_weights())
    assert not check, check  # two extra Adam steps of 0.05 move the weights


def test_a_fit_that_never_crashes_and_a_used_folder_are_refused(tmp_path):
    make, (x, y) = _maker(), _data()
    with pytest.raises(ValueError, match="crash it earlier"):
        preemption.fit_crashed_and_resumed(
            make, x, y, backup_dir=str(tmp_path / "a"), crash_after=99, batch_size=BATCH, epochs=1
        )
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "latest.weights.h5").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        preemption.fit_crashed_and_resumed(
            make, x, y, backup_dir=str(tmp_path / "b"), crash_after=2
        )
    with pytest.raises(ValueError, match="steps must be"):
        preemption.CrashAfter(0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": 1}, "steps must be"),
        ({"steps": 6, "sigterm_after": 5}, "sigterm_after must be a whole number from 1 to 4"),
        ({"sigterm_after": 0}, "sigterm_after must be"),
        ({"victim": 2}, "victim must be"),
    ],
)
def test_run_job_refuses_bad_arguments_before_starting_anything(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        preemption.run_job(str(tmp_path), **kwargs)
    assert not any(tmp_path.iterdir())


def test_a_job_is_read_from_the_workers_records():
    def worker(i, final):
        steps = [contract.MirroredStep(step=s, loss=1.0 / (s + 1), seconds=0.0) for s in (3, 4)]
        return [contract.Restored(restored=3, worker=i), *steps, final]

    records = {
        "worker:0": [r.to_record() for r in worker(0, contract.Preempted(preempted=5, code=42))],
        "worker:1": [r.to_record() for r in worker(1, contract.Saved(done=5, out="w1.npz"))],
    }
    records["worker:1"].insert(1, {"paused": 4})
    job = preemption._job(records, ["worker:0", "worker:1"], None)
    assert job.restored == [3, 3]
    assert job.steps == [[3, 4], [3, 4]]
    assert job.losses[0] == [0.25, 0.2]
    assert job.preempted == [5, None] and job.exit_fn_codes == [42, None]
    assert job.out == [None, "w1.npz"] and not job.finished

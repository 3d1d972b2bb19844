"""Training that survives being stopped (lesson 10): ``BackupAndRestore`` for ``fit``, and
``PreemptionCheckpointHandler`` across two worker processes.

* :func:`fit_crashed_and_resumed` runs ``Model.fit`` with Keras's ``BackupAndRestore``, stops it
  with :class:`CrashAfter` (an exception after a number of steps, as a crash would), and runs
  ``fit`` again on a fresh model with the same backup folder. :class:`StepLog` writes down
  which ``(epoch, batch)`` each run took. In Keras 3.15, ``BackupAndRestore`` restores the
  weights and the optimizer's variables (``model.load_weights`` of ``latest.weights.h5``) and
  the *epoch* (``_load_model`` sets ``model._initial_epoch`` from ``training_metadata.json``;
  the ``"batch"`` it also writes is never read): the resumed run starts at the first batch of
  the epoch it stopped in.
* :func:`run_job` starts two ``MultiWorkerMirroredStrategy`` workers (the ``preempt`` program,
  :mod:`dpkit.programs.preemption`) that train under
  ``tf.distribute.experimental.PreemptionCheckpointHandler``; given ``sigterm_after``, it sends
  one of them SIGTERM once both have taken that many steps. Run it again on the same folder
  and the workers restore the handler's checkpoint and finish. :class:`Job` holds what the
  workers reported.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal

import keras
import numpy as np

from dpkit import softmax
from dpkit.plumbing import checks, contract, procs

# ----------------------------------------------------------------------------- fit


class Crash(RuntimeError):
    """What :class:`CrashAfter` raises: the training process 'died' here."""


def CrashAfter(steps: int):  # noqa: N802 -- makes a callback of a class of its own
    """A Keras callback that raises :class:`Crash` at the end of the ``steps``-th training
    step of the ``fit`` it is given to (counted over every epoch)."""
    steps = checks.whole(steps, "steps", 1, "e.g. 6: crash after six steps")

    class _CrashAfter(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.taken = 0

        def on_train_batch_end(self, batch, logs=None):
            self.taken += 1
            if self.taken == steps:
                raise Crash(f"stopped after {steps} steps, as a crash would")

    return _CrashAfter()


def StepLog():  # noqa: N802 -- makes a callback of a class of its own
    """A Keras callback whose ``taken`` lists the ``(epoch, batch)`` of every step ``fit``
    took, in order."""

    class _StepLog(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.taken, self._epoch = [], None

        def on_epoch_begin(self, epoch, logs=None):
            self._epoch = epoch

        def on_train_batch_end(self, batch, logs=None):
            self.taken.append((self._epoch, batch))

    return _StepLog()


@dataclasses.dataclass
class Resumed:
    """Two ``fit`` runs on one backup folder: the first crashed, the second resumed."""

    before: list  # (epoch, batch) of each step the crashed run took
    after: list  # (epoch, batch) of each step the resumed run took
    iterations: int  # the resumed model's optimizer.iterations at the end
    model: object  # the resumed model
    history: object  # the resumed fit's History

    def taken_twice(self) -> list:
        """The ``(epoch, batch)`` steps both runs took."""
        return [s for s in self.after if s in set(self.before)]


def fit_crashed_and_resumed(
    make_model, x, y, *, backup_dir: str, crash_after: int, save_freq="epoch", **fit_args
) -> Resumed:
    """``fit`` a model from ``make_model()`` (compiled, built) on ``(x, y)`` with
    ``BackupAndRestore(backup_dir, save_freq)``, crash it after ``crash_after`` steps, then
    ``fit`` a second model from ``make_model()`` (a restarted process) with a new callback on
    the same folder. ``fit_args`` (``epochs``, ``batch_size``, ...) go to both ``fit`` calls,
    with ``shuffle=False`` and ``verbose=0`` unless given."""
    if os.path.exists(backup_dir) and os.listdir(backup_dir):
        raise ValueError(
            f"backup_dir {backup_dir!r} is not empty: BackupAndRestore would restore what it "
            "holds. Give a new or empty folder."
        )
    fit_args = {"shuffle": False, "verbose": 0, **fit_args}
    before, after = StepLog(), StepLog()
    crashed = make_model()
    backup = keras.callbacks.BackupAndRestore(backup_dir, save_freq=save_freq)
    try:
        crashed.fit(x, y, callbacks=[backup, before, CrashAfter(crash_after)], **fit_args)
    except Crash:
        pass
    else:
        raise ValueError(
            f"fit ended before crash_after={crash_after} steps; crash it earlier (at most "
            f"the {len(before.taken)} steps fit takes)."
        )
    model = make_model()
    backup = keras.callbacks.BackupAndRestore(backup_dir, save_freq=save_freq)
    history = model.fit(x, y, callbacks=[backup, after], **fit_args)
    return Resumed(before.taken, after.taken, int(model.optimizer.iterations), model, history)


# ----------------------------------------------------------------------------- two workers


@dataclasses.dataclass
class Job:
    """What the workers of one :func:`run_job` reported, by worker index."""

    restored: list  # the step counter each worker restored (0: nothing to restore)
    steps: list  # per worker, the step counter before each step it took, in order
    losses: list  # per worker, the loss of the whole global batch at each of those steps
    preempted: list  # per worker, the step counter at which the handler saved (None: did not)
    exit_fn_codes: list  # per worker, the code the handler's exit_fn exited with (None)
    exit_codes: dict | None  # {task: process exit code}, when run_job waited for the exits
    out: list  # per worker, the .npz of its final weights (None: it did not finish)

    @property
    def finished(self) -> bool:
        return all(o is not None for o in self.out)

    def weights(self, worker: int = 0):
        """``(w, b)`` that ``worker`` saved at the end."""
        saved = np.load(self.out[worker])
        return saved["w"], saved["b"]


def run_job(
    directory: str,
    *,
    steps: int = 12,
    global_batch: int = 32,
    learning_rate: float = 0.1,
    seed: int = 0,
    sigterm_after: int | None = None,
    victim: int = 1,
    wait_for_exit: bool = False,
    timeout: float = 120.0,
    echo=print,
) -> Job:
    """Run two ``preempt`` workers on ``directory`` (its ``checkpoint`` folder: the handler's;
    ``batches.npz``: the global batches of :func:`dpkit.softmax.digits_batches`; ``w0.npz`` and
    ``w1.npz``: the final weights) until they exit; return their :class:`Job`.

    They restore the handler's latest checkpoint in ``directory`` if there is one, and train
    lesson 07's softmax regression until their step counter reaches ``steps``. Given
    ``sigterm_after``, both workers wait when their step counter reaches it, worker
    ``victim`` gets SIGTERM, and then they go on: the handler saves and exits. The parent then
    stops them once both reported (TensorFlow's shutdown takes seconds); ``wait_for_exit``
    waits for them to exit by themselves instead and keeps their exit codes.
    """
    steps = checks.whole(steps, "steps", 2, "e.g. 12")
    if sigterm_after is not None:
        sigterm_after = checks.whole(
            sigterm_after, "sigterm_after", 1, f"fewer than steps={steps}", maximum=steps - 2
        )  # the handler takes one more step before it saves: one must be left after that
    victim = checks.whole(victim, "victim", 0, "0 or 1", maximum=1)
    os.makedirs(directory, exist_ok=True)
    workers = 2
    hosts = [f"127.0.0.1:{procs.free_port()}" for _ in range(workers)]
    # nothing listens on this port: TensorFlow's on_gcp() gets "connection refused" at once
    # and the handler works as off Google Cloud (see dpkit/programs/preemption.py)
    not_gcp = {"GCE_METADATA_IP": f"127.0.0.1:{procs.free_port()}"}
    names = [f"worker:{i}" for i in range(workers)]
    x, y = softmax.digits_batches(global_batch, steps, seed)  # the same batches every run
    data = os.path.join(directory, "batches.npz")
    np.savez(data, x=x, y=y)
    arguments = ["--checkpoint_dir", os.path.join(directory, "checkpoint"), "--data", data]
    arguments += ["--steps", steps]
    arguments += ["--global_batch", global_batch, "--lr", learning_rate, "--seed", seed]
    if sigterm_after is not None:
        arguments += ["--pause_at", sigterm_after]
    final = contract.Preempted if sigterm_after is not None else contract.Saved
    exit_codes = None
    with procs.Group(timeout=timeout, echo=echo) as group:
        for i, name in enumerate(names):
            spec = {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}}
            out = ["--out", os.path.join(directory, f"w{i}.npz")]
            argv = procs.program_argv(contract.Program.PREEMPT, *arguments, *out)
            group.start(name, argv, env={"TF_CONFIG": json.dumps(spec), **not_gcp})
        if sigterm_after is not None:
            for name in names:  # both have taken sigterm_after steps and wait
                group.wait_for(name, contract.Paused)
            os.kill(group.pids[names[victim]], signal.SIGTERM)
            for name in names:
                group.send(name, contract.Command.RUN.line())
        for name in names:
            group.wait_for(name, final)
        if wait_for_exit:
            exit_codes = group.wait(codes=(contract.Exit.OK, contract.Exit.PREEMPTED))
    return _job(group.records, names, exit_codes)


def _job(records: dict, names: list, exit_codes) -> Job:
    job = Job([], [], [], [], [], exit_codes, [])
    for name in names:
        mine = records[name]
        taken = [contract.MirroredStep.from_record(r) for r in mine if "step" in r]
        job.restored.append(_last(mine, contract.Restored, "restored"))
        job.steps.append([t.step for t in taken])
        job.losses.append([t.loss for t in taken])
        job.preempted.append(_last(mine, contract.Preempted, "preempted"))
        job.exit_fn_codes.append(_last(mine, contract.Preempted, "code"))
        job.out.append(_last(mine, contract.Saved, "out"))
    return job


def _last(records: list, kind, field):
    found = [kind.from_record(r) for r in records if kind.key() in r]
    return getattr(found[-1], field) if found else None

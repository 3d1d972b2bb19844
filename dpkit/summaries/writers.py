"""Run folders and summary writers (introduced in lesson 06): :func:`open_run`, then
:func:`variable_summaries` (the book chapter's helper, in TF2) and :func:`tower_scalars`.
"""

from __future__ import annotations

import datetime
import glob
import os
import re
import weakref
from pathlib import Path

from dpkit.plumbing import contract

#: Event files are named ``events.out.tfevents.<time>.<host>...``.
EVENT_FILE_PATTERN = "*tfevents*"

_NAME_OK = re.compile(r"[A-Za-z0-9_.\-]+")


def runs_root() -> Path:
    """Where run folders go: ``$DPKIT_RUNS``, else ``runs/`` in the checkout, else ``./runs``.

    The checkout's ``runs/`` is git-ignored; using it from any working directory (a lesson
    runs in ``lessons/``, the tests at the top) keeps every run in one place.
    """
    if os.environ.get(contract.RUNS):
        return Path(os.environ[contract.RUNS])
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "lessons").is_dir():
        return checkout / "runs"
    return Path.cwd() / "runs"


def event_files(path) -> list[Path]:
    """Every TensorBoard event file under ``path`` (at any depth), sorted."""
    pattern = str(Path(path) / "**" / EVENT_FILE_PATTERN)
    return sorted(Path(p) for p in glob.glob(pattern, recursive=True))


def _check_name(value, what: str, example: str) -> str:
    if not isinstance(value, str) or not _NAME_OK.fullmatch(value) or value in (".", ".."):
        raise ValueError(
            f"{what} must be a folder name of letters, digits, '_', '-' or '.', got {value!r}; "
            f"e.g. {example!r}."
        )
    return value


_OPEN_RUNS: weakref.WeakSet = weakref.WeakSet()


class Run:
    """One run's folder and its summary writers (made by :func:`open_run`)."""

    def __init__(self, path: Path, writer_names):
        self.dir = Path(path)  # pass it to summaries.read or summaries.launch
        self._writers: dict = {}
        for name in writer_names:
            self.writer(name)
        _OPEN_RUNS.add(self)

    def writer(self, name: str):
        """The summary writer for sub-folder ``name`` (made on first use).

        TensorBoard shows every sub-folder as a run of its own; the same tag written by
        two writers becomes two curves in one chart.
        """
        import tensorflow as tf  # here: `dpkit bench` imports summaries without TF

        name = _check_name(name, "a writer name", "train")
        if name not in self._writers:
            self._writers[name] = tf.summary.create_file_writer(str(self.dir / name))
        return self._writers[name]

    @property
    def train(self):
        """The writer of the ``train`` sub-folder."""
        return self.writer("train")

    @property
    def test(self):
        """The writer of the ``test`` sub-folder."""
        return self.writer("test")

    def flush(self) -> None:
        """Write what the writers hold back (up to 10 records or 2 minutes each) to disk."""
        for w in self._writers.values():
            w.flush()

    def close(self) -> None:
        """Flush and close every writer."""
        for w in self._writers.values():
            w.close()
        self._writers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"Run({str(self.dir)!r}, writers={sorted(self._writers)})"


def flush_open_runs() -> None:
    """Flush every :class:`Run` still open in this process (reading logs does this first)."""
    for run in list(_OPEN_RUNS):
        run.flush()


def open_run(experiment: str, name: str | None = None, *, root=None, writers=("train", "test")):
    """Make a fresh folder ``root/experiment/name`` with one summary writer per sub-folder
    of ``writers`` (more with ``run.writer(name)``); return its :class:`Run`.

    ``experiment`` groups runs (a lesson's name); ``name`` defaults to the date and time, so
    every run gets its own (a named folder that already holds event files is refused: two
    runs in one folder mix their curves); ``root`` defaults to :func:`runs_root`.
    """
    experiment = _check_name(experiment, "experiment", "06_tensorboard")
    base = Path(root) if root is not None else runs_root()
    if name is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path, k = base / experiment / stamp, 1
        while path.exists():
            k += 1
            path = base / experiment / f"{stamp}-{k}"
    else:
        path = base / experiment / _check_name(name, "name", "baseline")
        if event_files(path):
            raise ValueError(
                f"{path} already holds event files from an earlier run; TensorBoard would mix "
                "the two. Pick another name, or name=None for a new dated folder."
            )
    path.mkdir(parents=True, exist_ok=True)
    return Run(path, writers)


def _require_writer(what: str) -> None:
    import tensorflow as tf  # here: `dpkit bench` imports summaries without TF

    if tf.executing_eagerly() and not bool(tf.summary.should_record_summaries()):
        raise RuntimeError(
            f"{what}: no default summary writer, so nothing would be written; call it inside "
            "`with run.train.as_default():` (or another writer), and check that "
            "tf.summary.record_if does not switch recording off."
        )


def _scope_name(var, name) -> str:
    if name is None:
        name = getattr(var, "path", None) or getattr(var, "name", None)
        if isinstance(name, str):
            name = name.split(":")[0]  # TF1-style names end in ':0'
    if not isinstance(name, str) or not name.strip("/"):
        raise ValueError(
            "variable_summaries needs a name for this tensor (it has none); pass name='...'."
        )
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", name).strip("/")


def variable_summaries(var, *, name: str | None = None, step=None, buckets: int | None = None):
    """Write a tensor's mean, stddev, min, max (scalars) and histogram under one name scope.

    The tags are ``<name>/mean``, ``<name>/stddev``, ``<name>/min``, ``<name>/max`` and
    ``<name>/histogram``, whatever name scope the call sits in, and also inside a
    ``tf.function`` (the scope is absolute, so it is not renamed ``<name>_1``). ``name``
    defaults to the variable's path (``"lenet5/conv1/kernel"`` in Keras), ``step`` to
    ``tf.summary.experimental.get_step()``; ``buckets`` are the histogram's (TensorBoard's
    default is 30). Returns the four statistics as a dict of tensors.
    """
    import tensorflow as tf  # here: `dpkit bench` imports summaries without TF

    _require_writer("variable_summaries")
    scope = _scope_name(var, name)
    values = tf.cast(tf.convert_to_tensor(var), tf.float32)
    with tf.name_scope(scope + "/"):  # a trailing '/' makes the scope absolute
        mean = tf.reduce_mean(values)
        stats = {
            "mean": mean,
            "stddev": tf.sqrt(tf.reduce_mean(tf.square(values - mean))),
            "max": tf.reduce_max(values),
            "min": tf.reduce_min(values),
        }
        for key, value in stats.items():
            tf.summary.scalar(key, value, step=step)
        tf.summary.histogram("histogram", values, step=step, buckets=buckets)
    return stats


def tower_scalars(tower_losses, loss=None, *, step=None, name: str = "loss"):
    """Write each tower's loss as ``tower_<i>/<name>`` and the average as ``<name>``; return
    the average. ``loss`` is the average the optimizer followed (weighted by shard size when
    the shards differ); by default the plain mean of ``tower_losses``.
    """
    import tensorflow as tf  # here: `dpkit bench` imports summaries without TF

    _require_writer("tower_scalars")
    losses = tf.unstack(tf.reshape(tf.cast(tower_losses, tf.float32), [-1]))
    if not losses:
        raise ValueError("tower_scalars needs one loss per tower, got none.")
    for i, tower_loss in enumerate(losses):
        tf.summary.scalar(f"tower_{i}/{name}", tower_loss, step=step)
    mean = tf.add_n(losses) / len(losses) if loss is None else tf.cast(loss, tf.float32)
    tf.summary.scalar(name, mean, step=step)
    return mean


def make_logged_tower_step(model, optimizer, devices, **options):
    """Lesson 02's ``towers.make_tower_train_step`` (the same arguments) whose step also
    returns each tower's loss: ``step(x, y) -> (loss, tower_losses)``, the average loss and a
    vector of one loss per tower."""
    from dpkit import towers

    return towers.make_tower_train_step(
        model, optimizer, devices, return_tower_losses=True, **options
    )

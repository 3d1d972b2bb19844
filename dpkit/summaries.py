"""TensorBoard from a notebook: writers, summaries, traces, reading logs back, launching it.

Introduced in lesson 06. The pieces, in the order the lesson uses them:

* :func:`open_run` makes a fresh folder for one run (under ``runs/``, which git ignores)
  with a ``train`` and a ``test`` summary writer: TensorBoard shows each sub-folder as a
  *run*, so the two loss curves share one chart.
* :func:`variable_summaries` writes a tensor's mean, standard deviation, min, max and
  histogram under one name scope (the book chapter's helper, in TF2).
* :func:`make_logged_tower_step` is the tower step of ``dpkit.towers`` that also returns
  each tower's loss; :func:`tower_scalars` writes them next to the average.
* :func:`trace_graph` exports the graph of a ``tf.function`` call, as placed on the
  devices; :func:`placement` lists which device runs each op.
  :func:`profile_steps` records a profiler trace; :func:`read_profile` reads it back.
* :func:`read` loads event files into plain Python structures (TensorBoard's own reader),
  so a notebook can plot them with matplotlib.
* :func:`launch` starts TensorBoard as a child process bound to 127.0.0.1, shows it inline,
  reuses or replaces an instance for the same folder; :func:`stop` ends it. The child is
  also ended when the Python process exits, however it exits. Where the browser is not on
  the kernel's machine (Colab, Binder, a JupyterHub) the frame goes through a proxy;
  :func:`display_route` says which (``$TENSORBOARD_PROXY_URL`` chooses one by hand).

Nothing happens on import: TensorFlow and TensorBoard are imported when first needed.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import glob
import html
import importlib.util
import io
import json
import numbers
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Set this environment variable to keep runs somewhere else than ``<checkout>/runs``.
RUNS_ENV = "DPKIT_RUNS"

#: Event files are named ``events.out.tfevents.<time>.<host>...``.
EVENT_FILE_PATTERN = "*tfevents*"

#: The address TensorBoard listens on: this machine only.
HOST = "127.0.0.1"

#: TensorBoard's address as the browser reaches it, ``%PORT%`` standing for its port, e.g.
#: ``/base/proxy/%PORT%/`` behind jupyter-server-proxy (TensorBoard's ``%tensorboard`` reads
#: the same variable).
PROXY_ENV = "TENSORBOARD_PROXY_URL"

#: Set by JupyterHub (and so Binder) in the server's and the kernels' environment.
HUB_PREFIX_ENV = "JUPYTERHUB_SERVICE_PREFIX"

_NAME_OK = re.compile(r"[A-Za-z0-9_.\-]+")


# --- Run folders and writers ---------------------------------------------------------------


def runs_root() -> Path:
    """Where run folders go: ``$DPKIT_RUNS``, else ``runs/`` in the checkout, else ``./runs``.

    The checkout's ``runs/`` is listed in ``.gitignore``, and using it whatever the
    working directory (a lesson runs in ``lessons/``, the tests at the top) keeps every
    run in one place.
    """
    if os.environ.get(RUNS_ENV):
        return Path(os.environ[RUNS_ENV])
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "lessons").is_dir():
        return checkout / "runs"
    return Path.cwd() / "runs"


def _check_name(value, what: str, example: str) -> str:
    if not isinstance(value, str) or not _NAME_OK.fullmatch(value) or value in (".", ".."):
        raise ValueError(
            f"{what} must be a folder name of letters, digits, '_', '-' or '.', got {value!r}; "
            f"e.g. {example!r}."
        )
    return value


_OPEN_RUNS: weakref.WeakSet = weakref.WeakSet()


class Run:
    """One run's folder and its summary writers (made by :func:`open_run`).

    Attributes:
        dir: the run folder; pass it to :func:`read` or :func:`launch`.
    """

    def __init__(self, path: Path, writer_names):
        self.dir = Path(path)
        self._writers: dict = {}
        for name in writer_names:
            self.writer(name)
        _OPEN_RUNS.add(self)

    def writer(self, name: str):
        """The summary writer for sub-folder ``name`` (made on first use).

        TensorBoard shows every sub-folder as a run of its own; the same tag written by
        two writers becomes two curves in one chart.

        Raises:
            ValueError: ``name`` is not a plain folder name.
        """
        import tensorflow as tf

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


def open_run(experiment: str, name: str | None = None, *, root=None, writers=("train", "test")):
    """Make a fresh folder ``root/experiment/name`` with one summary writer per sub-folder.

    Args:
        experiment: groups runs, e.g. ``"06_tensorboard"`` (a lesson's name).
        name: the run's folder; default: the date and time, so every run gets its own.
        root: parent of all runs; default :func:`runs_root`.
        writers: sub-folders that get a writer now (more with ``run.writer(name)``).

    Returns:
        A :class:`Run`.

    Raises:
        ValueError: a bad name, or a named folder that already holds event files (writing
            two runs into one folder mixes their curves).
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
        if _event_files(path):
            raise ValueError(
                f"{path} already holds event files from an earlier run; TensorBoard would mix "
                "the two. Pick another name, or name=None for a new dated folder."
            )
    path.mkdir(parents=True, exist_ok=True)
    return Run(path, writers)


def _event_files(path: Path) -> list[Path]:
    return sorted(
        Path(p) for p in glob.glob(str(Path(path) / "**" / EVENT_FILE_PATTERN), recursive=True)
    )


# --- Summaries -----------------------------------------------------------------------------


def _require_writer(what: str) -> None:
    import tensorflow as tf

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
    ``tf.function`` (the scope is absolute, so it is not renamed ``<name>_1``).

    Args:
        var: a variable or tensor (e.g. ``layer.kernel`` or a layer's activations).
        name: the scope; default the variable's path (``"lenet5/conv1/kernel"`` in Keras).
        step: the step; default ``tf.summary.experimental.get_step()``.
        buckets: histogram buckets (TensorBoard's default is 30).

    Returns:
        A dict of the four statistics as tensors.

    Raises:
        ValueError: no name could be found.
        RuntimeError: called eagerly without a default writer.
    """
    import tensorflow as tf

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
    """Write each tower's loss as ``tower_<i>/<name>`` and the average as ``<name>``.

    Args:
        tower_losses: one loss per tower (a list or a 1-D tensor).
        loss: the average the optimizer followed (weighted by shard size when the shards
            differ); default: the plain mean of ``tower_losses``.
        step: the step; default ``tf.summary.experimental.get_step()``.
        name: the tag of the average.

    Returns:
        The average as a tensor.

    Raises:
        ValueError: no tower losses.
        RuntimeError: called eagerly without a default writer.
    """
    import tensorflow as tf

    _require_writer("tower_scalars")
    losses = tf.unstack(tf.reshape(tf.cast(tower_losses, tf.float32), [-1]))
    if not losses:
        raise ValueError("tower_scalars needs one loss per tower, got none.")
    for i, tower_loss in enumerate(losses):
        tf.summary.scalar(f"tower_{i}/{name}", tower_loss, step=step)
    mean = tf.add_n(losses) / len(losses) if loss is None else tf.cast(loss, tf.float32)
    tf.summary.scalar(name, mean, step=step)
    return mean


def make_logged_tower_step(
    model, optimizer, devices, *, where_variables: str = "cpu", loss_fn=None, weighted=False
):
    """``towers.make_tower_train_step`` that also returns each tower's loss, for logging.

    One tower per device (``towers.tower_gradients``), the gradients averaged on the
    variables' device under the name scope ``average`` (``gradients.average_gradients``)
    and applied once; batch-norm statistics are averaged too.

    Args:
        model: a built Keras model, its variables on the device ``where_variables`` names
            (build it inside ``towers.variables_on``).
        optimizer: a Keras optimizer.
        devices: one device name per tower.
        where_variables: ``"cpu"`` or ``"device0"``.
        loss_fn: ``loss_fn(labels, logits)``; default sparse cross-entropy from logits.
        weighted: allow batches that do not divide evenly (shards weighted by size).

    Returns:
        ``step(x, y) -> (loss, tower_losses)``: the average loss and a vector of one loss
        per tower.

    Raises:
        ValueError: bad devices or ``where_variables``, or variables that live elsewhere.
    """
    from dpkit import towers

    return towers.make_tower_train_step(
        model,
        optimizer,
        devices,
        where_variables=where_variables,
        loss_fn=loss_fn,
        weighted=weighted,
        return_tower_losses=True,
    )


# --- Graph and profiler traces -------------------------------------------------------------


def trace_graph(fn, *args, writer, name: str = "step_graph", step: int = 0, **kwargs):
    """Call a ``tf.function`` once and export its graph, as placed on the devices.

    The graph lands in ``writer``'s event file under tag ``name`` (TensorBoard's Graphs
    tab shows it; :func:`read` then :func:`placement` list its ops per device).

    Args:
        fn: a ``tf.function``.
        *args, **kwargs: its arguments.
        writer: a summary writer, e.g. ``run.train``.
        name: the tag.
        step: the step the graph belongs to.

    Returns:
        What ``fn`` returned.

    Raises:
        ValueError: ``fn`` is not a ``tf.function`` (eager code has no graph to export).
    """
    import tensorflow as tf

    if not hasattr(fn, "get_concrete_function"):
        raise ValueError(
            f"trace_graph records the graph of a tf.function, and {fn!r} is not one; "
            "decorate it with @tf.function."
        )
    tf.summary.trace_on(graph=True, profiler=False)
    try:
        result = fn(*args, **kwargs)
    except BaseException:
        tf.summary.trace_off()
        raise
    with writer.as_default():
        tf.summary.trace_export(name=name, step=step)
    writer.flush()
    return result


@dataclass(frozen=True)
class PlacedOp:
    """One op of an executed graph and the device that ran it."""

    name: str
    type: str
    device: str


def placement(run_metadata) -> list[PlacedOp]:
    """Every op of a traced graph with the device it ran on.

    Reads the *partition graphs*: after placement TensorFlow cuts a function's graph into
    one piece per device (adding ``_Send``/``_Recv`` pairs where data crosses devices).
    The ops are those that ran, after TensorFlow's optimizer (grappler) rewrote the graph:
    for example a convolution, its bias and its ReLU become one ``_FusedConv2D``.

    Args:
        run_metadata: a ``RunMetadata`` from ``read(...)[run].graphs[tag]``.

    Returns:
        A list of :class:`PlacedOp`.
    """
    graphs = [g for fg in run_metadata.function_graphs for g in fg.partition_graphs]
    graphs = graphs or list(run_metadata.partition_graphs)
    return [PlacedOp(node.name, node.op, node.device) for g in graphs for node in g.node]


@dataclass(frozen=True)
class ProfiledOp:
    """One op execution in a profiler trace.

    Attributes:
        name: the graph node's name (e.g. ``tower_1/lenet5_1/conv1_1/Relu``).
        type: the op type (``_FusedConv2D``, ``_Send``, ...).
        plane: where the trace recorded it (``/host:CPU``, or ``/device:GPU:0`` on a GPU).
        thread: the thread (line) that ran it.
        start_ns, duration_ns: when and how long, in nanoseconds.
        stats: what else the trace knows (``_Send``/``_Recv`` carry the devices in ``key``).
    """

    name: str
    type: str
    plane: str
    thread: str
    start_ns: float
    duration_ns: float
    stats: dict = field(default_factory=dict, compare=False, repr=False)


def profile_steps(step_fn, batches, logdir) -> Path:
    """Run ``step_fn(*batch)`` for each batch under TensorFlow's profiler.

    Each step is marked (``tf.profiler.experimental.Trace("train", step_num=i)``) so
    tools can tell the steps apart. Trace the steps *after* the first call (tracing the
    function is not what you want to measure).

    Args:
        step_fn: the training step.
        batches: a list of argument tuples, one per step (keep it short: 2-5 steps).
        logdir: the run's writer folder, e.g. ``run.dir / "train"``; the trace goes to
            ``logdir/plugins/profile/<date>/<host>.xplane.pb``, where TensorBoard's
            profile plugin looks for it.

    Returns:
        The path of the trace file.

    Raises:
        ValueError: no batches.
        RuntimeError: another profiler session is running in this process.
    """
    import tensorflow as tf

    batches = list(batches)
    if not batches:
        raise ValueError("profile_steps needs at least one batch to run.")
    before = set(glob.glob(str(Path(logdir) / "plugins" / "profile" / "*" / "*.xplane.pb")))
    try:
        tf.profiler.experimental.start(str(logdir))
    except (tf.errors.AlreadyExistsError, tf.errors.UnavailableError) as err:
        raise RuntimeError(
            "another profiler session is running in this process; end it with "
            f"tf.profiler.experimental.stop() and try again ({err})."
        ) from err
    try:
        for i, batch in enumerate(batches):
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                result = step_fn(*batch)
                tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, result)
    finally:
        tf.profiler.experimental.stop()
    after = set(glob.glob(str(Path(logdir) / "plugins" / "profile" / "*" / "*.xplane.pb")))
    new = sorted(after - before) or sorted(after)
    return Path(new[-1])


def _xplane_pb2():
    for module in (
        "tensorflow.tsl.profiler.protobuf.xplane_pb2",
        "tsl.profiler.protobuf.xplane_pb2",
    ):
        if importlib.util.find_spec(module.rsplit(".", 1)[0]) is not None:
            return importlib.import_module(module)
    raise RuntimeError(
        "cannot find TensorFlow's XPlane protocol buffers to read a profiler trace; "
        "install TensorFlow 2.12 or newer."
    )


def read_profile(path) -> list[ProfiledOp]:
    """The op executions in a profiler trace, in time order.

    Args:
        path: an ``.xplane.pb`` file, or a folder searched for the newest one.

    Returns:
        A list of :class:`ProfiledOp` (only events named ``node:OpType``: TensorFlow ops,
        not the runtime's own bookkeeping).

    Raises:
        ValueError: no trace file there.
    """
    path = Path(path)
    if path.is_dir():
        found = sorted(glob.glob(str(path / "**" / "*.xplane.pb"), recursive=True))
        if not found:
            raise ValueError(
                f"no profiler trace (*.xplane.pb) under {path}; record one with "
                "summaries.profile_steps(step, batches, logdir) first."
            )
        path = Path(max(found, key=os.path.getmtime))
    elif not path.is_file():
        raise ValueError(f"{path} does not exist; pass the file profile_steps returned.")
    space = _xplane_pb2().XSpace()
    space.ParseFromString(path.read_bytes())
    ops = []
    for plane in space.planes:
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}

        def value(stat, plane=plane):
            kind = stat.WhichOneof("value")
            raw = getattr(stat, kind) if kind else None
            return plane.stat_metadata[raw].name if kind == "ref_value" else raw

        for line in plane.lines:
            for event in line.events:
                label = plane.event_metadata[event.metadata_id].name
                node, _, op_type = label.partition(":")
                if not node or not op_type or ":" in op_type or " " in label:
                    continue  # runtime events (EagerExecute, Foo::Bar, "X: __inference_f")
                ops.append(
                    ProfiledOp(
                        node,
                        op_type,
                        plane.name,
                        line.name,
                        line.timestamp_ns + event.offset_ps / 1e3,
                        event.duration_ps / 1e3,
                        {stat_names.get(s.metadata_id, "?"): value(s) for s in event.stats},
                    )
                )
    return sorted(ops, key=lambda op: op.start_ns)


# --- Reading event files back --------------------------------------------------------------


@dataclass(frozen=True)
class Histogram:
    """One histogram as written by ``tf.summary.histogram``: bucket edges and counts.

    Attributes:
        step: the step it was written at.
        left, right: each bucket's edges.
        counts: values that fell in each bucket.
    """

    step: int
    left: np.ndarray = field(repr=False)
    right: np.ndarray = field(repr=False)
    counts: np.ndarray = field(repr=False)

    @property
    def edges(self) -> np.ndarray:
        """The bucket edges, one more than buckets (for ``plt.stairs(counts, edges)``)."""
        return np.append(self.left, self.right[-1:])

    @property
    def total(self) -> int:
        """How many values the histogram counts."""
        return int(round(float(np.sum(self.counts))))

    def quantiles(self, qs) -> np.ndarray:
        """Approximate quantiles (0..1), interpolating inside buckets.

        TensorBoard's Distributions tab draws these (at 0, 7, 16, 31, 50, 69, 84, 93 and 100%).
        """
        qs = np.asarray(qs, dtype=float)
        if np.any((qs < 0) | (qs > 1)):
            raise ValueError(f"quantiles must be between 0 and 1, got {qs.tolist()}.")
        cumulative = np.concatenate([[0.0], np.cumsum(self.counts)])
        return np.interp(qs * cumulative[-1], cumulative, self.edges)


@dataclass
class Logs:
    """Everything one run folder's event files hold, as plain Python.

    Attributes:
        scalars: ``{tag: [(step, value), ...]}``.
        histograms: ``{tag: [Histogram, ...]}``.
        images: ``{tag: [(step, [uint8 array HxWxC, ...]), ...]}``.
        texts: ``{tag: [(step, str), ...]}``.
        graphs: ``{tag: [(step, RunMetadata), ...]}`` from :func:`trace_graph`.
        other: ``{tag: [(step, numpy value), ...]}`` for any other plugin.
    """

    scalars: dict = field(default_factory=dict)
    histograms: dict = field(default_factory=dict)
    images: dict = field(default_factory=dict)
    texts: dict = field(default_factory=dict)
    graphs: dict = field(default_factory=dict)
    other: dict = field(default_factory=dict)

    def scalar(self, tag: str):
        """``(steps, values)`` of one scalar tag as NumPy arrays, for ``plt.plot``.

        Raises:
            KeyError: no such tag (the message lists the tags there are).
        """
        if tag not in self.scalars:
            raise KeyError(f"no scalar tagged {tag!r}; this run has {sorted(self.scalars)}.")
        steps, values = zip(*self.scalars[tag]) if self.scalars[tag] else ((), ())
        return np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64)

    def tags(self) -> dict:
        """``{kind: sorted tags}`` for every kind this run has."""
        kinds = ("scalars", "histograms", "images", "texts", "graphs", "other")
        return {k: sorted(getattr(self, k)) for k in kinds if getattr(self, k)}


def _decode_png(data: bytes) -> np.ndarray:
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(data)))
    return image[..., None] if image.ndim == 2 else image  # grey PNGs decode to HxW


def _load_run(folder: Path) -> Logs:
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.compat.proto import config_pb2
    from tensorboard.util import tensor_util

    # size_guidance 0 keeps every event (the default samples 10 per tag); no purging, so
    # a run that writes a step twice reads back what was written.
    acc = ea.EventAccumulator(
        str(folder), size_guidance={ea.TENSORS: 0, ea.SCALARS: 0}, purge_orphaned_data=False
    )
    acc.Reload()
    logs = Logs()
    for tag in acc.Tags()["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        events = acc.Tensors(tag)
        arrays = [(int(e.step), tensor_util.make_ndarray(e.tensor_proto)) for e in events]
        if plugin == "scalars":
            logs.scalars[tag] = [(s, float(a)) for s, a in arrays]
        elif plugin == "histograms":
            logs.histograms[tag] = [
                Histogram(s, *(np.asarray(a, np.float64).reshape(-1, 3).T)) for s, a in arrays
            ]
        elif plugin == "images":  # [width, height, png, png, ...]
            logs.images[tag] = [(s, [_decode_png(p) for p in a[2:]]) for s, a in arrays]
        elif plugin == "text":
            logs.texts[tag] = [
                (s, "\n".join(v.decode("utf-8") for v in np.asarray(a).reshape(-1)))
                for s, a in arrays
            ]
        elif plugin == "graph_run_metadata_graph":
            graphs = []
            for s, a in arrays:
                meta = config_pb2.RunMetadata()
                meta.ParseFromString(np.asarray(a).reshape(-1)[0])
                graphs.append((s, meta))
            logs.graphs[tag] = graphs
        else:
            logs.other[tag] = arrays
    for tag in acc.Tags()["scalars"]:  # written the TF1 way (simple_value)
        logs.scalars[tag] = [(int(e.step), float(e.value)) for e in acc.Scalars(tag)]
    return logs


def _check_logdir(logdir, *, allow_empty: bool = False) -> Path:
    if not isinstance(logdir, (str, os.PathLike)):
        raise ValueError(f"logdir must be a folder path, got {logdir!r}; e.g. run.dir.")
    path = Path(logdir)
    if not path.exists():
        raise ValueError(
            f"logdir {str(path)!r} does not exist; pass the folder your writers write to "
            "(run.dir from summaries.open_run), or check the path."
        )
    if not path.is_dir():
        raise ValueError(f"logdir {str(path)!r} is a file; pass the folder that holds it.")
    if not allow_empty and not _event_files(path):
        raise ValueError(
            f"logdir {str(path)!r} holds no TensorBoard event files ({EVENT_FILE_PATTERN}); "
            "write summaries into it first (with run.train.as_default(): tf.summary.scalar"
            "(...)), or pass the run's folder rather than its parent's parent."
        )
    return path


def _require_tensorboard() -> None:
    if importlib.util.find_spec("tensorboard") is None:
        raise RuntimeError(
            "TensorBoard is not installed (TensorFlow 2.21 no longer brings it along); "
            "install it with: pip install 'tensorboard>=2.19,<2.22'."
        )


def read(logdir) -> dict[str, Logs]:
    """Load every run under ``logdir`` into plain Python, with TensorBoard's own reader.

    A run is a folder that holds event files; its name is its path relative to
    ``logdir`` (``"train"``, ``"test"``; ``"."`` for ``logdir`` itself). Writers of open
    runs (:func:`open_run`) are flushed first, so the last steps are there.

    Args:
        logdir: a run folder (``run.dir``) or any folder above run folders.

    Returns:
        ``{run name: Logs}``, sorted by name.

    Raises:
        ValueError: ``logdir`` is missing or holds no event files.
        RuntimeError: TensorBoard is not installed.
    """
    _require_tensorboard()
    for run in list(_OPEN_RUNS):
        run.flush()
    path = _check_logdir(logdir)
    folders = sorted({f.parent for f in _event_files(path)})
    return {str(f.relative_to(path)).replace(os.sep, "/"): _load_run(f) for f in folders}


# --- Launching TensorBoard -----------------------------------------------------------------

# The child runs TensorBoard and a thread that waits for its stdin to close. The parent
# holds the other end of that pipe, so when the parent dies, even by SIGKILL, the pipe
# closes and TensorBoard exits with it.
_SERVE = """
import os, sys, threading
def _watch():
    sys.stdin.buffer.read()
    os._exit(0)
threading.Thread(target=_watch, daemon=True).start()
from tensorboard import main
sys.argv = ["tensorboard", *sys.argv[1:]]
main.run_main()
"""


class TensorBoard:
    """A TensorBoard child process serving one logdir on ``http://127.0.0.1:<port>/``.

    Attributes:
        logdir: the folder it serves (absolute).
        port: the port it listens on.
    """

    def __init__(self, logdir: Path, port: int, process: subprocess.Popen, log):
        self.logdir, self.port, self._process, self._log = logdir, port, process, log

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def running(self) -> bool:
        return self._process.poll() is None

    def output(self) -> str:
        """What TensorBoard printed (its log), for diagnosing a failed start."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stop(self, timeout: float = 10.0) -> None:
        """End the process (and its data-loading helper) and reap it."""
        proc = self._process
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
                proc.wait()
        else:
            proc.wait()
        _signal_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))  # stragglers
        if _INSTANCES.get(self.logdir) is self:
            del _INSTANCES[self.logdir]
        if not self._log.closed:
            self._log.close()

    def __repr__(self) -> str:
        state = "running" if self.running() else "stopped"
        return f"TensorBoard({self.url}, pid {self.pid}, {state}, logdir={str(self.logdir)!r})"


_INSTANCES: dict[Path, TensorBoard] = {}


def _signal_group(proc: subprocess.Popen, sig) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, sig)  # the child leads its own group (start_new_session)
        elif proc.poll() is None:
            proc.terminate()
    except (ProcessLookupError, PermissionError):
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    try:
        with opener.open(url + "data/logdir", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _check_positive(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}.")
    return float(value)


def launch(
    logdir,
    *,
    replace: bool = False,
    display: bool = True,
    height: int = 800,
    timeout: float = 90.0,
    allow_empty: bool = False,
) -> TensorBoard:
    """Start TensorBoard on ``logdir``, bound to 127.0.0.1 on a free port, and show it inline.

    One instance per logdir: if one is already running for the same folder it is reused
    (``replace=True`` stops it and starts a new one). The child is ended by :func:`stop`,
    when this Python process exits, and if starting it fails.

    Args:
        logdir: the folder to serve (a run's ``dir`` or a folder of runs).
        replace: stop a running instance for the same folder and start afresh.
        display: show TensorBoard in the notebook (a frame, through a proxy where
            :func:`display_route` finds one) and print its address.
        height: the frame's height in pixels.
        timeout: seconds to wait for TensorBoard to answer.
        allow_empty: accept a folder without event files yet (to watch a run start).

    Returns:
        The :class:`TensorBoard` (``.url``, ``.pid``, ``.port``, ``.stop()``).

    Raises:
        ValueError: ``logdir`` missing or empty, or a bad ``timeout`` or ``height``.
        RuntimeError: TensorBoard is not installed, exited, or did not answer in time.
    """
    _require_tensorboard()
    timeout = _check_positive(timeout, "timeout")
    if isinstance(height, bool) or not isinstance(height, numbers.Integral) or height <= 0:
        raise ValueError(f"height must be a positive number of pixels, got {height!r}.")
    path = _check_logdir(logdir, allow_empty=allow_empty).resolve()
    old = _INSTANCES.get(path)
    if old is not None and old.running() and not replace:
        if display:
            _show(old, height, reused=True)
        return old
    if old is not None:
        old.stop()
    board = _start(path, timeout)
    _INSTANCES[path] = board
    if display:
        _show(board, height, reused=False)
    return board


def _start(path: Path, timeout: float) -> TensorBoard:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}
    last_error = ""
    for _attempt in range(3):  # another program may take the free port before TensorBoard
        port = _free_port()
        log = tempfile.TemporaryFile()  # noqa: SIM115  (TensorBoard.stop closes it)
        args = ["--logdir", str(path), "--host", HOST, "--port", str(port)]
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, *args],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=os.name == "posix",
        )
        board = TensorBoard(path, port, process, log)
        try:
            deadline = time.monotonic() + timeout
            while not _answers(board.url):
                if not board.running():
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"TensorBoard did not answer on {board.url} within {timeout:.0f} s; "
                        f"its output:\n{board.output()[-2000:]}\nTry again with a longer timeout."
                    )
                time.sleep(0.25)
            else:
                return board
        except BaseException:
            board.stop()
            raise
        last_error = board.output()[-2000:]
        board.stop()
        if "already in use" not in last_error:
            break
    raise RuntimeError(f"TensorBoard exited before it answered; its output:\n{last_error}")


@dataclass(frozen=True)
class Route:
    """How a notebook shows TensorBoard (see :func:`display_route`).

    Attributes:
        kind: ``"colab"`` (Colab's port proxy), ``"proxy"`` (``$TENSORBOARD_PROXY_URL``),
            ``"hub"`` (jupyter-server-proxy under ``$JUPYTERHUB_SERVICE_PREFIX``) or
            ``"local"`` (the loopback address: the browser is on this machine).
        url: where the frame points, the port filled in; a path is taken relative to the
            notebook page's address. ``None`` on Colab, whose proxy picks the address.
        hint: what to do if the frame stays blank, or ``""``.
    """

    kind: str
    url: str | None
    hint: str = ""


def _in_colab() -> bool:
    # The same test as tensorboard.notebook's: google.colab imports, in an IPython shell.
    try:
        import google.colab  # noqa: F401
        import IPython
    except ImportError:
        return False
    return IPython.get_ipython() is not None


def display_route(port: int) -> Route:
    """Which way a notebook frame reaches a TensorBoard on 127.0.0.1:``port``.

    In order: on Colab, Colab's port proxy (through TensorBoard's own notebook display);
    ``$TENSORBOARD_PROXY_URL`` when set, ``%PORT%`` replaced by the port; on a JupyterHub
    or Binder (``$JUPYTERHUB_SERVICE_PREFIX`` set) with jupyter-server-proxy installed,
    ``<prefix>proxy/<port>/``; otherwise ``http://127.0.0.1:<port>/``, which only a
    browser on this machine can open. Reads the environment, changes nothing.
    """
    if _in_colab():
        return Route("colab", None)
    proxy = os.environ.get(PROXY_ENV, "")
    if proxy:
        return Route("proxy", proxy.replace("%PORT%", str(port)))
    local = f"http://{HOST}:{port}/"
    prefix = os.environ.get(HUB_PREFIX_ENV, "")
    if not prefix:
        return Route("local", local)
    if importlib.util.find_spec("jupyter_server_proxy") is not None:
        return Route("hub", f"{prefix.rstrip('/')}/proxy/{port}/")
    return Route(
        "local",
        local,
        "(a JupyterHub without jupyter-server-proxy in this kernel's environment: a browser "
        "on another machine cannot open 127.0.0.1; install jupyter-server-proxy and restart "
        "the server, or, if the server has it, set TENSORBOARD_PROXY_URL to "
        f"{prefix.rstrip('/')}/proxy/%PORT%/)",
    )


# In Jupyter the frame's address is made in the browser, against the page's own address,
# as tensorboard.notebook does: a proxy path like /user/x/proxy/6006/ then resolves on
# whatever host and scheme the notebook is served from. Its public display() is not used
# here because it prints a "Selecting TensorBoard ..." line of its own, takes the proxy
# only from os.environ["TENSORBOARD_PROXY_URL"] (the hub route would have to set it in the
# learner's environment), and without one swaps the port into the page's host name, where
# dpkit prints and serves 127.0.0.1.
_FRAME = """<iframe id="{id}" width="100%" height="{height}" frameborder="0"></iframe>
<script>
  (function() {{
    const frame = document.getElementById({json_id});
    frame.src = new URL({json_url}, window.location);
  }})();
</script>"""


def _frame_html(url: str, height: int) -> str:
    frame_id = f"dpkit-tensorboard-{os.urandom(8).hex()}"

    def js(text: str) -> str:  # a JSON string that cannot close the <script> element
        return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e")

    return _FRAME.format(
        id=html.escape(frame_id), height=int(height), json_id=js(frame_id), json_url=js(url)
    )


def _show(board: TensorBoard, height: int, *, reused: bool) -> None:
    verb = "already running" if reused else "started"
    from dpkit import widgets

    if not widgets.frontend():  # a test run or a terminal: a frame nobody sees would go stale
        print(f"TensorBoard {verb} at {board.url} (pid {board.pid}); summaries.stop() ends it.")
        print("(no notebook display here: open the address in a browser on this machine)")
        return
    way = display_route(board.port)
    if way.kind == "colab":
        print(
            f"TensorBoard {verb} on port {board.port} (pid {board.pid}), shown below through "
            "Colab's port proxy; summaries.stop() ends it."
        )
        import tensorboard.notebook

        # Colab's proxy is Colab's own JavaScript API, which TensorBoard keeps up with. Its
        # display also prints "Selecting TensorBoard with logdir ..." (our child registers
        # itself where TensorBoard looks): not ours to show.
        with contextlib.redirect_stdout(io.StringIO()):
            tensorboard.notebook.display(port=board.port, height=height)
        return
    if way.kind == "local":
        print(f"TensorBoard {verb} at {board.url} (pid {board.pid}); summaries.stop() ends it.")
    else:
        print(
            f"TensorBoard {verb} at {way.url} (proxied to {board.url}, pid {board.pid}); "
            "summaries.stop() ends it."
        )
    if way.hint:
        print(way.hint)
    from IPython.display import HTML, display

    display(HTML(_frame_html(way.url, height)))


def running() -> list[TensorBoard]:
    """The TensorBoard instances this process started that are still running."""
    return [b for b in _INSTANCES.values() if b.running()]


def stop(logdir=None) -> int:
    """Stop the TensorBoard serving ``logdir`` (default: every one this process started).

    Returns:
        How many were stopped.
    """
    if logdir is None:
        boards = list(_INSTANCES.values())
    else:
        board = _INSTANCES.get(Path(logdir).resolve())
        boards = [board] if board is not None else []
    for board in boards:
        board.stop()
    return len(boards)


atexit.register(stop)

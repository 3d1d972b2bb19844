"""Event files read back into plain Python by TensorBoard's own reader (introduced in lesson 06):
:func:`read`, for a notebook to plot them and a test to compare them with what was written.
"""

from __future__ import annotations

import importlib.util
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dpkit.summaries.writers import EVENT_FILE_PATTERN, event_files, flush_open_runs


@dataclass(frozen=True)
class Histogram:
    """One histogram as written by ``tf.summary.histogram``: bucket edges and counts."""

    step: int
    left: np.ndarray = field(repr=False)  # each bucket's left edge
    right: np.ndarray = field(repr=False)  # and right edge
    counts: np.ndarray = field(repr=False)  # values that fell in each bucket

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
    """Everything one run folder's event files hold, as plain Python."""

    scalars: dict = field(default_factory=dict)  # {tag: [(step, value), ...]}
    histograms: dict = field(default_factory=dict)  # {tag: [Histogram, ...]}
    images: dict = field(default_factory=dict)  # {tag: [(step, [uint8 HxWxC, ...]), ...]}
    texts: dict = field(default_factory=dict)  # {tag: [(step, str), ...]}
    graphs: dict = field(default_factory=dict)  # {tag: [(step, RunMetadata), ...]}: trace_graph
    other: dict = field(default_factory=dict)  # {tag: [(step, numpy value), ...]}: other plugins

    def scalar(self, tag: str):
        """``(steps, values)`` of one scalar tag as NumPy arrays, for ``plt.plot``."""
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
            buckets = [(s, np.asarray(a, np.float64).reshape(-1, 3).T) for s, a in arrays]
            logs.histograms[tag] = [Histogram(s, *columns) for s, columns in buckets]
        elif plugin == "images":  # [width, height, png, png, ...]
            logs.images[tag] = [(s, [_decode_png(p) for p in a[2:]]) for s, a in arrays]
        elif plugin == "text":
            lines = [(s, np.asarray(a).reshape(-1)) for s, a in arrays]
            logs.texts[tag] = [(s, "\n".join(v.decode("utf-8") for v in a)) for s, a in lines]
        elif plugin == "graph_run_metadata_graph":
            metadata = config_pb2.RunMetadata.FromString
            logs.graphs[tag] = [(s, metadata(np.asarray(a).reshape(-1)[0])) for s, a in arrays]
        else:
            logs.other[tag] = arrays
    for tag in acc.Tags()["scalars"]:  # written the TF1 way (simple_value)
        logs.scalars[tag] = [(int(e.step), float(e.value)) for e in acc.Scalars(tag)]
    return logs


def check_logdir(logdir, *, allow_empty: bool = False) -> Path:
    """``logdir`` as a ``Path``, if it is a folder that holds event files (or may be empty)."""
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
    if not allow_empty and not event_files(path):
        raise ValueError(
            f"logdir {str(path)!r} holds no TensorBoard event files ({EVENT_FILE_PATTERN}); "
            "write summaries into it first (with run.train.as_default(): tf.summary.scalar"
            "(...)), or pass the run's folder rather than its parent's parent."
        )
    return path


def require_tensorboard() -> None:
    """Raise ``RuntimeError`` saying how to install TensorBoard if it is not installed."""
    if importlib.util.find_spec("tensorboard") is None:
        raise RuntimeError(
            "TensorBoard is not installed (TensorFlow 2.21 no longer brings it along); "
            "install it with: pip install 'tensorboard>=2.19,<2.22'."
        )


def read(logdir) -> dict[str, Logs]:
    """Load every run under ``logdir`` into plain Python, with TensorBoard's own reader.

    A run is a folder that holds event files; its name is its path relative to
    ``logdir`` (``"train"``, ``"test"``; ``"."`` for ``logdir`` itself). Writers of open
    runs (``summaries.open_run``) are flushed first, so the last steps are there.
    Returns ``{run name: Logs}``, sorted by name.
    """
    require_tensorboard()
    flush_open_runs()
    path = check_logdir(logdir)
    folders = sorted({f.parent for f in event_files(path)})
    return {str(f.relative_to(path)).replace(os.sep, "/"): _load_run(f) for f in folders}

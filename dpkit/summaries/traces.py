"""Graph and profiler traces, introduced in lesson 06: which device runs each op
(:func:`trace_graph`, :func:`placement`), and when (:func:`profile_steps`, :func:`read_profile`).
"""

from __future__ import annotations

import glob
import importlib
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

import tensorflow as tf


def trace_graph(fn, *args, writer, name: str = "step_graph", step: int = 0, **kwargs):
    """Call a ``tf.function`` once and export its graph, as placed on the devices; return what
    ``fn`` returned.

    The graph lands in ``writer``'s event file (e.g. ``run.train``'s) under tag ``name``
    (TensorBoard's Graphs tab shows it; ``summaries.read`` then :func:`placement` list its
    ops per device).
    """
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
    ``run_metadata`` comes from ``read(...)[run].graphs[tag]``.
    """
    graphs = [g for fg in run_metadata.function_graphs for g in fg.partition_graphs]
    graphs = graphs or list(run_metadata.partition_graphs)
    return [PlacedOp(node.name, node.op, node.device) for g in graphs for node in g.node]


@dataclass(frozen=True)
class ProfiledOp:
    """One op execution in a profiler trace."""

    name: str  # the graph node's name (e.g. tower_1/lenet5_1/conv1_1/Relu)
    type: str  # the op type (_FusedConv2D, _Send, ...)
    plane: str  # where the trace recorded it (/host:CPU, or /device:GPU:0 on a GPU)
    thread: str  # the thread (line) that ran it
    start_ns: float
    duration_ns: float
    # what else the trace knows (_Send/_Recv carry the devices in "key")
    stats: dict = field(default_factory=dict, compare=False, repr=False)


def profile_steps(step_fn, batches, logdir) -> Path:
    """Run ``step_fn(*batch)`` for each batch under TensorFlow's profiler.

    Each step is marked (``tf.profiler.experimental.Trace("train", step_num=i)``) so
    tools can tell the steps apart. Trace the steps *after* the first call (tracing the
    function is not what you want to measure). Keep ``batches`` short: 2-5 steps.

    Returns the trace file's path, ``logdir/plugins/profile/<date>/<host>.xplane.pb``, where
    TensorBoard's profile plugin looks for it (``logdir``: e.g. ``run.dir / "train"``).
    """
    batches = list(batches)
    if not batches:
        raise ValueError("profile_steps needs at least one batch to run.")
    pattern = str(Path(logdir) / "plugins" / "profile" / "*" / "*.xplane.pb")
    before = set(glob.glob(pattern))
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
    after = set(glob.glob(pattern))
    return Path((sorted(after - before) or sorted(after))[-1])


def _xplane_pb2():
    for package in ("tensorflow.tsl.profiler.protobuf", "tsl.profiler.protobuf"):
        if importlib.util.find_spec(package) is not None:
            return importlib.import_module(package + ".xplane_pb2")
    raise RuntimeError(
        "cannot find TensorFlow's XPlane protocol buffers to read a profiler trace; "
        "install TensorFlow 2.12 or newer."
    )


def read_profile(path) -> list[ProfiledOp]:
    """The op executions in a profiler trace (``path``: an ``.xplane.pb`` file, or a folder
    searched for the newest one), in time order: only events named ``node:OpType``, which
    are TensorFlow ops, not the runtime's own bookkeeping."""
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
                start, duration = line.timestamp_ns + event.offset_ps / 1e3, event.duration_ps / 1e3
                stats = {stat_names.get(s.metadata_id, "?"): value(s) for s in event.stats}
                ops.append(ProfiledOp(node, op_type, plane.name, line.name, start, duration, stats))
    return sorted(ops, key=lambda op: op.start_ns)

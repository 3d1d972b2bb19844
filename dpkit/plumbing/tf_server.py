"""A task's TensorFlow gRPC server in half a second: the fast path, and the public one.

A task of :class:`dpkit.cluster.LocalCluster` (the ``server`` program), and a ps or worker
of the ``task`` program, only serve: they run no TensorFlow op themselves. The public way,
``tf.distribute.Server`` (:func:`start_public`), imports all of TensorFlow first: about 5 s
of one core per task (TF 2.21 on 2 cores, measured), paid by every task of every cluster a
lesson or a test starts. :func:`start_fast` loads TensorFlow's C server API from two of its
extension modules instead (0.5 s) and gives it a ``ServerDef`` encoded by hand
(:func:`server_def`). Those modules are TensorFlow's internals: :func:`start` takes the fast
path when they are where TensorFlow 2.19-2.21 keep them and the public path otherwise.

tests/process/test_tf_server.py checks on the installed TensorFlow that both paths start
the server asked for (the hand-made ``ServerDef`` equals TensorFlow's), that a taken port
reads as one on both (:func:`port_taken`), and that :func:`start` falls back when the
modules are gone; ``make test-oldest`` runs it on TensorFlow 2.19 (``OLDEST_TF=2.20`` on
2.20).
"""

from __future__ import annotations

import importlib.util
import os
import sys

#: TensorFlow's modules the fast path loads, relative to the tensorflow package, with the
#: names it calls in each: the session library that holds ``TF_NewServer``, and the error
#: registry (without it TensorFlow aborts the process on an error instead of raising one).
MODULES = {
    "python/client/_pywrap_tf_session.so": ("TF_NewServer", "TF_ServerStart"),
    "python/_pywrap_py_exception_registry.so": ("PyExceptionRegistry_Init",),
}

#: What both paths' error says when the server's port is taken.
PORT_TAKEN = "Could not start gRPC server"

_library = None  # the loaded session library: its error registry can be set up only once


def port_taken(error: BaseException) -> bool:
    """Whether starting a server failed because its port is taken (on either path)."""
    return PORT_TAKEN in str(error)


def start(cluster: dict, job: str, index: int, inter_op_threads: int = 0):
    """Start the gRPC server of task ``job:index`` of ``cluster``; return it (keep it
    referenced: it serves until the process ends). The fast path if TensorFlow's modules are
    where it expects them, else ``tf.distribute.Server``; that one too when this process has
    imported TensorFlow already (it costs nothing more then, and the modules cannot be
    loaded twice). After the fast path this process must not import TensorFlow: its modules
    are loaded already, under other names, and the import fails.

    Args:
        cluster: ``{job: ["host:port", ...]}``.
        job, index: the task this server is.
        inter_op_threads: inter-op threads of the server's sessions (0: TensorFlow's
            default, one per core).

    Raises:
        Exception: TensorFlow's, e.g. one :func:`port_taken` reads as a taken port.
    """
    if "tensorflow" in sys.modules and _library is None:
        return start_public(cluster, job, index, inter_op_threads)
    try:
        library = load_server_library()
    except ImportError:  # TensorFlow moved or changed them: the public path
        return start_public(cluster, job, index, inter_op_threads)
    return start_fast(cluster, job, index, inter_op_threads, library)


def start_public(cluster: dict, job: str, index: int, inter_op_threads: int = 0):
    """``tf.distribute.Server`` of the task, started (what TensorFlow's tutorial does)."""
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=inter_op_threads)
    return tf.distribute.Server(
        tf.train.ClusterSpec(cluster),
        job_name=job,
        task_index=index,
        protocol="grpc",
        config=config if inter_op_threads else None,
        start=True,
    )


def start_fast(cluster: dict, job: str, index: int, inter_op_threads: int = 0, library=None):
    """The same server through TensorFlow's C API, without importing TensorFlow.

    Raises:
        ImportError: TensorFlow's modules are not what they were (only when ``library`` is
            not given).
        ServerError: TensorFlow's error, e.g. a taken port.
    """
    library = library or load_server_library()
    server = library.TF_NewServer(server_def(cluster, job, index, inter_op_threads))
    library.TF_ServerStart(server)
    return server


class ServerError(Exception):
    """What TensorFlow's C API raises on the fast path (``cls(node_def, op, message, ...)``)."""

    def __str__(self) -> str:
        return next((a for a in self.args if isinstance(a, str)), repr(self.args))


def load_server_library():
    """TensorFlow's C server API, loaded from its extension modules by path.

    Once per process, and only in a process that has not imported TensorFlow: a module
    loaded twice fails, and the error registry set up twice aborts the process. So every
    check comes before anything is loaded (the files are there and name the functions
    called), and a failed check leaves the public path open.

    Raises:
        ImportError: TensorFlow is not installed, or its modules are not what they were.
    """
    global _library
    if _library is not None:
        return _library
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("TensorFlow is not installed")
    root = spec.submodule_search_locations[0]
    paths = {os.path.join(root, relative): names for relative, names in MODULES.items()}
    for path, names in paths.items():
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError as error:
            raise ImportError(f"TensorFlow's {path} cannot be read: {error}") from None
        if not all(name.encode() in data for name in names):
            raise ImportError(f"TensorFlow's {path} does not name {names}")
    library, registry = (_load_extension(path) for path in paths)
    registry.PyExceptionRegistry_Init({code: ServerError for code in range(1, 17)})
    _library = library
    return library


def _load_extension(path: str):
    name = os.path.basename(path).split(".")[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- ServerDef


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _field(number: int, value) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def server_def(cluster: dict, job_name: str, task_index: int, inter_op_threads: int = 0) -> bytes:
    """The serialized ``tensorflow.ServerDef`` of one task, without importing TensorFlow.

    The protobuf bytes made by hand: ``ServerDef{cluster=1, job_name=2, task_index=3,
    default_session_config=4, protocol=5}``, ``ClusterDef{job=1}``, ``JobDef{name=1,
    tasks=2 (map)}``, ``ConfigProto{inter_op_parallelism_threads=5}``. The tests check it
    against TensorFlow's own ``ServerDef``.
    """
    jobs = b""
    for name, addresses in cluster.items():
        tasks = b"".join(
            _field(2, _field(1, i) + _field(2, address)) for i, address in enumerate(addresses)
        )
        jobs += _field(1, _field(1, name) + tasks)
    out = _field(1, jobs) + _field(2, job_name) + _field(3, task_index)
    if inter_op_threads:
        out += _field(4, _field(5, inter_op_threads))
    return out + _field(5, "grpc")

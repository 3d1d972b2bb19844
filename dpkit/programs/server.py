"""The ``server`` program: one task of a :class:`dpkit.cluster.LocalCluster` (lesson 07).

``python -m dpkit.programs server CLUSTER_JSON JOB INDEX [INTER_OP_THREADS]`` starts one
``tf.distribute.Server`` for task ``JOB:INDEX`` of the cluster, writes the record
``{"ready": "JOB:INDEX"}`` once it listens, and serves until it is killed (or its parent
dies). It exits with ``contract.Exit.PORT_TAKEN`` when its port is taken (the parent then
picks new ports) and ``Exit.FAILED`` on any other error, which it writes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import threading

from dpkit.plumbing import contract, procs


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


class ServerError(Exception):
    """What TensorFlow's C API raises here (``cls(node_def, op, message, ...)``)."""

    def __str__(self) -> str:
        return next((a for a in self.args if isinstance(a, str)), repr(self.args))


def _load_extension(root: str, relative: str):
    name = os.path.basename(relative).split(".")[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_server_library():
    """TensorFlow's C server API in half a second, not all of TensorFlow (~6 s on 2 cores).

    Loads two extension modules by path: the error registry (TensorFlow aborts the
    process on an error unless it knows which Python exception to raise) and the session
    library that holds ``TF_NewServer``.
    """
    root = importlib.util.find_spec("tensorflow").submodule_search_locations[0]
    registry = _load_extension(root, "python/_pywrap_py_exception_registry.so")
    registry.PyExceptionRegistry_Init({code: ServerError for code in range(1, 17)})
    return _load_extension(root, "python/client/_pywrap_tf_session.so")


def start_server(definition: bytes):
    """Start the server of a serialized ``ServerDef``; return it (keep it referenced)."""
    try:
        library = load_server_library()
    except (ImportError, OSError, AttributeError):  # its files moved: use all of TensorFlow
        import tensorflow as tf

        return tf.distribute.Server(tf.train.ServerDef.FromString(definition), start=True)
    server = library.TF_NewServer(definition)
    library.TF_ServerStart(server)
    return server


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpkit.programs server", description=__doc__)
    parser.add_argument("cluster", metavar="CLUSTER_JSON", help='e.g. {"ps": ["127.0.0.1:2222"]}')
    parser.add_argument("job")
    parser.add_argument("index", type=int)
    parser.add_argument("inter_op_threads", type=int, nargs="?", default=0)
    args = parser.parse_args(argv)
    task = f"{args.job}:{args.index}"
    definition = server_def(json.loads(args.cluster), args.job, args.index, args.inter_op_threads)
    try:
        server = start_server(definition)  # noqa: F841 -- serves while referenced
    except Exception as error:  # noqa: BLE001 -- report it and exit
        print(f"task {task}: {error}", file=sys.stderr, flush=True)
        taken = "Could not start gRPC server" in str(error)
        return contract.Exit.PORT_TAKEN if taken else contract.Exit.FAILED
    procs.record(contract.ServerReady(ready=task))
    threading.Event().wait()  # serve until killed
    return 0

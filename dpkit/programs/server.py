"""The ``server`` program: one task of a :class:`dpkit.cluster.LocalCluster` (lesson 07).

``python -m dpkit.programs server CLUSTER_JSON JOB INDEX [INTER_OP_THREADS]`` starts the
gRPC server of task ``JOB:INDEX`` (:mod:`dpkit.plumbing.tf_server`), writes the record
``{"ready": "JOB:INDEX"}`` once it listens, and serves until it is killed (or its parent
dies). It exits with ``contract.Exit.PORT_TAKEN`` when its port is taken (the parent then
picks new ports; :func:`port_in_use` finds that before TensorFlow is imported) and
``Exit.FAILED`` on any other error, which it writes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading

import portpicker

from dpkit.plumbing import contract, procs, tf_server


def start_server(cluster: dict, job: str, index: int, inter_op_threads: int = 0):
    """Start the gRPC server of task ``job:index``; return it (keep it referenced).

    :func:`dpkit.plumbing.tf_server.start`: a ``tf.distribute.Server``, after importing
    TensorFlow (about 5 s of one core).
    """
    return tf_server.start(cluster, job, index, inter_op_threads)


def port_in_use(cluster: dict, job: str, index: int) -> bool:
    """Whether the port of task ``job:index`` is taken right now, checked the way a server
    binds (TCP and UDP, IPv4 and IPv6, ``SO_REUSEADDR``) before TensorFlow is imported: a
    taken port then costs the parent's retry a moment, not TensorFlow's 5 s import. False when
    the task is not in ``cluster`` (TensorFlow's error names that)."""
    try:
        port = int(cluster[job][index].rpartition(":")[2])
    except (KeyError, IndexError, TypeError, ValueError):
        return False
    return not portpicker.is_port_free(port)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpkit.programs server", description=__doc__)
    parser.add_argument("cluster", metavar="CLUSTER_JSON", help='e.g. {"ps": ["127.0.0.1:2222"]}')
    parser.add_argument("job")
    parser.add_argument("index", type=int)
    parser.add_argument("inter_op_threads", type=int, nargs="?", default=0)
    args = parser.parse_args(argv)
    task = f"{args.job}:{args.index}"
    cluster = json.loads(args.cluster)
    if port_in_use(cluster, args.job, args.index):
        print(f"task {task}: port taken ({tf_server.PORT_TAKEN})", file=sys.stderr, flush=True)
        return contract.Exit.PORT_TAKEN
    try:  # `server` serves while it is referenced
        server = start_server(cluster, args.job, args.index, args.inter_op_threads)  # noqa: F841
    except Exception as error:  # noqa: BLE001 -- report it and exit
        print(f"task {task}: {error}", file=sys.stderr, flush=True)
        return contract.Exit.PORT_TAKEN if tf_server.port_taken(error) else contract.Exit.FAILED
    procs.record(contract.ServerReady(ready=task))
    threading.Event().wait()  # serve until killed
    return contract.Exit.OK

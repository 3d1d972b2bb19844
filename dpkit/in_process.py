"""What TensorFlow starts in this process and cannot stop: servers and coordinator threads.

Introduced in lesson 07, behind :class:`dpkit.cluster.LocalCluster`: its ``"in_process"``
mode (:func:`start_servers`) and its ``shutdown`` (:func:`stop_coordinator`).
"""

from __future__ import annotations

import threading
import time

from dpkit.plumbing import tf_server

_servers: dict | None = None  # this process's in-process servers, once started


def start_servers(cluster: dict, tasks: list, inter_op_threads: int) -> dict:
    """Start a ``tf.distribute.Server`` per ``(job, index)`` of ``tasks`` in this process (as
    TensorFlow's tutorial does), each with ``inter_op_threads``
    (``LocalCluster.inter_op_threads_per_task``); return ``{task: server}``. The servers serve
    until the process ends: a second call in one process is a ``RuntimeError``."""
    global _servers
    if _servers is not None:
        raise RuntimeError(
            "this process already holds an in-process cluster and its servers cannot be "
            "stopped; reuse it, restart the kernel, or use mode='process'."
        )
    _servers = {  # each a tf.distribute.Server
        (job, index): tf_server.start(cluster, job, index, inter_op_threads) for job, index in tasks
    }
    return _servers


def stop_coordinator(coordinator, timeout: float = 5.0) -> list[str]:
    """Stop a ClusterCoordinator's threads as far as TensorFlow lets us; return those left.

    TensorFlow has no public way to stop them, so this uses ``_cluster`` (private, TF 2.21).
    Worker threads stop once the closure queue is closed. The failure handler's ``stop`` can
    block for minutes while it waits for a killed worker to come back, so it runs in a
    daemon thread and is abandoned after ``timeout``; its threads die with the process.
    """
    try:
        cluster = coordinator._cluster
        for worker in cluster.workers:
            worker.stop()
        cluster.closure_queue.stop()
        cluster.resource_cancellation_mgr.start_cancel()
        stopper = threading.Thread(target=cluster.failure_handler.stop, daemon=True)
    except Exception:  # noqa: BLE001 -- private API changed: the processes die anyway
        return []
    stopper.start()
    deadline = time.monotonic() + timeout
    stopper.join(timeout)
    names = ("WorkerClosureProcessingLoop", "WorkerPreemptionHandler")
    for thread in threading.enumerate():
        if thread.name.startswith(names):
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threading.enumerate() if t.name.startswith(names) and t.is_alive()]

"""What TensorFlow starts in this process and cannot stop: servers and coordinator threads.

Introduced in lesson 07, behind :class:`dpkit.cluster.LocalCluster`:

* :func:`start_servers`: the ``"in_process"`` mode, servers in the current process like
  the TensorFlow tutorial's ``create_in_process_cluster``. A ``tf.distribute.Server``
  can never be stopped, so a process holds at most one such cluster.
* :func:`stop_coordinator`: the threads of a ``ClusterCoordinator``, which TensorFlow has
  no public way to stop. Its worker threads end, except the thread of a worker you
  killed, which waits inside TensorFlow for it to come back and is left as a daemon
  thread that dies with the process.
"""

from __future__ import annotations

import threading
import time

_holder = None  # what holds this process's in-process servers, if anything does


def start_servers(cluster: dict, tasks: list, inter_op_threads: int, holder) -> dict:
    """Start a ``tf.distribute.Server`` for each task of ``cluster`` in this process.

    Args:
        cluster: ``{job: ["host:port", ...]}``.
        tasks: the ``(job, index)`` tasks to serve.
        inter_op_threads: every server's (the ps too) inter-op threads; with fewer than
            ``num_workers + 1`` training deadlocks on a 2-core machine.
        holder: what holds them (a ``LocalCluster``); a second holder is refused.

    Returns:
        ``{task: server}``; the servers serve until the process ends.

    Raises:
        RuntimeError: this process already holds in-process servers.
    """
    global _holder
    if _holder is not None:
        raise RuntimeError(
            "this process already holds an in-process cluster and its servers cannot be "
            "stopped; reuse it, restart the kernel, or use mode='process'."
        )
    import tensorflow as tf

    spec = tf.train.ClusterSpec(cluster)
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=inter_op_threads)
    servers = {
        (job, index): tf.distribute.Server(
            spec, job_name=job, task_index=index, protocol="grpc", config=config, start=True
        )
        for job, index in tasks
    }
    _holder = holder
    return servers


def stop_coordinator(coordinator, timeout: float = 5.0) -> list[str]:
    """Stop a ClusterCoordinator's threads as far as TensorFlow lets us; return those left.

    This uses ``_cluster`` (private, TF 2.21). Worker threads stop once the closure queue
    is closed. The failure handler's ``stop`` can block for minutes while it waits for a
    killed worker to come back, so it runs in a daemon thread and is abandoned after
    ``timeout``; its threads are daemons and die with the process.
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

"""A task's TensorFlow gRPC server: ``tf.distribute.Server``, started.

A task of :class:`dpkit.cluster.LocalCluster` (the ``server`` program), a ps or a
``ParameterServerStrategy`` worker of the ``task`` program, and the servers of an in-process
cluster (:mod:`dpkit.in_process`) all start theirs here, the way TensorFlow's tutorial does.
A process that serves imports all of TensorFlow for it: about 5 s of one core per task
(TF 2.21 on 2 cores, measured). The ``server`` program checks its port before it pays that
(:mod:`dpkit.programs.server`), which is why TensorFlow is imported in :func:`start`.

tests/process/test_tf_server.py checks on the installed TensorFlow that the server answers on
its port and that a taken port reads as one (:func:`port_taken`); ``make test-oldest`` runs
it on TensorFlow 2.19 (``OLDEST_TF=2.20`` on 2.20).
"""

from __future__ import annotations

#: What TensorFlow's error says when the server's port is taken.
PORT_TAKEN = "Could not start gRPC server"


def port_taken(error: BaseException) -> bool:
    """Whether starting a server failed because its port is taken."""
    return PORT_TAKEN in str(error)


def start(cluster: dict, job: str, index: int, inter_op_threads: int = 0):
    """Start the gRPC server of task ``job:index`` of ``cluster``; return the
    ``tf.distribute.Server`` (keep it referenced: it serves until the process ends).

    Args:
        cluster: ``{job: ["host:port", ...]}``.
        job, index: the task this server is.
        inter_op_threads: inter-op threads of the server's sessions (0: TensorFlow's
            default, one per core).

    Raises:
        Exception: TensorFlow's, e.g. one :func:`port_taken` reads as a taken port.
    """
    import tensorflow as tf  # here: the server program checks its port before paying for it

    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=inter_op_threads)
    return tf.distribute.Server(
        tf.train.ClusterSpec(cluster),
        job_name=job,
        task_index=index,
        protocol="grpc",
        config=config if inter_op_threads else None,
        start=True,
    )

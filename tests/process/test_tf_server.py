"""dpkit.plumbing.tf_server on the installed TensorFlow: tf.distribute.Server of the task
asked for, answering on its port; a taken port reads as taken (port_taken). The ``server``
program finds a taken port before it imports TensorFlow and exits with PORT_TAKEN.

make test-oldest runs these on TensorFlow 2.19 (OLDEST_TF=2.20 on 2.20).
"""

import json
import socket

from dpkit.plumbing import contract, procs
from dpkit.programs import server
from tests.support import childproc

SERVE = """
import json, socket
from dpkit.plumbing import procs, tf_server

address = f"127.0.0.1:{procs.free_port()}"
spec = {"ps": [address], "worker": ["127.0.0.1:1"]}
started = tf_server.start(spec, "ps", 0, 3)
out = dict(kind=type(started).__name__, answers=procs.port_answers(address, timeout=5))

import tensorflow as tf
from tensorflow.core.protobuf import tensorflow_server_pb2

threads = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=3)
out["server_def"] = started.server_def == tensorflow_server_pb2.ServerDef(
    cluster=tf.train.ClusterSpec(spec).as_cluster_def(), job_name="ps", task_index=0,
    protocol="grpc", default_session_config=threads)
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = f"127.0.0.1:{taken.getsockname()[1]}"
    try:
        tf_server.start({"ps": [busy]}, "ps", 0)
        out["taken"] = "started on a taken port"
    except Exception as error:
        out["taken"] = [type(error).__name__, tf_server.port_taken(error), str(error)]
print(json.dumps(out))
"""


def test_the_server_answers_on_its_port_and_a_taken_port_reads_as_taken():
    out = childproc.run(SERVE, timeout=180)
    assert out["kind"] == "Server", f"not a tf.distribute.Server: {out['kind']}"
    assert out["answers"], "the server does not answer on its port"
    assert out["server_def"], "the server is not the task asked for (job, index, threads)"
    assert out["taken"][1] is True, f"a taken port did not read as taken: {out['taken']}"


def test_the_server_program_exits_port_taken_before_importing_tensorflow():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        spec = {"ps": [f"127.0.0.1:{taken.getsockname()[1]}"]}
        assert server.port_in_use(spec, "ps", 0)
        argv = procs.program_argv(contract.Program.SERVER, json.dumps(spec), "ps", 0)
        child = procs.Child(argv, name="ps:0", kind="cluster")
        try:
            code = child.wait(timeout=60)
        finally:
            tail = child.close()
    assert code == contract.Exit.PORT_TAKEN, tail
    # the program's own words, not TensorFlow's: it never got as far as importing it
    assert "task ps:0: port taken" in tail, tail
    assert not server.port_in_use({"ps": [f"127.0.0.1:{procs.free_port()}"]}, "ps", 0)
    assert not server.port_in_use({"ps": ["127.0.0.1:1"]}, "worker", 0)  # TensorFlow says why

"""dpkit.plumbing.tf_server on the installed TensorFlow: the fast path (TensorFlow's C server API
loaded by path, a ServerDef made by hand) and the public one (tf.distribute.Server) start the
same server, read a taken port alike, and the fast path falls back to the public one.

Each path in its own child: a process that took the fast path cannot import TensorFlow.
make test-oldest runs these on TensorFlow 2.19 (OLDEST_TF=2.20 on 2.20).
"""

from tests.support import childproc

FAST = """
import json, socket, sys
from dpkit.plumbing import procs, tf_server

address = f"127.0.0.1:{procs.free_port()}"
server = tf_server.start({"ps": [address], "worker": ["127.0.0.1:1"]}, "ps", 0, 3)
out = dict(kind=type(server).__name__, answers=procs.port_answers(address, timeout=5))
out["imported_tensorflow"] = "tensorflow" in sys.modules
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = f"127.0.0.1:{taken.getsockname()[1]}"
    try:
        tf_server.start({"ps": [busy]}, "ps", 0)  # the library again: loaded once
        out["taken"] = "started on a taken port"
    except Exception as error:
        out["taken"] = [type(error).__name__, tf_server.port_taken(error), str(error)]
print(json.dumps(out))
"""

PUBLIC = """
import json, socket
from dpkit.plumbing import procs, tf_server

# the fast path's modules are gone (a TensorFlow that moved them): start() takes the public one
tf_server.MODULES = {"python/client/_no_such_module.so": ("TF_NewServer",)}
address = f"127.0.0.1:{procs.free_port()}"
server = tf_server.start({"ps": [address]}, "ps", 0, 2)
out = dict(kind=type(server).__name__, answers=procs.port_answers(address, timeout=5))

import tensorflow as tf
from tensorflow.core.protobuf import tensorflow_server_pb2

out["server_def"] = server.server_def == tensorflow_server_pb2.ServerDef(
    cluster=tf.train.ClusterSpec({"ps": [address]}).as_cluster_def(), job_name="ps",
    task_index=0, protocol="grpc",
    default_session_config=tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2))

# the hand-made ServerDef the fast path starts with is TensorFlow's own
spec = {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}
same = []
for threads in (3, 0):
    ours = tensorflow_server_pb2.ServerDef.FromString(
        tf_server.server_def(spec, "worker", 1, threads))
    reference = tensorflow_server_pb2.ServerDef(
        cluster=tf.train.ClusterSpec(spec).as_cluster_def(), job_name="worker", task_index=1,
        protocol="grpc")
    if threads:
        reference.default_session_config.inter_op_parallelism_threads = threads
    same.append(ours == reference)
out["same_server_def"] = same

with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = f"127.0.0.1:{taken.getsockname()[1]}"
    try:
        tf_server.start_public({"ps": [busy]}, "ps", 0)
        out["taken"] = "started on a taken port"
    except Exception as error:
        out["taken"] = [type(error).__name__, tf_server.port_taken(error), str(error)]
print(json.dumps(out))
"""


def test_the_fast_path_serves_without_importing_tensorflow_and_reads_a_taken_port():
    out = childproc.run(FAST, timeout=120)
    assert out["kind"] == "TF_Server", f"the fast path was not taken: {out['kind']}"
    assert out["answers"], "the fast path's server does not answer on its port"
    assert not out["imported_tensorflow"], "the fast path imported all of TensorFlow"
    assert out["taken"][:2] == ["ServerError", True], out["taken"]


def test_the_public_path_is_the_fallback_and_the_hand_made_server_def_is_tensorflows():
    out = childproc.run(PUBLIC, timeout=180)
    assert out["kind"] == "Server", f"start() did not fall back to tf.distribute.Server: {out}"
    assert out["answers"], "the public path's server does not answer on its port"
    assert out["server_def"], "the public path's ServerDef is not the task asked for"
    assert out["same_server_def"] == [True, True], "the hand-made ServerDef differs from TF's"
    assert out["taken"][1] is True, f"a taken port did not read as taken: {out['taken']}"

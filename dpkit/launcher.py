"""One task of a real cluster: ``python -m dpkit task ...`` (lesson 08).

The same program runs as every task of a cluster, started by hand on each machine, by a
shell loop, by :class:`dpkit.tasks.Group` from a notebook, or by Kubernetes. Each task
learns who it is either from flags (the TF1 tutorials' command line)::

    python -m dpkit task --job_name=ps     --task_index=0 --ps_hosts=10.0.0.1:2222 \\
        --worker_hosts=10.0.0.2:2222,10.0.0.3:2222 --chief_hosts=10.0.0.4:2222
    python -m dpkit task --job_name=worker --task_index=1 ...   # same host lists everywhere

or from ``TF_CONFIG`` (what Kubeflow's TFJob sets in every pod)::

    TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 1}}' python -m dpkit task

What the task does depends on the cluster (all train softmax regression on the digits):

============================ ====================================================== ========
cluster                      flavour                                                    chief
============================ ====================================================== ========
chief + ps + workers         TF2 ``ParameterServerStrategy``: the chief schedules     chief:0
                             steps with a ``ClusterCoordinator``; ps and workers
                             only serve (asynchronous)
workers (+ chief), no ps     TF2 ``MultiWorkerMirroredStrategy``: every task trains   chief:0 or
                             on its slice of each global batch (synchronous)          worker:0
ps + workers, ``--tf1``      TF1 between-graph replication (``replica_device_setter``, worker:0
                             ``MonitoredTrainingSession``); ``--sync_replicas`` adds
                             ``SyncReplicasOptimizer``
============================ ====================================================== ========

The chief logs progress, writes checkpoints (``--checkpoint_every``) and TensorBoard
scalars to ``--logdir``, resumes from the newest checkpoint there, and prints the test
accuracy at the end. Servers (ps, and workers under ``ParameterServerStrategy``) exit
cleanly once the chief has gone. Every task stops with a message naming the unreachable
peers if training makes no progress for ``--stall_timeout`` seconds (a synchronous step
waits for every worker, so one lost worker stalls them all).

Bad or inconsistent flags raise :class:`LaunchError` (exit code 2) naming the problem and
the fix, before TensorFlow is imported. Exit codes: 0 done, 1 failed or stalled, 2 bad
flags.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field

JOBS = ("chief", "ps", "worker")
PORT = 2222  # the port TensorFlow's examples and Kubeflow's TFJob use
EXIT_FAILED = 1
EXIT_USAGE = 2
#: Set (to anything) by :class:`dpkit.tasks.Group`: log lines carry no task prefix and
#: results also go out as JSON records.
RECORDS_VARIABLE = "DPKIT_RECORDS"

_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$")
_EXAMPLE = "--ps_hosts=10.0.0.1:2222 --worker_hosts=10.0.0.2:2222,10.0.0.3:2222"


class LaunchError(ValueError):
    """Flags or ``TF_CONFIG`` that cannot describe a task (the message says how to fix it)."""


@dataclass
class Task:
    """Who this process is and what it will do (see :func:`parse`)."""

    job: str
    index: int
    cluster: dict[str, list[str]]
    flavour: str  # "ps_strategy", "mirrored" or "tf1"
    sync_replicas: bool = False
    replicas_to_aggregate: int = 0
    train_steps: int = 200
    batch_size: int = 64
    learning_rate: float = 0.5
    seed: int = 0
    logdir: str = os.path.join("runs", "task")
    checkpoint_every: int = 50
    log_every: int = 20
    start_timeout: float = 60.0
    stall_timeout: float = 60.0
    source: str = "flags"  # or "TF_CONFIG"
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.job}:{self.index}"

    @property
    def address(self) -> str:
        return self.cluster[self.job][self.index]

    @property
    def chief_name(self) -> str:
        """The task that saves checkpoints and summaries: ``chief:0``, else ``worker:0``."""
        return "chief:0" if self.cluster.get("chief") else "worker:0"

    @property
    def is_chief(self) -> bool:
        return self.name == self.chief_name

    @property
    def trains(self) -> bool:
        """Whether this task runs a training loop (the others only serve)."""
        if self.job == "ps":
            return False
        return not (self.flavour == "ps_strategy" and self.job == "worker")

    @property
    def num_workers(self) -> int:
        return len(self.cluster.get("worker", ()))

    def address_of(self, name: str) -> str:
        job, _, index = name.partition(":")
        return self.cluster[job][int(index)]

    def peers(self) -> dict[str, str]:
        """``{"ps:0": address, ...}`` of every other task."""
        return {
            f"{job}:{i}": a
            for job, addresses in self.cluster.items()
            for i, a in enumerate(addresses)
            if (job, i) != (self.job, self.index)
        }

    def tf_config(self) -> str:
        """This task as ``TF_CONFIG`` JSON."""
        return json.dumps(
            {"cluster": self.cluster, "task": {"type": self.job, "index": self.index}}
        )


# ----------------------------------------------------------------------------- parsing


def parse_hosts(text: str | None, flag: str) -> list[str]:
    """``"a:2222,b:2222"`` -> ``["a:2222", "b:2222"]``, each checked (``flag`` names it)."""
    if text is None or not text.strip():
        return []
    hosts = []
    for entry in text.split(","):
        hosts.append(check_address(entry.strip(), flag))
    return hosts


def check_address(entry: str, where: str) -> str:
    """Return ``entry`` if it is ``HOST:PORT``, else raise a :class:`LaunchError`."""
    if not isinstance(entry, str):
        raise LaunchError(f"{where}: {entry!r} is not an address; write HOST:PORT, e.g. {_EXAMPLE}")
    if not entry:
        raise LaunchError(
            f"{where} has an empty entry (two commas, or a comma at an end); write HOST:PORT "
            f"entries separated by single commas, e.g. {_EXAMPLE}"
        )
    host, sep, port = entry.rpartition(":")
    if not sep or not host:
        raise LaunchError(
            f"{where}: {entry!r} is not HOST:PORT (no port); add the port each task listens "
            f"on, e.g. {entry.strip(':')}:{PORT}"
        )
    if not port.isdigit():
        raise LaunchError(
            f"{where}: the port {port!r} in {entry!r} is not a number; write HOST:PORT with a "
            f"port number, e.g. {host}:{PORT}"
        )
    if not 1 <= int(port) <= 65535:
        raise LaunchError(f"{where}: the port {port} in {entry!r} is outside 1-65535.")
    if not _HOST.match(host):
        raise LaunchError(
            f"{where}: {host!r} in {entry!r} is not a host name or address; write e.g. "
            f"10.0.0.2:{PORT}, worker-0.example:{PORT} or [::1]:{PORT}"
        )
    return entry


def _whole(text, flag: str, minimum: int) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise LaunchError(f"{flag} must be a whole number, got {text!r}.") from None
    if value < minimum:
        raise LaunchError(f"{flag} must be >= {minimum}, got {value}.")
    return value


def _positive(text, flag: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise LaunchError(f"{flag} must be a number, got {text!r}.") from None
    if not value > 0:
        raise LaunchError(f"{flag} must be positive, got {text!r}.")
    return value


class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # raise instead of printing and exiting
        raise _ArgumentError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m dpkit task",
        description=(
            "Run one task (ps, worker or chief) of a TensorFlow cluster: give the task with "
            "--job_name, --task_index and the host lists, or in TF_CONFIG. Every task of a "
            "cluster gets the same host lists."
        ),
        epilog=(
            "example, one ps and two workers on three machines (TF1 flavour, worker 0 is "
            "the chief):\n"
            f"  python -m dpkit task --tf1 --job_name=ps --task_index=0 {_EXAMPLE}\n"
            f"  python -m dpkit task --tf1 --job_name=worker --task_index=0 {_EXAMPLE}\n"
            f"  python -m dpkit task --tf1 --job_name=worker --task_index=1 {_EXAMPLE}"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    who = p.add_argument_group("the task (or set TF_CONFIG instead)")
    who.add_argument("--job_name", help="ps, worker or chief")
    who.add_argument("--task_index", help="index of this task in its job (0, 1, ...)")
    who.add_argument("--ps_hosts", help="comma-separated HOST:PORT of the ps tasks")
    who.add_argument("--worker_hosts", help="comma-separated HOST:PORT of the worker tasks")
    who.add_argument("--chief_hosts", help="HOST:PORT of the chief (ParameterServerStrategy)")
    how = p.add_argument_group("training")
    how.add_argument("--tf1", action="store_true", help="TF1 between-graph replication")
    how.add_argument(
        "--sync_replicas", action="store_true", help="with --tf1: SyncReplicasOptimizer"
    )
    how.add_argument(
        "--replicas_to_aggregate",
        default="0",
        help="with --sync_replicas: gradients per update (default: the number of workers)",
    )
    how.add_argument("--train_steps", default="200", help="global steps to train (200)")
    how.add_argument("--batch_size", default="64", help="examples per step (64)")
    how.add_argument("--learning_rate", default="0.5", help="SGD learning rate (0.5)")
    how.add_argument("--seed", default="0", help="seed of the weights and the data order (0)")
    how.add_argument(
        "--logdir",
        default=os.path.join("runs", "task"),
        help="checkpoints and TensorBoard logs, written by the chief (runs/task)",
    )
    how.add_argument("--checkpoint_every", default="50", help="steps between checkpoints (50)")
    how.add_argument("--log_every", default="20", help="steps between progress lines (20)")
    how.add_argument(
        "--start_timeout", default="60", help="seconds to wait for the other tasks (60)"
    )
    how.add_argument(
        "--stall_timeout",
        default="60",
        help="seconds without progress before the task gives up (60)",
    )
    return p


def parse(argv: list[str] | None = None, environ=None) -> Task:
    """Read the task from flags, else from ``TF_CONFIG``, and check it all.

    Args:
        argv: the arguments after ``task`` (``sys.argv`` style, without the program).
        environ: where ``TF_CONFIG`` is read (``os.environ`` by default).

    Raises:
        LaunchError: a bad or inconsistent flag or ``TF_CONFIG``, with the fix.
    """
    environ = os.environ if environ is None else environ
    parser = _parser()
    try:
        args = parser.parse_args([] if argv is None else list(argv))
    except _ArgumentError as error:
        raise LaunchError(f"{error}; see python -m dpkit task --help") from None

    by_flags = any(
        v is not None
        for v in (
            args.job_name,
            args.task_index,
            args.ps_hosts,
            args.worker_hosts,
            args.chief_hosts,
        )
    )
    notes = []
    if by_flags:
        job, index, cluster = _from_flags(args)
        source = "flags"
        if environ.get("TF_CONFIG"):
            notes.append("TF_CONFIG is set but ignored: the flags name the task")
    elif environ.get("TF_CONFIG"):
        job, index, cluster = _from_tf_config(environ["TF_CONFIG"])
        source = "TF_CONFIG"
    else:
        raise LaunchError(
            "no task given: pass --job_name, --task_index and the host lists "
            f"(e.g. --job_name=worker --task_index=0 {_EXAMPLE}), or set TF_CONFIG."
        )

    addresses = [a for job_addresses in cluster.values() for a in job_addresses]
    for address in set(addresses):
        if addresses.count(address) > 1:
            owners = [
                f"{j}:{i}" for j, aa in cluster.items() for i, a in enumerate(aa) if a == address
            ]
            raise LaunchError(
                f"the address {address} is given to {' and '.join(owners)}; every task needs "
                "an address of its own (another port, or another host)."
            )

    task = Task(job=job, index=index, cluster=cluster, flavour="", source=source, notes=notes)
    _choose_flavour(task, args)
    task.train_steps = _whole(args.train_steps, "--train_steps", 1)
    task.batch_size = _whole(args.batch_size, "--batch_size", 1)
    task.learning_rate = _positive(args.learning_rate, "--learning_rate")
    task.seed = _whole(args.seed, "--seed", 0)
    task.logdir = args.logdir
    task.checkpoint_every = _whole(args.checkpoint_every, "--checkpoint_every", 1)
    task.log_every = _whole(args.log_every, "--log_every", 1)
    task.start_timeout = _positive(args.start_timeout, "--start_timeout")
    task.stall_timeout = _positive(args.stall_timeout, "--stall_timeout")
    tasks_training = task.num_workers + len(task.cluster.get("chief", ()))
    if task.flavour == "mirrored" and task.batch_size % tasks_training:
        raise LaunchError(
            f"--batch_size={task.batch_size} does not split evenly over {tasks_training} "
            f"workers; use a multiple of {tasks_training}, e.g. "
            f"--batch_size={tasks_training * max(1, task.batch_size // tasks_training)}."
        )
    return task


def _from_flags(args) -> tuple[str, int, dict]:
    if args.job_name is None:
        raise LaunchError(
            f"--job_name is missing; pass --job_name=ps, worker or chief ({_EXAMPLE})."
        )
    job = args.job_name.strip()
    if job not in JOBS:
        hint = " (TF1's 'master' is called 'chief' now)" if job == "master" else ""
        raise LaunchError(f"unknown --job_name {job!r}{hint}; choose ps, worker or chief.")
    if args.task_index is None:
        raise LaunchError(
            "--task_index is missing; pass --task_index=0 for the first task of a job."
        )
    index = _whole(args.task_index, "--task_index", 0)
    cluster = {}
    for name, text in (
        ("chief", args.chief_hosts),
        ("ps", args.ps_hosts),
        ("worker", args.worker_hosts),
    ):
        flag = f"--{name}_hosts"
        if text is not None and not text.strip():
            raise LaunchError(
                f"{flag} is empty; list HOST:PORT entries, e.g. {_EXAMPLE}, or leave the flag out."
            )
        hosts = parse_hosts(text, flag)
        if hosts:
            cluster[name] = hosts
    _check_cluster(cluster, job, index, "flags")
    return job, index, cluster


def _from_tf_config(text: str) -> tuple[str, int, dict]:
    try:
        config = json.loads(text)
    except ValueError as error:
        raise LaunchError(
            f"TF_CONFIG is not valid JSON ({error}); it should look like "
            '{"cluster": {"worker": ["host:2222"]}, "task": {"type": "worker", "index": 0}}'
        ) from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise LaunchError(
            'TF_CONFIG has no "cluster" object; it should map job names to HOST:PORT lists.'
        )
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task:
        raise LaunchError(
            'TF_CONFIG has no "task": {"type": ..., "index": ...}; add the task it describes.'
        )
    job = task["type"]
    if job not in JOBS:
        raise LaunchError(f"TF_CONFIG task type {job!r} is not ps, worker or chief.")
    index = task.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise LaunchError(f"TF_CONFIG task index {index!r} is not a whole number >= 0.")
    cluster = {}
    for name, hosts in config["cluster"].items():
        if name not in JOBS:
            hint = " ('master' is called 'chief' now)" if name == "master" else ""
            raise LaunchError(f"TF_CONFIG cluster job {name!r} is not ps, worker or chief{hint}.")
        if isinstance(hosts, str) or not isinstance(hosts, list):
            raise LaunchError(
                f'TF_CONFIG cluster job {name!r} must be a list of "HOST:PORT" strings.'
            )
        where = f"TF_CONFIG cluster {name!r}"
        checked = [check_address(h, where) for h in hosts]
        if checked:
            cluster[name] = checked
    _check_cluster(cluster, job, index, "TF_CONFIG")
    return job, index, cluster


def _check_cluster(cluster: dict, job: str, index: int, source: str) -> None:
    flag = (
        (lambda j: f"--{j}_hosts") if source == "flags" else (lambda j: f"TF_CONFIG cluster {j!r}")
    )
    if not cluster.get("worker"):
        raise LaunchError(
            f"{flag('worker')} is missing or empty; a cluster needs at least one worker, e.g. "
            f"{_EXAMPLE}"
        )
    if len(cluster.get("chief", ())) > 1:
        raise LaunchError(
            f"{flag('chief')} lists {len(cluster['chief'])} tasks; a cluster has one chief."
        )
    count = len(cluster.get(job, ()))
    if count == 0:
        raise LaunchError(
            f"this task is {job}:{index} but {flag(job)} is missing or empty; list the {job} "
            f"addresses (every task gets the same lists)."
        )
    if index >= count:
        raise LaunchError(
            f"task index {index} is out of range: {flag(job)} lists {count} {job} task(s), "
            f"so the index is 0-{count - 1}."
        )


def _choose_flavour(task: Task, args) -> None:
    has_ps, has_chief = bool(task.cluster.get("ps")), bool(task.cluster.get("chief"))
    workers = task.num_workers
    if args.tf1:
        if has_chief:
            raise LaunchError(
                "--tf1 clusters have no chief job (worker 0 is the chief); drop the chief "
                "from the host lists, or drop --tf1 for ParameterServerStrategy."
            )
        if not has_ps:
            raise LaunchError("--tf1 needs at least one ps to hold the variables; add --ps_hosts.")
        task.flavour = "tf1"
    elif has_ps:
        if not has_chief:
            raise LaunchError(
                "a cluster with ps tasks needs a chief to run ParameterServerStrategy's training "
                "loop: add --chief_hosts=HOST:PORT and start a task with --job_name=chief, or "
                "add --tf1 for TF1 between-graph replication, where worker 0 is the chief."
            )
        if args.sync_replicas:
            raise LaunchError(
                "--sync_replicas belongs to the TF1 flavour (ParameterServerStrategy is "
                "asynchronous); add --tf1, or leave out the ps for synchronous "
                "MultiWorkerMirroredStrategy."
            )
        task.flavour = "ps_strategy"
    else:
        if args.sync_replicas:
            task.notes.append("--sync_replicas ignored: MultiWorkerMirroredStrategy is synchronous")
        task.flavour = "mirrored"
    task.sync_replicas = bool(args.sync_replicas) and task.flavour == "tf1"
    aggregate = _whole(args.replicas_to_aggregate, "--replicas_to_aggregate", 0)
    if aggregate and not task.sync_replicas:
        raise LaunchError("--replicas_to_aggregate only applies with --tf1 --sync_replicas.")
    if aggregate > workers:
        raise LaunchError(
            f"--replicas_to_aggregate={aggregate} is more than the {workers} workers; a step "
            "would never complete. Use at most the number of workers."
        )
    task.replicas_to_aggregate = aggregate or (workers if task.sync_replicas else 0)


# ----------------------------------------------------------------------------- logging


class _Log:
    def __init__(self, task: Task):
        self.task = task
        self.records = bool(os.environ.get(RECORDS_VARIABLE))
        self.lock = threading.Lock()

    def __call__(self, message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        prefix = "" if self.records else f"{self.task.name} "
        with self.lock:
            print(f"{stamp} {prefix}{message}", flush=True)

    def record(self, **values) -> None:
        if self.records:
            with self.lock:
                print(json.dumps(values), flush=True)


class _Progress:
    """The last time training moved; a watchdog thread ends a stalled task."""

    def __init__(self, task: Task, log: _Log):
        self.task, self.log = task, log
        self.moved = time.monotonic()
        self.started = False

    def tick(self) -> None:
        self.started = True
        self.moved = time.monotonic()

    def watch(self) -> None:
        def run():
            while True:
                time.sleep(0.5)
                limit = self.task.stall_timeout if self.started else self.task.start_timeout
                if time.monotonic() - self.moved > limit:
                    self.log(_stall_message(self.task, self.started, limit))
                    sys.stderr.write(_stall_message(self.task, self.started, limit) + "\n")
                    sys.stderr.flush()
                    sys.stdout.flush()
                    os._exit(EXIT_FAILED)

        threading.Thread(target=run, daemon=True, name="dpkit-stall").start()


def _stall_message(task: Task, started: bool, limit: float) -> str:
    from dpkit.cluster import port_answers

    silent = [name for name, address in task.peers().items() if not port_answers(address, 1.0)]
    what = "no training step" if started else "training did not start"
    who = (
        f"these tasks do not answer: {', '.join(f'{n} ({task.address_of(n)})' for n in silent)}"
        if silent
        else "every task's port answers, so one is slow or cut off mid-way"
    )
    why = ""
    if task.flavour == "mirrored" or task.sync_replicas:
        why = "; a synchronous step waits for every worker, so one lost worker stops them all"
    return f"giving up: {what} in {limit:g} s; {who}{why}."


# ----------------------------------------------------------------------------- serving


def _watch_chief(task: Task, log: _Log) -> int:
    """In a server task: wait for the chief to appear, then to go; return the exit code."""
    from dpkit.cluster import port_answers

    chief = task.address_of(task.chief_name)
    deadline = time.monotonic() + task.start_timeout
    while not port_answers(chief):
        if time.monotonic() > deadline:
            log(
                f"the chief {task.chief_name} ({chief}) never answered in "
                f"{task.start_timeout:g} s; stopping"
            )
            return EXIT_FAILED
        time.sleep(0.5)
    log(f"the chief {task.chief_name} is up; serving until it finishes")
    misses = 0
    while misses < 3:  # 1.5 s without an answer: the chief has gone
        time.sleep(0.5)
        misses = 0 if port_answers(chief) else misses + 1
    log(f"the chief {task.chief_name} stopped answering (it finished, or we are cut off); stopping")
    return 0


def _serve(task: Task, log: _Log) -> int:
    """A ps, or a worker under ParameterServerStrategy: a TF server until the chief goes."""
    from dpkit import cluster

    threads = max(2, task.num_workers + 1)  # fewer deadlocks on 2 cores (lesson 07)
    definition = cluster.server_def(task.cluster, task.job, task.index, threads)
    try:
        library = cluster._load_server_library()
        server = library.TF_NewServer(definition)
        library.TF_ServerStart(server)
    except (ImportError, OSError, AttributeError):
        import tensorflow as tf

        server = tf.distribute.Server(tf.train.ServerDef.FromString(definition), start=True)
    except Exception as error:  # noqa: BLE001 -- the C API's errors: report and exit
        log(f"could not start the server at {task.address}: {error}")
        return EXIT_FAILED
    log(f"serving at {task.address} ({'variables' if task.job == 'ps' else 'steps'} for the chief)")
    return _watch_chief(task, log)


# ----------------------------------------------------------------------------- data and model


def _data(task: Task):
    from dpkit import data

    arrays = data.load("digits", seed=task.seed)
    flat = lambda x: x.reshape(len(x), -1).astype("float32")  # noqa: E731
    return flat(arrays.x_train), arrays.y_train.astype("int32"), flat(arrays.x_test), arrays.y_test


def accuracy(w, b, x, y) -> float:
    """Test accuracy of softmax regression ``(w, b)`` on ``(x, y)``, in NumPy."""
    import numpy as np

    return float(np.mean(np.argmax(x @ w + b, axis=1) == y))


def _batches(x, y, batch: int, seed: int):
    """Endless shuffled batches (a new permutation each epoch)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            take = order[start : start + batch]
            yield x[take], y[take]


def _finish(task: Task, log: _Log, step: int, w, b, x_test, y_test, loss: float) -> None:
    acc = accuracy(w, b, x_test, y_test)
    log(f"done: global step {step}, last loss {loss:.4f}, test accuracy {acc:.3f}")
    log.record(done=True, global_step=step, loss=loss, accuracy=acc, logdir=task.logdir)


# ----------------------------------------------------------------------------- TF2 flavours


def _train_ps_strategy(task: Task, log: _Log, progress: _Progress) -> int:
    from dpkit import cluster, tasks

    try:
        cluster.probe(task.peers(), timeout=task.start_timeout)
    except cluster.ClusterNotReadyError as error:
        log(f"cannot start: {error}")
        return EXIT_FAILED
    import tensorflow as tf

    x, y, x_test, y_test = _data(task)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(task.cluster), task_type="chief", task_id=0, rpc_layer="grpc"
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    w0, b0 = tasks.softmax_init(x.shape[1], 10, task.seed)
    with strategy.scope():
        w, b = tf.Variable(w0, name="w"), tf.Variable(b0, name="b")
        global_step = tf.Variable(0, dtype=tf.int64, name="global_step")
    checkpoint = tf.train.Checkpoint(w=w, b=b, global_step=global_step)
    manager = tf.train.CheckpointManager(checkpoint, task.logdir, max_to_keep=3)
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint)
        log(f"resumed from {manager.latest_checkpoint} at step {int(global_step.numpy())}")
    writer = tf.summary.create_file_writer(os.path.join(task.logdir, "train"))

    batch = task.batch_size

    def dataset_fn():  # runs on each worker; no seed, so each worker draws its own order
        data = tf.data.Dataset.from_tensor_slices((x, y))
        data = data.shuffle(len(x))
        return data.repeat().batch(batch, drop_remainder=True)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    lr = task.learning_rate

    @tf.function
    def train_step(iterator):
        def replica(xb, yb):
            with tf.GradientTape() as tape:
                logits = tf.matmul(xb, w) + b
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(lr * gw)
            b.assign_sub(lr * gb)
            global_step.assign_add(1)
            return loss

        xb, yb = next(iterator)
        return strategy.run(replica, (xb, yb))

    step = int(global_step.numpy())
    log(
        f"training with ParameterServerStrategy on {task.num_workers} worker(s), "
        f"{len(task.cluster['ps'])} ps; steps {step} -> {task.train_steps}"
    )
    progress.tick()
    loss, started = float("nan"), time.perf_counter()
    while step < task.train_steps:
        chunk = min(  # up to the next log line, checkpoint or the end
            task.log_every - step % task.log_every,
            task.checkpoint_every - step % task.checkpoint_every,
            task.train_steps - step,
        )
        results = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(chunk)]
        coordinator.join()
        progress.tick()
        loss = float(results[-1].fetch())
        step = int(global_step.numpy())
        rate = step / max(time.perf_counter() - started, 1e-9)
        if step % task.log_every == 0 or step >= task.train_steps:
            log(f"step {step}/{task.train_steps} loss {loss:.4f} ({rate:.0f} steps/s)")
            log.record(step=step, loss=loss)
            with writer.as_default():
                tf.summary.scalar("loss", loss, step=step)
        if step % task.checkpoint_every == 0 or step >= task.train_steps:
            manager.save(checkpoint_number=step)
    writer.flush()
    _finish(task, log, step, w.numpy(), b.numpy(), x_test, y_test, loss)
    return 0


def _train_mirrored(task: Task, log: _Log, progress: _Progress) -> int:
    from dpkit import tasks

    os.environ["TF_CONFIG"] = task.tf_config()
    import tensorflow as tf

    x, y, x_test, y_test = _data(task)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    members = [n for n in ("chief:0",) if task.cluster.get("chief")] + [
        f"worker:{i}" for i in range(task.num_workers)
    ]
    rank, size = members.index(task.name), len(members)
    per_task = task.batch_size // size
    w0, b0 = tasks.softmax_init(x.shape[1], 10, task.seed)
    with strategy.scope():
        w, b = tf.Variable(w0, name="w"), tf.Variable(b0, name="b")
        global_step = tf.Variable(0, dtype=tf.int64, name="global_step")
    checkpoint = tf.train.Checkpoint(w=w, b=b, global_step=global_step)
    # every task writes (a collective save needs all); only the chief's copy is kept
    directory = (
        task.logdir if task.is_chief else os.path.join(task.logdir, f"tmp-{task.job}-{task.index}")
    )
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3)
    restored = 0.0
    if task.is_chief and manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint)
        restored = 1.0
        log(f"resumed from {manager.latest_checkpoint} at step {int(global_step.numpy())}")
    lr, global_batch = task.learning_rate, task.batch_size

    @tf.function
    def share(flag):
        # the chief's values to everyone: the others contribute zeros to a sum
        def replica(flag):
            ctx = tf.distribute.get_replica_context()
            step = tf.reshape(tf.cast(global_step, tf.float32), [1])  # no scalars: an
            flag = tf.reshape(flag, [1])  # all-reduce of a scalar fails across workers
            values = [w * flag, b * flag, step * flag, flag]
            return ctx.all_reduce("sum", values)

        return strategy.run(replica, (flag,))

    @tf.function
    def train_step(xb, yb):
        def replica(xb, yb):
            with tf.GradientTape() as tape:
                logits = tf.matmul(xb, w) + b
                losses = tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits)
                loss = tf.reduce_sum(losses) / global_batch
            grads = tape.gradient(loss, [w, b])
            grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
            w.assign_sub(lr * grads[0])
            b.assign_sub(lr * grads[1])
            global_step.assign_add(1)
            return loss

        return strategy.reduce("sum", strategy.run(replica, (xb, yb)), axis=None)

    sw, sb, sstep, any_restored = share(tf.constant(restored if task.is_chief else 0.0))
    if float(any_restored[0]) > 0:
        w.assign(sw)
        b.assign(sb)
        global_step.assign(int(round(float(sstep[0]))))
    progress.tick()
    writer = (
        tf.summary.create_file_writer(os.path.join(task.logdir, "train")) if task.is_chief else None
    )
    step = int(global_step.numpy())
    log(
        f"training with MultiWorkerMirroredStrategy as task {rank} of {size}; "
        f"steps {step} -> {task.train_steps}"
    )
    batches = _batches(x, y, global_batch, task.seed)
    for _ in range(step):
        next(batches)  # the same data order as a run that never stopped
    mine = slice(rank * per_task, (rank + 1) * per_task)
    loss, started, first = float("nan"), time.perf_counter(), step
    while step < task.train_steps:
        xb, yb = next(batches)
        loss = float(train_step(tf.constant(xb[mine]), tf.constant(yb[mine])))
        step += 1
        progress.tick()
        if step % task.log_every == 0 or step == task.train_steps:
            rate = (step - first) / max(time.perf_counter() - started, 1e-9)
            log(f"step {step}/{task.train_steps} loss {loss:.4f} ({rate:.0f} steps/s)")
            log.record(step=step, loss=loss)
            if writer is not None:
                with writer.as_default():
                    tf.summary.scalar("loss", loss, step=step)
        if step % task.checkpoint_every == 0 or step == task.train_steps:
            manager.save(checkpoint_number=step)
    if writer is not None:
        writer.flush()
    if not task.is_chief:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
    _finish(task, log, step, w.numpy(), b.numpy(), x_test, y_test, loss)
    return 0


# ----------------------------------------------------------------------------- TF1 flavour


def _train_tf1(task: Task, log: _Log, progress: _Progress) -> int:
    import tensorflow as tf

    from dpkit import tasks

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    tf.get_logger().setLevel("ERROR")  # the TF1 APIs' deprecation notices: known, and noisy
    _quiet_closed_queue_runners()
    x, y, x_test, y_test = _data(task)
    spec = tf.train.ClusterSpec(task.cluster)
    threads = max(2, task.num_workers + 1)
    server = tf.distribute.Server(
        spec,
        job_name="worker",
        task_index=task.index,
        config=v1.ConfigProto(inter_op_parallelism_threads=threads),
    )
    w0, b0 = tasks.softmax_init(x.shape[1], 10, task.seed)
    device = v1.train.replica_device_setter(
        worker_device=f"/job:worker/task:{task.index}", cluster=spec
    )
    with v1.device(device):
        global_step = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", initializer=w0)
        b = v1.get_variable("b", initializer=b0)
        xb = v1.placeholder(tf.float32, [None, x.shape[1]])
        yb = v1.placeholder(tf.int32, [None])
        logits = tf.matmul(xb, w) + b
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits)
        )
        opt = v1.train.GradientDescentOptimizer(task.learning_rate)
        if task.sync_replicas:
            opt = v1.train.SyncReplicasOptimizer(
                opt,
                replicas_to_aggregate=task.replicas_to_aggregate,
                total_num_replicas=task.num_workers,
            )
        train_op = opt.minimize(loss, global_step=global_step)
        v1.summary.scalar("loss", loss)
    # A synchronous worker other than the chief keeps stepping until the chief has gone:
    # if it stopped at the last step by itself, the chief could wait forever for the
    # gradient that completes its last round (measured).
    stop_here = task.is_chief or not task.sync_replicas
    hooks = [v1.train.StopAtStepHook(last_step=task.train_steps)] if stop_here else []
    if task.sync_replicas:
        hooks.append(opt.make_session_run_hook(is_chief=task.is_chief))
    config = v1.ConfigProto(
        device_filters=["/job:ps", f"/job:worker/task:{task.index}"],
        inter_op_parallelism_threads=threads,
    )
    state = {"mine": 0, "step": 0}  # steps run here, the last global step seen
    if task.is_chief:
        session = v1.train.MonitoredTrainingSession(
            master=server.target,
            is_chief=True,
            checkpoint_dir=task.logdir,
            save_checkpoint_steps=task.checkpoint_every,
            save_summaries_steps=task.log_every,
            log_step_count_steps=0,
            # after the last step the sync chief's queue runner still waits for a round
            # that no worker will finish: give it 2 s on close, not 120
            stop_grace_period_secs=2,
            hooks=hooks,
            config=config,
        )
    else:  # polls every 0.5 s (not 30) until the chief has initialised the variables
        creator = tasks._worker_session_creator()(master=server.target, config=config)
        session = v1.train.MonitoredSession(session_creator=creator, hooks=hooks)
        threading.Thread(target=_leave_with_chief, args=(task, log, state), daemon=True).start()
    mode = (
        f"sync, {task.replicas_to_aggregate} of {task.num_workers}"
        if task.sync_replicas
        else "async"
    )
    batches = _batches(x, y, task.batch_size, task.seed + task.index)
    value = float("nan")
    with session as sess:
        # the raw session: hooks would add their fetches (summaries need the feed)
        done = int(sess.run_step_fn(lambda step_context: step_context.session.run(global_step)))
        log(
            f"training with TF1 between-graph replication ({mode}); "
            f"global step {done} -> {task.train_steps}"
        )
        progress.tick()
        started = time.perf_counter()
        while not sess.should_stop():
            xs, ys = next(batches)
            _, value, done = sess.run([train_op, loss, global_step], {xb: xs, yb: ys})
            state["mine"] = mine = state["mine"] + 1
            state["step"] = int(done)
            progress.tick()
            if mine % task.log_every == 0:
                rate = mine / max(time.perf_counter() - started, 1e-9)
                log(
                    f"global step {done}/{task.train_steps} loss {value:.4f} "
                    f"({mine} steps here, {rate:.0f}/s)"
                )
                log.record(step=int(done), loss=float(value), mine=mine)
    if task.is_chief:  # the session saved a last checkpoint as it closed
        reader = tf.train.load_checkpoint(task.logdir)
        final_w, final_b = reader.get_tensor("w"), reader.get_tensor("b")
        done = int(reader.get_tensor("global_step"))
        _finish(task, log, done, final_w, final_b, x_test, y_test, float(value))
    else:
        _report_worker(log, state)
    return 0


def _report_worker(log: _Log, state: dict) -> None:
    log(f"done: {state['mine']} steps here; last global step seen {state['step']}")
    log.record(done=True, global_step=state["step"], mine=state["mine"])


def _quiet_closed_queue_runners() -> None:
    """No traceback from a queue-runner thread cancelled because its session closed."""
    default = threading.excepthook

    def hook(args):
        if args.exc_type.__name__ == "CancelledError" and "QueueRunner" in args.thread.name:
            return
        default(args)

    threading.excepthook = hook


def _leave_with_chief(task: Task, log: _Log, state: dict) -> None:
    """A TF1 worker that is not the chief ends when the chief has finished.

    Started once the session exists, so the chief was up (it initialised the variables).
    """
    from dpkit.cluster import port_answers

    chief = task.address_of(task.chief_name)
    misses = 0
    while misses < 3:  # 1.5 s without an answer
        time.sleep(0.5)
        misses = 0 if port_answers(chief) else misses + 1
    log(f"the chief {task.chief_name} stopped answering (it finished, or we are cut off); stopping")
    _report_worker(log, state)
    sys.stdout.flush()
    os._exit(0)


# ----------------------------------------------------------------------------- main


def run(task: Task) -> int:
    """Run the task; return its exit code."""
    log = _Log(task)
    for note in task.notes:
        log(f"note: {note}")
    role = "chief, " if task.is_chief else ""
    log(f"{role}{task.flavour} flavour, address {task.address}, task from {task.source}")
    if not task.trains:
        return _serve(task, log)
    progress = _Progress(task, log)
    progress.watch()
    if task.is_chief:
        os.makedirs(task.logdir, exist_ok=True)
    train = {"ps_strategy": _train_ps_strategy, "mirrored": _train_mirrored, "tf1": _train_tf1}
    return train[task.flavour](task, log, progress)


def main(argv: list[str] | None = None, environ=None) -> int:
    """``python -m dpkit task ...``: parse, run, and leave without TensorFlow's slow teardown."""
    try:
        task = parse(sys.argv[1:] if argv is None else argv, environ)
    except LaunchError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    code = run(task)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

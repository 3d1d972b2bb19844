"""Programs that run as the tasks of a cluster, and :class:`Group`, which runs several.

Introduced in lesson 07. Some distributed set-ups need one *process* per task, each with
its own ``TF_CONFIG`` (``MultiWorkerMirroredStrategy``) or its own TF1 session (between-graph
replication). :class:`Group` starts those processes from a notebook and keeps them safe:

* each child runs ``python -m dpkit.tasks PROGRAM ...``, which first starts a watchdog so
  the child exits when the notebook's kernel dies, then runs the program;
* each child has a process group of its own; the ``with`` block kills and reaps them all
  on exit, on an exception, on a kernel interrupt and on a timeout;
* children talk in lines: a JSON object is a *record* (``{"step": 3, "loss": 0.4}``),
  collected per task; any other line is a log line, echoed live as ``[worker:1] ...``;
  :meth:`Group.send` writes a line to a child's stdin (used to step workers in lockstep).

Programs (each reads its task from ``TF_CONFIG`` or its arguments):

* ``mwms``: a ``MultiWorkerMirroredStrategy`` worker training softmax regression on the
  digits with a custom loop; worker ``w`` takes its slice of every global batch, so the run
  equals one device on the whole batch. It records the loss per step and saves its final
  weights to an ``.npz`` file.
* ``tf1``: a TF1 between-graph replication worker (``replica_device_setter``, plain SGD or
  ``SyncReplicasOptimizer``) that steps when told to, for the global-step experiment.
* ``pinned``: a throughput worker of lesson 05 (:mod:`dpkit.pinned`), pinned to one core.
* ``task``: the task launcher of lesson 08 (:mod:`dpkit.launcher`, ``python -m dpkit task``)
  with the arguments given; it sends its results as records.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time

from dpkit import _procs

PROGRAMS = ("mwms", "tf1", "task", "pinned")


class TaskFailedError(RuntimeError):
    """A task's process exited with an error (its stderr is in the message)."""


class Group:
    """Child processes, one per task, as a context manager.

    Introduced in lesson 07::

        with tasks.Group(timeout=60) as group:
            for i in range(2):
                group.start(f"worker:{i}", "mwms", "--steps", "20",
                            env={"TF_CONFIG": c.tf_config("worker", i, as_json=True)})
            group.wait()
        group.records["worker:0"]  # [{"step": 0, "loss": ...}, ...]
        group.arguments["worker:0"]  # ["--steps", "20"]: what start was given

    Args:
        timeout: seconds any one :meth:`wait` or :meth:`wait_for` may take before every
            child is killed and ``TimeoutError`` is raised.
        echo: called with each log line (``print`` by default; ``None`` for silence).
    """

    def __init__(self, timeout: float = 120.0, echo=print):
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")
        self.timeout = float(timeout)
        self.echo = echo
        self.records: dict[str, list[dict]] = {}
        self._procs: dict[str, subprocess.Popen] = {}
        self._stderr: dict[str, object] = {}
        self._cursor: dict[str, int] = {}
        self._ended: dict[str, bool] = {}
        self._lines: queue.Queue = queue.Queue()
        self._killed: set[str] = set()
        self.arguments: dict[str, list[str]] = {}  # name -> the program's arguments, as given

    # -- starting

    def start(
        self, name: str, program: str, *args, env: dict | None = None, wrap: list | None = None
    ) -> int:
        """Start ``program`` (one of :data:`PROGRAMS`) as task ``name``; return its PID.

        ``wrap`` goes before the command line, for a command that runs it somewhere else and
        then becomes it, e.g. ``["ip", "netns", "exec", "host1"]``.
        """
        if program not in PROGRAMS:
            raise ValueError(f"unknown program {program!r}; choose one of {', '.join(PROGRAMS)}.")
        if name in self._procs:
            raise ValueError(f"a task named {name!r} was already started in this group.")
        argv = [*(wrap or []), sys.executable, "-m", "dpkit.tasks", program, *map(str, args)]
        env = {"DPKIT_RECORDS": "1", **(env or {})}  # the launcher's results as records
        proc, stderr = _procs.spawn(argv, stdin=subprocess.PIPE, env=env)
        self._procs[name], self._stderr[name] = proc, stderr
        self.arguments[name] = [str(a) for a in args]
        self.records[name], self._cursor[name], self._ended[name] = [], 0, False
        threading.Thread(
            target=self._read, args=(name, proc.stdout), daemon=True, name=f"dpkit-read-{name}"
        ).start()
        return proc.pid

    def _read(self, name: str, stream) -> None:
        with stream:  # closed here, at EOF, so that no other thread closes it under us
            for raw in stream:
                self._lines.put((name, raw.decode(errors="replace").rstrip("\n")))
        self._lines.put((name, None))

    # -- talking to the children

    @property
    def pids(self) -> dict[str, int]:
        """``{name: pid}`` of the children still running."""
        return {n: p.pid for n, p in self._procs.items() if p.poll() is None}

    def send(self, name: str, text: str = "") -> None:
        """Write one line to task ``name``'s stdin."""
        proc = self._procs[name]
        try:
            proc.stdin.write((text + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self._raise_failed(name)

    def _pump(self, deadline: float, waiting: str) -> None:
        """Handle one line (or EOF) from any child; raise TimeoutError past the deadline."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            self.close()
            raise TimeoutError(
                f"{waiting} took more than {self.timeout:g} s; every task was stopped. "
                "Raise the Group's timeout on a slow machine."
            )
        try:
            name, line = self._lines.get(timeout=min(remaining, 0.5))
        except queue.Empty:
            return
        if line is None:
            self._ended[name] = True
            return
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            self.records[name].append(record)
        elif self.echo is not None and line.strip():
            self.echo(f"[{name}] {line}")

    def wait_for(self, name: str, key: str, timeout: float | None = None) -> dict:
        """The next record of task ``name`` that holds ``key`` (older ones are skipped).

        Raises:
            TaskFailedError: the task ended without sending it.
            TimeoutError: it did not come within ``timeout`` (default: the group's).
        """
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            found = self.records[name][self._cursor[name] :]
            for i, record in enumerate(found):
                if key in record:
                    self._cursor[name] += i + 1
                    return record
            self._cursor[name] = len(self.records[name])
            if self._ended[name]:
                self._procs[name].wait()
                self._raise_failed(name, f"ended without reporting {key!r}")
            self._raise_if_another_failed(name)
            self._pump(deadline, f"waiting for {key!r} from task {name}")

    def _raise_if_another_failed(self, name: str) -> None:
        """A task that failed (not one we killed) ends the wait for any other: in a
        collective the others would otherwise wait for it until the timeout."""
        for other, ended in self._ended.items():
            failed = other != name and ended and other not in self._killed
            if failed and self._procs[other].wait() != 0:
                self._raise_failed(other)

    def wait(self, timeout: float | None = None) -> dict[str, int]:
        """Wait for every child to end; return ``{name: exit code}`` (all 0).

        Raises:
            TaskFailedError: a child exited with an error (the others are killed).
            TimeoutError: they did not all end within ``timeout`` (default: the group's).
        """
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not all(self._ended.values()):
            running = sorted(n for n, ended in self._ended.items() if not ended)
            self._pump(deadline, f"waiting for {', '.join(running)} to finish")
            for name, ended in self._ended.items():
                if ended and self._procs[name].wait() != 0:
                    self._raise_failed(name)
        return {n: p.wait() for n, p in self._procs.items()}

    def _raise_failed(self, name: str, what: str = "failed") -> None:
        proc = self._procs[name]
        code = proc.poll()
        error = _procs.tail(self._stderr[name], 2000) or "(empty stderr)"
        self.close()
        raise TaskFailedError(f"task {name} {what} (exit code {code}); its stderr:\n{error}")

    # -- stopping

    def kill(self, name: str) -> None:
        """Kill one task's process group (SIGKILL) and reap it."""
        self._killed.add(name)
        _procs.kill_group(self._procs[name])

    def close(self) -> None:
        """Kill every child's process group and reap it. Safe to call twice."""
        for name, proc in self._procs.items():
            _procs.kill_group(proc)  # its stdout then ends, and the reader closes it
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()
            self._stderr[name].close()

    def __enter__(self) -> Group:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ----------------------------------------------------------------------------- programs


def _record(**values) -> None:
    print(json.dumps(values), flush=True)


def digits_batches(global_batch: int, steps: int, seed: int = 0):
    """The first ``steps`` global batches of flattened digits: ``(x [steps, B, 784], y)``.

    Every worker and the single-device reference take their examples from here.
    """
    import numpy as np

    from dpkit import data

    arrays = data.load("digits", seed=seed)
    n = global_batch * steps
    if n > len(arrays.x_train):
        raise ValueError(
            f"{steps} steps of {global_batch} examples need {n} digits, the training set has "
            f"{len(arrays.x_train)}; use fewer steps or a smaller batch."
        )
    x = arrays.x_train[:n].reshape(steps, global_batch, -1).astype(np.float32)
    y = arrays.y_train[:n].reshape(steps, global_batch).astype(np.int32)
    return x, y


def softmax_init(features: int = 784, classes: int = 10, seed: int = 0):
    """Initial softmax-regression weights ``(w, b)``, the same in every process."""
    import numpy as np

    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 0.01, size=(features, classes)).astype(np.float32)
    return w, np.zeros(classes, np.float32)


def _mwms(args) -> None:
    import numpy as np
    import tensorflow as tf

    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    if "task" not in config:
        raise SystemExit("the mwms program needs TF_CONFIG with a cluster and a task")
    workers = len(config["cluster"]["worker"])
    index = config["task"]["index"]
    if args.global_batch % workers:
        raise SystemExit(f"global batch {args.global_batch} does not split over {workers} workers")
    per_worker = args.global_batch // workers
    x, y = digits_batches(args.global_batch, args.steps, args.seed)
    mine = slice(index * per_worker, (index + 1) * per_worker)
    x, y = x[:, mine], y[:, mine]  # this worker's slice of every global batch

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    print(f"joined the collective as worker {index} of {workers}", flush=True)
    w0, b0 = softmax_init(x.shape[-1], 10, args.seed)
    with strategy.scope():
        w, b = tf.Variable(w0), tf.Variable(b0)

    @tf.function
    def step(xb, yb):
        def replica(xb, yb):
            with tf.GradientTape() as tape:
                logits = tf.matmul(xb, w) + b
                losses = tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits)
                loss = tf.reduce_sum(losses) / args.global_batch
            grads = tape.gradient(loss, [w, b])
            # the all-reduce: every worker ends up with the sum over all workers
            grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
            w.assign_sub(args.lr * grads[0])
            b.assign_sub(args.lr * grads[1])
            return loss

        return strategy.reduce("sum", strategy.run(replica, (xb, yb)), axis=None)

    started = time.perf_counter()
    for i in range(args.steps):
        loss = float(step(tf.constant(x[i]), tf.constant(y[i])))
        _record(step=i, loss=loss, seconds=time.perf_counter() - started)
        if (i + 1) % max(1, args.steps // 4) == 0:
            print(f"step {i + 1}/{args.steps} loss {loss:.4f}", flush=True)
    np.savez(args.out, w=w.numpy(), b=b.numpy())
    _record(done=args.steps, out=args.out)


def _worker_session_creator():
    """TF1's ``WorkerSessionCreator`` with a 0.5 s wait between readiness checks, not 30 s.

    A worker that starts before the chief has initialised the variables otherwise sleeps
    30 s (the book chapter's ``Supervisor`` was given ``recovery_wait_secs=1`` for the same reason).
    """
    import tensorflow as tf
    from tensorflow.python.training import session_manager

    class Creator(tf.compat.v1.train.WorkerSessionCreator):
        def _get_session_manager(self):
            if not self._session_manager:
                self._session_manager = session_manager.SessionManager(
                    local_init_op=self._scaffold.local_init_op,
                    local_init_feed_dict=self._scaffold.local_init_feed_dict,
                    ready_op=self._scaffold.ready_op,
                    ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                    graph=tf.compat.v1.get_default_graph(),
                    recovery_wait_secs=0.5,
                )
            return self._session_manager

    return Creator


def _tf1(args) -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    spec, index = json.loads(args.cluster), args.index
    workers = len(spec["worker"])
    chief = index == 0
    device = v1.train.replica_device_setter(
        worker_device=f"/job:worker/task:{index}", cluster=tf.train.ClusterSpec(spec)
    )
    with v1.device(device):
        global_step = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", [4, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean((tf.matmul(tf.ones([8, 4]), w) - 1.0) ** 2)
        opt = v1.train.GradientDescentOptimizer(0.01)
        if args.sync:
            opt = v1.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=workers, total_num_replicas=workers
            )
        train_op = opt.minimize(loss, global_step=global_step)
    placement = {"global_step": global_step.device, "w": w.device, "loss": loss.device}
    # num_tokens=0: no token before the first round, so a step returns only once its
    # round is applied (the default hands out one round of tokens up front)
    hooks = [opt.make_session_run_hook(is_chief=chief, num_tokens=0)] if args.sync else []
    config = v1.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
    master = "grpc://" + spec["worker"][index]
    if chief:
        session = v1.train.MonitoredTrainingSession(
            master=master, is_chief=True, hooks=hooks, config=config
        )
    else:  # polls every 0.5 s (not 30) until the chief has initialised the variables
        creator = _worker_session_creator()(master=master, config=config)
        session = v1.train.MonitoredSession(session_creator=creator, hooks=hooks)
    with session as sess:
        _record(ready=index, placement=placement)
        for step in range(args.steps):
            sys.stdin.readline()  # Group.send: the caller steps the workers together
            sess.run(train_op)
            _record(stepped=step)
        sys.stdin.readline()
        _record(global_step=int(sess.run(global_step)))


def _main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="a dpkit cluster task (started by tasks.Group)")
    sub = parser.add_subparsers(dest="program", required=True)
    mwms = sub.add_parser("mwms", help="a MultiWorkerMirroredStrategy worker (reads TF_CONFIG)")
    mwms.add_argument("--steps", type=int, default=20)
    mwms.add_argument("--global_batch", type=int, default=64)
    mwms.add_argument("--lr", type=float, default=0.5)
    mwms.add_argument("--seed", type=int, default=0)
    mwms.add_argument("--out", required=True, help="where to save the final weights (.npz)")
    tf1 = sub.add_parser("tf1", help="a TF1 between-graph replication worker")
    tf1.add_argument("--cluster", required=True, help="the ClusterSpec as JSON")
    tf1.add_argument("--index", type=int, required=True)
    tf1.add_argument("--steps", type=int, default=5)
    tf1.add_argument("--sync", action="store_true", help="use SyncReplicasOptimizer")
    sub.add_parser("task", help="the task launcher (python -m dpkit task --help)", add_help=False)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["task"]:
        from dpkit import launcher

        _procs.watch_parent()
        return launcher.main(argv[1:])
    if argv[:1] == ["pinned"]:
        from dpkit import pinned

        _procs.watch_parent()
        pinned.worker_main(argv[1:])
        sys.stdout.flush()
        os._exit(0)  # skip TensorFlow's slow and noisy teardown
    args = parser.parse_args(argv)
    _procs.watch_parent()  # exit when whoever started us dies
    {"mwms": _mwms, "tf1": _tf1}[args.program](args)
    sys.stdout.flush()
    os._exit(0)  # skip TensorFlow's slow and noisy teardown


if __name__ == "__main__":
    sys.exit(_main())

"""Local TensorFlow clusters: ps and worker tasks on this machine, always torn down.

Introduced in lesson 07. :class:`LocalCluster` starts the tasks of a parameter-server
cluster (``ps`` and ``worker`` jobs, an optional ``chief`` slot for the coordinator) on
free loopback ports and gives you what TensorFlow asks for: the ``ClusterSpec``, a
cluster resolver for ``ParameterServerStrategy`` and the ``TF_CONFIG`` of any task.

Two modes:

* ``"process"`` (the default): each task is a child process running one
  ``tf.distribute.Server`` (a TF server cannot be stopped in-process, a process can). Each
  child has its own process group and is killed with it on :meth:`LocalCluster.shutdown`,
  when the ``with`` block ends (normally, on an exception or a kernel interrupt), at
  interpreter exit, and, through a watchdog thread in the child, when the parent dies.
  :meth:`LocalCluster.kill` and :meth:`LocalCluster.restart` stop and restart one task
  (on the same port) for fault experiments.
* ``"in_process"``: the servers live in the current process, like the TensorFlow
  tutorial's ``create_in_process_cluster``. Every server (the ps too) gets
  ``inter_op_parallelism_threads >= num_workers + 1`` (with fewer, training deadlocks on a
  2-core machine). These servers can never be stopped: :meth:`LocalCluster.shutdown` only
  forgets them, and a process holds at most one in-process cluster.

Each task child has a process group of its own rather than the caller's: ``killpg`` then
takes the task and anything it started without touching the caller, and a Jupyter kernel
interrupt reaches only the kernel anyway (the ``with`` block does the cleanup). A child
loads only TensorFlow's server library (half a second), not all of TensorFlow, so a
1 ps + 2 worker cluster is up in about a second on 2 cores.

Coordinators made by :meth:`LocalCluster.make_coordinator` are stopped by
:meth:`LocalCluster.shutdown` (TensorFlow has no public way to): their worker threads end,
except the thread of a worker you killed, which waits inside TensorFlow for it to come back
and is left as a daemon thread that dies with the process.

Safety: every argument is checked before anything starts; :meth:`LocalCluster.start`
returns only when every task's port answers, else it raises :class:`ClusterNotReadyError`
naming the task (``ParameterServerStrategy`` would otherwise block for minutes, deaf to
Ctrl-C). A TF server has no authentication and listens on all interfaces even when its
address says ``127.0.0.1``: the first cluster started warns about it once.
"""

from __future__ import annotations

import atexit
import json
import numbers
import os
import selectors
import socket
import sys
import threading
import time
import warnings

from dpkit import _procs

MODES = ("process", "in_process")

#: Most tasks (ps + workers + chief) a local cluster may have: each is a process or a set
#: of server threads on this one machine.
MAX_TASKS = 16

#: Exit code of a task child whose port was taken by someone else (the parent retries).
EXIT_PORT_TAKEN = 5

#: How many times start() picks new ports when one turns out to be taken.
PORT_ATTEMPTS = 5

_SECURITY_WARNING = (
    "dpkit.cluster: TensorFlow servers have no authentication and listen on all network "
    "interfaces, even when the ClusterSpec says 127.0.0.1; anyone who can reach this "
    "machine's ports can run code in them. Use a trusted network (or a firewall) and shut "
    "the cluster down when you are done."
)
_warned = False


class ClusterNotReadyError(RuntimeError):
    """A task of the cluster is not listening (did not start, crashed or was killed)."""


# ----------------------------------------------------------------------------- helpers


def parse_task(task) -> tuple[str, int]:
    """``("worker", 1)``, ``"worker:1"`` or ``"/job:worker/task:1"`` -> ``("worker", 1)``."""
    if isinstance(task, str):
        text = task.strip()
        if text.startswith("/job:"):
            text = text[len("/job:") :].replace("/task:", ":", 1)
        job, sep, index = text.partition(":")
        if sep and index.isdigit():
            return job, int(index)
    elif (
        isinstance(task, tuple)
        and len(task) == 2
        and isinstance(task[0], str)
        and isinstance(task[1], numbers.Integral)
        and not isinstance(task[1], bool)
    ):
        return task[0], int(task[1])
    raise ValueError(
        f"cannot read the task {task!r}; write it as ('worker', 1) or 'worker:1' "
        "(a job name and a task index)."
    )


def _task_name(task: tuple[str, int]) -> str:
    return f"{task[0]}:{task[1]}"


def _pick_port(host: str = "127.0.0.1") -> int:
    """A port that is free right now (tests replace this to hand out a taken port)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (another process may still take it before you)."""
    return _pick_port(host)


def port_answers(address: str, timeout: float = 0.5) -> bool:
    """Whether something accepts a TCP connection at ``host:port``."""
    host, _, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1]
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def probe(addresses: dict, timeout: float = 10.0) -> None:
    """Wait until every address answers, else raise :class:`ClusterNotReadyError`.

    Args:
        addresses: ``{task: "host:port"}``, a task being ``(job, index)`` or ``"job:index"``.
        timeout: seconds to wait in all.

    Raises:
        ClusterNotReadyError: naming the first task that did not answer in time.
    """
    deadline = time.monotonic() + timeout
    for task, address in addresses.items():
        while not port_answers(address, timeout=min(0.5, max(0.05, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                name = task if isinstance(task, str) else _task_name(task)
                raise ClusterNotReadyError(
                    f"task {name} at {address} is not listening after {timeout:g} s; it did "
                    "not start, crashed or was killed. Restart it (LocalCluster.restart) or "
                    "start the cluster again; ParameterServerStrategy would block for "
                    "minutes on it."
                )
            time.sleep(0.05)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def server_def(cluster: dict, job_name: str, task_index: int, inter_op_threads: int = 0) -> bytes:
    """The serialized ``tensorflow.ServerDef`` of one task, without importing TensorFlow.

    A task child loads only TensorFlow's server library (half a second) instead of all of
    TensorFlow (about six seconds on 2 cores), so it needs the protobuf bytes made by hand:
    ``ServerDef{cluster=1, job_name=2, task_index=3, default_session_config=4,
    protocol=5}``, ``ClusterDef{job=1}``, ``JobDef{name=1, tasks=2 (map)}``,
    ``ConfigProto{inter_op_parallelism_threads=5}``. The tests check it against
    TensorFlow's own ``ServerDef``.
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


# ----------------------------------------------------------------------------- processes

_live: dict[int, _Task] = {}
_live_lock = threading.Lock()
_in_process_cluster = None  # the one in-process cluster of this process, if any


@atexit.register
def _kill_all() -> None:
    with _live_lock:
        tasks = list(_live.values())
    for task in tasks:
        task.close()


def live_tasks() -> list[int]:
    """PIDs of task children still running, over all clusters (for tests and the curious)."""
    with _live_lock:
        return [pid for pid, task in _live.items() if task.proc.poll() is None]


class _Task:
    """One task child: its process and its stderr (an unlinked file: nothing to clean up)."""

    def __init__(self, cluster: dict, task: tuple[str, int], inter_op_threads: int):
        self.task = task
        argv = [sys.executable, "-m", "dpkit.cluster", "--serve", json.dumps(cluster)]
        argv += [task[0], str(task[1]), str(inter_op_threads)]
        self.proc, self.stderr = _procs.spawn(argv)
        with _live_lock:
            _live[self.proc.pid] = self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def error(self) -> str:
        """The end of the child's stderr (pread: the child shares the file offset)."""
        if self.stderr.closed:
            return ""
        size = os.fstat(self.stderr.fileno()).st_size
        start = max(0, size - 2000)
        return os.pread(self.stderr.fileno(), size - start, start).decode(errors="replace").strip()

    def close(self) -> None:
        """Kill the child's process group (SIGKILL), reap it, release its files."""
        _procs.kill_group(self.proc)
        with _live_lock:
            _live.pop(self.proc.pid, None)
        self.proc.stdout.close()
        self.stderr.close()


def _wait_ready(tasks: list[_Task], deadline: float) -> dict:
    """Wait for each child's ``ready`` line; return ``{task: exit code}`` of those that died.

    Raises ClusterNotReadyError for a child still silent at the deadline.
    """
    failed = {}
    with selectors.DefaultSelector() as sel:
        for t in tasks:
            sel.register(t.proc.stdout, selectors.EVENT_READ, t)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                t = next(iter(sel.get_map().values())).data
                raise ClusterNotReadyError(
                    f"task {_task_name(t.task)} did not start its server within the start "
                    "timeout; raise start_timeout (a busy machine is slow to start "
                    f"processes). Its stderr: {t.error() or '(empty)'}"
                )
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                t = key.data
                line = t.proc.stdout.readline()
                sel.unregister(t.proc.stdout)
                if line.strip() != b"ready":
                    failed[t.task] = t.proc.wait()
    return failed


# ----------------------------------------------------------------------------- the cluster


def _count(value, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(
            f"{what} must be a whole number >= {minimum}, got {value!r}; e.g. "
            "LocalCluster(num_workers=2, num_ps=1)."
        )
    return int(value)


class LocalCluster:
    """A ps/worker cluster on this machine, as a context manager.

    Introduced in lesson 07::

        with cluster.LocalCluster(num_workers=2, num_ps=1) as c:
            strategy = c.make_strategy()
            ...

    Args:
        num_workers: worker tasks (at least 1).
        num_ps: parameter-server tasks (at least 0; ``ParameterServerStrategy`` needs 1).
        mode: ``"process"`` (one child process per task) or ``"in_process"``.
        chief: also reserve a ``chief`` address in the ``ClusterSpec`` for the coordinator
            (the process that runs ``ParameterServerStrategy``). Without it the coordinator
            joins the cluster as ``chief`` on a port of its own choosing. Use it when the
            process builds a second strategy on the same tasks (resuming after a ps
            restart): without it the restarted ps could not reach the coordinator (measured).
        start_timeout: seconds :meth:`start` may take for all tasks to listen.
        host: address the tasks are reached at (servers listen on all interfaces anyway).

    Raises:
        ValueError: a bad count, mode or timeout, before anything starts.
    """

    def __init__(
        self,
        num_workers: int,
        num_ps: int = 1,
        mode: str = "process",
        chief: bool = False,
        start_timeout: float = 30.0,
        host: str = "127.0.0.1",
    ):
        self.num_workers = _count(num_workers, "num_workers", 1)
        self.num_ps = _count(num_ps, "num_ps", 0)
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}.")
        total = self.num_workers + self.num_ps + bool(chief)
        if total > MAX_TASKS:
            raise ValueError(
                f"{total} tasks is more than a local cluster should hold (at most {MAX_TASKS}: "
                "each one is a server on this machine); use fewer workers or ps, e.g. "
                "num_workers=2, num_ps=1."
            )
        if (
            isinstance(start_timeout, bool)
            or not isinstance(start_timeout, numbers.Real)
            or not start_timeout > 0
        ):
            raise ValueError(
                f"start_timeout must be a positive number of seconds, got {start_timeout!r}; "
                "e.g. start_timeout=30 (more on a busy machine)."
            )
        self.mode = mode
        self.chief = bool(chief)
        self.start_timeout = float(start_timeout)
        self.host = host
        self.cluster: dict[str, list[str]] = {}
        self._tasks: dict[tuple[str, int], _Task] = {}
        self._servers: dict = {}
        self._coordinators: list = []
        self.started = False

    # -- describing the cluster

    @property
    def inter_op_threads_per_task(self) -> int:
        """Inter-op threads every server (ps and workers) gets: ``num_workers + 1``, at least 2.

        With the default (one per core) an in-process cluster deadlocks on 2 cores: each
        worker's closure holds a thread while it waits on another server. Giving only the
        workers more threads is not enough when the ps shares the process (measured).
        """
        return max(2, self.num_workers + 1)

    def _job_tasks(self) -> list[tuple[str, int]]:
        return [("ps", i) for i in range(self.num_ps)] + [
            ("worker", i) for i in range(self.num_workers)
        ]

    @property
    def addresses(self) -> dict[str, str]:
        """``{"worker:0": "127.0.0.1:port", ...}`` for every task (chief included)."""
        return {f"{job}:{i}": a for job, addrs in self.cluster.items() for i, a in enumerate(addrs)}

    @property
    def pids(self) -> dict[str, int]:
        """``{"worker:0": pid, ...}`` of the running task children (process mode)."""
        return {
            _task_name(t): task.pid for t, task in self._tasks.items() if task.proc.poll() is None
        }

    @property
    def cluster_spec(self):
        """The ``tf.train.ClusterSpec`` of the cluster."""
        import tensorflow as tf

        self._need_started()
        return tf.train.ClusterSpec(self.cluster)

    @property
    def resolver(self):
        """A ``SimpleClusterResolver`` for ``ParameterServerStrategy`` (rpc layer ``grpc``).

        With ``chief=True`` it names the coordinator as task ``chief:0``.
        """
        import tensorflow as tf

        extra = {"task_type": "chief", "task_id": 0} if self.chief else {}
        return tf.distribute.cluster_resolver.SimpleClusterResolver(
            self.cluster_spec, rpc_layer="grpc", **extra
        )

    def tf_config(self, task_type: str, task_id: int = 0, as_json: bool = False):
        """The ``TF_CONFIG`` a process running task ``(task_type, task_id)`` would set.

        Returns:
            ``{"cluster": {...}, "task": {"type": ..., "index": ...}}`` (or its JSON text).

        Raises:
            ValueError: no such task in this cluster.
        """
        self._need_started()
        job, index = parse_task((task_type, task_id))
        if index >= len(self.cluster.get(job, ())):
            raise ValueError(
                f"no task {job}:{index} in this cluster; it has {sorted(self.addresses)}."
            )
        config = {"cluster": self.cluster, "task": {"type": job, "index": index}}
        return json.dumps(config) if as_json else config

    def _need_started(self):
        if not self.started:
            raise RuntimeError(
                "the cluster is not running; use it as `with LocalCluster(...) as c:` or "
                "call start() first."
            )

    def _known(self, task) -> tuple[str, int]:
        t = parse_task(task)
        if t not in self._tasks and t not in self._servers:
            raise ValueError(
                f"no task {_task_name(t)} in this cluster; it has "
                f"{sorted(_task_name(x) for x in self._job_tasks())}."
            )
        return t

    # -- starting and stopping

    def __enter__(self) -> LocalCluster:
        return self.start(_warn_level=3)  # the warning names the caller's `with` line

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def start(self, *, _warn_level: int = 2) -> LocalCluster:
        """Start every task and return once all of them listen.

        Raises:
            ClusterNotReadyError: a task did not start (its name and stderr in the message).
            RuntimeError: a second in-process cluster in this process.
        """
        global _warned
        if self.started:
            return self
        if not _warned:
            _warned = True
            warnings.warn(_SECURITY_WARNING, stacklevel=_warn_level)
        try:
            if self.mode == "process":
                self._start_processes()
            else:
                self._start_in_process()
        except BaseException:
            self.shutdown()
            raise
        self.started = True
        return self

    def _start_processes(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        taken: set[int] = set()
        ports: dict[tuple[str, int], int] = {}
        for _ in range(PORT_ATTEMPTS):
            for t in self._job_tasks() + ([("chief", 0)] if self.chief else []):
                if t not in ports or ports[t] in taken:
                    ports[t] = _pick_port(self.host)
            self._set_cluster(ports)
            self._tasks = {t: self._spawn(t) for t in self._job_tasks()}
            failed = _wait_ready(list(self._tasks.values()), deadline)
            busy = {t for t, code in failed.items() if code == EXIT_PORT_TAKEN}
            for t in set(failed) - busy:
                raise ClusterNotReadyError(
                    f"task {_task_name(t)} exited with code {failed[t]} while starting; its "
                    f"stderr: {self._tasks[t].error() or '(empty)'}"
                )
            if not busy:
                probe(self._task_addresses(), timeout=max(0.1, deadline - time.monotonic()))
                return
            # Every task knows every address, so all restart with the new ports.
            taken |= {ports[t] for t in busy}
            self._close_tasks()
        raise ClusterNotReadyError(
            f"found no free ports after {PORT_ATTEMPTS} attempts (last taken: {sorted(taken)}); "
            "free some ports or close other servers and try again."
        )

    def _set_cluster(self, ports: dict) -> None:
        self.cluster = {}
        for job in ("chief", "ps", "worker"):
            n = {"chief": int(self.chief), "ps": self.num_ps, "worker": self.num_workers}[job]
            if n:
                self.cluster[job] = [f"{self.host}:{ports[(job, i)]}" for i in range(n)]

    def _task_addresses(self) -> dict:
        return {t: self.cluster[t[0]][t[1]] for t in self._job_tasks()}

    def _spawn(self, t: tuple[str, int]) -> _Task:
        return _Task(self.cluster, t, self.inter_op_threads_per_task)

    def _start_in_process(self) -> None:
        global _in_process_cluster
        if _in_process_cluster is not None:
            raise RuntimeError(
                "this process already holds an in-process cluster and its servers cannot be "
                "stopped; reuse it, restart the kernel, or use mode='process'."
            )
        import tensorflow as tf

        ports = {t: _pick_port(self.host) for t in self._job_tasks()}
        if self.chief:
            ports[("chief", 0)] = _pick_port(self.host)
        self._set_cluster(ports)
        spec = tf.train.ClusterSpec(self.cluster)
        server_config = tf.compat.v1.ConfigProto(
            inter_op_parallelism_threads=self.inter_op_threads_per_task
        )
        for job, index in self._job_tasks():
            self._servers[(job, index)] = tf.distribute.Server(
                spec,
                job_name=job,
                task_index=index,
                protocol="grpc",
                config=server_config,
                start=True,
            )
        _in_process_cluster = self
        probe(self._task_addresses(), timeout=self.start_timeout)

    def check(self, timeout: float = 5.0) -> None:
        """Raise :class:`ClusterNotReadyError` unless every task answers within ``timeout``."""
        self._need_started()
        probe(self._task_addresses(), timeout=timeout)

    def make_strategy(self, timeout: float = 5.0, **kwargs):
        """Check every task listens, then build ``tf.distribute.ParameterServerStrategy``.

        Args:
            timeout: seconds to wait for the tasks (:meth:`check`).
            **kwargs: passed on, e.g. ``variable_partitioner``.

        Raises:
            ClusterNotReadyError: a task is down (instead of blocking for minutes).
        """
        self.check(timeout)  # before importing TensorFlow: fail in a second, not minutes
        import tensorflow as tf

        return tf.distribute.ParameterServerStrategy(self.resolver, **kwargs)

    def make_coordinator(self, strategy=None, timeout: float = 5.0):
        """A ``ClusterCoordinator`` for ``strategy`` (built by :meth:`make_strategy` if None).

        :meth:`shutdown` stops its worker threads (TensorFlow has no public way to).
        """
        import tensorflow as tf

        strategy = strategy or self.make_strategy(timeout)
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        self._coordinators.append(coordinator)
        return coordinator

    def kill(self, task) -> None:
        """Kill one task's process (SIGKILL), e.g. ``kill("worker:1")``; process mode only."""
        t = self._fault_task(task)
        self._tasks[t].close()

    def restart(self, task, timeout: float | None = None) -> int:
        """Start a killed (or running: it is killed first) task again on its old port.

        Returns:
            The new PID.

        Raises:
            ClusterNotReadyError: it did not come back within ``timeout`` (default
                ``start_timeout``).
        """
        t = self._fault_task(task)
        self._tasks[t].close()
        timeout = self.start_timeout if timeout is None else timeout
        self._tasks[t] = self._spawn(t)
        failed = _wait_ready([self._tasks[t]], time.monotonic() + timeout)
        if failed:
            raise ClusterNotReadyError(
                f"task {_task_name(t)} did not restart on {self.cluster[t[0]][t[1]]} (exit "
                f"code {failed[t]}; {EXIT_PORT_TAKEN} means the port is taken): "
                f"{self._tasks[t].error() or '(empty stderr)'}"
            )
        probe({t: self.cluster[t[0]][t[1]]}, timeout=timeout)
        return self._tasks[t].pid

    def _fault_task(self, task) -> tuple[str, int]:
        self._need_started()
        if self.mode != "process":
            raise RuntimeError(
                "in-process servers cannot be stopped or restarted; use "
                "LocalCluster(..., mode='process') for fault experiments."
            )
        return self._known(task)

    def _close_tasks(self) -> None:
        tasks, self._tasks = self._tasks, {}
        for task in tasks.values():
            task.close()

    def shutdown(self) -> None:
        """Stop the coordinators made by :meth:`make_coordinator` and kill every task.

        In process mode no task process is left afterwards. In-process servers cannot be
        stopped: they are only forgotten (and keep their ports until the process ends).
        Safe to call twice.
        """
        coordinators, self._coordinators = self._coordinators, []
        for coordinator in coordinators:
            _stop_coordinator(coordinator)
        self._close_tasks()
        self._servers = {}
        self.started = False

    def __repr__(self) -> str:
        state = "running" if self.started else "stopped"
        return (
            f"LocalCluster(num_workers={self.num_workers}, num_ps={self.num_ps}, "
            f"mode={self.mode!r}, {state}, {self.addresses})"
        )


def _stop_coordinator(coordinator, timeout: float = 5.0) -> list[str]:
    """Stop a ClusterCoordinator's threads as far as TensorFlow lets us; return those left.

    TensorFlow has no public way to stop a coordinator; this uses ``_cluster`` (private,
    TF 2.21). Worker threads stop once the closure queue is closed. The failure handler's
    ``stop`` can block for minutes while it waits for a killed worker to come back, so it
    runs in a daemon thread and is abandoned after ``timeout``; its threads are daemons
    and die with the process.
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


# ----------------------------------------------------------------------------- the child


class _ServerError(Exception):
    """What TensorFlow's C API raises in a task child (``cls(node_def, op, message, ...)``)."""

    def __str__(self) -> str:
        return next((a for a in self.args if isinstance(a, str)), repr(self.args))


def _load_extension(root: str, relative: str):
    import importlib.util

    name = os.path.basename(relative).split(".")[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_server_library():
    """TensorFlow's C server API without importing the tensorflow package (~6 s).

    Loads two extension modules by path: the error registry (TensorFlow aborts the
    process on an error unless it knows which Python exception to raise) and the session
    library that holds ``TF_NewServer``.
    """
    import importlib.util

    root = importlib.util.find_spec("tensorflow").submodule_search_locations[0]
    registry = _load_extension(root, "python/_pywrap_py_exception_registry.so")
    registry.PyExceptionRegistry_Init({code: _ServerError for code in range(1, 17)})
    return _load_extension(root, "python/client/_pywrap_tf_session.so")


def _serve(cluster: dict, job: str, index: int, inter_op_threads: int) -> int:
    _procs.watch_parent()  # exit when the parent dies
    definition = server_def(cluster, job, index, inter_op_threads)
    try:
        library = _load_server_library()
    except (ImportError, OSError, AttributeError):
        library = None  # a TensorFlow whose files moved: the public API, slower to import
    try:
        if library is None:
            import tensorflow as tf

            server = tf.distribute.Server(tf.train.ServerDef.FromString(definition), start=True)
        else:
            server = library.TF_NewServer(definition)
            library.TF_ServerStart(server)
    except Exception as error:  # noqa: BLE001 -- report it and exit
        print(f"task {job}:{index}: {error}", file=sys.stderr, flush=True)
        taken = "Could not start gRPC server" in str(error)
        return EXIT_PORT_TAKEN if taken else 1
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    threading.Event().wait()  # serve until killed
    return 0


def _main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="one dpkit.cluster task (started by LocalCluster)")
    parser.add_argument("--serve", required=True, metavar="CLUSTER_JSON")
    parser.add_argument("job")
    parser.add_argument("index", type=int)
    parser.add_argument("inter_op_threads", type=int)
    args = parser.parse_args(argv)
    code = _serve(json.loads(args.serve), args.job, args.index, args.inter_op_threads)
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(_main())

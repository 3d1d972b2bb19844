"""Local TensorFlow clusters: ps and worker tasks on this machine, always torn down.

Introduced in lesson 07. :class:`LocalCluster` starts the tasks of a parameter-server
cluster (``ps`` and ``worker`` jobs, an optional ``chief`` slot for the coordinator) on
free loopback ports and gives you what TensorFlow asks for: the ``ClusterSpec``, a
cluster resolver for ``ParameterServerStrategy`` and the ``TF_CONFIG`` of any task.

In ``"process"`` mode (the default) each task is a child process running the ``server``
program (a TF server cannot be stopped in-process, a process can), up once it has imported
TensorFlow (about 5 s of one core per task), and killed on :meth:`LocalCluster.shutdown`,
when the ``with`` block ends (even on an exception or an interrupt), at interpreter exit, and
by itself when the parent dies; ``kill`` and ``restart`` stop and restart one task for fault
experiments. In ``"in_process"`` mode the servers live in this process
(:mod:`dpkit.in_process`) and can never be stopped.

Every task is started with ``GRPC_FAIL_FAST=use_caller`` (unless the environment sets it),
and this process gets it when the cluster starts (:data:`FAIL_FAST`).

Safety: every argument is checked before anything starts, and a task that does not answer
raises :class:`ClusterNotReadyError` naming it (``ParameterServerStrategy`` would otherwise
block for minutes, deaf to Ctrl-C). A TF server has no authentication and listens on all
interfaces even when its address says ``127.0.0.1``: the first cluster started warns once.
"""

from __future__ import annotations

import json
import os
import queue
import time
import warnings

from dpkit import in_process
from dpkit.plumbing import checks, contract, procs, quota

MODES = ("process", "in_process")

#: Most tasks (ps + workers + chief) a local cluster may have, all on this one machine.
MAX_TASKS = 16

#: ``contract.GRPC_FAIL_FAST`` for every task and the coordinator. TensorFlow's parameter-server
#: tutorial asks for ``use_caller`` on every task, the coordinator included, "to make fault
#: tolerance work properly": a failed worker or ps is then reported to the coordinator
#: instead of leaving a call to it waiting. Since
#: tensorflow/community RFC 355 (2021) it is TensorFlow's own default too (TF 2.21's C++ reads
#: the variable with ``"use_caller"`` as the default), so setting it is for older TensorFlow
#: and for anyone whose environment says otherwise: a value already set is left alone.
FAIL_FAST = "use_caller"

#: How many times start() picks new ports when one turns out to be taken.
PORT_ATTEMPTS = 5

_SECURITY_WARNING = (
    "dpkit.cluster: TensorFlow servers have no authentication and listen on all network "
    "interfaces, even when the ClusterSpec says 127.0.0.1; anyone who can reach this "
    "machine's ports can run code in them. Use a trusted network (or a firewall) and shut "
    "the cluster down when you are done."
)
_warned = False

# start() calls free_port through this module, so a test can hand out a taken port.
free_port = procs.free_port
port_answers = procs.port_answers


def workers_that_fit(limits: quota.Quota | None = None) -> tuple[int, str]:
    """How many worker processes with all of TensorFlow fit in memory beside this kernel
    (lesson 07's ``MultiWorkerMirroredStrategy`` workers), and one line saying so.

    ``limits`` defaults to :func:`plumbing.quota.read` (a container's limit, the machine, or
    ``DPKIT_MEMORY_LIMIT``); the sizes are ``plumbing.quota``'s, measured here. At most
    ``MAX_TASKS - 2`` (room for the sharding example's two ps), at least 2 (the
    lesson kills one worker and goes on with the other), with a warning if 2 may not fit.
    """
    limits = quota.read() if limits is None else limits
    fit = MAX_TASKS - 2
    while fit > 2 and not quota.fits(fit, limits.memory):
        fit -= 1
    if limits.memory is None:
        return fit, f"memory unknown: up to {fit} worker processes"
    need = f"about {quota.need(fit) / 2**30:.1f} GiB with the kernel"
    if not quota.fits(fit, limits.memory):
        need += ": more than there is, so the lesson may run out of memory"
    return fit, f"{limits.describe_memory()}: up to {fit} worker processes ({need})"


class ClusterNotReadyError(RuntimeError):
    """A task of the cluster is not listening (did not start, crashed or was killed)."""


def parse_task(task) -> tuple[str, int]:
    """``("worker", 1)``, ``"worker:1"`` or ``"/job:worker/task:1"`` -> ``("worker", 1)``."""
    pair = isinstance(task, tuple) and len(task) == 2
    if pair and isinstance(task[0], str) and checks.is_whole(task[1]):
        return task[0], int(task[1])
    if isinstance(task, str):
        text = task.strip()
        if text.startswith("/job:"):
            text = text[len("/job:") :].replace("/task:", ":", 1)
        job, sep, index = text.partition(":")
        if sep and index.isdigit():
            return job, int(index)
    raise ValueError(
        f"cannot read the task {task!r}; write it as ('worker', 1) or 'worker:1' "
        "(a job name and a task index)."
    )


def probe(addresses: dict, timeout: float = 10.0) -> None:
    """Wait until every address of ``{task: "host:port"}`` answers (a task is ``(job, index)``
    or ``"job:index"``), else raise :class:`ClusterNotReadyError` naming the first task that
    did not answer within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    for task, address in addresses.items():
        while not port_answers(address, timeout=min(0.5, max(0.05, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                name = task if isinstance(task, str) else f"{task[0]}:{task[1]}"
                raise ClusterNotReadyError(
                    f"task {name} at {address} is not listening after {timeout:g} s; it did "
                    "not start, crashed or was killed. Restart it (LocalCluster.restart) or "
                    "start the cluster again; ParameterServerStrategy would block for "
                    "minutes on it."
                )
            time.sleep(0.05)


def live_tasks() -> list[int]:
    """PIDs of task children still running, over all clusters (for tests and the curious)."""
    return procs.live("cluster")


class LocalCluster:
    """A ps/worker cluster on this machine, as a context manager.

    Introduced in lesson 07::

        with cluster.LocalCluster(num_workers=2, num_ps=1) as c:
            strategy = c.make_strategy()
            ...

    ``ParameterServerStrategy`` needs ``num_ps >= 1``. ``mode`` is ``"process"`` (one child
    process per task) or ``"in_process"``. ``chief=True`` also reserves a ``chief`` address in
    the ``ClusterSpec`` for the coordinator (the process that runs
    ``ParameterServerStrategy``); without it the coordinator joins the cluster as ``chief`` on
    a port of its own choosing. Use it when the process builds a second strategy on the same
    tasks (resuming after a ps restart): without it the restarted ps could not reach the
    coordinator (measured). ``host`` is where the tasks are reached (servers listen on all
    interfaces anyway). ``start_timeout`` bounds the start of the tasks, each of which imports
    TensorFlow (a ps took over 30 s at load 10 on 2 cores: measured). A bad count, mode or
    timeout is a ``ValueError`` before anything starts.
    """

    def __init__(
        self,
        num_workers: int,
        num_ps: int = 1,
        mode: str = "process",
        chief: bool = False,
        start_timeout: float = 60.0,
        host: str = "127.0.0.1",
    ):
        example = "e.g. LocalCluster(num_workers=2, num_ps=1)"
        self.num_workers = checks.whole(num_workers, "num_workers", 1, example)
        self.num_ps = checks.whole(num_ps, "num_ps", 0, example)
        self.mode = checks.one_of(mode, MODES, "mode")
        total = self.num_workers + self.num_ps + bool(chief)
        if total > MAX_TASKS:
            raise ValueError(
                f"{total} tasks is more than a local cluster should hold (at most {MAX_TASKS}: "
                "each one is a server on this machine); use fewer workers or ps, e.g. "
                "num_workers=2, num_ps=1."
            )
        slow = "e.g. start_timeout=60 (more on a busy machine)"
        timeout = checks.positive(start_timeout, "start_timeout", slow, "number of seconds")
        self.start_timeout = timeout
        self.chief = bool(chief)
        self.host = host
        self.cluster: dict[str, list[str]] = {}
        self._tasks: dict[str, procs.Child] = {}  # by task name, e.g. "worker:1"
        self._coordinators: list = []
        self.started = False

    @property
    def inter_op_threads_per_task(self) -> int:
        """Inter-op threads every server (ps and workers) gets: ``num_workers + 1``, at least 2.

        With the default (one per core) an in-process cluster deadlocks on 2 cores: each
        worker's closure holds a thread while it waits on another server. Giving only the
        workers more threads is not enough when the ps shares the process (measured).
        """
        return max(2, self.num_workers + 1)

    def _job_tasks(self) -> list[str]:
        """The tasks that run a server: ``["ps:0", ..., "worker:0", ...]`` (not the chief)."""
        jobs = [("ps", self.num_ps), ("worker", self.num_workers)]
        return [f"{job}:{i}" for job, n in jobs for i in range(n)]

    def _all_tasks(self) -> list[str]:
        return ["chief:0"] * self.chief + self._job_tasks()

    @property
    def addresses(self) -> dict[str, str]:
        """``{"worker:0": "127.0.0.1:port", ...}`` for every task (chief included)."""
        return {f"{job}:{i}": a for job, addrs in self.cluster.items() for i, a in enumerate(addrs)}

    @property
    def pids(self) -> dict[str, int]:
        """``{"worker:0": pid, ...}`` of the running task children (process mode)."""
        return {child.name: child.pid for child in self._tasks.values() if child.running()}

    @property
    def cluster_spec(self):
        """The ``tf.train.ClusterSpec`` of the cluster."""
        import tensorflow as tf  # here: a process may start and stop tasks without TF

        self._need_started()
        return tf.train.ClusterSpec(self.cluster)

    @property
    def resolver(self):
        """The resolver for ``ParameterServerStrategy``, naming ``chief:0`` if ``chief=True``."""
        import tensorflow as tf  # here: a process may start and stop tasks without TF

        extra = {"task_type": "chief", "task_id": 0} if self.chief else {}
        return tf.distribute.cluster_resolver.SimpleClusterResolver(
            self.cluster_spec, rpc_layer="grpc", **extra
        )

    def tf_config(self, task_type: str, task_id: int = 0, as_json: bool = False):
        """The ``TF_CONFIG`` a process running task ``(task_type, task_id)`` would set:
        ``{"cluster": {...}, "task": {"type": ..., "index": ...}}`` (or its JSON text)."""
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

    def __enter__(self) -> LocalCluster:
        return self.start(_warn_level=3)  # the warning names the caller's `with` line

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def start(self, *, _warn_level: int = 2) -> LocalCluster:
        """Start every task and return once all of them listen (else
        :class:`ClusterNotReadyError`, with the task's name and stderr)."""
        global _warned
        if self.started:
            return self
        if not _warned:
            _warned = True
            warnings.warn(_SECURITY_WARNING, stacklevel=_warn_level)
        # This process: the coordinator, and in-process servers.
        os.environ.setdefault(contract.GRPC_FAIL_FAST, FAIL_FAST)
        try:
            if self.mode == "process":
                self._start_processes()
            else:  # servers in this process: never stopped, so one such cluster at most
                self._set_cluster({t: free_port(self.host) for t in self._all_tasks()})
                tasks = [parse_task(t) for t in self._job_tasks()]
                in_process.start_servers(self.cluster, tasks, self.inter_op_threads_per_task)
                probe(self._task_addresses(), timeout=self.start_timeout)
        except BaseException:
            self.shutdown()
            raise
        self.started = True
        return self

    def _start_processes(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        taken, ports = set(), {}  # ports taken by others; {task: port}
        for _ in range(PORT_ATTEMPTS):
            for t in self._all_tasks():
                if t not in ports or ports[t] in taken:
                    ports[t] = free_port(self.host)
            self._set_cluster(ports)
            busy = self._spawn(self._job_tasks(), deadline, retry=True)
            if not busy:
                probe(self._task_addresses(), timeout=max(0.1, deadline - time.monotonic()))
                return
            # Every task knows every address, so all restart with the new ports.
            taken |= {ports[t] for t in busy}
            self._close(self._tasks)
        raise ClusterNotReadyError(
            f"found no free ports after {PORT_ATTEMPTS} attempts (last taken: {sorted(taken)}); "
            "free some ports or close other servers and try again."
        )

    def _set_cluster(self, ports: dict) -> None:
        self.cluster = {}
        for t in self._all_tasks():
            self.cluster.setdefault(t.split(":")[0], []).append(f"{self.host}:{ports[t]}")

    def _task_addresses(self) -> dict:
        return {t: a for t, a in self.addresses.items() if t != "chief:0"}

    def _spawn(self, tasks: list, deadline: float, retry: bool = False) -> set:
        """Start the tasks' ``server`` programs and await them; with ``retry``, return at once
        ``{task}`` of the first whose port was taken (all restart on new ports, so the others'
        TensorFlow imports would be wasted), else an empty set once every task is ready."""
        lines, waiting = queue.Queue(), {}
        for t in tasks:
            args = (json.dumps(self.cluster), *t.split(":"), self.inter_op_threads_per_task)
            argv = procs.program_argv(contract.Program.SERVER, *args)
            env = {contract.GRPC_FAIL_FAST: os.environ.get(contract.GRPC_FAIL_FAST, FAIL_FAST)}
            self._tasks[t] = procs.Child(argv, name=t, kind="cluster", lines=lines, env=env)
            waiting[self._tasks[t]] = t
        while waiting:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                child = next(iter(waiting))
                raise ClusterNotReadyError(
                    f"task {child.name} did not start its server within the start timeout; "
                    "raise start_timeout (a busy machine is slow to start processes). Its "
                    f"stderr: {child.tail() or '(empty)'}"
                )
            try:
                child, line = lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if child not in waiting:
                continue
            if line is None:  # its stdout ended: it exited
                t, code = waiting.pop(child), child.wait()
                if code != contract.Exit.PORT_TAKEN or not retry:
                    raise ClusterNotReadyError(
                        f"task {t} exited with code {code} while starting on {self.addresses[t]} "
                        f"({contract.Exit.PORT_TAKEN:d} means its port is taken); its stderr: "
                        f"{child.tail() or '(empty)'}"
                    )
                return {t}
            record = procs.parse_record(line)
            if record is not None and contract.ServerReady.key() in record:
                contract.ServerReady.from_record(record)  # a record of another kind fails here
                waiting.pop(child)
        return set()

    def check(self, timeout: float = 5.0) -> None:
        """Raise :class:`ClusterNotReadyError` unless every task answers within ``timeout``."""
        self._need_started()
        probe(self._task_addresses(), timeout=timeout)

    def make_strategy(self, timeout: float = 5.0, **kwargs):
        """Check every task listens (within ``timeout``: a task down raises
        :class:`ClusterNotReadyError` instead of blocking for minutes), then build
        ``tf.distribute.ParameterServerStrategy`` with ``kwargs`` (``variable_partitioner``)."""
        self.check(timeout)  # before building the strategy: fail in a second, not minutes
        import tensorflow as tf  # here: a process may start and stop tasks without TF

        return tf.distribute.ParameterServerStrategy(self.resolver, **kwargs)

    def make_coordinator(self, strategy=None, timeout: float = 5.0):
        """A ``ClusterCoordinator`` for ``strategy`` (built by :meth:`make_strategy` if None).

        :meth:`shutdown` stops its worker threads (TensorFlow has no public way to).
        """
        import tensorflow as tf  # here: a process may start and stop tasks without TF

        strategy = strategy or self.make_strategy(timeout)
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        self._coordinators.append(coordinator)
        return coordinator

    def kill(self, task) -> None:
        """Kill one task's process (SIGKILL), e.g. ``kill("worker:1")``; process mode only."""
        self._close([self._fault_task(task)])

    def restart(self, task, timeout: float | None = None) -> int:
        """Start a killed (or running: it is killed first) task again on its old port; return
        its new PID (:class:`ClusterNotReadyError` if not back within ``timeout``, by default
        ``start_timeout``)."""
        t = self._fault_task(task)
        self._close([t])
        timeout = self.start_timeout if timeout is None else timeout
        self._spawn([t], time.monotonic() + timeout)
        probe({t: self.addresses[t]}, timeout=timeout)
        return self._tasks[t].pid

    def _fault_task(self, task) -> str:
        self._need_started()
        if self.mode != "process":
            raise RuntimeError(
                "in-process servers cannot be stopped or restarted; use "
                "LocalCluster(..., mode='process') for fault experiments."
            )
        t = "{}:{}".format(*parse_task(task))
        if t not in self._job_tasks():
            raise ValueError(f"no task {t} in this cluster; it has {sorted(self._job_tasks())}.")
        return t

    def _close(self, tasks) -> None:
        for t in [t for t in tasks if t in self._tasks]:
            self._tasks.pop(t).close()

    def shutdown(self) -> None:
        """Stop the coordinators made by :meth:`make_coordinator` and kill every task.

        In process mode no task process is left afterwards. In-process servers cannot be
        stopped: they are only forgotten (and keep their ports until the process ends).
        Safe to call twice.
        """
        made, self._coordinators = self._coordinators, []
        for coordinator in made:
            in_process.stop_coordinator(coordinator)
        self._close(self._tasks)
        self.started = False

    def __repr__(self) -> str:
        state = "running" if self.started else "stopped"
        return (
            f"LocalCluster(num_workers={self.num_workers}, num_ps={self.num_ps}, "
            f"mode={self.mode!r}, {state}, {self.addresses})"
        )

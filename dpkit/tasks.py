"""Child processes, one per task of a cluster: :class:`Group` (lesson 07).

Some distributed set-ups need one *process* per task, each with its own ``TF_CONFIG``
(``MultiWorkerMirroredStrategy``) or its own TF1 session (between-graph replication).
:class:`Group` starts those processes from a notebook, each running a dpkit program
(:data:`PROGRAMS`, see :mod:`dpkit.programs`), and keeps them safe: a child exits by itself
when the notebook's kernel dies, and the ``with`` block kills and reaps every child's process
group on exit, on an exception, on a kernel interrupt and on a timeout. Children talk in lines:
a JSON object is a *record* (``{"step": 3, "loss": 0.4}``), collected per task; any other line
is a log line, echoed live as ``[worker:1] ...``. Every process takes the same data and initial
weights from :func:`digits`, :func:`digits_batches` and :func:`softmax_init`.
"""

from __future__ import annotations

import queue
import time

from dpkit import _checks, _procs

#: The programs :meth:`Group.start` runs (see :mod:`dpkit.programs`).
PROGRAMS = ("mwms", "tf1", "task", "pinned")
#: Set in every child's environment: the ``task`` program sends its results as records too.
RECORDS_VARIABLE = "DPKIT_RECORDS"


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
        self.timeout = _checks.positive_seconds(timeout, "timeout")
        self.echo = echo
        self.records: dict[str, list[dict]] = {}
        self.arguments: dict[str, list[str]] = {}  # name -> the program's arguments, as given
        self._children: dict[str, _procs.Child] = {}
        self._lines: queue.Queue = queue.Queue()  # (child, line or None at its end), from all
        self._cursor: dict[str, int] = {}
        self._ended: dict[str, bool] = {}
        self._killed: set[str] = set()

    # -- starting

    def start(
        self, name: str, program: str, *args, env: dict | None = None, wrap: list | None = None
    ) -> int:
        """Start ``program`` (one of :data:`PROGRAMS`) as task ``name``; return its PID.

        ``wrap`` goes before the command line, for a command that runs it somewhere else and
        then becomes it, e.g. ``["ip", "netns", "exec", "host1"]``.
        """
        _checks.one_of(program, PROGRAMS, "program")
        if name in self._children:
            raise ValueError(f"a task named {name!r} was already started in this group.")
        child = _procs.Child(
            [*(wrap or []), *_procs.program_argv(program, *args)],
            name=name,
            kind="task",
            lines=self._lines,
            stdin=True,
            env={RECORDS_VARIABLE: "1", **(env or {})},
        )
        self._children[name] = child
        self.arguments[name] = [str(a) for a in args]
        self.records[name], self._cursor[name], self._ended[name] = [], 0, False
        return child.pid

    # -- talking to the children

    @property
    def pids(self) -> dict[str, int]:
        """``{name: pid}`` of the children still running."""
        return {n: c.pid for n, c in self._children.items() if c.running()}

    def send(self, name: str, text: str = "") -> None:
        """Write one line to task ``name``'s stdin."""
        if not self._children[name].send(text):
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
            child, line = self._lines.get(timeout=min(remaining, 0.5))
        except queue.Empty:
            return
        if line is None:
            self._ended[child.name] = True
            return
        record = _procs.parse_record(line)
        if record is not None:
            self.records[child.name].append(record)
        elif self.echo is not None and line.strip():
            self.echo(f"[{child.name}] {line}")

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
                self._children[name].wait()
                self._raise_failed(name, f"ended without reporting {key!r}")
            # a task that failed (not one we killed) ends the wait: in a collective the
            # others would otherwise wait for it until the timeout
            self._raise_if_failed(skip={name, *self._killed})
            self._pump(deadline, f"waiting for {key!r} from task {name}")

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
            self._raise_if_failed()
        return {n: c.wait() for n, c in self._children.items()}

    def _raise_if_failed(self, skip=()) -> None:
        """Raise :class:`TaskFailedError` for a task (not in ``skip``) that ended with an error."""
        for name, ended in self._ended.items():
            if ended and name not in skip and self._children[name].wait() != 0:
                self._raise_failed(name)

    def _raise_failed(self, name: str, what: str = "failed") -> None:
        child = self._children[name]
        code = child.poll()
        error = child.tail(2000) or "(empty stderr)"
        self.close()
        raise TaskFailedError(f"task {name} {what} (exit code {code}); its stderr:\n{error}")

    # -- stopping

    def kill(self, name: str) -> None:
        """Kill one task's process group (SIGKILL) and reap it."""
        self._killed.add(name)
        self._children[name].kill()

    def close(self) -> None:
        """Kill every child's process group and reap it. Safe to call twice."""
        for child in self._children.values():
            child.close()

    def __enter__(self) -> Group:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ----------------------------------------------------------------------------- data


def digits(seed: int = 0):
    """``(x_train, y_train, x_test, y_test)``: the digits, flattened (float32, int32)."""
    from dpkit import data

    arrays = data.load("digits", seed=seed)
    flat = lambda x: x.reshape(len(x), -1).astype("float32")  # noqa: E731
    return flat(arrays.x_train), arrays.y_train.astype("int32"), flat(arrays.x_test), arrays.y_test


def digits_batches(global_batch: int, steps: int, seed: int = 0):
    """The first ``steps`` global batches of flattened digits: ``(x [steps, B, 784], y)``.

    Every worker and the single-device reference take their examples from here.
    """
    x, y, _, _ = digits(seed)
    n = global_batch * steps
    if n > len(x):
        raise ValueError(
            f"{steps} steps of {global_batch} examples need {n} digits, the training set has "
            f"{len(x)}; use fewer steps or a smaller batch."
        )
    return x[:n].reshape(steps, global_batch, -1), y[:n].reshape(steps, global_batch)


def softmax_init(features: int = 784, classes: int = 10, seed: int = 0):
    """Initial softmax-regression weights ``(w, b)``, the same in every process."""
    import numpy as np

    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 0.01, size=(features, classes)).astype(np.float32)
    return w, np.zeros(classes, np.float32)

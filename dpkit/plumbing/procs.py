"""The one child-process layer of dpkit (plumbing: contributors change process handling here).

Every child dpkit starts (a throughput run, a cluster task, a launcher, a pinned worker,
TensorBoard) is a :class:`Child`:

* it runs in a process group of its own (``start_new_session``), so one ``killpg`` ends it
  with anything it started, and a Ctrl-C in the parent's terminal reaches only the parent;
* it is in one registry until it is reaped; whatever is still running when this Python
  process exits is killed then (``atexit``);
* it gets :func:`child_env` (quiet TensorFlow, unbuffered, dpkit importable, the parent's
  PID), and a dpkit program calls :func:`watch_parent` first, so it exits by itself when
  its parent dies without cleaning up (``kill -9``, a crashed kernel);
* it talks in lines on stdout: a JSON object is a *record* (:func:`record` writes one,
  :func:`parse_record` reads one; their kinds are :mod:`dpkit.plumbing.contract`'s); any
  other line is a log line;
* its stderr goes to an unlinked temporary file (nothing is left in /tmp, even after a
  crash), whose end :meth:`Child.tail` gives for error messages.

Nothing else in dpkit calls ``subprocess.Popen``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from dpkit.plumbing import checks, contract

#: Characters of a child's stderr quoted in an error message.
TAIL_CHARS = 3000

_live: dict[int, Child] = {}
_live_lock = threading.Lock()


def child_env(extra: dict | None = None) -> dict:
    """The environment of every child: this one, quiet TensorFlow
    (:func:`contract.quiet_tensorflow`), unbuffered output, dpkit importable, this process's
    PID (:data:`contract.PARENT_PID`), and ``extra`` (which wins).

    Every process dpkit, its tools, benchmarks and tests start gets it: a program, a cluster
    task, a Jupyter kernel, a ``make`` or ``nbgrader`` run.
    """
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH", "")
    return {
        **contract.quiet_tensorflow(dict(os.environ)),
        "PYTHONPATH": root + (os.pathsep + path if path else ""),
        "PYTHONUNBUFFERED": "1",
        contract.PARENT_PID: str(os.getpid()),
        **(extra or {}),
    }


def program_argv(program: str, *args) -> list[str]:
    """The command line of a dpkit program (a ``contract.Program``):
    ``python -m dpkit.programs PROGRAM ARGS...``."""
    program = contract.Program(checks.one_of(program, contract.Program, "program"))
    return [sys.executable, "-m", "dpkit.programs", program.value, *map(str, args)]


class Child:
    """One child process in its own group, registered until it is reaped.

    Args:
        argv: the command line (see :func:`program_argv` for a dpkit program).
        name: what to call it in messages and in :func:`live` (e.g. ``"worker:1"``).
        kind: its family in the registry (``"bench"``, ``"cluster"``, ``"task"``,
            ``"tensorboard"``), for :func:`live`.
        lines: a queue that receives ``(child, line)`` for each stdout line (without its
            newline) and ``(child, None)`` at the end of stdout. ``None``: stdout goes to the
            same file as stderr (a log, read back with :meth:`output`).
        stdin: give the child a pipe to write lines to (:meth:`send`); else no stdin.
        env: variables added to :func:`child_env`.
        grace: seconds between SIGTERM and SIGKILL when it is closed at exit (TensorBoard
            cleans up its helpers and files on SIGTERM); 0 kills at once.
    """

    def __init__(
        self,
        argv: list,
        *,
        name: str = "",
        kind: str = "",
        lines: queue.Queue | None = None,
        stdin: bool = False,
        env: dict | None = None,
        grace: float = 0.0,
    ):
        self.name, self.kind, self.lines, self.grace = name or str(argv[0]), kind, lines, grace
        self._reaped = False
        self._log = tempfile.TemporaryFile(prefix="dpkit-")  # noqa: SIM115 -- closed in close()
        self.proc = subprocess.Popen(
            [str(a) for a in argv],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if lines is not None else self._log,
            stderr=self._log,
            env=child_env(env),
            start_new_session=True,
        )
        with _live_lock:
            _live[self.proc.pid] = self
        self._reader = None
        if lines is not None:
            self._reader = threading.Thread(
                target=self._read, daemon=True, name=f"dpkit-read-{self.name}"
            )
            self._reader.start()

    def _read(self) -> None:
        with self.proc.stdout as stream:  # closed here, at EOF: no other thread closes it
            for raw in stream:
                self.lines.put((self, raw.decode(errors="replace").rstrip("\r\n")))
        self.lines.put((self, None))

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def running(self) -> bool:
        return self.proc.poll() is None

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to end; its exit code (``TimeoutError`` after ``timeout`` s)."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{self.name} still runs after {timeout:g} s") from None

    def send(self, text: str = "") -> bool:
        """Write one line to the child's stdin; ``False`` if it no longer reads."""
        try:
            self.proc.stdin.write((text + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, ValueError, OSError, AttributeError):
            return False

    def output(self) -> str:
        """Everything the child wrote to its log (stderr, and stdout when not piped)."""
        try:
            size = os.fstat(self._log.fileno()).st_size
            return os.pread(self._log.fileno(), size, 0).decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def tail(self, chars: int = TAIL_CHARS) -> str:
        """The last ``chars`` characters of :meth:`output`, stripped."""
        return self.output()[-chars:].strip()

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the child's whole process group (if it still exists)."""
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(OSError):
                if self.proc.poll() is None:
                    self.proc.send_signal(sig)

    def kill(self, grace: float = 0.0) -> int:
        """End the child's process group and reap it; return the exit code.

        ``grace`` > 0 sends SIGTERM first and waits that long before SIGKILL (TensorBoard
        cleans up its helper processes on SIGTERM).
        """
        if self._reaped:  # once only: its PID may belong to another process by now
            return self.proc.returncode
        if grace > 0 and self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(grace)
        self.signal(signal.SIGKILL)  # also stragglers of a child that already ended
        code = self.proc.wait()
        self._reaped = True
        if self.proc.stdin is not None:  # after the kill: a blocked send() cannot hold it up
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()
        with _live_lock:
            if _live.get(self.proc.pid) is self:
                del _live[self.proc.pid]
        return code

    def close(self, grace: float | None = None) -> str:
        """:meth:`kill` (``grace`` defaults to the child's), let the reader finish, release
        the files; return the stderr tail."""
        self.kill(self.grace if grace is None else grace)
        if self._reader is not None:
            self._reader.join(timeout=5)
        text = self.tail()
        if not self._log.closed:
            self._log.close()
        return text

    def __repr__(self) -> str:
        state = "running" if self.running() else f"exited {self.proc.returncode}"
        return f"Child({self.name!r}, pid {self.pid}, {state})"


def command(argv: list, *, env: dict | None = None, cwd=None, timeout: float = 30.0):
    """Run a short command to its end (a scheduler's client: sbatch, scontrol, scancel) with
    :func:`child_env` plus ``env``; ``(exit code, stdout, stderr)``. A command not installed
    is exit code 127, as in a shell; one still running after ``timeout`` s is killed and
    ``TimeoutError`` says so."""
    argv = [str(a) for a in argv]
    try:
        done = subprocess.run(
            argv, env=child_env(env), cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
    except FileNotFoundError:
        return 127, "", f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{argv[0]} still runs after {timeout:g} s; stopped it") from None
    return done.returncode, done.stdout, done.stderr


def live(kind: str | None = None) -> list[int]:
    """PIDs of dpkit children still running (of one ``kind``, or all), for tests and the curious."""
    with _live_lock:
        children = list(_live.values())
    return [c.pid for c in children if c.running() and kind in (None, c.kind)]


@atexit.register
def close_all() -> None:
    """Kill and reap every child still registered (runs at interpreter exit)."""
    with _live_lock:
        children = list(_live.values())
    for child in children:
        child.close()


# ----------------------------------------------------------------------------- groups


class TaskFailedError(RuntimeError):
    """A child of a :class:`Group` exited with an error (its stderr is in the message)."""


class Group:
    """Named children that talk in records, as a context manager (``dpkit.tasks.Group``, of
    lesson 07, starts dpkit programs by name with it; ``dpkit.pinned`` uses it directly).

    Each child's log lines are echoed as ``[name] ...``; its records are collected in
    ``records[name]``. A child that fails ends every wait with :class:`TaskFailedError`
    (in a collective the others would wait for it until the timeout); the ``with`` block
    kills and reaps them all.

    Args:
        timeout: seconds any one :meth:`wait` or :meth:`wait_for` may take before every
            child is killed and ``TimeoutError`` is raised.
        echo: called with each log line (``print`` by default; ``None`` for silence).
    """

    def __init__(self, timeout: float = 120.0, echo=print):
        self.timeout = checks.positive_seconds(timeout, "timeout")
        self.echo = echo
        self.records: dict[str, list[dict]] = {}
        self.arguments: dict[str, list[str]] = {}  # name -> the program's arguments, as given
        self._children: dict[str, Child] = {}
        self._lines: queue.Queue = queue.Queue()  # (child, line or None at its end), from all
        self._cursor: dict[str, int] = {}
        self._ended: dict[str, bool] = {}
        self._killed: set[str] = set()

    # -- starting

    def start(
        self, name: str, argv: list, *, env: dict | None = None, arguments: list | None = None
    ) -> int:
        """Start ``argv`` as the child ``name`` (stdin a pipe for :meth:`send`); its PID.

        ``arguments`` is what :attr:`arguments` records for it (default: ``argv``).
        """
        if name in self._children:
            raise ValueError(f"a task named {name!r} was already started in this group.")
        child = Child(argv, name=name, kind="task", lines=self._lines, stdin=True, env=env)
        self._children[name] = child
        self.arguments[name] = [str(a) for a in (argv if arguments is None else arguments)]
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
        record = parse_record(line)
        if record is not None:
            self.records[child.name].append(record)
        elif self.echo is not None and line.strip():
            self.echo(f"[{child.name}] {line}")

    def wait_for(self, name: str, key, timeout: float | None = None):
        """The next record of task ``name`` that holds ``key`` (older ones are skipped).

        ``key`` is a field name (the record comes back as a dict) or a record kind of
        :mod:`dpkit.plumbing.contract` (it waits for the kind's :meth:`~contract.Record.key`
        and returns the record as that kind, or raises :class:`contract.RecordError`).

        Raises:
            TaskFailedError: the task ended without sending it.
            TimeoutError: it did not come within ``timeout`` (default: the group's).
        """
        kind = key if isinstance(key, type) and issubclass(key, contract.Record) else None
        key = kind.key() if kind is not None else key
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            found = self.records[name][self._cursor[name] :]
            for i, record in enumerate(found):
                if key in record:
                    self._cursor[name] += i + 1
                    return record if kind is None else kind.from_record(record)
            self._cursor[name] = len(self.records[name])
            if self._ended[name]:
                self._children[name].wait()
                self._raise_failed(name, f"ended without reporting {key!r}")
            # a task that failed (not one we killed) ends the wait: in a collective the
            # others would otherwise wait for it until the timeout
            self._raise_if_failed(skip={name, *self._killed})
            self._pump(deadline, f"waiting for {key!r} from task {name}")

    def wait(self, timeout: float | None = None, *, codes=(contract.Exit.OK,)) -> dict[str, int]:
        """Wait for every child to end; return ``{name: exit code}`` (each one of ``codes``:
        0, unless the caller expects another, e.g. ``contract.Exit.PREEMPTED``).

        Raises:
            TaskFailedError: a child exited with a code not in ``codes`` (the others are
                killed).
            TimeoutError: they did not all end within ``timeout`` (default: the group's).
        """
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not all(self._ended.values()):
            running = sorted(n for n, ended in self._ended.items() if not ended)
            self._pump(deadline, f"waiting for {', '.join(running)} to finish")
            self._raise_if_failed(codes=codes)
        return {n: c.wait() for n, c in self._children.items()}

    def _raise_if_failed(self, skip=(), codes=(contract.Exit.OK,)) -> None:
        """Raise :class:`TaskFailedError` for a task (not in ``skip``) that ended with a code
        not in ``codes``."""
        for name, ended in self._ended.items():
            if ended and name not in skip and self._children[name].wait() not in codes:
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


# ----------------------------------------------------------------------------- records


def record(message: contract.Record) -> None:
    """In a child: write one record (a JSON object on one line) to stdout, flushed; its kind is
    one of :mod:`dpkit.plumbing.contract`'s, which its parent reads it back as."""
    if not isinstance(message, contract.Record):
        raise TypeError(
            f"procs.record takes a record kind of dpkit.plumbing.contract, got {message!r}; "
            "add a kind there (a frozen dataclass) that parent and child both use."
        )
    print(json.dumps(message.to_record()), flush=True)


def parse_record(line: str) -> dict | None:
    """The record a stdout line holds, or ``None`` for a log line."""
    text = line.rpartition("\r")[2].strip()  # after any progress bar redrawn with \r
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ----------------------------------------------------------------------------- in a child


def watch_parent(interval: float = 0.5) -> None:
    """In a child: exit when the parent dies (nobody is left to read us or stop us).

    The parent's PID comes from :func:`child_env`, not from ``getppid()`` at this moment:
    a parent killed while the child was still starting has already been replaced by init.
    """
    parent = int(os.environ.get(contract.PARENT_PID) or os.getppid())

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(contract.Exit.ORPHANED)

    threading.Thread(target=watch, daemon=True, name="dpkit-watch-parent").start()


# ----------------------------------------------------------------------------- ports


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now, from ``portpicker`` (what TensorFlow's own tests use).

    It is free for TCP and UDP on every interface, IPv4 and IPv6 (so at ``host`` too: a TF
    server listens on all of them whatever its address says), and this process is never
    handed the same port twice. Another process may still take it before you bind it; a
    ``PORTSERVER_ADDRESS`` in the environment makes portpicker ask that port server, which
    reserves it. ``host`` names where the port will be used.
    """
    import portpicker  # only processes that pick ports pay for it

    try:
        return portpicker.pick_unused_port()
    except portpicker.NoFreePortFoundError:
        raise RuntimeError(
            "no free port left: every port the system offered is taken or was already handed "
            "to this process (portpicker never hands one out twice). Shut down servers you no "
            "longer need, or restart the kernel."
        ) from None


def port_answers(address: str, timeout: float = 0.5) -> bool:
    """Whether something accepts a TCP connection at ``host:port`` (``[::1]:port`` too)."""
    host, _, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False

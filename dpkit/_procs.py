"""Child-process plumbing shared by dpkit.bench and dpkit.cluster (not part of the lessons).

Every child dpkit starts runs in a process group of its own (``start_new_session=True``)
so that one ``killpg`` ends it with anything it started; it gets the environment from
:func:`child_env`; and it calls :func:`watch_parent` first, so it exits by itself when the
process that started it dies without cleaning up (``kill -9``, a crashed kernel).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time

TAIL_CHARS = 3000

#: Set by :func:`child_env` to the starting process's PID, for :func:`watch_parent`.
PARENT_VARIABLE = "DPKIT_PARENT_PID"


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the child's whole process group (if it still runs) and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.wait()


def spawn(argv: list, *, stdin=subprocess.DEVNULL, text: bool = False, env: dict | None = None):
    """Start a dpkit child: its own process group, stdout piped, stderr to a temporary file.

    The environment is :func:`child_env` plus ``env``. The stderr file is unlinked at once,
    so nothing is left in /tmp even if this process is killed.

    Returns:
        ``(proc, stderr_file)``; the caller closes the file after :func:`kill_group`.
    """
    stderr = tempfile.TemporaryFile(prefix="dpkit-")  # noqa: SIM115 -- the caller closes it
    proc = subprocess.Popen(
        argv,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=text,
        env={**child_env(), **(env or {})},
        start_new_session=True,  # its own group: killpg reaches it and what it starts, and
        # a Ctrl-C in the parent's terminal reaches only the parent
    )
    return proc, stderr


def child_env() -> dict:
    """This environment, quiet TensorFlow, unbuffered output, and dpkit importable."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"),
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "0"),
        "PYTHONPATH": root + (os.pathsep + path if path else ""),
        "PYTHONUNBUFFERED": "1",
        PARENT_VARIABLE: str(os.getpid()),
    }


def watch_parent(interval: float = 0.5) -> None:
    """In a child: exit when the parent dies (nobody is left to read us or stop us).

    The parent's PID comes from :func:`child_env`, not from ``getppid()`` at this moment:
    a parent killed while the child was still starting has already been replaced by init.
    """
    parent = int(os.environ.get(PARENT_VARIABLE) or os.getppid())

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, daemon=True, name="dpkit-watch-parent").start()


def tail(file, chars: int = TAIL_CHARS) -> str:
    """The last ``chars`` characters written to an open (binary) temporary file."""
    try:
        file.seek(0)
        text = file.read().decode(errors="replace")
    except (OSError, ValueError):
        return ""
    return text[-chars:].strip()

"""dpkit.plumbing.procs.Child with real children: closed with grace, a child gets SIGTERM first
(without, it does not); kill reaps once, a second kill sends no signal, and nothing is left
live. Records and ports: tests/unit/test_procs_layer.py."""

import queue
import sys

import pytest

from dpkit.plumbing import procs
from tests.support import machine

TERM_SCRIPT = """
import signal, sys, time
def on_term(*_):
    print("cleaned up on SIGTERM", file=sys.stderr, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("started", flush=True)
time.sleep(600)
"""


def started(child) -> None:
    """Wait (generously, for a busy machine) until the child says it is running."""
    while True:
        _, line = child.lines.get(timeout=120)
        assert line is not None, f"the child ended early: {child.tail()}"
        if line == "started":
            return


@pytest.mark.parametrize("grace, cleaned", [(30.0, True), (0.0, False)])
def test_a_child_with_grace_gets_sigterm_first_when_closed(grace, cleaned):
    child = procs.Child(
        [sys.executable, "-c", TERM_SCRIPT], kind="test", lines=queue.Queue(), grace=grace
    )
    started(child)
    tail = child.close()  # the child's own grace, as close_all at exit uses it
    assert ("cleaned up on SIGTERM" in tail) is cleaned, tail
    assert machine.gone(child.pid) and procs.live("test") == []


def test_kill_reaps_once_and_forgets_the_child():
    child = procs.Child([sys.executable, "-c", TERM_SCRIPT], kind="test", lines=queue.Queue())
    started(child)
    assert child.pid in procs.live("test")
    first = child.kill()

    def no_signal(sig):  # by now its PID may belong to someone else
        raise AssertionError(f"signal {sig} sent to a child that was already reaped")

    child.signal = no_signal
    assert first == -9 and child.kill() == first
    child.close()
    assert machine.gone(child.pid) and procs.live("test") == []


def test_command_runs_to_its_end_with_the_child_environment():
    code, out, err = procs.command(
        [sys.executable, "-c", "import os, sys; print(os.environ['X']); sys.exit(3)"],
        env={"X": "given"},
    )
    assert (code, out.strip(), err) == (3, "given", "")
    assert procs.command(["dpkit-no-such-command"])[0] == 127
    with pytest.raises(TimeoutError, match="still runs after 0.5 s"):
        procs.command([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)

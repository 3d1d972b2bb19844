"""dpkit._procs, the one child-process layer: records, grace at close, kill once, and the
review's regressions (TF1 flag errors keep the flag; timeouts may be infinite)."""

import math
import queue
import sys

import pytest

from dpkit import _checks, _procs, launcher

from . import procs

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
    child = _procs.Child(
        [sys.executable, "-c", TERM_SCRIPT], kind="test", lines=queue.Queue(), grace=grace
    )
    started(child)
    tail = child.close()  # the child's own grace, as close_all at exit uses it
    assert ("cleaned up on SIGTERM" in tail) is cleaned, tail
    assert procs.gone(child.pid) and _procs.live("test") == []


def test_kill_reaps_once_and_forgets_the_child():
    child = _procs.Child([sys.executable, "-c", TERM_SCRIPT], kind="test", lines=queue.Queue())
    started(child)
    assert child.pid in _procs.live("test")
    first = child.kill()

    def no_signal(sig):  # by now its PID may belong to someone else
        raise AssertionError(f"signal {sig} sent to a child that was already reaped")

    child.signal = no_signal
    assert first == -9 and child.kill() == first
    child.close()
    assert procs.gone(child.pid) and _procs.live("test") == []


@pytest.mark.parametrize(
    "line, expected",
    [
        ('{"step": 3, "loss": 0.5}', {"step": 3, "loss": 0.5}),
        ('  {"ready": "ps:0"}  ', {"ready": "ps:0"}),
        ('50%\r100%\r{"event": "window"}', {"event": "window"}),  # after a progress bar
        ("ready", None),
        ("[1, 2]", None),
        ("{not json", None),
        ("", None),
    ],
)
def test_a_stdout_line_is_a_record_or_a_log_line(line, expected):
    assert _procs.parse_record(line) == expected


def test_positive_takes_infinity_to_switch_a_timeout_off_but_not_nan():
    assert _checks.positive_seconds(math.inf, "timeout") == math.inf
    for bad in (0, -1.0, math.nan, True, "5"):
        with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
            _checks.positive_seconds(bad, "timeout")


@pytest.mark.parametrize("spelling", ["--job_name", "--job-name"])
def test_a_flag_without_its_value_is_named_with_the_help_hint(spelling):
    with pytest.raises(launcher.LaunchError) as error:
        launcher.parse([spelling])
    assert spelling.replace("_", "-")[2:] in str(error.value).replace("_", "-")
    assert "--help" in str(error.value)

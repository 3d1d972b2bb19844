"""The CPU seconds make durations stores count what a test's children spent."""

import os
import time

from tests.support import durations


def test_cpu_seconds_count_a_reaped_child():
    """The CPU a test's children spent is counted once they are reaped (their busy loop here)."""
    before = durations.cpu_seconds()
    pid = os.fork()
    if pid == 0:  # the child: half a second of arithmetic, then gone
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    assert durations.cpu_seconds() - before >= 0.45

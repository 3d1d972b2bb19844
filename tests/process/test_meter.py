"""dpkit.meter.OtherLoad against a real busy loop in a process that is not our descendant: it
is counted, and the machine is not called quiet. In this process: tests/unit/test_meter.py."""

import time

from dpkit import meter

# --- OtherLoad: was the machine quiet while measuring? ----------------------------------


def test_a_real_busy_loop_in_another_process_tree_is_counted(tmp_path):
    """A busy loop that is not our descendant (the shell that started it exits): counted."""
    import os
    import signal
    import subprocess
    import sys

    ready = tmp_path / "ready"
    loop = (
        f"import os, time\nopen({str(ready)!r}, 'w').write(str(os.getpid()))\n"
        "t = time.time()\nwhile time.time() - t < 30: pass"
    )
    subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" >/dev/null 2>&1 &', loop], check=True)
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:  # poll: it may start slowly
        time.sleep(0.05)
    assert ready.exists(), "the busy loop did not start within 60 s"
    time.sleep(0.1)  # the pid is written
    try:
        with meter.OtherLoad() as load:
            time.sleep(1.0)
    finally:
        os.kill(int(ready.read_text()), signal.SIGKILL)  # not our child: init reaps it
    # One core of other work (more on a busy machine): well over the quiet line.
    assert load.cores is not None and load.cores > 0.5 and not load.quiet

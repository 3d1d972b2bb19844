"""dpkit.devices.setup in a fresh process: the CPU split against TensorFlow's own listing and an
op placed where asked; idempotence; the restart message for another n or after TensorFlow
started; the command line's exit code for a bad count. Plans and GPU cases:
tests/unit/test_devices.py."""

import subprocess
import sys

from dpkit.plumbing import contract
from tests.support import childproc


def test_setup_splits_the_cpu_and_ops_run_where_asked():
    out = childproc.run(
        """
        import json
        import tensorflow as tf
        from dpkit import devices
        r = devices.setup(3)
        listed = [d.name for d in tf.config.list_logical_devices("CPU")]
        with tf.device(r.devices[2]):
            y = tf.constant([1.0, 2.0]) * 2.0
        print(json.dumps({"devices": list(r.devices), "listed": listed, "case": r.case,
                          "placed": y.device, "table": devices.describe(r)}))
        """
    )
    assert out["case"] == "logical_cpus"
    assert out["devices"] == out["listed"] and len(out["listed"]) == 3  # TF's own listing
    assert out["placed"].endswith("device:CPU:2")
    assert sum(line.startswith(("0 ", "1 ", "2 ")) for line in out["table"].splitlines()) == 3


def test_setup_twice_same_n_is_idempotent_and_other_n_says_restart():
    out = childproc.run(
        """
        import json
        from dpkit import devices
        first = devices.setup(2)
        again = devices.setup(2)
        try:
            devices.setup(3)
            message = None
        except RuntimeError as err:
            message = str(err)
        print(json.dumps({"same": first == again, "message": message}))
        """
    )
    assert out["same"] is True
    assert out["message"] and "Restart the kernel" in out["message"]
    assert "sweep runner" in out["message"]


def test_setup_after_tensorflow_initialised():
    out = childproc.run(
        """
        import json
        import tensorflow as tf
        from dpkit import devices
        tf.constant(1.0) + 1.0          # TensorFlow starts with its default single CPU
        try:
            devices.setup(2)
            message = None
        except RuntimeError as err:
            message = str(err)
        ok = devices.setup(1)            # what it already has is accepted
        print(json.dumps({"message": message, "ok": list(ok.devices)}))
        """
    )
    assert out["message"] and "already initialised with 1 CPU" in out["message"]
    assert "Restart the kernel" in out["message"]
    assert len(out["ok"]) == 1


def test_command_line_reports_bad_count():
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", "devices", "-n", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == contract.Exit.USAGE
    assert "at least 1" in proc.stderr

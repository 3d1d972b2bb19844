"""dpkit.devices.Plan.calls for CPUs: the printed recipe, executed in a fresh process, gives
TensorFlow's own device listing the devices setup reports. The GPU calls against a recording
stand-in: tests/unit/test_devices_calls.py."""

from tests.support import childproc


def test_printed_cpu_recipe_gives_tensorflow_the_devices_setup_reports():
    out = childproc.run(
        """
        import json
        import tensorflow as tf
        from dpkit import devices
        for line in devices.plan(3, 0).calls:
            exec(line)
        listed = [d.name for d in tf.config.list_logical_devices("CPU")]
        r = devices.setup(3)   # the same configuration: TensorFlow accepts it again
        print(json.dumps({"listed": listed, "devices": list(r.devices), "case": r.case}))
        """
    )
    assert out["listed"] == [f"/device:CPU:{i}" for i in range(3)]
    assert out["devices"] == out["listed"] and out["case"] == "logical_cpus"

"""dpkit.bench with real children: the command line's usage error and help, a sweep of 1, 2 and
4 devices that reports those counts, and hung, crashed, contract-breaking, stopped and
interrupted children killed or reported, their PIDs gone. The arithmetic and input checks in
this process: tests/unit/test_bench.py."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from dpkit import bench
from dpkit.plumbing import contract, procs
from dpkit.report import Config
from tests.support import machine
from tests.support.childproc import ROOT

# Small and quick: the runner is under test here, not the model.
TINY = dict(model="mnist_mlp", batch=64, warmup_steps=1, window_steps=2, windows=2)


# --- bad input: a clear error, and no child started ----------------------------------------


def test_command_line_refuses_bad_input_without_starting_anything():
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", "bench", "--devices", "1", "2", "--batch", "255"],
        capture_output=True,
        text=True,
        env=procs.child_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == contract.Exit.USAGE
    assert "use 254 or 256" in proc.stderr and "starting" not in proc.stdout


@pytest.mark.parametrize("command", [[], ["devices"], ["bench"]])
def test_every_command_has_help(command):
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", *command, "--help"],
        capture_output=True,
        text=True,
        env=procs.child_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == contract.Exit.OK and "usage: python -m dpkit" in proc.stdout


# --- the scaling arithmetic, against numbers worked out by hand -----------------------------


# --- real children -------------------------------------------------------------------------


def test_command_line_sweep_of_1_2_4_devices_reports_those_counts(tmp_path):
    out = tmp_path / "sweep.json"
    args = ["--model", "mnist_mlp", "--batch", "64", "--windows", "2", "--window-steps", "2"]
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", "bench", "--devices", "1", "2", "4", *args, "--out", out],
        capture_output=True,
        text=True,
        env=procs.child_env(),
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == contract.Exit.OK, proc.stdout + proc.stderr
    report = bench.load(out)
    assert [r.status for r in report.results] == ["ok"] * 3
    # Each child set up the devices it was asked for, and trained on that many.
    assert [r.num_devices for r in report.results] == [1, 2, 4]
    assert [len(set(r.device_names)) for r in report.results] == [1, 2, 4]
    assert all(len(r.window_rates) == 2 and r.examples_per_sec > 0 for r in report.results)
    assert report.peak_flops_per_sec > 0 and report.rows()[0]["mfu"] > 0
    assert (tmp_path / "sweep.png").stat().st_size > 10_000
    # Progress was printed as it happened: every window of every run, in order.
    windows = [line for line in proc.stdout.splitlines() if " window " in line]
    assert [w.split()[0] for w in windows] == ["[1/3]"] * 2 + ["[2/3]"] * 2 + ["[3/3]"] * 2
    assert procs.live("bench") == []


def _fake_child(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_a_hung_child_is_killed_at_its_timeout_with_its_whole_group(tmp_path):
    sweep = bench.Sweep([1, 2], timeout=3, **TINY)
    sweep._argv = _fake_child(
        """
        import json, subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(json.dumps({"event": "grandchild", "pid": grandchild.pid}), flush=True)
        print("hanging now", file=sys.stderr, flush=True)
        time.sleep(600)
        """
    )
    events = list(sweep.events())
    results = [e.result for e in events if e.kind == "result"]
    assert [r.status for r in results] == ["timeout", "timeout"]
    assert all(3 <= r.seconds < 120 for r in results)  # killed at 3 s, not left to hang
    assert "timeout of 3 s" in results[0].error and "hanging now" in results[0].error
    grandchildren = [e.data["pid"] for e in events if e.kind == "grandchild"]
    assert len(grandchildren) == 2
    assert all(machine.wait_gone(pid, 60) for pid in grandchildren + [r.pid for r in results])


def test_a_real_child_slower_than_its_timeout_is_killed():
    result = bench.run(Config(devices=1, timeout=1.5, **TINY))
    assert result.status == "timeout" and result.seconds < 120
    assert machine.wait_gone(result.pid, 60)


def test_a_crashed_child_is_reported_with_the_end_of_its_stderr():
    sweep = bench.Sweep([1], **TINY)
    sweep._argv = _fake_child(
        """
        import sys
        print("not json at all")
        raise ValueError("the model exploded")
        """
    )
    (result,) = sweep.run().results
    assert result.status == "failed"
    assert "ValueError: the model exploded" in result.error
    assert machine.gone(result.pid)


def test_a_child_whose_record_breaks_the_contract_fails_naming_the_field():
    sweep = bench.Sweep([1], **TINY)
    sweep._argv = _fake_child(
        """
        import json, time
        print(json.dumps({"event": "window", "index": 0, "step": 2, "of_steps": 4}), flush=True)
        time.sleep(600)
        """
    )
    (result,) = sweep.run().results
    assert result.status == "failed"
    assert "missing ['examples_per_sec', 'sec_per_step', 'loss']" in result.error
    assert machine.gone(result.pid)


def test_stop_from_another_thread_kills_the_child_and_starts_no_more():
    sweep = bench.Sweep([1, 2], **TINY)
    started = []
    for event in sweep.events():
        if event.kind == "start":
            started.append(event.data["pid"])
            threading.Timer(1.0, sweep.stop).start()  # as the Stop button does
    assert len(started) == 1
    assert [r.status for r in sweep.report.results] == ["stopped"]
    assert machine.gone(started[0]) and procs.live("bench") == []


def test_leaving_the_loop_early_kills_the_child():
    events = bench.sweep([1, 2], **TINY)
    pid = next(events).data["pid"]
    events.close()  # a `break` out of a for loop does this
    assert machine.gone(pid)


DRIVER = """
import sys
from dpkit import bench
for event in bench.sweep([1, 2], model="mnist_mlp", batch=64, windows=50):
    if event.kind == "start":
        print(event.data["pid"], flush=True)
"""


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill -9"])
def test_an_interrupted_or_killed_sweep_leaves_no_child(how):
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=procs.child_env(),
        cwd=ROOT,
    )
    child = None
    try:
        child = int(driver.stdout.readline())
        assert not machine.gone(child)
        driver.send_signal(how)
        driver.wait(timeout=120)
        # Ctrl-C: the runner kills its child before the driver exits. kill -9: the driver
        # cannot do anything, so the child's watchdog notices its parent is gone.
        assert machine.wait_gone(child, 15, group=True), "the bench child outlived its sweep"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        if child and not machine.group_gone(child):
            os.killpg(child, signal.SIGKILL)

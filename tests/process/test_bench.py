"""dpkit.bench: checks before any child starts, real sweeps, hung, crashed, stopped and
interrupted children, the scaling arithmetic, and the command line."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from dpkit import _procs, bench
from tests import procs
from tests.childproc import ROOT

# Small and quick: the runner is under test here, not the model.
TINY = dict(model="mnist_mlp", batch=64, warmup_steps=1, window_steps=2, windows=2)


def _env():
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}


# --- bad input: a clear error, and no child started ----------------------------------------


@pytest.fixture
def no_children(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a child process was started before the input was checked")

    monkeypatch.setattr(_procs.subprocess, "Popen", refuse)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: bench.Sweep([0, 2]), "from 1 to 64"),
        (lambda: bench.Sweep([1, 2], strategy="ring"), "unknown strategy 'ring'"),
        (lambda: bench.Sweep([1, 2, 4], batch=255), "over 2 devices; use 254 or 256"),
        (lambda: bench.Sweep([1, 2], model="resnet"), "unknown model 'resnet'"),
        (lambda: bench.Sweep([1, 2], dataset="imagenet"), "unknown dataset"),
        (lambda: bench.Sweep([]), "device_counts is empty"),
        (lambda: bench.Sweep([2, 2]), "repeats a count"),
        (lambda: bench.Sweep([1, 2], scaling="medium"), "'strong' or 'weak'"),
        (lambda: bench.Sweep([1, 2], devices=2), "set by the sweep"),
        (lambda: bench.Sweep([1, 2], timeout=0), "positive number of seconds"),
        (lambda: bench.Sweep([1, 2], windows=0), "windows must be a whole number >= 1"),
        (lambda: bench.Sweep([1], batch=0), "batch must be a whole number >= 1"),
        (lambda: bench.Sweep([1, 2.5]), "whole numbers"),
        (lambda: bench.Config(devices=2, strategy="single"), "strategy 'single' trains on one"),
        (lambda: bench.Config(devices=0), "from 1 to 64"),
    ],
)
def test_bad_input_is_refused_before_any_child_starts(no_children, make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_weak_scaling_accepts_any_per_device_batch(no_children):
    sweep = bench.Sweep([1, 2, 4], scaling="weak", batch=3)
    assert [c.global_batch for c in sweep.configs] == [3, 6, 12]


def test_command_line_refuses_bad_input_without_starting_anything():
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", "bench", "--devices", "1", "2", "--batch", "255"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "use 254 or 256" in proc.stderr and "starting" not in proc.stdout


@pytest.mark.parametrize("command", [[], ["devices"], ["bench"]])
def test_every_command_has_help(command):
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", *command, "--help"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0 and "usage: python -m dpkit" in proc.stdout


# --- the scaling arithmetic, against numbers worked out by hand -----------------------------


def _result(n, rate, *, per_device=False, batch=64, status="ok", physical=1):
    config = bench.Config(devices=n, batch=batch, per_device=per_device, **{"model": "lenet5"})
    return bench.Result(
        config=config,
        status=status,
        num_devices=n,
        examples_per_sec=rate if status == "ok" else None,
        window_rates=[rate] if status == "ok" else [],
        spread=0.0,
        sec_per_step=1.0,
        flops_per_example=1_000_000,
        physical_devices=physical,
    )


def test_speedup_efficiency_and_mfu_match_hand_computed_values():
    report = bench.Report(
        results=[_result(1, 1000.0), _result(2, 1500.0), _result(4, 2000.0, physical=4)],
        peak_flops_per_sec=4e9,
    )
    rows = report.rows()
    assert [r["speedup"] for r in rows] == pytest.approx([1.0, 1.5, 2.0])
    assert [r["efficiency"] for r in rows] == pytest.approx([1.0, 0.75, 0.5])
    # 1000 ex/s x 1 MFLOP = 1 GFLOP/s of a 4 GFLOP/s device; with 4 physical devices
    # the peak is 16 GFLOP/s.
    assert [r["mfu"] for r in rows] == pytest.approx([0.25, 0.375, 2.0 / 16])


def test_speedup_is_against_the_smallest_count_that_succeeded():
    report = bench.Report(
        results=[_result(1, 0.0, status="failed"), _result(2, 900.0), _result(4, 1350.0)],
        scaling="weak",
    )
    rows = report.rows()
    assert rows[0]["speedup"] is None and rows[0]["mfu"] is None
    assert [r["speedup"] for r in rows[1:]] == pytest.approx([1.0, 1.5])
    assert rows[2]["efficiency"] == pytest.approx(0.75)
    assert "failed" in report.table()


def test_weak_scaling_grows_the_global_batch():
    report = bench.Report(
        results=[_result(n, 100.0 * n, per_device=True, batch=32) for n in (1, 2, 4)],
        scaling="weak",
    )
    assert [r["global_batch"] for r in report.rows()] == [32, 64, 128]
    assert [r["efficiency"] for r in report.rows()] == pytest.approx([1.0, 1.0, 1.0])


def test_results_survive_a_save_and_load(tmp_path):
    report = bench.Report(results=[_result(1, 1000.0), _result(2, 1800.0)], peak_flops_per_sec=2e9)
    path = tmp_path / "out" / "sweep.json"
    report.save(path)
    assert sorted(os.listdir(path.parent)) == ["sweep.json"]  # no temporary file left
    loaded = bench.Report.load(path)
    assert loaded.as_dict() == report.as_dict()
    assert loaded.rows() == report.rows()


def test_loading_something_else_says_what_the_file_should_be(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a dpkit bench results file"):
        bench.Report.load(path)


def test_plot_draws_throughput_and_speedup_with_the_ideal_line():
    report = bench.Report(results=[_result(1, 1000.0), _result(2, 1500.0)])
    fig = report.plot(live={4: [1700.0, 1750.0]})
    rates, speed = fig.axes
    assert [t.get_text() for t in rates.get_xticklabels()] == ["1", "2", "4"]
    ideal = [line for line in speed.get_lines() if line.get_label() == "ideal"][0]
    assert list(ideal.get_xdata()) == [1, 4] and list(ideal.get_ydata()) == [1, 4]


# --- real children -------------------------------------------------------------------------


def test_command_line_sweep_of_1_2_4_devices_reports_those_counts(tmp_path):
    out = tmp_path / "sweep.json"
    args = ["--model", "mnist_mlp", "--batch", "64", "--windows", "2", "--window-steps", "2"]
    proc = subprocess.run(
        [sys.executable, "-m", "dpkit", "bench", "--devices", "1", "2", "4", *args, "--out", out],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
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
    assert _procs.live("bench") == []


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
    assert all(procs.wait_gone(pid, 60) for pid in grandchildren + [r.pid for r in results])


def test_a_real_child_slower_than_its_timeout_is_killed():
    result = bench.run(bench.Config(devices=1, timeout=1.5, **TINY))
    assert result.status == "timeout" and result.seconds < 120
    assert procs.wait_gone(result.pid, 60)


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
    assert procs.gone(result.pid)


def test_stop_from_another_thread_kills_the_child_and_starts_no_more():
    sweep = bench.Sweep([1, 2], **TINY)
    started = []
    for event in sweep.events():
        if event.kind == "start":
            started.append(event.data["pid"])
            threading.Timer(1.0, sweep.stop).start()  # as the Stop button does
    assert len(started) == 1
    assert [r.status for r in sweep.report.results] == ["stopped"]
    assert procs.gone(started[0]) and _procs.live("bench") == []


def test_leaving_the_loop_early_kills_the_child():
    events = bench.sweep([1, 2], **TINY)
    pid = next(events).data["pid"]
    events.close()  # a `break` out of a for loop does this
    assert procs.gone(pid)


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
        env=_env(),
        cwd=ROOT,
    )
    child = None
    try:
        child = int(driver.stdout.readline())
        assert not procs.gone(child)
        driver.send_signal(how)
        driver.wait(timeout=120)
        # Ctrl-C: the runner kills its child before the driver exits. kill -9: the driver
        # cannot do anything, so the child's watchdog notices its parent is gone.
        assert procs.wait_gone(child, 15, group=True), "the bench child outlived its sweep"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        if child and not procs.group_gone(child):
            os.killpg(child, signal.SIGKILL)

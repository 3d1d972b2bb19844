"""dpkit.bench in this process: bad input refused before any child starts (Popen made to fail),
the scaling arithmetic (speedup, efficiency, MFU) against numbers worked out by hand, results
saved and loaded, and the plot's ideal line. Real sweeps and children:
tests/process/test_bench.py."""

import json
import os
import stat

import pytest

from dpkit import bench
from dpkit.plumbing import procs
from dpkit.report import Config, Report, Result

# --- bad input: a clear error, and no child started ----------------------------------------


@pytest.fixture
def no_children(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a child process was started before the input was checked")

    monkeypatch.setattr(procs.subprocess, "Popen", refuse)


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
        (lambda: bench.Sweep([1, 2.5]), "whole number from 1 to 64, got 2.5"),
        (lambda: Config(devices=2, strategy="single"), "strategy 'single' trains on one"),
        (lambda: Config(devices=0), "from 1 to 64"),
    ],
)
def test_bad_input_is_refused_before_any_child_starts(no_children, make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_weak_scaling_accepts_any_per_device_batch(no_children):
    sweep = bench.Sweep([1, 2, 4], scaling="weak", batch=3)
    assert [c.global_batch for c in sweep.configs] == [3, 6, 12]


# --- the scaling arithmetic, against numbers worked out by hand -----------------------------


def _result(n, rate, *, per_device=False, batch=64, status="ok", physical=1):
    config = Config(devices=n, batch=batch, per_device=per_device, **{"model": "lenet5"})
    return Result(
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
    report = Report(
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
    report = Report(
        results=[_result(1, 0.0, status="failed"), _result(2, 900.0), _result(4, 1350.0)],
        scaling="weak",
    )
    rows = report.rows()
    assert rows[0]["speedup"] is None and rows[0]["mfu"] is None
    assert [r["speedup"] for r in rows[1:]] == pytest.approx([1.0, 1.5])
    assert rows[2]["efficiency"] == pytest.approx(0.75)
    assert "failed" in report.table()


def test_weak_scaling_grows_the_global_batch():
    report = Report(
        results=[_result(n, 100.0 * n, per_device=True, batch=32) for n in (1, 2, 4)],
        scaling="weak",
    )
    assert [r["global_batch"] for r in report.rows()] == [32, 64, 128]
    assert [r["efficiency"] for r in report.rows()] == pytest.approx([1.0, 1.0, 1.0])


def test_results_survive_a_save_and_load(tmp_path):
    report = Report(results=[_result(1, 1000.0), _result(2, 1800.0)], peak_flops_per_sec=2e9)
    path = tmp_path / "sweep.json"
    report.save(path)
    assert sorted(os.listdir(path.parent)) == ["sweep.json"]  # no temporary file left
    loaded = Report.load(path)
    assert loaded.as_dict() == report.as_dict()
    assert loaded.rows() == report.rows()


def test_results_are_readable_like_any_file_this_process_writes(tmp_path):
    """mkstemp makes 0600 files; the plot beside the results is written by open()."""
    Report(results=[_result(1, 1000.0)]).save(tmp_path / "sweep.json")
    (tmp_path / "sweep.png").write_bytes(b"")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes["sweep.json"] == modes["sweep.png"], modes


def test_saving_into_a_missing_folder_says_so_and_makes_nothing(tmp_path):
    with pytest.raises(ValueError, match="the folder .*missing does not exist; create it first"):
        Report(results=[_result(1, 1000.0)]).save(tmp_path / "missing" / "sweep.json")
    assert list(tmp_path.iterdir()) == []


def test_loading_something_else_says_what_the_file_should_be(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a dpkit bench results file"):
        Report.load(path)


def test_plot_draws_throughput_and_speedup_with_the_ideal_line():
    report = Report(results=[_result(1, 1000.0), _result(2, 1500.0)])
    fig = report.plot(live={4: [1700.0, 1750.0]})
    rates, speed = fig.axes
    assert [t.get_text() for t in rates.get_xticklabels()] == ["1", "2", "4"]
    ideal = [line for line in speed.get_lines() if line.get_label() == "ideal"][0]
    assert list(ideal.get_xdata()) == [1, 4] and list(ideal.get_ydata()) == [1, 4]


# --- real children -------------------------------------------------------------------------

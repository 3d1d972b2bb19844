"""dpkit.bench.Sweep(reuse=...): a run already measured with the same settings is taken over,
not run again (lesson 05's weak sweep reuses the strong sweep's run at the same global batch)."""

import pytest

from dpkit import bench
from dpkit.plumbing import procs
from dpkit.report import Config, Result

SETTINGS = dict(model="lenet5", warmup_steps=2, window_steps=2, windows=5)


@pytest.fixture
def no_children(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a child process was started for a run that was already measured")

    monkeypatch.setattr(procs.subprocess, "Popen", refuse)


def _strong(n, rate, *, batch=128, status="ok", peak=None, **settings):
    config = Config(devices=n, batch=batch, **(SETTINGS | settings))
    ok = status == "ok"
    return Result(
        config=config,
        status=status,
        num_devices=n,
        examples_per_sec=rate if ok else None,
        window_rates=[rate * 0.9, rate, rate * 1.1] if ok else [],
        spread=0.2,
        sec_per_step=batch / rate if ok else None,
        peak_flops_per_sec=peak,
    )


def test_a_weak_run_at_a_strong_runs_global_batch_is_reused_without_a_child(no_children):
    strong = [_strong(1, 900.0, peak=5e10), _strong(2, 1000.0), _strong(4, 1100.0)]
    # 32 per device on 4 devices is the strong sweep's global batch of 128 on 4 devices
    sweep = bench.Sweep([4], scaling="weak", batch=32, measure_peak=False, reuse=strong, **SETTINGS)
    events = list(sweep.events())
    assert [e.kind for e in events] == ["result"] and events[0].data == {"reused": True}
    (result,) = sweep.report.results
    assert result.config.global_batch == 128 and result.config.devices == 4
    assert result.examples_per_sec == 1100.0 and result.window_rates == [990.0, 1100.0, 1210.0]
    assert sweep.report.peak_flops_per_sec is None  # the weak sweep did not ask for a peak
    line = bench.describe_event(events[0])
    assert "[1/1] 4 device(s): reused" in line and "global batch 128" in line and "1,100" in line


def test_the_reused_result_is_a_copy(no_children):
    strong = [_strong(4, 1100.0)]
    sweep = bench.Sweep([4], scaling="weak", batch=32, measure_peak=False, reuse=strong, **SETTINGS)
    list(sweep.events())
    sweep.report.results[0].window_rates.append(0.0)
    assert strong[0].window_rates == [990.0, 1100.0, 1210.0]


@pytest.mark.parametrize(
    "earlier",
    [
        _strong(4, 1100.0, batch=256),  # another global batch
        _strong(4, 1100.0, windows=4),  # measured differently
        _strong(4, 1100.0, seed=1),  # other weights and data
        _strong(4, 1100.0, model="mnist_mlp"),
        _strong(2, 1100.0, batch=64),  # the same batch per device, on another count
        _strong(4, 0.0, status="failed"),
    ],
    ids=["batch", "windows", "seed", "model", "devices", "failed"],
)
def test_a_run_with_other_settings_or_that_failed_is_not_reused(earlier):
    sweep = bench.Sweep(
        [4], scaling="weak", batch=32, measure_peak=False, reuse=[earlier], **SETTINGS
    )
    assert sweep.reused == {}


def test_a_run_that_must_measure_the_peak_reuses_only_a_run_that_measured_it():
    without, with_peak = _strong(1, 900.0), _strong(1, 900.0, peak=5e10)
    assert bench.Sweep([1, 2], batch=128, reuse=[without], **SETTINGS).reused == {}
    sweep = bench.Sweep([1, 2], batch=128, reuse=[with_peak], **SETTINGS)
    assert list(sweep.reused) == [0]  # the 2-device run still needs a child


def test_reuse_of_something_other_than_results_is_refused(no_children):
    with pytest.raises(ValueError, match=r"reuse takes the Results .* reuse=report.results"):
        bench.Sweep([1], reuse=[{"devices": 1}])

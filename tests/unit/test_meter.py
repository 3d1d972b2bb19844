"""dpkit.meter in this process: windows against a stopwatch read beside them and a fake clock,
its cost per tick, the errors, and OtherLoad's arithmetic on fake CPU readings.
A real busy loop in another process: tests/process/test_meter.py."""

import time

import pytest

from dpkit import meter


def busy_step(seconds):
    """A step of known duration: spin on the clock (sleep overshoots by a scheduler tick)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_meter_windows_match_a_stopwatch_read_beside_it():
    # The reference is a second reading of the clock after every tick, kept by the test: on
    # a loaded machine the steps run long, but the meter must still report what happened.
    step_seconds, batch, warmup, window = 0.02, 64, 2, 5
    m = meter.ThroughputMeter(batch, warmup_steps=warmup, window_steps=window)
    m.start()
    busy_step(0.2)  # a slow first step, as tracing makes it: must be dropped
    m.tick()
    stopwatch = [time.perf_counter()]
    for _ in range(1 + 4 * window):
        busy_step(step_seconds)
        m.tick()
        stopwatch.append(time.perf_counter())
    summary = m.summary()
    assert len(summary.windows) == 4
    ends = stopwatch[warmup - 1 :: window]  # warm-up ends after tick 2, windows every 5
    expected = [b - a for a, b in zip(ends, ends[1:])]
    got = [w.seconds for w in summary.windows]
    assert got == pytest.approx(expected, abs=5e-3)  # a bug is off by a 20 ms step
    assert min(expected) >= window * step_seconds  # each step spun at least its 20 ms
    median = sorted(expected)[1:3]
    assert summary.sec_per_step == pytest.approx(sum(median) / 2 / window, abs=1e-3)
    # the median of the windows' rates: with 4 windows, the mean of the middle two rates
    # (not the batch over the median step time, which differs unless the windows are equal)
    rates = sorted(batch * window / s for s in got)
    assert summary.examples_per_sec == pytest.approx((rates[1] + rates[2]) / 2)


def test_windows_use_a_fake_clock_exactly():
    times = iter([0.0, 5.0, 6.0, 7.0, 9.0, 11.0, 12.0, 13.0])  # start, then one tick per step
    m = meter.ThroughputMeter(10, warmup_steps=1, window_steps=3, clock=lambda: next(times))
    m.start()
    finished = [m.tick() for _ in range(7)]
    # Warm-up: 0 -> 5. Window 0: steps ending at 6, 7, 9 (4 s). Window 1: 11, 12, 13 (4 s).
    assert [w is not None for w in finished] == [False, False, False, True, False, False, True]
    assert [w.seconds for w in m.summary().windows] == [4.0, 4.0]
    assert m.summary().examples_per_sec == pytest.approx(30 / 4.0)
    assert m.summary().spread == 0.0


def test_per_step_examples_override_the_batch_size():
    times = iter([0.0, 1.0, 2.0])
    m = meter.ThroughputMeter(10, warmup_steps=0, window_steps=2, clock=lambda: next(times))
    m.start()
    m.tick(examples=4)
    window = m.tick(examples=6)
    assert window.examples == 10 and window.examples_per_sec == pytest.approx(5.0)


def test_overhead_is_under_one_percent_of_a_step():
    step_seconds, n = 0.005, 2000
    m = meter.ThroughputMeter(32, warmup_steps=0, window_steps=50)
    m.start()
    start = time.perf_counter()
    for _ in range(n):
        m.tick()
    per_tick = (time.perf_counter() - start) / n
    assert per_tick < 0.01 * step_seconds, f"{per_tick * 1e6:.1f} us per tick"


def test_summary_before_any_window_says_what_to_do():
    m = meter.ThroughputMeter(8, warmup_steps=3, window_steps=10)
    m.start()
    m.tick()
    with pytest.raises(RuntimeError, match="no measurement window finished yet"):
        _ = m.summary().examples_per_sec


def test_tick_before_start_says_what_to_do():
    with pytest.raises(RuntimeError, match=r"call meter.start\(\)"):
        meter.ThroughputMeter(8).tick()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"global_batch_size": 0}, "global_batch_size"),
        ({"global_batch_size": 8, "warmup_steps": -1}, "warmup_steps"),
        ({"global_batch_size": 8, "window_steps": 0}, "window_steps"),
        ({"global_batch_size": 8.5}, "whole number"),
    ],
)
def test_bad_arguments(kwargs, words):
    with pytest.raises(ValueError, match=words):
        meter.ThroughputMeter(**kwargs)


# --- OtherLoad: was the machine quiet while measuring? ----------------------------------


def test_other_load_is_the_machines_busy_time_minus_our_own(monkeypatch):
    # Fake readings: over 2 s the machine was busy 3.0 CPU-s, 2.5 of them ours (a sweep's
    # children included): the others used 0.5 CPU-s, a quarter of a core on average.
    readings = {"clock": iter([10.0, 12.0]), "busy": iter([100.0, 103.0]), "own": iter([7.0, 9.5])}
    monkeypatch.setattr(meter.time, "perf_counter", lambda: next(readings["clock"]))
    monkeypatch.setattr(meter, "_busy_seconds", lambda: next(readings["busy"]))
    monkeypatch.setattr(meter, "_own_seconds", lambda: next(readings["own"]))
    with meter.OtherLoad() as load:
        pass
    assert load.cores == pytest.approx(0.25) and load.seconds == pytest.approx(2.0)
    assert load.quiet is (meter.QUIET_CORES > 0.25)
    assert "0.25 cores" in str(load)


def test_a_busy_machine_is_reported_busy_and_a_quiet_one_quiet(monkeypatch):
    for others, quiet in [(0.0, True), (0.9, False)]:
        readings = {"c": iter([0.0, 1.0]), "b": iter([0.0, 1.0 + others]), "o": iter([0.0, 1.0])}
        monkeypatch.setattr(meter.time, "perf_counter", lambda r=readings: next(r["c"]))
        monkeypatch.setattr(meter, "_busy_seconds", lambda r=readings: next(r["b"]))
        monkeypatch.setattr(meter, "_own_seconds", lambda r=readings: next(r["o"]))
        with meter.OtherLoad() as load:
            pass
        assert load.quiet is quiet
        assert ("BUSY" in str(load)) is not quiet and ("(quiet)" in str(load)) is quiet


def test_an_unknown_load_says_so(monkeypatch):
    def fail():
        raise ImportError("no psutil")

    monkeypatch.setattr(meter, "_busy_seconds", fail)
    with meter.OtherLoad() as load:
        pass
    assert load.cores is None and load.quiet is None and "unknown" in str(load)

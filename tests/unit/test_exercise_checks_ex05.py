"""The checks of exercise 05 pass a right answer and fail wrong ones, saying why."""

from __future__ import annotations

import re
import statistics

import numpy as np
import pytest

from dpkit import meter
from dpkit_checks import ex05


def median_throughput(step_seconds, batch, warmup_steps, window_steps):
    rest = np.asarray(step_seconds[warmup_steps:], dtype=float)
    k = len(rest) // window_steps
    return float(np.median(window_steps * batch / rest[: k * window_steps].reshape(k, -1).sum(1)))


def mean_of_windows(step_seconds, batch, warmup_steps, window_steps):
    rest = step_seconds[warmup_steps:]
    k = len(rest) // window_steps
    return statistics.fmean(
        window_steps * batch / sum(rest[i * window_steps : (i + 1) * window_steps])
        for i in range(k)
    )


def with_partial_window(step_seconds, batch, warmup_steps, window_steps):
    rest = step_seconds[warmup_steps:]
    chunks = [rest[i : i + window_steps] for i in range(0, len(rest), window_steps)]
    return statistics.median(len(c) * batch / sum(c) for c in chunks)


def read_sweep(windows):
    base = min(windows)
    lo, hi = min(windows[base]), max(windows[base])
    out = {}
    for n, rates in windows.items():
        if n != base:
            verdict = "faster" if min(rates) > hi else "slower" if max(rates) < lo else "unclear"
            out[n] = (statistics.median(rates) / statistics.median(windows[base]), verdict)
    return out


def test_a_right_median_passes():
    assert "Check 1 passed" in ex05.check_median_throughput(median_throughput)


@pytest.mark.parametrize(
    "answer, message",
    [
        (mean_of_windows, r"yours is the mean over windows, not their median"),
        (with_partial_window, r"yours counts the incomplete last window \(3 steps\)"),
        (lambda s, b, w, k: 1000.0, r"run 1 \(24 steps\), warm-up 1, window 5: yours 1000\.00"),
    ],
)
def test_a_wrong_median_fails_saying_why(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex05.check_median_throughput(answer)


def without_last_window(step_seconds, batch, warmup_steps, window_steps):
    rest = step_seconds[warmup_steps:]
    return statistics.median(
        window_steps * batch / sum(rest[i : i + window_steps])
        for i in range(0, len(rest) - window_steps, window_steps)
    )


def test_a_mistake_is_named_only_when_it_gives_every_value_the_answer_returned():
    # Leaving out the last window gives, for 24 steps cut by 6, the lower of the two middle
    # windows: that mistake fits this setting by chance, and nowhere else, so none is named.
    with pytest.raises(AssertionError) as caught:
        ex05.check_median_throughput(without_last_window)
    assert re.fullmatch(
        r"run 1 \(24 steps\), warm-up 0, window 6: yours 776\.56 examples/s, want 1020\.75",
        str(caught.value),
    )


def test_a_setting_that_raises_is_reported_after_an_earlier_wrong_value():
    def raises_late(step_seconds, batch, warmup_steps, window_steps):
        if window_steps == 7:
            raise ZeroDivisionError("late")
        return 1000.0

    with pytest.raises(AssertionError, match=r"warm-up 1, window 5: yours 1000\.00"):
        ex05.check_median_throughput(raises_late)


def test_the_meter_is_switched_off_while_the_answer_runs():
    def by_meter(step_seconds, batch, warmup_steps, window_steps):
        return meter.ThroughputMeter(batch, warmup_steps=warmup_steps, window_steps=window_steps)

    with pytest.raises(AssertionError, match=r"calls dpkit's meter\.ThroughputMeter"):
        ex05.check_median_throughput(by_meter)


def test_a_right_reading_passes_and_agrees_with_the_hand_reading():
    assert "Check 2 passed" in ex05.check_read_sweep(read_sweep)
    # the reference, read by hand on one sweep: base 2 (listed second), 4 faster, 8 slower
    sweep = dict(ex05.SWEEPS[3][1])
    want = {4: (1344.5 / 700.0, "faster"), 8: (615.0 / 700.0, "slower")}
    got = ex05.reference_reading(sweep)
    assert got.keys() == want.keys()
    for n in want:
        assert got[n][0] == pytest.approx(want[n][0], rel=1e-12) and got[n][1] == want[n][1]


def _swap(**parts):
    def answer(windows):
        base = parts.get("base", min)(windows)
        b = windows[base]
        out = {}
        for n, rates in windows.items():
            if n == base:
                continue
            s = parts.get("speedup", lambda r, b: statistics.median(r) / statistics.median(b))
            v = parts.get(
                "verdict",
                lambda r, b: (
                    "faster" if min(r) > max(b) else "slower" if max(r) < min(b) else "unclear"
                ),
            )
            out[n] = (s(rates, b), v(rates, b))
        return out

    return answer


@pytest.mark.parametrize(
    "answer, message",
    [
        (
            _swap(speedup=lambda r, b: statistics.fmean(r) / statistics.fmean(b)),
            r"a sweep that scales, 2 devices: .*yours divides the means",
        ),
        (
            _swap(
                verdict=lambda r, b: (
                    "faster" if statistics.median(r) > statistics.median(b) else "slower"
                )
            ),
            r"a gain and a loss inside the spread, 2 devices: yours says 'faster', want 'unclear'"
            r".*medians alone",
        ),
        (_swap(base=lambda w: next(iter(w))), r"yours leaves out 4, the first count listed"),
        (
            _swap(
                verdict=lambda r, b: (
                    "faster" if min(r) >= max(b) else "slower" if max(r) <= min(b) else "unclear"
                )
            ),
            r"windows just touch, 2 devices: yours says 'slower'.*'above' and 'below' are strict",
        ),
        (
            _swap(
                verdict=lambda r, b: (
                    "faster" if min(r) > max(b) else "slower" if max(r) < max(b) else "unclear"
                )
            ),
            # straddles the base's slowest window: no mistake listed gives all its verdicts
            r"a gain and a loss inside the spread, 3 devices: yours says 'slower', want "
            r"'unclear' \(its windows 700 to 905, the base's 801 to 1000\)$",
        ),
        (
            _swap(
                verdict=lambda r, b: (
                    "faster" if min(r) > min(b) else "slower" if max(r) < max(b) else "unclear"
                )
            ),
            r"a gain and a loss inside the spread, 2 devices: .*against the base's same end",
        ),
        (
            _swap(
                verdict=lambda r, b: (
                    "slower" if min(r) < min(b) else "faster" if max(r) > max(b) else "unclear"
                )
            ),
            r"a gain and a loss inside the spread, 2 devices: .*yours lets one window decide",
        ),
    ],
)
def test_a_wrong_reading_fails_saying_why(answer, message):
    with pytest.raises(AssertionError, match=message):
        ex05.check_read_sweep(answer)


def test_an_answer_that_sorts_the_callers_lists_fails():
    def sorts(windows):
        for rates in windows.values():
            rates.sort()
        return read_sweep(windows)

    with pytest.raises(AssertionError, match=r"changed the windows passed in"):
        ex05.check_read_sweep(sorts)


def test_the_checks_own_reading_is_switched_off_while_the_answer_runs():
    with pytest.raises(AssertionError, match=r"calls dpkit's ex05\.reference_reading"):
        ex05.check_read_sweep(ex05.reference_reading)
    assert ex05.reference_reading({1: [1.0], 2: [3.0]}) == {2: (3.0, "faster")}

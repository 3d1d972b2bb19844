"""dpkit.calibrate in this process: the ring-model fit recovers alpha and beta from times made
with NumPy by the hand-written formula (and agrees with SciPy's NNLS where a free fit goes
negative); bad input refused before any process starts; predictions, JSON, table and plot.
A real measurement: tests/process/test_calibrate.py."""

import json
import math

import numpy as np
import pytest

from dpkit import calibrate, pinned
from dpkit.plumbing import procs

SIZES = np.array([1024 * 4**i for i in range(8)], dtype=float)
ALPHA, BETA = 250e-6, 2.5e-9  # 250 us per step, 400 MB/s per link


def ring_by_hand(sizes, workers, alpha, beta):
    """t(M) with the coefficients written out: n=2 -> 2, 1; n=4 -> 6, 1.5."""
    a, b = {2: (2.0, 1.0), 4: (6.0, 1.5)}[workers]
    return a * alpha + b * np.asarray(sizes) * beta


@pytest.mark.parametrize("workers", [2, 4])
def test_fit_recovers_alpha_and_beta_exactly(workers):
    alpha, beta = calibrate.fit_alpha_beta(
        SIZES, ring_by_hand(SIZES, workers, ALPHA, BETA), workers
    )
    assert alpha == pytest.approx(ALPHA, rel=1e-9)
    assert beta == pytest.approx(BETA, rel=1e-9)


@pytest.mark.parametrize("workers", [2, 4])
def test_fit_recovers_alpha_and_beta_through_noise(workers):
    rng = np.random.default_rng(workers)
    sizes = np.repeat(SIZES, 25)  # 25 samples of each size, 5% noise on each
    seconds = ring_by_hand(sizes, workers, ALPHA, BETA) * rng.lognormal(0, 0.05, sizes.size)
    alpha, beta = calibrate.fit_alpha_beta(sizes.tolist(), seconds.tolist(), workers)
    assert alpha == pytest.approx(ALPHA, rel=0.05)
    assert beta == pytest.approx(BETA, rel=0.05)


def test_fit_is_not_fooled_by_the_wrong_worker_count():
    # times made for 4 workers, fitted as 2: alpha 3x and beta 1.5x too big (6/2, 1.5/1)
    alpha, beta = calibrate.fit_alpha_beta(SIZES, ring_by_hand(SIZES, 4, ALPHA, BETA), 2)
    assert alpha == pytest.approx(3 * ALPHA) and beta == pytest.approx(1.5 * BETA)


def test_fit_never_goes_negative_and_matches_scipy_nnls():
    nnls = pytest.importorskip("scipy.optimize").nnls
    # pure bandwidth, the small messages a little fast: the free fit's alpha is negative
    seconds = ring_by_hand(SIZES, 2, 0.0, BETA) * np.array([0.7, 0.8, 0.9] + [1.0] * 5)
    free = np.linalg.lstsq(np.stack([2 + 0 * SIZES, SIZES], 1) / seconds[:, None], 1 + 0 * SIZES)
    assert free[0][0] < 0  # the case this test is about
    alpha, beta = calibrate.fit_alpha_beta(SIZES, seconds, 2)
    reference, _ = nnls(np.stack([2 + 0 * SIZES, SIZES], 1) / seconds[:, None], 1 + 0 * SIZES)
    assert alpha == 0.0 and beta > 0
    assert [alpha, beta] == pytest.approx(reference.tolist(), rel=1e-6, abs=1e-15)
    # and pure latency: the same time for every size fits beta = 0
    alpha, beta = calibrate.fit_alpha_beta(SIZES, [1e-3] * 8, 2)
    assert beta == 0.0 and alpha == pytest.approx(0.5e-3)


@pytest.mark.parametrize(
    "args, message",
    [
        (([1, 2, 3], [1.0, 2.0], 2), "got 3 sizes_bytes but 2 seconds"),
        (([4096, 4096], [1.0, 2.0], 2), "at least 2 distinct message sizes"),
        (([4096, -8], [1.0, 2.0], 2), r"sizes_bytes must all be positive numbers, got \[-8.0\]"),
        (([4096, 8192], [1.0, 0.0], 2), "seconds must all be positive numbers"),
        (([4096, 8192], [1.0, math.nan], 2), "seconds must all be positive numbers"),
        (([4096, 8192], ["fast", "slow"], 2), "seconds must be a list of numbers"),
        (([4096], [1.0], 2), "sizes_bytes must be a flat list of 2 or more numbers"),
        (([[4096, 8192]], [[1.0, 2.0]], 2), "must be a flat list"),
        (([4096, 8192], [1.0, 2.0], 1), "workers must be a whole number >= 2"),
        (([4096, 8192], [1.0, 2.0], 2.5), "workers must be a whole number"),
    ],
)
def test_fit_refuses_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        calibrate.fit_alpha_beta(*args)


def made_up(workers=2) -> calibrate.Calibration:
    sizes = [4096, 65536, 1048576]
    medians = ring_by_hand(sizes, workers, ALPHA, BETA).tolist()
    return calibrate.Calibration(
        workers=workers,
        sizes_bytes=sizes,
        seconds=medians,
        raw_seconds=[[m * 0.9, m, m * 1.2] for m in medians],
        alpha_s=ALPHA,
        beta_s_per_byte=BETA,
        matmul_flops_per_s=5e10,
        cores=[0, 1],
    )


def test_calibration_predicts_by_the_ring_model():
    c = made_up(workers=4)
    assert c.bandwidth_bytes_per_s == pytest.approx(4e8)
    assert c.predict(1e6) == pytest.approx(6 * 250e-6 + 1.5 * 1e6 * 2.5e-9)
    assert c.predict(np.array([0.0, 1e6])) == pytest.approx([1.5e-3, 1.5e-3 + 3.75e-3])
    table = c.table()
    assert "64.0 KB" in table and "alpha 250 us" in table and "400 MB/s" in table
    assert "+0%" in table and "50.0 GFLOP/s" in table  # exact data: no error


def test_calibration_survives_json():
    c = made_up()
    back = calibrate.Calibration.from_dict(json.loads(json.dumps(c.as_dict())))
    assert back == c
    with pytest.raises(ValueError, match="alpha_s, beta_s_per_byte missing"):
        calibrate.Calibration.from_dict(
            {"workers": 2, "sizes_bytes": [], "seconds": [], "raw_seconds": []}
        )


def test_calibration_plot_is_log_log_with_labels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = made_up().plot()
    try:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert "bytes" in ax.get_xlabel() and "seconds" in ax.get_ylabel()
        labels = ax.get_legend_handles_labels()[1]
        assert "measured" in labels and any("400 MB/s" in label for label in labels)
        fitted = [line for line in ax.get_lines() if len(line.get_xdata()) > 10]
        x, y = fitted[0].get_xdata(), fitted[0].get_ydata()
        assert y == pytest.approx(ring_by_hand(x, 2, ALPHA, BETA))
    finally:
        plt.close(ax.figure)


def test_format_bytes():
    assert [calibrate.format_bytes(n) for n in (512, 4096, 1536 * 1024, 16 << 20)] == [
        "512 B",
        "4.0 KB",
        "1.5 MB",
        "16.0 MB",
    ]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(workers=1), "workers must be a whole number >= 2"),
        (dict(workers=10_000), "a pinned worker needs a core of its own"),
        (dict(sizes_bytes=[4096]), "at least 2 different sizes"),
        (dict(sizes_bytes=[4096, 4097]), "use multiples of 4 bytes"),
        (dict(sizes_bytes=[4096, 1 << 40]), "use multiples of 4 bytes up to"),
        (dict(sizes_bytes=[4096, 0]), "each of sizes_bytes must be a whole number >= 4"),
        (dict(sizes_bytes="4096"), "sizes_bytes must be a list of byte counts"),
        (dict(repeats=0), "repeats must be a whole number >= 1"),
        (dict(timeout=0), "timeout must be a positive number of seconds"),
        (dict(echo="print"), "echo must be a function"),
    ],
)
def test_measure_refuses_bad_arguments_before_starting_anything(kwargs, message, monkeypatch):
    if len(pinned.usable_cores()) < 2 and kwargs.get("workers") != 10_000:
        pytest.skip("needs 2 usable cores to reach the other checks")
    started = []
    monkeypatch.setattr(procs.Group, "start", lambda *a, **k: started.append(a))
    with pytest.raises(ValueError, match=message):
        calibrate.measure(**kwargs)
    assert started == []

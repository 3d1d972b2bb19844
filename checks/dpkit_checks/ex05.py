"""Checks of exercise 05 (throughput and scaling).

One function per check cell of exercises/05_*.ipynb. The references are NumPy computations
written here (windows as the rows of a reshaped array, medians by ``np.median``), not
dpkit's meter, which the learner's code may not call while a check runs.
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np

from dpkit import checking, meter
from dpkit_checks import switching

#: what a verdict of :func:`check_read_sweep` may be
VERDICTS = ("faster", "slower", "unclear")


@contextlib.contextmanager
def _answer_running():
    """While the learner's code runs: dpkit's meter, and this module's own references, refuse."""
    references = ("_window_rates", "reference_reading", "_verdict")
    with (
        switching.switched_off(meter, "ThroughputMeter", "Summary"),
        switching.switched_off(sys.modules[__name__], *references),
    ):
        yield


def _runs():
    """Step times (seconds) of a few runs: a tracing step, steady steps, a hiccup or two;
    lengths that leave an incomplete last window for most of the windows tried."""
    rng = np.random.default_rng(5)
    runs = []
    for length, hiccups in ((24, (13,)), (17, (4, 9)), (31, ())):
        seconds = [2.5] + list(0.2 + 0.01 * rng.standard_normal(length - 1))
        for i in hiccups:
            seconds[i] += 0.8
        runs.append([float(s) for s in seconds])
    return runs


def _window_rates(seconds, batch, warmup, window, *, keep_partial=False):
    rest = np.asarray(seconds[warmup:], dtype=np.float64)
    whole = len(rest) // window
    rates = list(window * batch / rest[: whole * window].reshape(whole, window).sum(axis=1))
    left = len(rest) - whole * window
    if keep_partial and left:
        rates.append(left * batch / rest[whole * window :].sum())
    return np.array(rates)


def _median_suspects(seconds, batch, warmup, window):
    """(key, value, what it means) for the rates the usual mistakes give."""
    rates = _window_rates(seconds, batch, warmup, window)
    rest = np.asarray(seconds[warmup:], dtype=np.float64)
    left = len(rest) % window
    used = rest[: len(rest) - left]
    suspects = [
        ("mean", rates.mean(), "yours is the mean over windows, not their median"),
        (
            "steps",
            np.median(batch / rest),
            "yours is the median over single steps, not over windows",
        ),
        (
            "warm",
            np.median(_window_rates(seconds, batch, 0, window)),
            "yours keeps the warm-up steps",
        ),
        (
            "warm+1",
            np.median(_window_rates(seconds, batch, warmup + 1, window)),
            "yours drops one step more than the warm-up",
        ),
        (
            "partial",
            np.median(_window_rates(seconds, batch, warmup, window, keep_partial=True)),
            f"yours counts the incomplete last window ({left} steps)",
        ),
        (
            "batch",
            np.median(rates) / window,
            f"yours counts one batch per window of {window} steps",
        ),
        (
            "pooled",
            len(used) * batch / used.sum(),
            "yours is one rate for all windows together, not the median of their rates",
        ),
    ]
    if len(rates) % 2 == 0:
        middle = "yours picks one of the two middle windows; the median of an even count "
        middle += "averages them"
        ordered = np.sort(rates)
        suspects += [
            ("middle", r, middle) for r in ordered[len(rates) // 2 - 1 : len(rates) // 2 + 1]
        ]
    return suspects


def _explains(key, cases) -> bool:
    """Whether mistake `key` gives every value the answer returned: its value wherever the
    mistake is listed, the right one where it is not (an odd count has no two middles). A
    hint is named only then: a value that matches a mistake by chance names none."""
    for _, got, want, suspects in cases:
        values = [v for k, v, _ in suspects if k == key]
        if not any(_same(got, v) for v in values or [want]):
            return False
    return True


def _run_median(median_throughput, seconds, size, warmup, window, what):
    """The answer's rate for one setting, or an AssertionError saying how it broke."""
    given = list(seconds)
    try:
        with _answer_running():
            got = median_throughput(given, size, warmup, window)
    except AssertionError as error:
        return error
    except Exception as error:
        return AssertionError(f"{what}: raised {type(error).__name__}: {error}")
    if given != seconds:
        return AssertionError(
            f"{what}: your function changed the list of step times passed in "
            f"({len(seconds)} entries before, {len(given)} after); leave the caller's "
            "list as it was"
        )
    try:
        return float(got)
    except (TypeError, ValueError):
        return AssertionError(f"{what}: yours returns {got!r}, not a number")


def check_median_throughput(median_throughput, batch: int = 256) -> str:
    """Check ``median_throughput(step_seconds, batch, warmup_steps, window_steps)``.

    Varies the run (three runs of 24, 17 and 31 steps, with and without hiccups), the warm-up
    (0 to 3 steps), the window (1 to 7 steps: odd and even window counts, a last window that
    is incomplete or not) and the batch. The reference is NumPy: the steps after the warm-up
    cut into the rows of an array, one rate per row, ``np.median``. dpkit's meter
    (``ThroughputMeter``, ``Summary``) is switched off while the answer runs. The first
    setting that goes wrong is reported, with a likely mistake only when that mistake gives
    every value the answer returned.
    """
    settings = [(1, 5), (3, 4), (0, 6), (2, 7), (1, 1), (2, 3)]
    cases, broke = [], None
    for r, seconds in enumerate(_runs()):
        for warmup, window in settings:
            size = batch + 32 * r
            what = f"run {r + 1} ({len(seconds)} steps), warm-up {warmup}, window {window}"
            got = _run_median(median_throughput, seconds, size, warmup, window, what)
            if isinstance(got, AssertionError):
                broke = got
                break
            want = float(np.median(_window_rates(seconds, size, warmup, window)))
            cases.append((what, got, want, _median_suspects(seconds, size, warmup, window)))
        if broke is not None:
            break
    for what, got, want, suspects in cases:
        if _same(got, want):
            continue
        hint = next((m for k, v, m in suspects if _same(got, v) and _explains(k, cases)), "")
        raise AssertionError(
            f"{what}: yours {got:.2f} examples/s, want {want:.2f}" + (f": {hint}" if hint else "")
        )
    if broke is not None:
        raise broke
    return "Check 1 passed: the median over whole windows, for 3 runs and 6 settings each"


def _same(a, b) -> bool:
    return bool(checking.agree(a, b))


# --- reading a sweep ----------------------------------------------------------------------


def _verdict(low: float, high: float, base_low: float, base_high: float) -> str:
    if low > base_high:
        return "faster"
    if high < base_low:
        return "slower"
    return "unclear"


def reference_reading(windows: dict) -> dict:
    """The reading the task asks for, in NumPy: {n: (speed-up of medians, verdict)}."""
    base = min(windows)
    b = np.asarray(windows[base], dtype=np.float64)
    out = {}
    for n, rates in windows.items():
        if n == base:
            continue
        w = np.asarray(rates, dtype=np.float64)
        verdict = _verdict(w.min(), w.max(), b.min(), b.max())
        out[n] = (float(np.median(w) / np.median(b)), verdict)
    return out


#: the sweeps the check reads: (what it shows, {devices: window rates}), keys unsorted
SWEEPS = [
    (
        "a sweep that scales",
        {
            4: [3510.0, 3620.0, 3555.0, 3402.0],
            1: [1000.0, 1021.0, 990.0, 1012.0, 1004.0],
            2: [1850.0, 1903.0, 1880.0],
        },
    ),
    (
        "a gain and a loss inside the spread",
        {
            2: [950.0, 1100.0, 1002.0],
            1: [801.0, 1000.0, 903.0, 948.0],
            3: [700.0, 905.0, 860.0],
            4: [780.0, 990.0, 1010.0, 995.0],
        },
    ),
    (
        "a base with one slow window",
        {
            1: [1000.0, 1010.0, 990.0, 1005.0, 300.0],
            3: [1100.0, 1122.0, 1090.0],
            2: [1000.0, 1700.0, 1050.0, 1061.0],
        },
    ),
    (
        "a sweep from 2 devices, with a slowdown",
        {
            8: [610.0, 640.0, 598.0, 620.0, 605.0, 633.0],
            2: [700.0, 722.0, 690.0],
            4: [1301.0, 1388.0],
        },
    ),
    (
        "a sweep whose windows just touch",
        {
            16: [2000.0, 2100.0],
            1: [150.0, 1900.0, 2000.0, 1800.0],
            4: [2001.0, 2050.0],
            2: [120.0, 150.0],
        },
    ),
]


def _copy(windows: dict) -> dict:
    return {n: list(rates) for n, rates in windows.items()}


def _speedup_suspects(n, windows):
    base = min(windows)
    first = next(iter(windows))
    med = {k: float(np.median(v)) for k, v in windows.items()}
    mean = {k: float(np.mean(v)) for k, v in windows.items()}
    speedup = med[n] / med[base]
    return [
        ("mean", mean[n] / mean[base], "yours divides the means of the windows; use their medians"),
        (
            "first",
            med[n] / med[first],
            f"yours is against the first count listed ({first}); the base is the smallest, {base}",
        ),
        (
            "fastest",
            med[n] / max(med.values()),
            "yours is against the fastest run, not the smallest count",
        ),
        ("efficiency", speedup * base / n, "yours is the efficiency (divided by the device ratio)"),
        ("inverse", med[base] / med[n], "yours is upside down: the base's rate over this count's"),
    ]


def _verdict_suspects(n, windows):
    base = min(windows)
    first = next(iter(windows))
    w, b = np.asarray(windows[n], float), np.asarray(windows[base], float)
    f = np.asarray(windows[first], float)
    speedup = np.median(w) / np.median(b)
    ge = "faster" if w.min() >= b.max() else ("slower" if w.max() <= b.min() else "unclear")
    return [
        ("touch", ge, "yours lets windows that only touch count; 'above' and 'below' are strict"),
        (
            "medians",
            "faster" if speedup > 1 else "slower" if speedup < 1 else "unclear",
            "yours reads the medians alone; the spread of the windows decides",
        ),
        (
            "first",
            _verdict(w.min(), w.max(), f.min(), f.max()),
            f"yours compares with the first count listed ({first}), not the smallest ({base})",
        ),
        (
            "median-in",
            _verdict(np.median(w), np.median(w), b.min(), b.max()),
            "yours puts this count's median, not its slowest (or fastest) window, against the "
            "base's windows",
        ),
        (
            "base-median",
            _verdict(w.min(), w.max(), np.median(b), np.median(b)),
            "yours compares this count's windows with the base's median, not with its "
            "fastest (or slowest) window",
        ),
        (
            "same-ends",
            _verdict(w.min(), w.max(), b.max(), b.min()),
            "yours puts each end against the base's same end (slowest against slowest); "
            "'faster' needs this count's slowest window above the base's fastest, 'slower' "
            "its fastest below the base's slowest",
        ),
        (
            "one-window",
            "slower" if w.min() < b.min() else "faster" if w.max() > b.max() else "unclear",
            "yours lets one window decide; 'faster' needs every window above the base's "
            "fastest, 'slower' every window below the base's slowest",
        ),
    ]


def _answer_reading(read_sweep, what, windows):
    """The answer's reading of one sweep, {n: (float, verdict)}, or an AssertionError saying
    how it broke (raised, changed the caller's data, wrong counts, not pairs, unknown
    verdicts)."""
    given = _copy(windows)
    try:
        with _answer_running():
            got = read_sweep(given)
    except AssertionError as error:
        return error
    except Exception as error:
        return AssertionError(f"{what}: raised {type(error).__name__}: {error}")
    if given != windows or list(given) != list(windows):
        return AssertionError(
            f"{what}: your function changed the windows passed in (sorted or dropped some?); "
            "work on copies, leave the caller's data as it was"
        )
    if not isinstance(got, dict):
        return AssertionError(f"{what}: yours returns {type(got).__name__}, want a dict")
    base, first = min(windows), next(iter(windows))
    want = sorted(set(windows) - {base})
    if sorted(got, key=str) != sorted(want, key=str):
        if first != base and sorted(got, key=str) == sorted(set(windows) - {first}, key=str):
            return AssertionError(
                f"{what}: yours leaves out {first}, the first count listed, and keeps the "
                f"smallest, {base}: the base is the smallest count, wherever it is listed"
            )
        if base in got:
            return AssertionError(
                f"{what}: yours has an entry for the base count {base}; give one for "
                "every other count"
            )
        return AssertionError(
            f"{what}: yours has entries for {sorted(got, key=str)}, want one for each of "
            f"{want} (every count but the base, {base})"
        )
    reading = {}
    for n in want:
        try:
            mine, said = got[n]
            reading[n] = (float(mine), said)
        except (TypeError, ValueError):
            return AssertionError(
                f"{what}, {n} devices: got {got[n]!r}, want a (speed-up, verdict) pair"
            )
        if said not in VERDICTS:
            return AssertionError(
                f"{what}, {n} devices: verdict {said!r}; say one of {', '.join(VERDICTS)}"
            )
    return reading


def _hint(pick, readings, got, suspects, same) -> str:
    """The message of the one mistake that gives `got` here and exactly what the answer gave
    for every other count (`pick` takes the speed-up or the verdict of a reading), or "": a
    match by chance in one place, or two mistakes that fit alike, name none."""
    fits = {
        message
        for key, value, message in suspects
        if same(got, value)
        and all(
            any(k == key and same(pick(reading[n]), v) for k, v, _ in sus)
            for reading, n, _, sus in readings
        )
    }
    return fits.pop() if len(fits) == 1 else ""


def check_read_sweep(read_sweep) -> str:
    """Check ``read_sweep(windows) -> {n: (speed-up, verdict)}``.

    Five sweeps, each a dict ``{devices: [examples/s of each window]}`` with keys not in
    order: one that scales, one whose gain and loss are inside the spread of the windows (a
    count whose windows straddle the base's slowest), one whose base has a slow window (the
    mean lies, the median does not), one whose smallest count is 2 and whose largest is
    slower, and one where counts' windows only touch the base's, from above and from below.
    Window counts differ between counts (even and odd). The reference is NumPy
    (``np.median``, ``min``, ``max``); the caller's dict and lists must come back unchanged.
    The first count read wrong is reported, with a likely mistake only when that mistake
    gives every reading the answer returned.
    """
    read, broke = [], None
    for what, windows in SWEEPS:
        got = _answer_reading(read_sweep, what, windows)
        if isinstance(got, AssertionError):
            broke = got
            break
        read.append((what, windows, got, reference_reading(windows)))
    speedups = [
        (got, n, want[n][0], _speedup_suspects(n, windows))
        for _, windows, got, want in read
        for n in want
    ]
    verdicts = [
        (got, n, want[n][1], _verdict_suspects(n, windows))
        for _, windows, got, want in read
        for n in want
    ]
    for what, windows, got, want in read:
        base_w = windows[min(windows)]
        for n in sorted(want):
            (mine, said), (speedup, verdict) = got[n], want[n]
            if not _same(mine, speedup):
                hint = _hint(lambda r: r[0], speedups, mine, _speedup_suspects(n, windows), _same)
                raise AssertionError(
                    f"{what}, {n} devices: speed-up {mine:.4f}, want {speedup:.4f}"
                    + (f": {hint}" if hint else "")
                )
            if said != verdict:
                hint = _hint(
                    lambda r: r[1],
                    verdicts,
                    said,
                    _verdict_suspects(n, windows),
                    lambda a, b: a == b,
                )
                raise AssertionError(
                    f"{what}, {n} devices: yours says {said!r}, want {verdict!r} (its windows "
                    f"{min(windows[n]):g} to {max(windows[n]):g}, the base's {min(base_w):g} to "
                    f"{max(base_w):g})" + (f": {hint}" if hint else "")
                )
    if broke is not None:
        raise broke
    return f"Check 2 passed: speed-ups and verdicts of {len(SWEEPS)} sweeps"

"""Wrong answers for exercises/05_throughput_and_scaling.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "05_throughput_and_scaling.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "speed-up of means"

# The reading of exercise 2 with its two pieces left open: {speedup} and {verdict}.
_READ = """
base = min(windows)
low, high = min(windows[base]), max(windows[base])
reading = {{}}
for n, rates in windows.items():
    if n == base:
        continue
    speedup = {speedup}
    {verdict}
    reading[n] = (speedup, verdict)
return reading
"""
_MEDIANS = "statistics.median(rates) / statistics.median(windows[base])"
_VERDICT = """if min(rates) > high:
        verdict = "faster"
    elif max(rates) < low:
        verdict = "slower"
    else:
        verdict = "unclear\""""


def _read(speedup=_MEDIANS, verdict=_VERDICT):
    return _READ.format(speedup=speedup, verdict=verdict)


WRONG: list[Wrong] = [
    # 1. median_throughput
    Wrong(
        1,
        "mean instead of median",
        """
        rest = step_seconds[warmup_steps:]
        rates = [
            window_steps * batch / sum(rest[i : i + window_steps])
            for i in range(0, len(rest) - window_steps + 1, window_steps)
        ]
        return statistics.mean(rates)
        """,
        check="1",
        expect=r"warm-up 1, window 5: .*yours is the mean over windows, not their median",
    ),
    Wrong(
        1,
        "per-step rates",
        "return statistics.median(batch / s for s in step_seconds[warmup_steps:])",
        check="1",
        expect=r"warm-up 1, window 5: .*yours is the median over single steps, not over windows",
    ),
    Wrong(
        1,
        "keeps the incomplete last window",
        """
        rest = step_seconds[warmup_steps:]
        chunks = [rest[i : i + window_steps] for i in range(0, len(rest), window_steps)]
        return statistics.median(len(c) * batch / sum(c) for c in chunks)
        """,
        check="1",
        expect=r"warm-up 1, window 5: .*yours counts the incomplete last window \(3 steps\)",
    ),
    Wrong(
        1,
        "warm-up not dropped",
        """
        windows = len(step_seconds) // window_steps
        return statistics.median(
            window_steps * batch / sum(step_seconds[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        """,
        check="1",
        expect=r"warm-up 1, window 5: .*yours keeps the warm-up steps",
    ),
    Wrong(
        1,
        "one step too many dropped",
        """
        rest = step_seconds[warmup_steps + 1 :]
        windows = len(rest) // window_steps
        return statistics.median(
            window_steps * batch / sum(rest[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        """,
        check="1",
        expect=r"warm-up 1, window 5: .*yours drops one step more than the warm-up",
    ),
    Wrong(
        1,
        "one batch per window",
        """
        rest = step_seconds[warmup_steps:]
        windows = len(rest) // window_steps
        return statistics.median(
            batch / sum(rest[i * window_steps : (i + 1) * window_steps]) for i in range(windows)
        )
        """,
        check="1",
        expect=r"warm-up 1, window 5: .*yours counts one batch per window of 5 steps",
    ),
    Wrong(
        1,
        "one rate for the whole run",
        """
        rest = step_seconds[warmup_steps:]
        used = len(rest) // window_steps * window_steps
        return used * batch / sum(rest[:used])
        """,
        check="1",
        expect=r"warm-up 1, window 5: .*yours is one rate for all windows together",
    ),
    Wrong(
        1,
        "upper middle instead of the median",
        """
        rest = step_seconds[warmup_steps:]
        windows = len(rest) // window_steps
        rates = sorted(
            window_steps * batch / sum(rest[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        return rates[len(rates) // 2]
        """,
        check="1",
        expect=r"warm-up 1, window 5: .*yours picks one of the two middle windows",
    ),
    Wrong(
        1,
        "deletes the warm-up from the caller's list",
        """
        del step_seconds[:warmup_steps]
        windows = len(step_seconds) // window_steps
        return statistics.median(
            window_steps * batch / sum(step_seconds[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        """,
        check="1",
        expect=r"warm-up 1, window 5: your function changed the list of step times passed in "
        r"\(24 entries before, 23 after\)",
    ),
    Wrong(
        1,
        "ThroughputMeter does it",
        """
        from dpkit import meter

        times = iter(np.concatenate([[0.0], np.cumsum(step_seconds)]))
        m = meter.ThroughputMeter(
            batch, warmup_steps=warmup_steps, window_steps=window_steps, clock=lambda: next(times)
        )
        m.start()
        for _ in step_seconds:
            m.tick()
        return m.summary().examples_per_sec
        """,
        check="1",
        expect=r"your code calls dpkit's meter\.ThroughputMeter: the exercise is to write it",
    ),
    Wrong(
        1,
        "the batch of the notebook, not the argument",
        """
        rest = step_seconds[warmup_steps:]
        windows = len(rest) // window_steps
        return statistics.median(
            window_steps * BATCH / sum(rest[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        """,
        check="1",
        expect=r"run 2 \(17 steps\), warm-up 1, window 5: yours 720\.97 examples/s, want 811\.09",
    ),
    Wrong(
        1,
        "the last complete window left out",
        """
        rest = step_seconds[warmup_steps:]
        rates = [
            window_steps * batch / sum(rest[i : i + window_steps])
            for i in range(0, len(rest) - window_steps, window_steps)
        ]
        return statistics.median(rates)
        """,
        check="1",
        # no hint: its value matches 'one of the two middle windows' here by chance only
        expect=r"run 1 \(24 steps\), warm-up 0, window 6: yours 776\.56 examples/s, want "
        r"1020\.75$",
    ),
    # 2. read_sweep
    Wrong(
        2,
        "speed-up of means",
        _read(speedup="statistics.fmean(rates) / statistics.fmean(windows[base])"),
        check="2",
        expect=r"a sweep that scales, 2 devices: speed-up 1\.8676, want 1\.8725: yours divides "
        r"the means",
    ),
    Wrong(
        2,
        "the medians alone decide",
        _read(
            verdict='verdict = "faster" if speedup > 1 else "slower" if speedup < 1 else "unclear"'
        ),
        check="2",
        expect=r"a gain and a loss inside the spread, 2 devices: yours says 'faster', want "
        r"'unclear' .*yours reads the medians alone",
    ),
    Wrong(
        2,
        "the first count listed is the base",
        _read().replace("base = min(windows)", "base = next(iter(windows))"),
        check="2",
        expect=r"a sweep that scales: yours leaves out 4, the first count listed, and keeps "
        r"the smallest, 1: the base is the smallest count",
    ),
    Wrong(
        2,
        "the base is 1 device",
        _read().replace("base = min(windows)", "base = 1"),
        check="2",
        expect=r"a sweep from 2 devices, with a slowdown: raised KeyError",
    ),
    Wrong(
        2,
        "efficiency, not speed-up",
        _read(speedup=f"{_MEDIANS} / (n / base)"),
        check="2",
        expect=r"a sweep that scales, 2 devices: speed-up 0\.9\d+, want 1\.8\d+: yours is the "
        r"efficiency",
    ),
    Wrong(
        2,
        "windows that touch count",
        _read(verdict=_VERDICT.replace(">", ">=").replace("<", "<=")),
        check="2",
        expect=r"a sweep whose windows just touch, 2 devices: yours says 'slower', want "
        r"'unclear'.*'above' and 'below' are strict",
    ),
    Wrong(
        2,
        "no slower verdict",
        _read(verdict='verdict = "faster" if min(rates) > high else "unclear"'),
        check="2",
        expect=r"a sweep from 2 devices, with a slowdown, 8 devices: yours says 'unclear', "
        r"want 'slower'",
    ),
    Wrong(
        2,
        "the base's entry kept",
        _read().replace("    if n == base:\n        continue\n", ""),
        check="2",
        expect=r"a sweep that scales: yours has an entry for the base count 1",
    ),
    Wrong(
        2,
        "sorts the caller's lists",
        """
        for rates in windows.values():
            rates.sort()
        base = min(windows)
        reading = {}
        for n, rates in windows.items():
            if n == base:
                continue
            speedup = statistics.median(rates) / statistics.median(windows[base])
            if rates[0] > windows[base][-1]:
                verdict = "faster"
            elif rates[-1] < windows[base][0]:
                verdict = "slower"
            else:
                verdict = "unclear"
            reading[n] = (speedup, verdict)
        return reading
        """,
        check="2",
        expect=r"a sweep that scales: your function changed the windows passed in",
    ),
    Wrong(
        2,
        "the upper middle of an even count",
        _read(speedup="statistics.median_high(rates) / statistics.median_high(windows[base])"),
        check="2",
        expect=r"a sweep that scales, 4 devices: speed-up 3\.5408, want 3\.5184",
    ),
    Wrong(
        2,
        "the check's own reference",
        """
        from dpkit_checks import ex05

        return ex05.reference_reading(windows)
        """,
        check="2",
        expect=r"your code calls dpkit's ex05\.reference_reading",
    ),
    Wrong(
        2,
        "'slower' against the base's fastest window",
        _read(verdict=_VERDICT.replace("max(rates) < low", "max(rates) < high")),
        check="2",
        expect=r"a gain and a loss inside the spread, 3 devices: yours says 'slower', want "
        r"'unclear' \(its windows 700 to 905, the base's 801 to 1000\)$",
    ),
    Wrong(
        2,
        "one slow window makes it 'slower'",
        _read(verdict=_VERDICT.replace("max(rates) < low", "min(rates) < low")),
        check="2",
        expect=r"a gain and a loss inside the spread, 3 devices: yours says 'slower', want "
        r"'unclear'",
    ),
    Wrong(
        2,
        "each end against the base's same end",
        _read(verdict=_VERDICT.replace("> high", "> low").replace("< low", "< high")),
        check="2",
        expect=r"a gain and a loss inside the spread, 2 devices: yours says 'faster', want "
        r"'unclear'.*yours puts each end against the base's same end",
    ),
]

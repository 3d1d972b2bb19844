"""Wrong answers for exercises/05_throughput_and_scaling.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "05_throughput_and_scaling.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "mean instead of median"

WRONG: list[Wrong] = [
    # 1. scaling
    Wrong(
        1,
        "efficiency divides by n",
        """
        n0 = min(rates)
        table = {}
        for n, rate in rates.items():
            speedup = rate / rates[n0]
            table[n] = (speedup, speedup / n, rate * flops_per_example / (peak * physical[n]))
        return table
        """,
        check="1",
        expect=r"a sweep from 2 devices, n = 2: efficiency 0\.5000 divides the speed-up by 2; "
        r"2 devices are 1 times the base's 2",
    ),
    Wrong(
        1,
        "speed-up against the first entry",
        """
        n0 = next(iter(rates))
        table = {}
        for n, rate in rates.items():
            speedup = rate / rates[n0]
            mfu = rate * flops_per_example / (peak * physical[n])
            table[n] = (speedup, speedup / (n / n0), mfu)
        return table
        """,
        check="1",
        expect=r"a sweep from 2 devices, n = 2: speed-up 0\.3333 is measured against "
        r"the 8-device run; the base is the smallest device count, 2",
    ),
    Wrong(
        1,
        "speed-up against the previous count",
        """
        table, before = {}, None
        for n in sorted(rates):
            base = before if before is not None else n
            speedup = rates[n] / rates[base]
            mfu = rates[n] * flops_per_example / (peak * physical[n])
            table[n] = (speedup, speedup / (n / base), mfu)
            before = n
        return table
        """,
        check="1",
        expect=r"the sweep above, n = 4: speed-up 1\.4286 is measured against the 2-device run",
    ),
    Wrong(
        1,
        "MFU over the logical devices",
        """
        n0 = min(rates)
        table = {}
        for n, rate in rates.items():
            speedup = rate / rates[n0]
            table[n] = (speedup, speedup / (n / n0), rate * flops_per_example / (peak * n))
        return table
        """,
        check="1",
        expect=r"the sweep above, n = 2: MFU .* is 0\.5 times Report's: it divides by the peak "
        r"of 2 devices, but the run used 1 physical",
    ),
    Wrong(
        1,
        "MFU over one device's peak",
        """
        n0 = min(rates)
        table = {}
        for n, rate in rates.items():
            speedup = rate / rates[n0]
            table[n] = (speedup, speedup / (n / n0), rate * flops_per_example / peak)
        return table
        """,
        check="1",
        expect=r"the sweep above, n = 4: MFU .* is 4 times Report's",
    ),
    Wrong(
        1,
        "MFU in percent",
        """
        n0 = min(rates)
        table = {}
        for n, rate in rates.items():
            speedup = rate / rates[n0]
            mfu = 100 * rate * flops_per_example / (peak * physical[n])
            table[n] = (speedup, speedup / (n / n0), mfu)
        return table
        """,
        check="1",
        expect=r"the sweep above, n = 1: MFU .* is 100 times Report's",
    ),
    Wrong(
        1,
        "speed-up and efficiency swapped",
        """
        n0 = min(rates)
        table = {}
        for n, rate in rates.items():
            speedup = rate / rates[n0]
            mfu = rate * flops_per_example / (peak * physical[n])
            table[n] = (speedup / (n / n0), speedup, mfu)
        return table
        """,
        check="1",
        expect=r"the sweep above, n = 2: speed-up and efficiency are swapped",
    ),
    Wrong(
        1,
        "a dict per device count",
        """
        n0 = min(rates)
        return {
            n: {
                "speedup": rate / rates[n0],
                "efficiency": rate / rates[n0] / (n / n0),
                "mfu": rate * flops_per_example / (peak * physical[n]),
            }
            for n, rate in rates.items()
        }
        """,
        check="1",
        expect=r"the sweep above, n = 1: got \{'speedup'.*want a \(speed-up, efficiency, MFU\)",
    ),
    Wrong(
        1,
        "speed-up against the slowest run",
        """
        n0 = min(rates, key=rates.get)
        table = {}
        for n, rate in rates.items():
            speedup = rate / rates[n0]
            mfu = rate * flops_per_example / (peak * physical[n])
            table[n] = (speedup, speedup / (n / n0), mfu)
        return table
        """,
        check="1",
        expect=r"a sweep where 4 devices ran slower than 1, n = 1: speed-up 1\.1111 is measured "
        r"against the 4-device run; the base is the smallest device count, 1",
    ),
    Wrong(
        1,
        "the lowest rate as the base rate",
        """
        n0, r0 = min(rates), min(rates.values())
        return {
            n: (r / r0, r / r0 / (n / n0), r * flops_per_example / (peak * physical[n]))
            for n, r in rates.items()
        }
        """,
        check="1",
        expect=r"a sweep where 4 devices ran slower than 1, n = 1: speed-up 1\.1111 is measured "
        r"against the 4-device run",
    ),
    Wrong(
        1,
        "bench.Report does it",
        """
        results = [
            bench.Result(
                config=bench.Config(devices=n, batch=GLOBAL_BATCH_SIZE),
                examples_per_sec=rate,
                flops_per_example=flops_per_example,
                physical_devices=physical[n],
            )
            for n, rate in rates.items()
        ]
        rows = bench.Report(results=results, peak_flops_per_sec=peak).rows()
        return {row["devices"]: (row["speedup"], row["efficiency"], row["mfu"]) for row in rows}
        """,
        check="1",
        expect=r"your code calls dpkit's bench\.Report: the exercise is to write it yourself",
    ),
    # 2. median_throughput
    Wrong(
        2,
        "mean instead of median",
        """
        rest = step_seconds[warmup_steps:]
        rates = [
            window_steps * batch / sum(rest[i : i + window_steps])
            for i in range(0, len(rest) - window_steps + 1, window_steps)
        ]
        return statistics.mean(rates)
        """,
        check="2",
        expect=r"warm-up 1, window 5: .*yours is the mean over windows, not their median",
    ),
    Wrong(
        2,
        "per-step rates",
        "return statistics.median(batch / s for s in step_seconds[warmup_steps:])",
        check="2",
        expect=r"warm-up 1, window 5: .*yours is the median over single steps, not over windows",
    ),
    Wrong(
        2,
        "keeps the incomplete last window",
        """
        rest = step_seconds[warmup_steps:]
        chunks = [rest[i : i + window_steps] for i in range(0, len(rest), window_steps)]
        return statistics.median(len(c) * batch / sum(c) for c in chunks)
        """,
        check="2",
        expect=r"warm-up 1, window 5: .*yours counts the incomplete last window \(3 steps\)",
    ),
    Wrong(
        2,
        "warm-up not dropped",
        """
        windows = len(step_seconds) // window_steps
        return statistics.median(
            window_steps * batch / sum(step_seconds[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        """,
        check="2",
        expect=r"warm-up 1, window 5: .*yours keeps the warm-up steps",
    ),
    Wrong(
        2,
        "one step too many dropped",
        """
        rest = step_seconds[warmup_steps + 1 :]
        windows = len(rest) // window_steps
        return statistics.median(
            window_steps * batch / sum(rest[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        """,
        check="2",
        expect=r"warm-up 1, window 5: .*yours drops one step more than the warm-up",
    ),
    Wrong(
        2,
        "one batch per window",
        """
        rest = step_seconds[warmup_steps:]
        windows = len(rest) // window_steps
        return statistics.median(
            batch / sum(rest[i * window_steps : (i + 1) * window_steps]) for i in range(windows)
        )
        """,
        check="2",
        expect=r"warm-up 1, window 5: .*yours counts one batch per window of 5 steps",
    ),
    Wrong(
        2,
        "one rate for the whole run",
        """
        rest = step_seconds[warmup_steps:]
        used = len(rest) // window_steps * window_steps
        return used * batch / sum(rest[:used])
        """,
        check="2",
        expect=r"warm-up 1, window 5: .*yours is one rate for all windows together",
    ),
    Wrong(
        2,
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
        check="2",
        expect=r"warm-up 1, window 5: .*yours picks one of the two middle windows",
    ),
    Wrong(
        2,
        "deletes the warm-up from the caller's list",
        """
        del step_seconds[:warmup_steps]
        windows = len(step_seconds) // window_steps
        return statistics.median(
            window_steps * batch / sum(step_seconds[i * window_steps : (i + 1) * window_steps])
            for i in range(windows)
        )
        """,
        check="2",
        expect=r"warm-up 1, window 5: your function changed the list of step times passed in "
        r"\(24 entries before, 23 after\)",
    ),
    Wrong(
        2,
        "ThroughputMeter does it",
        """
        times = iter(np.concatenate([[0.0], np.cumsum(step_seconds)]))
        m = meter.ThroughputMeter(
            batch, warmup_steps=warmup_steps, window_steps=window_steps, clock=lambda: next(times)
        )
        m.start()
        for _ in step_seconds:
            m.tick()
        return m.summary().examples_per_sec
        """,
        check="2",
        expect=r"your code calls dpkit's meter\.ThroughputMeter: the exercise is to write it",
    ),
    Wrong(
        2,
        "meter.Summary of windows made by hand",
        """
        rest = step_seconds[warmup_steps:]
        windows = []
        for i in range(len(rest) // window_steps):
            seconds = sum(rest[i * window_steps : (i + 1) * window_steps])
            windows.append(meter.Window(i, window_steps, window_steps * batch, seconds))
        return meter.Summary(windows=tuple(windows), warmup_steps=warmup_steps).examples_per_sec
        """,
        check="2",
        expect=r"your code calls dpkit's meter\.Summary: the exercise is to write it yourself",
    ),
    # 3. learning_rate
    Wrong(
        3,
        "warm-up ramp starts at 0",
        """
        k = batch / base_batch
        if rule not in ("linear", "sqrt"):
            raise ValueError(rule)
        lr = base_lr * (k if rule == "linear" else math.sqrt(k))
        if step < warmup_steps:
            lr *= step / warmup_steps
        return lr
        """,
        check="3",
        expect=r"step 0 of a 10-step warm-up: yours gives 0 of the full rate, want 0\.1",
    ),
    Wrong(
        3,
        "sqrt of the batch, not the ratio",
        """
        if rule == "linear":
            lr = base_lr * batch / base_batch
        elif rule == "sqrt":
            lr = base_lr * math.sqrt(batch)
        else:
            raise ValueError(rule)
        if step < warmup_steps:
            lr *= (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"rule 'sqrt', batch 256 for base_batch 32: yours multiplies base_lr by 16, "
        r"want 2\.828",
    ),
    Wrong(
        3,
        "inverted ratio",
        """
        k = base_batch / batch
        if rule not in ("linear", "sqrt"):
            raise ValueError(rule)
        lr = base_lr * (k if rule == "linear" else math.sqrt(k))
        if step < warmup_steps:
            lr *= (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"rule 'linear', batch 256 for base_batch 32: yours multiplies base_lr by 0\.125, "
        r"want 8",
    ),
    Wrong(
        3,
        "integer batch ratio",
        """
        k = batch // base_batch
        if rule not in ("linear", "sqrt"):
            raise ValueError(rule)
        lr = base_lr * (k if rule == "linear" else math.sqrt(k))
        if step < warmup_steps:
            lr *= (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"rule 'linear', batch 64 for base_batch 256: yours multiplies base_lr by 0, "
        r"want 0\.25",
    ),
    Wrong(
        3,
        "ramp goes on after the warm-up",
        """
        k = batch / base_batch
        if rule not in ("linear", "sqrt"):
            raise ValueError(rule)
        lr = base_lr * (k if rule == "linear" else math.sqrt(k))
        if warmup_steps:
            lr *= (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"step 10 of a 10-step warm-up: yours gives 1\.1 of the full rate, want 1",
    ),
    Wrong(
        3,
        "ramp from base_lr",
        """
        k = batch / base_batch
        if rule not in ("linear", "sqrt"):
            raise ValueError(rule)
        lr = base_lr * (k if rule == "linear" else math.sqrt(k))
        if step < warmup_steps:
            lr = base_lr + (lr - base_lr) * (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"step 0 of a 10-step warm-up: yours gives 0\.2125 of the full rate, want 0\.1",
    ),
    Wrong(
        3,
        "ramp with no guard for warmup_steps=0",
        """
        k = batch / base_batch
        if rule not in ("linear", "sqrt"):
            raise ValueError(rule)
        lr = base_lr * (k if rule == "linear" else math.sqrt(k))
        return lr * min(1.0, (step + 1) / warmup_steps)
        """,
        check="3",
        expect=r"learning_rate\(100, 0\.05, 32, 256, 'linear', 0\) raised ZeroDivisionError",
    ),
    Wrong(
        3,
        "any other rule falls to sqrt",
        """
        k = batch / base_batch
        lr = base_lr * (k if rule == "linear" else math.sqrt(k))
        if step < warmup_steps:
            lr *= (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"an unknown rule must raise ValueError",
    ),
    Wrong(
        3,
        "rule looked up in a dict",
        """
        k = batch / base_batch
        lr = base_lr * {"linear": k, "sqrt": math.sqrt(k)}[rule]
        if step < warmup_steps:
            lr *= (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"an unknown rule raised KeyError, not ValueError",
    ),
    Wrong(
        3,
        "warm-up for the linear rule only",
        """
        k = batch / base_batch
        if rule == "linear":
            lr = base_lr * k
            if step < warmup_steps:
                lr *= (step + 1) / warmup_steps
        elif rule == "sqrt":
            lr = base_lr * math.sqrt(k)
        else:
            raise ValueError(rule)
        return lr
        """,
        check="3",
        expect=r"rule 'sqrt', batch 128 for base_batch 32, step 0 of a 10-step warm-up: yours "
        r"gives 1 of the full rate, want 0\.1: yours skips the warm-up under rule 'sqrt'",
    ),
    Wrong(
        3,
        "warm-up share put through the rule",
        """
        k = batch / base_batch
        if step < warmup_steps:
            k *= (step + 1) / warmup_steps
        if rule == "linear":
            return base_lr * k
        if rule == "sqrt":
            return base_lr * math.sqrt(k)
        raise ValueError(rule)
        """,
        check="3",
        expect=r"rule 'sqrt', batch 128 for base_batch 32, step 0 of a 10-step warm-up: yours "
        r"gives 0\.3162 of the full rate, want 0\.1: the square root of the share 0\.1",
    ),
    Wrong(
        3,
        "same batch: base_lr at once",
        """
        if batch == base_batch:
            return base_lr
        k = batch / base_batch
        if rule == "linear":
            lr = base_lr * k
        elif rule == "sqrt":
            lr = base_lr * math.sqrt(k)
        else:
            raise ValueError(rule)
        if step < warmup_steps:
            lr *= (step + 1) / warmup_steps
        return lr
        """,
        check="3",
        expect=r"rule 'linear', batch 256 for base_batch 256, step 0 of a 10-step warm-up: yours "
        r"gives 1 of the full rate, want 0\.1: yours skips the warm-up when the batch is "
        r"unchanged",
    ),
]

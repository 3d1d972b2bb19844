"""Measuring training throughput honestly: examples per second and seconds per step.

Introduced in lesson 01 (its timed training loop); lesson 05 measures throughput. Plain
Python, with no TensorFlow and no widgets: the training loop calls
:meth:`ThroughputMeter.tick` after each step (once the step's result is ready), and the
meter turns the intervals between ticks into measurements.

* The first ``warmup_steps`` intervals are dropped: they include tracing, memory
  allocation and caches filling up, which a long run does not pay again.
* The rest are grouped into windows of ``window_steps`` steps; each finished window is one
  measurement. Reported is the median over windows (robust to a hiccup of the machine),
  the mean, and the spread ``(max - min) / median``.
* Time comes from ``time.perf_counter``; ``tf.timestamp`` fails under op determinism.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from dpkit.plumbing import checks


@dataclass(frozen=True)
class Window:
    """One measurement: ``steps`` consecutive steps after the warm-up."""

    index: int  # 0 for the first window after the warm-up
    steps: int
    examples: int  # examples processed in those steps
    seconds: float  # wall time they took

    @property
    def examples_per_sec(self) -> float:
        return self.examples / self.seconds

    @property
    def sec_per_step(self) -> float:
        return self.seconds / self.steps


@dataclass(frozen=True)
class Summary:
    """What a run measured."""

    windows: tuple[Window, ...]  # every finished window, in order
    warmup_steps: int  # steps dropped at the start
    _rates: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_rates", tuple(w.examples_per_sec for w in self.windows))

    def _need_windows(self):
        if not self.windows:
            raise RuntimeError(
                "no measurement window finished yet: run more steps than warmup_steps + "
                "window_steps, or make the windows smaller."
            )

    @property
    def examples_per_sec(self) -> float:
        """Median over windows."""
        self._need_windows()
        return statistics.median(self._rates)

    @property
    def mean_examples_per_sec(self) -> float:
        self._need_windows()
        return statistics.fmean(self._rates)

    @property
    def spread(self) -> float:
        """``(max - min) / median`` of the windows' examples/sec: 0.1 means 10%."""
        self._need_windows()
        return (max(self._rates) - min(self._rates)) / self.examples_per_sec

    @property
    def sec_per_step(self) -> float:
        """Median over windows."""
        self._need_windows()
        return statistics.median(w.sec_per_step for w in self.windows)

    def as_dict(self) -> dict:
        """Plain numbers, for JSON."""
        names = ("examples_per_sec", "mean_examples_per_sec", "spread", "sec_per_step")
        values = {name: getattr(self, name) for name in names}
        return {**values, "windows": len(self.windows), "warmup_steps": self.warmup_steps}


class ThroughputMeter:
    """Turns the times of step boundaries into examples/sec and sec/step.

    Example::

        meter = ThroughputMeter(global_batch_size=256, warmup_steps=3, window_steps=10)
        meter.start()
        for _ in range(50):
            float(train_step(x, y))       # wait for the step's result
            window = meter.tick()         # a Window when one finishes, else None
        print(meter.summary().examples_per_sec)

    ``global_batch_size`` is the examples per step (``tick`` can override it per step);
    ``clock`` returns seconds (``time.perf_counter`` unless testing).
    """

    def __init__(
        self, global_batch_size: int, *, warmup_steps=2, window_steps=10, clock=time.perf_counter
    ):
        self.global_batch_size = checks.whole(global_batch_size, "global_batch_size", 1)
        self.warmup_steps = checks.whole(warmup_steps, "warmup_steps", 0)
        self.window_steps = checks.whole(window_steps, "window_steps", 1)
        self._clock = clock
        self._last = self._window_start = None
        self._steps = self._window_steps = self._window_examples = 0
        self._windows: list[Window] = []

    def start(self) -> None:
        """Mark the start of the first step."""
        self._last = self._window_start = self._clock()

    def tick(self, examples: int | None = None) -> Window | None:
        """Mark the end of a step of ``examples`` (default ``global_batch_size``); return the
        :class:`Window` this step finished, or ``None``."""
        now = self._clock()
        if self._last is None:
            raise RuntimeError("call meter.start() before the first step, then tick() after each.")
        self._last = now
        self._steps += 1
        if self._steps <= self.warmup_steps:
            self._window_start = now  # the first window starts when the warm-up ends
            return None
        self._window_steps += 1
        self._window_examples += self.global_batch_size if examples is None else int(examples)
        if self._window_steps < self.window_steps:
            return None
        seconds = now - self._window_start
        window = Window(len(self._windows), self._window_steps, self._window_examples, seconds)
        self._windows.append(window)
        self._window_start, self._window_steps, self._window_examples = now, 0, 0
        return window

    @property
    def steps(self) -> int:
        """Steps ticked so far, warm-up included."""
        return self._steps

    def summary(self) -> Summary:
        """The windows finished so far (a partial window is left out)."""
        return Summary(tuple(self._windows), self.warmup_steps)


# --- Was the machine quiet? -------------------------------------------------------------

QUIET_CORES = 0.25  # other programs' average CPU use below which a timing counts as quiet


def _busy_seconds() -> float:
    """CPU-seconds the whole machine has spent busy since boot (every core)."""
    import psutil

    t = psutil.cpu_times()
    busy = t.user + t.system + getattr(t, "nice", 0.0)
    busy += getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0)
    return busy  # Linux counts guest time inside user: not added again


def _own_seconds() -> float:
    """CPU-seconds of this process and every descendant, live or reaped."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:  # exited between listing and reading: counted by its parent
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


class OtherLoad:
    """How busy other programs kept the machine while a measurement ran.

    A timing on a shared machine measures the machine as much as the code: another
    program on the cores slows every step. Use it around a measurement; afterwards
    ``cores`` is the CPU the rest of the machine used, averaged over the measurement (0.5
    means half a core was busy with something else), and ``str()`` says whether the
    timing counts as quiet. CPU time of this process and its child processes (a sweep's
    children, pinned workers) is the measurement's own and is not counted.

    Example::

        with meter.OtherLoad() as load:
            ...  # the timed work
        print(load)

    Introduced in lesson 01; every lesson that prints a timing prints its load too.
    """

    def __init__(self):
        self.cores: float | None = None
        self.seconds: float | None = None
        self._start = None

    def __enter__(self) -> OtherLoad:
        try:
            self._start = (time.perf_counter(), _busy_seconds(), _own_seconds())
        except Exception:  # no psutil, or a platform it cannot read: load unknown
            self._start = None
        return self

    def __exit__(self, *exc) -> None:
        if self._start is None:
            return
        wall, busy, own = self._start
        self.seconds = time.perf_counter() - wall
        other = (_busy_seconds() - busy) - (_own_seconds() - own)
        self.cores = max(0.0, other) / self.seconds if self.seconds > 0 else 0.0

    @property
    def quiet(self) -> bool | None:
        """True when other programs used under ``QUIET_CORES`` cores; None when unknown."""
        return None if self.cores is None else self.cores < QUIET_CORES

    def __str__(self) -> str:
        if self.cores is None:
            return "other work on this machine while measuring: unknown (no psutil here)"
        verdict = "quiet" if self.quiet else "BUSY: re-run on a quiet machine to trust the timing"
        return f"other work on this machine while measuring: {self.cores:.2f} cores ({verdict})"

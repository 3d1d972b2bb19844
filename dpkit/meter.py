"""Measuring training throughput honestly: examples per second and seconds per step.

Introduced in lesson 05. Plain Python, with no TensorFlow and no widgets: the training
loop calls :meth:`ThroughputMeter.tick` after each step (once the step's result is
ready), and the meter turns the intervals between ticks into measurements.

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

from dpkit import _checks


@dataclass(frozen=True)
class Window:
    """One measurement: ``steps`` consecutive steps after the warm-up.

    Attributes:
        index: 0 for the first window after the warm-up.
        steps: steps in the window.
        examples: examples processed in those steps.
        seconds: wall time they took.
    """

    index: int
    steps: int
    examples: int
    seconds: float

    @property
    def examples_per_sec(self) -> float:
        return self.examples / self.seconds

    @property
    def sec_per_step(self) -> float:
        return self.seconds / self.steps


@dataclass(frozen=True)
class Summary:
    """What a run measured.

    Attributes:
        windows: every finished window, in order.
        warmup_steps: steps dropped at the start.
    """

    windows: tuple[Window, ...]
    warmup_steps: int
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
        return {
            "examples_per_sec": self.examples_per_sec,
            "mean_examples_per_sec": self.mean_examples_per_sec,
            "spread": self.spread,
            "sec_per_step": self.sec_per_step,
            "windows": len(self.windows),
            "warmup_steps": self.warmup_steps,
        }


class ThroughputMeter:
    """Turns the times of step boundaries into examples/sec and sec/step.

    Example::

        meter = ThroughputMeter(global_batch_size=256, warmup_steps=3, window_steps=10)
        meter.start()
        for _ in range(50):
            float(train_step(x, y))       # wait for the step's result
            window = meter.tick()         # a Window when one finishes, else None
        print(meter.summary().examples_per_sec)

    Args:
        global_batch_size: examples per step (``tick`` can override it per step).
        warmup_steps: steps to drop at the start.
        window_steps: steps per measurement window.
        clock: a function returning seconds; ``time.perf_counter`` unless testing.

    Raises:
        ValueError: a count that is not a whole number in range.
    """

    def __init__(
        self,
        global_batch_size: int,
        *,
        warmup_steps: int = 2,
        window_steps: int = 10,
        clock=time.perf_counter,
    ):
        self.global_batch_size = _checks.whole(global_batch_size, "global_batch_size", 1)
        self.warmup_steps = _checks.whole(warmup_steps, "warmup_steps", 0)
        self.window_steps = _checks.whole(window_steps, "window_steps", 1)
        self._clock = clock
        self._last = None
        self._steps = 0
        self._window_start = None
        self._window_steps = 0
        self._window_examples = 0
        self._windows: list[Window] = []

    def start(self) -> None:
        """Mark the start of the first step."""
        self._last = self._window_start = self._clock()

    def tick(self, examples: int | None = None) -> Window | None:
        """Mark the end of a step.

        Args:
            examples: examples in this step; default ``global_batch_size``.

        Returns:
            The :class:`Window` this step finished, or ``None``.

        Raises:
            RuntimeError: :meth:`start` was not called.
        """
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
        window = Window(
            len(self._windows), self._window_steps, self._window_examples, now - self._window_start
        )
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

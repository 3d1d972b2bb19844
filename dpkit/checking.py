"""What every check shares: lessons' claims and the exercises' check cells.

:func:`agree` compares a float32 result with a reference, with a bar relative to the
magnitudes involved, so a claim that holds on one CPU holds on any (introduced in
lesson 00, used by every lesson, exercise check and test). The exercises' own checks, and
what switches dpkit's finished versions off while they run, are the course's checker
(``checks/``, the ``dpkit_checks`` package), not part of this library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpkit.plumbing import checks

# --- Comparing a result with a reference ---------------------------------------------

FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2**-23: float32's spacing just above 1.0
DEFAULT_ULPS = 128


@dataclass(frozen=True)
class Agreement:
    """How close a result came to its reference; true when it is within the bar."""

    what: str  # what was compared, for the message
    gap: float  # the largest |actual - expected| over every item
    scale: float  # the magnitude the bar is relative to (the largest |expected|)
    bar: float  # the largest gap allowed: ulps * FLOAT32_EPS * scale
    ulps: float  # the bar in float32 epsilons of the scale
    item: int | None = None  # which item of a list has the largest gap (None: one array)

    def __bool__(self) -> bool:
        return bool(self.gap <= self.bar)  # False for a NaN gap

    def __str__(self) -> str:
        where = "" if self.item is None else f" (item {self.item})"
        if math.isnan(self.gap):
            return f"{self.what}: differ: a NaN where a number was expected{where}"
        times = f"{self.gap / self.bar:.3g} times the bar" if self.bar else "the bar is 0"
        verdict = "agree" if self else f"differ ({times})"
        return (
            f"{self.what}: {verdict}: largest gap {self.gap:.2g} on values up to "
            f"{self.scale:.3g}{where}; the bar is {self.bar:.2g}, {self.ulps:g} float32 "
            "epsilons of that"
        )


def _arrays(x) -> list:
    if isinstance(x, (list, tuple)):
        return [np.asarray(item, dtype=np.float64) for item in x]
    return [np.asarray(x, dtype=np.float64)]


def agree(
    actual, expected, *, what="result vs reference", ulps=DEFAULT_ULPS, scale=None
) -> Agreement:
    """Compare a float32 result with a reference, with a bar that any CPU meets.

    Two correct float32 computations of the same value differ in their last bits when they
    add in another order (another CPU's kernels, oneDNN on or off, more threads). The gap
    grows with the magnitude of the values, so the bar is relative: ``ulps`` float32
    epsilons (2**-23, about 1.2e-7) of the largest ``|expected|`` over every item. The default,
    128 epsilons (1.5e-5 of the magnitude), covers sums of thousands of terms; a wrong
    answer (an unaveraged sum, a missing shard, a step scaled by N) misses by far more.

    ``actual`` is an array, tensor or variable, or a list of them; ``expected`` the reference,
    of the same structure and shapes (float64 is best). Raise ``ulps`` for results that went
    through many steps (say so where you do). Give ``scale`` when the magnitude is not the
    reference's own largest value (e.g. the size of the terms of a sum that cancels to near
    zero). Returns an :class:`Agreement`: true when every element is within the bar;
    ``str()`` says what (``what``) was compared and by how much it missed.
    """
    ulps = checks.positive(ulps, "ulps")
    a, b = _arrays(actual), _arrays(expected)
    if len(a) != len(b):
        raise ValueError(f"cannot compare {len(a)} items with {len(b)}; pass equal-length lists.")
    gaps, sizes = [], []
    for i, (p, q) in enumerate(zip(a, b)):
        if p.shape != q.shape:
            raise ValueError(f"item {i} has shape {p.shape} on one side, {q.shape} on the other.")
        nan = bool(np.isnan(p).any() or np.isnan(q).any())
        gaps.append(math.nan if nan else float(np.max(np.abs(p - q), initial=0.0)))
        sizes.append(float(np.max(np.abs(q), initial=0.0)) if not nan else 0.0)
    if not gaps:
        return Agreement(what, 0.0, 0.0, 0.0, ulps)
    # One magnitude for the whole comparison: an item that should be near zero (a bias that
    # batch norm cancels) is rounding noise of the same sums as the rest, not of itself.
    size = max(sizes) if scale is None else float(scale)
    i = next((k for k, g in enumerate(gaps) if math.isnan(g)), None)
    if i is None:
        i = int(np.argmax(gaps))
    gap, bar = gaps[i], ulps * FLOAT32_EPS * size
    return Agreement(what, gap, size, bar, ulps, i if isinstance(actual, (list, tuple)) else None)

"""Argument checks shared by every dpkit module (plumbing, not part of the lessons).

Each raises ``ValueError`` with a message that names the argument, what it got, and an
example of a good value, before TensorFlow gets a chance to fail obscurely. The notebook
parameter rules of :mod:`dpkit.params` and the command lines use the same tests
(:func:`is_whole`, :func:`is_real`).
"""

from __future__ import annotations

import math
import numbers


def is_whole(value) -> bool:
    """An integer that is not a bool (``True`` is an ``int`` in Python)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    """A finite real number that is not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _then(example: str) -> str:
    return f"; {example}" if example else ""


def whole(value, what: str, minimum: int = 0, example: str = "") -> int:
    """``value`` as an int, if it is a whole number (not a bool) of at least ``minimum``."""
    if not is_whole(value) or value < minimum:
        raise ValueError(
            f"{what} must be a whole number >= {minimum}, got {value!r}{_then(example)}."
        )
    return int(value)


def positive(value, what: str, example: str = "", unit: str = "number") -> float:
    """``value`` as a float, if it is above 0 (``inf`` switches a timeout off; NaN fails)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        article = "an" if unit[:1] in "aeiou" else "a"
        raise ValueError(
            f"{what} must be {article} positive {unit}, got {value!r}{_then(example)}."
        )
    return float(value)


def positive_seconds(value, what: str) -> float:
    """``value`` as a float, if it is a positive number of seconds."""
    return positive(value, what, unit="number of seconds")


def one_of(value, choices, what: str):
    """``value`` itself, if it is one of ``choices``."""
    if value not in tuple(choices):
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(map(str, choices))}.")
    return value


def device_list(devices) -> list[str]:
    """A non-empty list of device names (what ``devices.setup(n).devices`` returns)."""
    if isinstance(devices, str) or not devices:
        raise ValueError(
            f"devices must be a non-empty list of device names, got {devices!r}; pass what "
            "devices.setup(n).devices returned."
        )
    return list(devices)

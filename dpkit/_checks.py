"""Argument checks shared by the lesson modules (plumbing, not part of the lessons).

Each raises ``ValueError`` with a message that names the argument, what it got, and an
example of a good value, before TensorFlow gets a chance to fail obscurely.
"""

from __future__ import annotations

import numbers


def whole(value, what: str, minimum: int, example: str) -> int:
    """``value`` as an int, if it is a whole number (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{what} must be a whole number >= {minimum}, got {value!r}; {example}.")
    return int(value)


def positive_seconds(value, what: str) -> float:
    """``value`` as a float, if it is a positive number of seconds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}.")
    return float(value)

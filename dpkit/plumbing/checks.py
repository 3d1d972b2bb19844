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


def whole_range(minimum: int = 0, maximum: int | None = None) -> str:
    """The words every rule uses for a range of whole numbers (``params.whole`` too)."""
    if maximum is None:
        return f"a whole number >= {minimum}"
    return f"a whole number from {minimum} to {maximum}"


def is_whole_in(value, minimum: int = 0, maximum: int | None = None) -> bool:
    """A whole number from ``minimum`` to ``maximum`` (no upper end if ``None``)."""
    return is_whole(value) and value >= minimum and (maximum is None or value <= maximum)


def whole(value, what: str, minimum: int = 0, example: str = "", maximum: int | None = None) -> int:
    """``value`` as an int, if it is a whole number (not a bool) from ``minimum`` to
    ``maximum`` (no upper end if ``None``)."""
    if not is_whole_in(value, minimum, maximum):
        raise ValueError(
            f"{what} must be {whole_range(minimum, maximum)}, got {value!r}{_then(example)}."
        )
    return int(value)


def shape(value, what: str, rank: int | None = None, example: str = "(28, 28, 1)"):
    """``value`` as a tuple of ints, if it is ``rank`` (or any number of) whole numbers >= 1."""
    dims = tuple(value) if hasattr(value, "__iter__") else ()
    if not dims or len(dims) != (rank or len(dims)) or not all(is_whole_in(d, 1) for d in dims):
        count = f"{rank} " if rank else ""
        raise ValueError(f"{what} must be {count}positive ints, got {value!r}; e.g. {example}.")
    return tuple(int(d) for d in dims)


def divides(total, parts: int, what: str, into: str, instead: str = "") -> int:
    """``total // parts`` if ``total`` is a whole multiple of ``parts``, else an error naming
    the batch (``what``: "a batch of 63"), the parts (``into``: "into 4 towers"), the nearest
    multiples and any other way out (``instead``): the one rule for a batch that is shared."""
    if is_whole(total) and total >= parts and total % parts == 0:
        return int(total) // parts
    low = total - total % parts if is_whole(total) else 0
    near = f"{low} or {low + parts} (multiples of {parts})" if low > 0 else f"a multiple of {parts}"
    raise ValueError(f"{what} does not split evenly {into}; use {near}{instead}.")


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

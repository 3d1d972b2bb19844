"""Check a notebook's parameters before anything runs on them (every notebook, from lesson 00).

Every lesson and solution starts with a cell tagged ``parameters`` (papermill's
convention: ``papermill lesson.ipynb out.ipynb -p NUM_DEVICES 2`` replaces its values).
The cell after it checks them all at once, so a value the lesson cannot use stops it
before any work, with a message that names each bad parameter and what it allows::

    params.check(
        globals(),
        NUM_DEVICES=params.whole(1, devices.MAX_DEVICES),
        GLOBAL_BATCH_SIZE=params.whole(NUM_DEVICES, multiple_of=NUM_DEVICES),
        LEARNING_RATE=params.positive(),
    )

Each rule (:func:`whole`, :func:`positive`, :func:`fraction`, :func:`one_of`,
:func:`boolean`, :func:`whole_list`) returns a function that gives ``None`` for a good
value and otherwise a description of the allowed values.
"""

from __future__ import annotations

from collections.abc import Callable

from dpkit.plumbing import checks

Rule = Callable[[object], "str | None"]


def whole(minimum: int = 0, maximum: int | None = None, *, multiple_of: int = 1) -> Rule:
    """A whole number from ``minimum`` to ``maximum`` (inclusive), a multiple of ``multiple_of``.

    The range and its words are :mod:`dpkit.plumbing.checks`' (``is_whole_in``,
    ``whole_range``), which the library's own checks use: ``whole(1, devices.MAX_DEVICES)``
    allows the device counts that ``devices.count`` does.
    """
    allowed = checks.whole_range(minimum, maximum)
    if not checks.is_whole(multiple_of) or multiple_of > 1:
        allowed += f" that divides by {multiple_of}"

    def rule(value):
        # minimum and multiple_of may come from other parameters; when one of those is bad
        # (0, a string) its own rule reports it, and this one checks what it can.
        divisor = multiple_of if checks.is_whole(multiple_of) and multiple_of >= 1 else 1
        try:
            ok = checks.is_whole_in(value, minimum, maximum) and value % divisor == 0
        except TypeError:
            ok = checks.is_whole(value)
        return None if ok else allowed

    return rule


def positive(maximum: float | None = None) -> Rule:
    """A number above 0 (and at most ``maximum``, if given)."""
    allowed = "a number above 0" + ("" if maximum is None else f" and at most {maximum}")

    def rule(value):
        ok = checks.is_real(value) and value > 0 and (maximum is None or value <= maximum)
        return None if ok else allowed

    return rule


def fraction() -> Rule:
    """A number strictly between 0 and 1 (a decay factor)."""

    def rule(value):
        ok = checks.is_real(value) and 0 < value < 1
        return None if ok else "a number between 0 and 1 (exclusive)"

    return rule


def one_of(*choices) -> Rule:
    """One of ``choices``."""
    allowed = "one of " + ", ".join(repr(c) for c in choices)

    def rule(value):
        return None if any(value == c and type(value) is type(c) for c in choices) else allowed

    return rule


def boolean() -> Rule:
    """``True`` or ``False``."""
    return one_of(True, False)


def whole_list(item: Rule, *, min_length: int = 1, distinct: bool = True) -> Rule:
    """A list of at least ``min_length`` values that each pass ``item`` (no repeats)."""
    each = item(object())  # what one item allows (an object() passes no rule)
    different = " different" if distinct else ""
    allowed = f"a list of at least {min_length}{different} values, each {each}"

    def rule(value):
        if not isinstance(value, (list, tuple)) or len(value) < min_length:
            return allowed
        if distinct and len({repr(v) for v in value}) < len(value):
            return allowed
        return allowed if any(item(v) is not None for v in value) else None

    return rule


def check(namespace: dict, **rules: Rule) -> None:
    """Check each named parameter in ``namespace`` (pass ``globals()``) against its rule;
    the ``ValueError`` has one line per parameter that is missing or breaks its rule, naming
    the value it has and the values allowed."""
    problems = []
    for name, rule in rules.items():
        if name not in namespace:
            problems.append(f"{name} is not set: run the parameters cell above first")
            continue
        value = namespace[name]
        allowed = rule(value)
        if allowed is not None:
            problems.append(f"{name} = {value!r}: it must be {allowed}")
    if problems:
        raise ValueError(
            "this notebook cannot run with these parameters:\n  "
            + "\n  ".join(problems)
            + "\nChange them in the parameters cell (or papermill's -p NAME VALUE) and run again."
        )

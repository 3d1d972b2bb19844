"""What the exercises' check cells share (the exercise notebooks, from exercise 02 on).

A check calls the learner's code and must tell a wrong answer from a right one. dpkit
already holds a finished version of much of what the exercises ask for, which a learner
could call instead of writing it: while a check runs the learner's code, those are
switched off.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def switched_off(module, *names: str):
    """While the block runs, calling ``module.<name>`` fails the check, for each of ``names``.

    Args:
        module: a dpkit module, e.g. ``dpkit.towers``.
        *names: functions of it that the exercise asks the learner to write.

    Raises:
        ValueError: a name the module does not have (a typo in the check).
    """
    missing = [name for name in names if not hasattr(module, name)]
    if missing:
        raise ValueError(f"{module.__name__} has no {', '.join(missing)}; check the names.")

    def refuse(name):
        def refused(*args, **kwargs):
            raise AssertionError(
                f"your code calls dpkit's {module.__name__.split('.')[-1]}.{name}: "
                "the exercise is to write it yourself"
            )

        return refused

    saved = {name: getattr(module, name) for name in names}
    for name in names:
        setattr(module, name, refuse(name))
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)

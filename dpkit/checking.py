"""What the exercises' check cells share (the exercise notebooks, from exercise 02 on).

A check calls the learner's code and must tell a wrong answer from a right one. dpkit
already holds a finished version of much of what the exercises ask for, which a learner
could call instead of writing it: while a check runs the learner's code, those are
switched off.
"""

from __future__ import annotations

import contextlib
import sys


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

    # The same object may be re-exported by another dpkit module (bench.Report is
    # report.Report): switch it off under that name everywhere in dpkit.
    dpkit = [m for n, m in list(sys.modules.items()) if n.startswith("dpkit.") and m is not module]
    saved = []
    for name in names:
        original = getattr(module, name)
        for holder in [module, *(m for m in dpkit if getattr(m, name, None) is original)]:
            saved.append((holder, name, original))
            setattr(holder, name, refuse(name))
    try:
        yield
    finally:
        for holder, name, value in saved:
            setattr(holder, name, value)

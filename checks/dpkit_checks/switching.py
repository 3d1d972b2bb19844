"""Switching off dpkit's finished versions while a check runs the learner's code.

dpkit already holds a finished version of much of what the exercises ask for (``towers``,
``gradients``, ``meter``, ``scaling``, ``sharded``...), which a learner could call instead of
writing it. While a check runs the learner's code, :func:`switched_off` makes those refuse
(exercises 01 on). It rewrites library code at run time, which is why it lives here, in the
course's checker, and not in the library a learner imports.
"""

from __future__ import annotations

import contextlib
import types


@contextlib.contextmanager
def switched_off(module, *names: str):
    """While the block runs, calling ``module.<name>`` fails the check, for each of ``names``:
    the functions and classes of a dpkit module (e.g. ``dpkit.towers``) that the exercise asks
    the learner to write.

    What is switched off is the object, not the name: a function's code is swapped for one
    that refuses, and a class's ``__init__``, so an alias the learner made before the check
    (``from dpkit.towers import make_parallel as mp``) refuses too.
    """
    missing = [name for name in names if not hasattr(module, name)]
    if missing:
        raise ValueError(f"{module.__name__} has no {', '.join(missing)}; check the names.")
    short = module.__name__.split(".")[-1]
    undo = []
    try:
        for name in names:
            undo.append(_refuse(getattr(module, name), f"{short}.{name}"))
        yield
    finally:
        for restore in reversed(undo):
            restore()


def _refusal(what: str):
    """A function that fails the check, naming ``what``, whatever it is called with."""
    message = f"your code calls dpkit's {what}: the exercise is to write it yourself"
    scope: dict = {}
    exec(f"def refused(*args, **kwargs):\n    raise AssertionError({message!r})\n", scope)
    return scope["refused"]


def _refuse(target, what: str):
    """Make ``target`` (a function or a class) refuse to run; return what puts it back."""
    refused = _refusal(what)
    if isinstance(target, type):
        had = "__init__" in vars(target)
        saved = vars(target).get("__init__")
        target.__init__ = refused

        def restore():
            if had:
                target.__init__ = saved
            else:
                del target.__init__

        return restore
    function = getattr(target, "__func__", target)
    if not isinstance(function, types.FunctionType) or function.__code__.co_freevars:
        raise ValueError(
            f"cannot switch off {what}: only module-level functions and classes can be; "
            "switch off the function that does the work instead."
        )
    saved_code, saved_defaults = function.__code__, function.__defaults__
    saved_kwdefaults = function.__kwdefaults__
    function.__code__, function.__defaults__, function.__kwdefaults__ = refused.__code__, None, None

    def restore():
        function.__code__ = saved_code
        function.__defaults__, function.__kwdefaults__ = saved_defaults, saved_kwdefaults

    return restore

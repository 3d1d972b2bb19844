"""Wrong answers a learner is likely to write, one table per exercise notebook.

Each module ``exNN.py`` here holds one notebook's table: ``NOTEBOOK`` (the solution it is
for), ``WRONG`` (a list of `Wrong`) and ``HAND_IN`` (the ``why`` of the wrong answer
tests/course/test_grading.py hands to nbgrader). Each `Wrong` replaces the marked answer
(the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``) of one solution cell;
``tests/course/test_wrong_answers.py`` runs it in the solution notebook's kernel and asserts
that the named check cell fails with an AssertionError whose message matches ``expect``.
Think of: the sources' own bugs, off-by-N scaling, the wrong reduction, right values on the
wrong device or from the wrong place, a shortcut that skips what the task teaches, and an
answer that is right only for the sizes, counts or defaults the check happens to use.
"""

from __future__ import annotations

import importlib
import pathlib

from tests.wrong_answers.base import Wrong

__all__ = ["HAND_IN", "TABLES", "Wrong"]

_MODULES = [
    importlib.import_module(f"{__name__}.{path.stem}")
    for path in sorted(pathlib.Path(__file__).parent.glob("ex[0-9][0-9].py"))
]
#: {solution notebook name: its wrong answers}
TABLES: dict[str, list[Wrong]] = {m.NOTEBOOK: m.WRONG for m in _MODULES}
#: {solution notebook name: the why of the wrong answer nbgrader is handed}
HAND_IN: dict[str, str] = {m.NOTEBOOK: m.HAND_IN for m in _MODULES}

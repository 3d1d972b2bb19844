"""Wrong answers a learner is likely to write, one table per exercise notebook.

Each `Wrong` replaces the marked answer (the lines between `### BEGIN SOLUTION` and
`### END SOLUTION`) of one solution cell; `tests/notebooks/test_wrong_answers.py` runs it in the
solution notebook's kernel and asserts that the named check cell fails with an
AssertionError whose message matches `expect`. Think of: the sources' own bugs, off-by-N
scaling, the wrong reduction, right values on the wrong device or from the wrong place,
a shortcut that skips what the task teaches.
"""

from __future__ import annotations

from tests.wrong_answers import ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08
from tests.wrong_answers.base import Wrong

__all__ = ["TABLES", "Wrong"]

TABLES: dict[str, list[Wrong]] = {
    "01_one_device.ipynb": ex01.WRONG,
    "02_towers.ipynb": ex02.WRONG,
    "03_gradient_averaging.ipynb": ex03.WRONG,
    "04_all_reduce_and_mirrored.ipynb": ex04.WRONG,
    "05_throughput_and_scaling.ipynb": ex05.WRONG,
    "06_tensorboard.ipynb": ex06.WRONG,
    "07_parameter_servers.ipynb": ex07.WRONG,
    "08_beyond_one_machine.ipynb": ex08.WRONG,
}

"""Wrong answers for exercises/07_beyond_one_machine.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

WRONG: list[Wrong] = []

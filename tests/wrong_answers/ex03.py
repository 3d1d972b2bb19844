"""Wrong answers for exercises/03_gradient_averaging.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

WRONG: list[Wrong] = []

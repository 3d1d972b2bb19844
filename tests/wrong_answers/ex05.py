"""Wrong answers for exercises/05_tensorboard.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

WRONG: list[Wrong] = []

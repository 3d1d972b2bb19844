"""Wrong answers for exercises/01_one_device.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

WRONG: list[Wrong] = []

"""Wrong answers for exercises/04_throughput_and_scaling.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

WRONG: list[Wrong] = []

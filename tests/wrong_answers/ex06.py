"""Wrong answers for exercises/06_parameter_servers.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

WRONG: list[Wrong] = []

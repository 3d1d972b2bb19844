"""Helpers for tests that read or execute notebooks."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "tools"))

import make_exercises  # noqa: E402, F401  (re-exported for the tests)
import nbio  # noqa: E402, F401  (re-exported for the tests)
import run_notebooks  # noqa: E402

LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))


def execute(path: Path, *, allow_errors: bool = False, timeout: int = 300):
    """Run a notebook top to bottom in a fresh kernel of this environment; return it."""
    return run_notebooks.execute(path, timeout=timeout, allow_errors=allow_errors)[0]


def errors(cell) -> list[str]:
    return [o.ename for o in cell.get("outputs", []) if o.output_type == "error"]

"""Each check cell of an exercise fails on the unsolved exercise: its stubs raise, and no check
passes on them (the first wrong answer a learner hands in is the notebook as released).

Each exercise runs in a fresh kernel, as a learner opens it. (make test-course.)"""

import pytest

from tests.support.notebooks import EXERCISES, errors, execute, nbio


def _check_cells(nb):
    cells = [c for c in nb.cells if c.cell_type == "code" and nbio.has_tag(c, "check")]
    assert cells, "a solution notebook needs check cells (tagged 'check')"
    return cells


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.name)
def test_check_cells_fail_on_the_stubs(path):
    nb = execute(path, allow_errors=True)
    for cell in _check_cells(nb):
        assert errors(cell), f"check cell passed on the unsolved exercise:\n{cell.source[:200]}"
        assert set(errors(cell)) <= {"NotImplementedError", "NameError", "AssertionError"}

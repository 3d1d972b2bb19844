"""Every solution runs as stored and passes every check (what nbval would make of solutions/).

No nbval runs over solutions/: each solution notebook runs once here, in a live kernel
(tests/support/answer_kernel.py), and the cells tagged nbval-check-output must print what is
stored. The wrong answers that the same checks must refuse are tried in the same kind of
kernel by tests/course/test_wrong_answers.py. (make test-course.)
"""

from __future__ import annotations

import pytest

from tests.support.answer_kernel import compared, solution_kernel
from tests.support.notebooks import SOLUTIONS, nbio

NAMES = sorted(p.name for p in SOLUTIONS)


@pytest.fixture(scope="module")
def kernel(request):
    """The solution notebook `request.param`, executed once; its checks' outcomes kept."""
    with solution_kernel(request.param) as k:
        yield k


@pytest.mark.parametrize("kernel", NAMES, indirect=True, scope="module")
def test_the_solution_passes_every_check(kernel):
    assert kernel.solution_outcomes, f"{kernel.path.name} has no check cells"
    assert set(kernel.solution_outcomes) == set(kernel.checks)
    for name, result in kernel.solution_outcomes.items():
        assert result.passed, f"check {name} of the solution: {result.ename}: {result.evalue}"
        # nbgrader gives no points to a graded cell that writes to stderr (a warning, say)
        assert not result.stderr, f"check {name} writes to stderr: {result.stderr[:300]}"


@pytest.mark.parametrize("kernel", NAMES, indirect=True, scope="module")
def test_the_solution_runs_as_stored(kernel):
    """What nbval --nbval-lax would check of the solution (no nbval runs over solutions/,
    whose run is this one): no cell raises unless tagged so, and each cell tagged
    nbval-check-output prints what is stored (make notebooks stores it)."""
    assert len(kernel.ran) == len(kernel.nb.cells)
    for index, (stored, ran) in enumerate(zip(kernel.nb.cells, kernel.ran)):
        if stored.cell_type != "code":
            continue
        where = f"{kernel.path.name} cell {index}"
        errors = [o for o in ran.outputs if o.output_type == "error"]
        if not nbio.has_tag(stored, "raises-exception"):
            assert not errors, f"{where} raised {errors[0].ename}: {errors[0].evalue}"
        if nbio.has_tag(stored, "nbval-check-output"):
            assert compared(ran.outputs) == compared(stored.outputs), (
                f"{where} prints other than its stored output (run make notebooks if the "
                "change is meant)"
            )

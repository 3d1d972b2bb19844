"""Every exercise check fails on the wrong answers of tests/wrong_answers/, saying why.

Each solution notebook runs once in a live kernel (its checks must pass); then each wrong
answer from its table takes the place of the marked answer, the cells up to its check run
again, and the check must fail with an AssertionError whose message matches the table's.
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from tests.support.answer_kernel import BEGIN, AnswerKernel, compared, matches
from tests.support.notebooks import ROOT, SOLUTIONS, nbio
from tests.wrong_answers import TABLES

#: Wrong answers each marked answer needs in its table, at least.
MINIMUM = 4

CASES = [(name, wrong) for name, table in TABLES.items() for wrong in table]


@pytest.fixture(scope="module")
def kernel(request):
    """The solution notebook `request.param`, executed once; its checks' outcomes kept."""
    # A wrong answer may write where the solution does not (a chief that lost its --logdir
    # writes to runs/ beside the notebook): remove what was not there before.
    runs = ROOT / "solutions" / "runs"
    existed = runs.exists()
    try:
        with AnswerKernel(ROOT / "solutions" / request.param) as k:
            k.solution_outcomes = k.run_all()
            k.solution_runs = _entries(runs)
            yield k
    finally:
        if not existed:
            shutil.rmtree(runs, ignore_errors=True)


def _entries(folder) -> set:
    return set(folder.iterdir()) if folder.exists() else set()


def _forget_other_attempts(kernel) -> None:
    """Remove what earlier wrong answers wrote under solutions/runs (the solution's stays).

    Two wrong answers of exercise 08 drop the --logdir word, so their tasks write to the
    default 'runs/task': the second would find the first one's checkpoint, and what its
    check sees would depend on timing.
    """
    for path in _entries(ROOT / "solutions" / "runs") - kernel.solution_runs:
        shutil.rmtree(path, ignore_errors=True)


def test_every_solution_has_a_table_with_four_wrong_answers_per_answer():
    assert set(TABLES) == {p.name for p in SOLUTIONS}
    for path in SOLUTIONS:
        nb = nbio.read(path)
        answers = sum(c.cell_type == "code" and BEGIN in nbio.code_source(c) for c in nb.cells)
        counts = Counter(w.answer for w in TABLES[path.name])
        thin = [a for a in range(1, answers + 1) if counts[a] < MINIMUM]
        assert not thin, f"{path.name}: answer(s) {thin} have fewer than {MINIMUM} wrong answers"
        assert set(counts) <= set(range(1, answers + 1)), f"{path.name}: no such answer"


@pytest.mark.parametrize("kernel", sorted(TABLES), indirect=True, scope="module")
def test_the_solution_passes_every_check(kernel):
    assert kernel.solution_outcomes, f"{kernel.path.name} has no check cells"
    assert set(kernel.solution_outcomes) == set(kernel.checks)
    for name, result in kernel.solution_outcomes.items():
        assert result.passed, f"check {name} of the solution: {result.ename}: {result.evalue}"
        # nbgrader gives no points to a graded cell that writes to stderr (a warning, say)
        assert not result.stderr, f"check {name} writes to stderr: {result.stderr[:300]}"


@pytest.mark.parametrize("kernel", sorted(TABLES), indirect=True, scope="module")
def test_the_solution_runs_as_stored(kernel):
    """What nbval --nbval-lax would check of the solution (make test runs no nbval over
    solutions/, whose run is this one): no cell raises unless tagged so, and each cell tagged
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


@pytest.mark.parametrize(
    "kernel, wrong",
    CASES,
    indirect=["kernel"],
    scope="module",
    ids=[f"{name[:2]}-{w.answer}-{w.why.replace(' ', '_')}" for name, w in CASES],
)
def test_the_check_catches_the_wrong_answer(kernel, wrong):
    if not all(r.passed for r in kernel.solution_outcomes.values()):
        pytest.fail(f"{kernel.path.name}: the solution itself fails a check")
    _forget_other_attempts(kernel)
    problem = matches(kernel.attempt(wrong), wrong)
    assert problem is None, f"answer {wrong.answer} written as '{wrong.why}': {problem}"

"""Every exercise check fails on the wrong answers of tests/wrong_answers/, saying why.

Each solution notebook runs once in a live kernel (that its checks pass is
tests/course/test_solutions.py's; here a failing one fails every case); then each wrong
answer from its table takes the place of the marked answer, the cells up to its check run
again, and the check must fail with an AssertionError whose message matches the table's.
(make test-course, not make test: the course room is the checks' strength, a mutation test.)
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from tests.support.answer_kernel import BEGIN, RUNS, entries, matches, solution_kernel
from tests.support.notebooks import SOLUTIONS, nbio
from tests.wrong_answers import TABLES

#: Wrong answers each marked answer needs in its table, at least.
MINIMUM = 4

CASES = [(name, wrong) for name, table in TABLES.items() for wrong in table]


@pytest.fixture(scope="module")
def kernel(request):
    """The solution notebook `request.param`, executed once; its checks' outcomes kept."""
    with solution_kernel(request.param) as k:
        yield k


def _forget_other_attempts(kernel) -> None:
    """Remove what earlier wrong answers wrote under solutions/runs (the solution's stays).

    Two wrong answers of exercise 08 drop the --logdir word, so their tasks write to the
    default 'runs/task': the second would find the first one's checkpoint, and what its
    check sees would depend on timing.
    """
    for path in entries(RUNS) - kernel.solution_runs:
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

"""nbgrader grades the exercises: its real commands, in a temporary course.

The solutions are the course's source notebooks (tools/make_exercises.py gives their cells
nbgrader's metadata). `nbgrader generate_assignment` must accept every one of them and
release exactly the exercise a learner gets; `nbgrader autograde` must give the solution
full marks, the released stub zero, and a wrong answer from tests/wrong_answers/ the marks
of every check but the one that catches it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader import api as nbgrader_api  # the grade extra: pip install -e '.[grade]'

from dpkit.plumbing import contract, procs
from tests.support.notebooks import ROOT, SOLUTIONS, nbio
from tests.wrong_answers import HAND_IN, TABLES

# Autograding runs whole notebooks (three times each: solution, stub, wrong answer), so
# `make test` autogrades the one that runs quickest, exercise 05 (every exercise is released);
# DPKIT_GRADE_ALL=1 autogrades every exercise (`make test-grading`).
QUICKEST = "05_throughput_and_scaling.ipynb"
GRADED = [p.name for p in SOLUTIONS] if os.environ.get("DPKIT_GRADE_ALL") else [QUICKEST]
# The wrong answer each graded notebook is handed in with (tests/wrong_answers/exNN.HAND_IN):
# it must lose one check's points.
WRONG_WHY = HAND_IN


ASSIGNMENT = "dpkit"  # one assignment holding every exercise notebook


def nbgrader(course: Path, *args: str) -> str:
    """Run one nbgrader command in `course`; fail with its output if it fails."""
    # nbgrader runs alembic (its database migrations) by name: find it next to python.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = procs.child_env({"PATH": path, contract.WIDGETS: "text"})
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "| ERROR]" not in log, (
        f"nbgrader {' '.join(args)} failed:\n{log[-3000:]}"
    )
    return log


def wrong_answer(name: str):
    (wrong,) = [w for w in TABLES[name] if w.why == WRONG_WHY[name]]
    return wrong


def with_wrong_answer(name: str):
    """The solution notebook `name` with its table's chosen wrong answer in place."""
    wrong = wrong_answer(name)
    nb = nbio.read((ROOT / "solutions") / name)
    answers = [c for c in nb.cells if c.cell_type == "code" and "BEGIN SOLUTION" in c.source]
    cell = answers[wrong.answer - 1]
    cell.source = wrong.swapped_into(nbio.code_source(cell))
    return nb


def test_every_exercise_has_a_wrong_answer_to_hand_in():
    assert set(WRONG_WHY) == {p.name for p in SOLUTIONS}
    for name in WRONG_WHY:
        assert wrong_answer(name).check, name


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course with the exercises as one assignment, released, and three learners' work."""
    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.CourseDirectory.course_id = 'dpkit'\n"
        "c.Execute.timeout = 600  # seconds per cell: exercises 07 and 08 start clusters\n",
        encoding="utf-8",
    )
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for path in SOLUTIONS:
        (source / path.name).write_bytes(path.read_bytes())
    nbgrader(root, "generate_assignment", ASSIGNMENT)
    for name in GRADED:
        hand_in = {
            "solution": nbio.dumps(nbio.read(ROOT / "solutions" / name)),
            "stub": (root / "release" / ASSIGNMENT / name).read_text(encoding="utf-8"),
            "wrong": nbio.dumps(with_wrong_answer(name)),
        }
        for student, text in hand_in.items():
            folder = root / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
    nbgrader(root, "autograde", ASSIGNMENT)  # adds the learners to the gradebook
    return root


def grades(course: Path, name: str, student: str) -> dict[str, float]:
    """{grade id: score} nbgrader's gradebook holds for one learner's notebook."""
    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        notebook = book.find_submission_notebook(name[:-6], ASSIGNMENT, student)
        return {g.name: g.score for g in notebook.grades}


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_the_release_is_the_exercise_with_nbgraders_stubs(course, path):
    released = nbio.read(course / "release" / ASSIGNMENT / path.name)
    ours = nbio.read(ROOT / "exercises" / path.name)
    ours_code = [c for c in ours.cells if c.cell_type == "code"]
    released_code = [c for c in released.cells if c.cell_type == "code"]
    assert len(released_code) == len(ours_code)
    for theirs, mine in zip(released_code, ours_code):
        theirs_source, mine_source = nbio.code_source(theirs), nbio.code_source(mine)
        if "raise NotImplementedError()" in mine_source:
            assert "YOUR CODE HERE" in theirs_source and "BEGIN SOLUTION" not in theirs_source
        elif mine.get("id", "").endswith("-colab"):
            # nbgrader releases the solution's Colab cell (cd into solutions/); ours names
            # exercises/. Otherwise the same cell.
            assert theirs_source == mine_source.replace("/exercises", "/solutions")
        else:
            assert theirs_source == mine_source
        meta = theirs.metadata["nbgrader"]
        assert meta["solution"] or meta["locked"], "every cell but the answers is read-only"
    # The folded hints reach the learner: nbgrader keeps markdown cells as they are.
    hints = [c.source for c in ours.cells if c.cell_type == "markdown" and nbio.has_tag(c, "hints")]
    kept = {c.source for c in released.cells if c.cell_type == "markdown"}
    assert hints and all(h in kept for h in hints), f"{path.name}: the release drops hints"


@pytest.mark.parametrize("name", GRADED)
def test_autograde_gives_the_solution_full_marks_and_the_stub_none(course, name):
    nb = nbio.read((ROOT / "solutions") / name)
    checks = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if nbio.has_tag(c, "check")]
    assert checks, f"{name}: no graded cells"
    assert grades(course, name, "solution") == {check: 1.0 for check in checks}
    assert grades(course, name, "stub") == {check: 0.0 for check in checks}


@pytest.mark.parametrize("name", GRADED)
def test_autograde_takes_off_exactly_the_points_of_the_check_a_wrong_answer_fails(course, name):
    wrong = wrong_answer(name)
    scores = grades(course, name, "wrong")
    lost = {check for check, score in scores.items() if score < 1.0}
    assert lost == {f"check-{wrong.check}"}, f"'{wrong.why}' lost the points of {sorted(lost)}"

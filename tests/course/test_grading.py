"""A graded course, end to end, with nbgrader's real commands and exchange (tools/course.py).

An instructor creates the course (one assignment per exercise) and releases two weeks'
assignments into an exchange folder in a temporary directory; three students fetch them and
hand in: alice the solution, bob a wrong answer from tests/wrong_answers/ (its table's
``HAND_IN``), carol the released stub untouched. The instructor collects, autogrades and
releases feedback; the students fetch it. nbgrader must give alice full marks, carol none
and bob the marks of every check but the one that catches his answer, and each student's
feedback must be theirs. Every other assignment is generated too, and each release must be
exactly the exercise a learner gets, hints kept, its install cell cloning the student copy's
ref, with no path into solutions/ and no answer (tools/leaks.py).

Autograding runs whole notebooks, so `make test-course` runs the two quickest weeks;
DPKIT_GRADE_ALL=1 makes every exercise a week (`make test-grading`).
"""

from __future__ import annotations

import os
import re

import pytest

from tests.support.course_term import (
    COURSE_ID,
    as_students,
    checks_of,
    grades,
    hand_in,
    notebook_of,
    wrong_answer,
)
from tests.support.notebooks import ROOT, SOLUTIONS, nbio
from tests.wrong_answers import HAND_IN
from tools import colab, leaks
from tools import course as course_tool

QUICKEST = ("ex05", "ex09")  # the weeks make test-course runs: no cluster, little TensorFlow
ALL = list(course_tool.assignments())
GRADE_ALL = bool(os.environ.get("DPKIT_GRADE_ALL"))
WEEKS = ALL if GRADE_ALL else [w for w in QUICKEST if w in ALL]
STUDENTS = ("alice", "bob", "carol")  # solution, a tabled wrong answer, the stub


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The course after two weeks: released, handed in, collected, graded, fed back."""
    top = tmp_path_factory.mktemp("term")
    root, exchange = top / "course", top / "exchange"
    course_tool.main(["new", str(root), "--course-id", COURSE_ID, "--exchange", str(exchange)])
    course_tool.nbgrader(root, "generate_assignment", "*", "--force")  # every exercise
    homes = {student: top / "home" / student for student in STUDENTS}
    for week in WEEKS:
        course_tool.main(["release", str(root), week])
        as_students(exchange, "fetch_assignment", week, homes)
        for student, home in homes.items():
            released = home / week / notebook_of(week)
            released.write_text(hand_in(student, week, released), encoding="utf-8")
        as_students(exchange, "submit", week, homes)
        for step in ("collect", "autograde", "feedback"):
            course_tool.main([step, str(root), week])
        as_students(exchange, "fetch_feedback", week, homes)
    return top


def test_every_exercise_is_an_assignment_with_a_wrong_answer_to_hand_in():
    assert {course_tool.assignments()[a].name for a in ALL} == {p.name for p in SOLUTIONS}
    assert set(HAND_IN) == {p.name for p in SOLUTIONS}
    for name in HAND_IN:
        assert wrong_answer(name).check, name
    assert GRADE_ALL or list(QUICKEST) == WEEKS, f"the weeks make test-course runs: {WEEKS}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_the_release_is_the_exercise_with_nbgraders_stubs(course, path):
    released = nbio.read(course / "course" / "release" / f"ex{path.name[:2]}" / path.name)
    ours = nbio.read(ROOT / "exercises" / path.name)
    ours_code = [c for c in ours.cells if c.cell_type == "code"]
    released_code = [c for c in released.cells if c.cell_type == "code"]
    assert len(released_code) == len(ours_code)
    for theirs, mine in zip(released_code, ours_code):
        theirs_source, mine_source = nbio.code_source(theirs), nbio.code_source(mine)
        if "raise NotImplementedError()" in mine_source:
            assert "YOUR CODE HERE" in theirs_source and "BEGIN SOLUTION" not in theirs_source
        elif colab.is_install_cell(mine):  # into exercises/, as ours, but from the student ref
            assert theirs_source == colab.install_source("exercises", course_tool.DEFAULT_REF)
        else:
            assert theirs_source == mine_source
        meta = theirs.metadata["nbgrader"]
        assert meta["solution"] or meta["locked"], "every cell but the answers is read-only"
    # Nothing in the release opens, clones or changes into solutions/.
    text = nbio.dumps(released)
    assert not re.search(r"solutions/|/solutions\b", text), f"{path.name}: names solutions/"
    # The folded hints reach the learner: nbgrader keeps markdown cells as they are.
    hints = [c.source for c in ours.cells if c.cell_type == "markdown" and nbio.has_tag(c, "hints")]
    kept = {c.source for c in released.cells if c.cell_type == "markdown"}
    assert hints and all(h in kept for h in hints), f"{path.name}: the release drops hints"


def test_no_release_holds_an_answer_or_a_way_to_one(course):
    """tools/leaks.py on every released notebook: no answer line, no hint holding more than a
    third of its answer, no link into solutions/, no launch or clone of a ref with solutions/."""
    refs = leaks.refs_with_solutions(ROOT) | {colab.ref()}
    released = course / "course" / "release"
    assert len(list(released.glob("ex*/*.ipynb"))) == len(ALL)
    assert leaks.scan([released], repository=colab.repository(), refs=refs) == []


@pytest.mark.parametrize("week", WEEKS)
def test_autograde_gives_the_solution_full_marks_and_the_stub_none(course, week):
    checks = checks_of(week)
    assert checks, f"{week}: no graded cells"
    assert grades(course, week, "alice") == {check: 1.0 for check in checks}
    assert grades(course, week, "carol") == {check: 0.0 for check in checks}


@pytest.mark.parametrize("week", WEEKS)
def test_autograde_takes_off_exactly_the_points_of_the_check_a_wrong_answer_fails(course, week):
    wrong = wrong_answer(notebook_of(week))
    scores = grades(course, week, "bob")
    lost = {check for check, score in scores.items() if score < 1.0}
    assert lost == {f"check-{wrong.check}"}, f"'{wrong.why}' lost the points of {sorted(lost)}"


@pytest.mark.parametrize("week", WEEKS)
def test_each_student_fetches_their_own_feedback(course, week):
    total = len(checks_of(week))
    expected = {"alice": total, "bob": total - 1, "carol": 0}
    for student, score in expected.items():
        pages = list((course / "home" / student / week / "feedback").rglob("*.html"))
        assert len(pages) == 1, f"{student} fetched {len(pages)} feedback pages for {week}"
        text = pages[0].read_text(encoding="utf-8")
        assert f"Score: {score:.1f} / {float(total):.1f}" in re.sub(r"\s+", " ", text), (
            f"{student}'s feedback for {week} does not show {score} of {total}"
        )


@pytest.mark.parametrize("week", WEEKS)
def test_the_grades_table_shows_every_student(course, week, capsys):
    course_tool.main(["grades", str(course / "course"), week])
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    total = len(checks_of(week))
    scores = {row[0]: row[2] for row in rows}
    assert scores == {
        "alice": f"{total:g}/{total:g}",
        "bob": f"{total - 1:g}/{total:g}",
        "carol": f"0/{total:g}",
    }


def test_grades_of_an_assignment_never_released_is_an_error_that_says_what_to_do(tmp_path):
    root = tmp_path / "course"
    course_tool.main(["new", str(root), "--course-id", COURSE_ID])
    with pytest.raises(SystemExit, match=r"ex03 has no grades in .* yet: release it"):
        course_tool.main(["grades", str(root), "ex03"])
    with pytest.raises(SystemExit, match="no assignment 'ex99'"):
        course_tool.main(["grades", str(root), "ex99"])

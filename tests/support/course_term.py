"""A graded course with nbgrader's real commands, as the course tests run it
(tests/course/test_grading.py, tests/course/test_tampering.py): the students' side of the
exchange, what each student hands in, and the gradebook's scores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from nbgrader import api as nbgrader_api  # the grade extra: pip install -e '.[grade]'

from tests.support.notebooks import nbio
from tests.wrong_answers import HAND_IN, TABLES
from tools import course as course_tool

COURSE_ID = "dpkit101"


def notebook_of(assignment: str) -> str:
    return course_tool.assignments()[assignment].name


def wrong_answer(name: str):
    (wrong,) = [w for w in TABLES[name] if w.why == HAND_IN[name]]
    return wrong


STUDENT_SIDE = """
import json, os, sys
import nbgrader.utils
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import default
from traitlets.config import Config

ACTIONS = {
    "fetch_assignment": default.ExchangeFetchAssignment,
    "submit": default.ExchangeSubmit,
    "fetch_feedback": default.ExchangeFetchFeedback,
}
course, exchange, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
for student, folder, action, assignment in steps:
    nbgrader.utils.get_osusername = lambda student=student: student
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    c = Config()
    c.CourseDirectory.course_id = course
    c.CourseDirectory.root = folder
    c.CourseDirectory.assignment_id = assignment
    c.Exchange.root = exchange
    c.Exchange.cache = os.path.join(folder, ".nbgrader_cache")
    coursedir = CourseDirectory(config=c)
    ACTIONS[action](coursedir=coursedir, authenticator=Authenticator(config=c), config=c).start()
    print("done", student, action, assignment, flush=True)
"""


def as_students(exchange: Path, action: str, assignment: str, homes: dict[str, Path]) -> str:
    """One of nbgrader's student commands (its exchange classes, as `nbgrader ACTION` runs
    them), run as each student in ``homes`` ({student: their folder}), in one process.

    nbgrader names a submission after the operating-system user; the students here share
    one, so nbgrader's user lookup answers each student's name in turn (on a real hub each
    student is their own user, and nothing is patched). Each keeps their own record of what
    they submitted (``Exchange.cache``, by default one per user under ~/.local/share).
    """
    steps = [[student, str(home), action, assignment] for student, home in homes.items()]
    done = subprocess.run(
        [sys.executable, "-c", STUDENT_SIDE, COURSE_ID, str(exchange), json.dumps(steps)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0 and log.count("done ") == len(steps), f"{action}: {log[-2000:]}"
    return log


def hand_in(student: str, assignment: str, released: Path) -> str:
    """What ``student`` writes into the released notebook."""
    path = course_tool.assignments()[assignment]
    if student == "carol":
        return released.read_text(encoding="utf-8")
    nb = course_tool.student_notebook(path)
    if student == "bob":
        wrong = wrong_answer(path.name)
        answers = [c for c in nb.cells if c.cell_type == "code" and "BEGIN SOLUTION" in c.source]
        cell = answers[wrong.answer - 1]
        cell.source = wrong.swapped_into(nbio.code_source(cell))
    return nbio.dumps(nb)


def grades(top: Path, assignment: str, student: str) -> dict[str, float]:
    """{grade id: score} nbgrader's gradebook holds for one student's notebook."""
    name = notebook_of(assignment)[: -len(".ipynb")]
    with nbgrader_api.Gradebook(f"sqlite:///{top / 'course' / 'gradebook.db'}") as book:
        notebook = book.find_submission_notebook(name, assignment, student)
        return {g.name: g.score for g in notebook.grades}


def checks_of(assignment: str) -> list[str]:
    nb = nbio.read(course_tool.assignments()[assignment])
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if nbio.has_tag(c, "check")]

"""Answers that attack the grader instead of answering score 0 under nbgrader's autograde.

One course, one week (ex09, the quickest: no TensorFlow), as tests/course/test_grading.py
runs it, with nbgrader's real commands: alice hands in the solution, bob the tabled wrong
answer, carol the stub, and one student per attack hands in the solution with answer 1
replaced by the attack, whose ``ring_seconds`` is wrong (it returns 0). Here each must
score 0 on check 1, for the reason the attack meets (the grader's refusal, named, or the
check's own message: the attack had no effect), and the grader's files stay as they were;
the solution scores full marks, bob loses the points of his check only, carol scores 0.
(make test-course.)

Under the course's grader as it was (nbgrader's Execute, the answers in the checks'
kernel) this test fails: check 1 passed for reassigns-check, patches-comparisons,
swaps-sys-modules, patches-builtins, shadows-checker and patches-in-call; forges-output
and exits-in-check hang or kill that kernel; writes-grader-files changes the instructor's
release unseen and plants-file goes unreported. raises-systemexit scored 0 there too.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from pathlib import Path

import nbformat
import pytest

from tests.support.course_term import (
    COURSE_ID,
    as_students,
    checks_of,
    grades,
    hand_in,
    wrong_answer,
)
from tools import course as course_tool

WEEK = "ex09"
WRONG = """
def ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s):
    return 0.0  # wrong: the ring takes time
"""

#: {student: (the answer cell they hand in, a regex the error of check 1 must match)}
ATTACKS = {
    # the attack that passed: the check's module is importable, so rebind its check
    "reassigns-check": (
        "import dpkit_checks.ex09\n"
        "dpkit_checks.ex09.check_ring_seconds = lambda f: 'Check 1 passed'\n" + WRONG,
        r"GradingRefused: .*dpkit_checks\.ex09\.check_ring_seconds was replaced",
    ),
    # what the checks compare with, made to agree with anything
    "patches-comparisons": (
        "import numpy.testing, dpkit.checking\n"
        "numpy.testing.assert_allclose = lambda *a, **k: None\n"
        "dpkit.checking.agree = lambda *a, **k: True\n" + WRONG,
        r"GradingRefused: .*dpkit\.checking\.agree was replaced",
    ),
    # a checker of one's own, under the checker's names and the check cell's names
    "swaps-sys-modules": (
        "import sys, types\n"
        "fake = types.ModuleType('dpkit_checks')\n"
        "fake.ex09 = types.SimpleNamespace(check_ring_seconds=lambda f: 'Check 1 passed')\n"
        "sys.modules['dpkit_checks'] = fake\n"
        "sys.modules['dpkit_checks.ex09'] = fake.ex09\n"
        "dpkit_checks, ex09 = fake, fake.ex09\n" + WRONG,
        r"GradingRefused: .*sys\.modules\['dpkit_checks'\] was replaced",
    ),
    # max() of the magnitudes made infinite: dpkit.checking.agree's bar, then passes all
    "patches-builtins": (
        "import builtins\n"
        "_max = max\n"
        "def _lying_max(*args, **kwargs):\n"
        "    if len(args) == 1 and isinstance(args[0], list) and args[0] and all(\n"
        "        isinstance(v, float) for v in args[0]\n"
        "    ):\n"
        "        return float('inf')\n"
        "    return _max(*args, **kwargs)\n"
        "builtins.max = _lying_max\n" + WRONG,
        r"GradingRefused: .*builtins\.max was replaced",
    ),
    # SystemExit is no Exception: it gets past the checks' except clauses
    "raises-systemexit": (
        "def ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s):\n"
        "    raise SystemExit(0)\n"
        "raise SystemExit(0)\n",
        r"SystemExit",
    ),
    # the process ends while the check runs
    "exits-in-check": (
        "import os\n"
        "def ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s):\n"
        "    os._exit(0)\n",
        r"GradingRefused: .*the grading process ended",
    ),
    # the expected output, printed in advance and written as the grader's report
    "forges-output": (
        "import os\n"
        'print("Check 1 passed: the ring\'s time for 7 cases, 1 to 1000 devices")\n'
        "line = repr({'cell': 4, 'passed': True, 'outputs': [], 'token': '0' * 64}) + '\\n'\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(fd, line.encode())\n"
        "    except OSError:\n"
        "        pass\n" + WRONG,
        r"GradingRefused: .*something other than the grader wrote to its report",
    ),
    # the grader's files: the gradebook, the instructor's copy the notebook is rebuilt from
    "writes-grader-files": (
        "import glob, sqlite3\n"
        "refused = 0\n"
        "for path in glob.glob('../../../gradebook.db') + glob.glob('../../../release/*/*'):\n"
        "    try:\n"
        "        if path.endswith('.db'):\n"
        "            db = sqlite3.connect(path)\n"
        "            db.execute('update grade set auto_score = 1')\n"
        "            db.commit()\n"
        "        else:\n"
        "            open(path, 'a').write(' ')\n"
        "    except PermissionError:\n"
        "        refused += 1\n"
        "assert refused == 2, refused\n" + WRONG,
        r"AssertionError: 2 device\(s\).*yours 0 ms, want",
    ),
    # a checker handed in beside the notebook (see hand_in): the check's own message
    "shadows-checker": (WRONG, r"AssertionError: 2 device\(s\).*yours 0 ms, want"),
    # the patch made while the check calls the answer, past the check's first audit
    "patches-in-call": (
        "def ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s):\n"
        "    import dpkit.checking\n"
        "    dpkit.checking.agree = lambda *a, **k: True\n"
        "    return 0.0\n",
        r"GradingRefused: .*changed while it ran: dpkit\.checking\.agree was replaced",
    ),
    # a write the audit hook cannot see (relative to a folder's descriptor): the course
    # folder's fingerprint catches it, every check scores 0 and autograde fails, naming it
    "plants-file": (
        "import os\n"
        "top = os.open('../../..', os.O_RDONLY)\n"
        "os.close(os.open('planted.txt', os.O_WRONLY | os.O_CREAT, dir_fd=top))\n" + WRONG,
        r"GradingRefused: .*grading files changed while it ran: .*planted\.txt",
    ),
}
HONEST = ("alice", "bob", "carol")
STUDENTS = (*HONEST, *ATTACKS)
SHADOW = {  # what shadows-checker hands in beside the notebook
    "dpkit_checks/__init__.py": "",
    "dpkit_checks/ex09.py": "check_ring_seconds = lambda f: 'Check 1 passed'\n",
}


def attacked(released: Path, answer: str) -> str:
    """The solution notebook with answer 1 replaced by ``answer``."""
    nb = nbformat.reads(hand_in("alice", WEEK, released), as_version=4)
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    answers[0].source = answer.strip() + "\n"
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """Week ex09 released, handed in by every student, collected and autograded."""
    top = tmp_path_factory.mktemp("tamper")
    root, exchange = top / "course", top / "exchange"
    new = ["new", str(root), "--course-id", COURSE_ID, "--exchange", str(exchange)]
    assert course_tool.main(new) == 0
    homes = {student: top / "home" / student for student in STUDENTS}
    assert course_tool.main(["release", str(root), WEEK]) == 0
    as_students(exchange, "fetch_assignment", WEEK, homes)
    for student, home in homes.items():
        released = home / WEEK / course_tool.assignments()[WEEK].name
        if student in HONEST:
            text = hand_in(student, WEEK, released)
        else:
            text = attacked(released, ATTACKS[student][0])
        released.write_text(text, encoding="utf-8")
    for name, text in SHADOW.items():
        path = homes["shadows-checker"] / WEEK / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    as_students(exchange, "submit", WEEK, homes)
    assert course_tool.main(["collect", str(root), WEEK]) == 0
    protected = {p: p.read_bytes() for p in (root / "release" / WEEK).iterdir()}
    start, said = time.monotonic(), io.StringIO()
    with contextlib.redirect_stderr(said):
        code = course_tool.main(["autograde", str(root), WEEK])
    seconds = time.monotonic() - start
    print(f"autograde of {len(STUDENTS)} submissions of {WEEK}: {seconds:.1f} s")
    return top, code, protected, said.getvalue()


def check_errors(top: Path, student: str) -> dict[str, str]:
    """{grade id: 'ename: evalue' of its error, '' if none} of the autograded notebook."""
    name = course_tool.assignments()[WEEK].name
    nb = json.loads((top / "course" / "autograded" / student / WEEK / name).read_text("utf-8"))
    found = {}
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if grade_id.startswith("check-"):
            errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
            found[grade_id] = f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else ""
    return found


def test_the_honest_grades_are_kept(term):
    top = term[0]
    checks = checks_of(WEEK)
    assert grades(top, WEEK, "alice") == {check: 1.0 for check in checks}
    assert grades(top, WEEK, "carol") == {check: 0.0 for check in checks}
    wrong = wrong_answer(course_tool.assignments()[WEEK].name)
    lost = {check for check, score in grades(top, WEEK, "bob").items() if score < 1.0}
    assert lost == {f"check-{wrong.check}"}, f"bob's wrong answer lost {sorted(lost)}"


@pytest.mark.parametrize("student", list(ATTACKS))
def test_each_attack_scores_0_on_the_check_it_attacks(term, student):
    top = term[0]
    assert grades(top, WEEK, student)["check-1"] == 0.0
    error = check_errors(top, student)["check-1"]
    assert error, f"{student}: check 1 shows no error"
    assert re.search(ATTACKS[student][1], error, re.S), f"{student}: check 1 says {error!r}"


def test_the_graders_files_are_as_they_were_and_the_planted_one_is_reported(term):
    top, code, protected, said = term
    for path, data in protected.items():
        assert path.read_bytes() == data, f"{path} was changed"
    assert code == 1, "autograde did not fail on the file planted in the course folder"
    errors = [line for line in said.splitlines() if "| ERROR]" in line]
    assert len(errors) == 1, said[-3000:]
    assert "of plants-file changed the grader's files" in errors[0], errors[0]
    assert "planted.txt" in errors[0], errors[0]

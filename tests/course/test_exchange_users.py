"""nbgrader's exchange between real Unix users, set up as deploy/jupyterhub/ sets up a hub.

Three users are created (tests/support/unix_users.py): a teacher and two students, alice and
bob, each with a home only they may enter, all in the group ``users``, as every server of
deploy/jupyterhub/config.yaml runs (a uid of its own, gid 100). Root makes the exchange folder
with mode 1777, as exchange.yaml's Job does on the hub's volume, and puts the students'
config the course wrote (``COURSE/for_students/nbgrader_config.py``) in a Jupyter config
folder every user reads (``JUPYTER_CONFIG_PATH``: the hub mounts it at /etc/jupyter). Then,
each as their own user, with nbgrader's own commands:

* the teacher creates the course and releases ex03 (tools/course.py new, release);
* without the students' config, ``nbgrader fetch_assignment ex03 --course dpkit101`` fails
  as it did before the course wrote one ("Unwritable directory");
* with it, alice and bob fetch ex03 and submit it with no flag at all;
* bob can neither list the exchange's inbound folder nor enter alice's home, so
  ``nbgrader list --inbound`` shows him no submission (it globs inbound) while ``nbgrader
  list --cached`` shows him his own (his copy, under his home); the same holds for alice;
* the teacher collects both submissions, each with what its student wrote.

What nbgrader's permissions do and do not promise (nbgrader 0.9.6, exchange/default): inbound
is mode 2733, so a student may write into it and enter it but not list it; a submission's
folder is named ``<student>+<assignment>+<time>+<12 random characters>`` and its files are
readable by anyone who knows that name. The test checks that a student cannot find another's
submission, not that the files are unreadable by path.

Runs where root may create users (useradd); elsewhere it skips and says why, unless
DPKIT_REQUIRE_UNIX_USERS is set (.ci/run), where that is a failure. make test-course runs it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.unix_users import Unavailable, Users, check_machine, python_for_everyone
from tools import course as course_tool

COURSE_ID = "dpkit101"
WEEK = "ex03"
NOTEBOOK = course_tool.assignments()[WEEK].name
REQUIRE = "DPKIT_REQUIRE_UNIX_USERS"  # .ci/run sets it: a skip there would hide a failure
EDIT = """
import sys, nbformat
path, who = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
(first, *_) = [c for c in nb.cells if c.cell_type == "code" and "YOUR CODE HERE" in c.source]
first.source = first.source.replace("YOUR CODE HERE", f"YOUR CODE HERE ({who} was here)", 1)
nbformat.write(nb, path)
"""
LOOK = """
import os, sys
for path in sys.argv[1:]:
    try:
        os.listdir(path)
        print("listed", path)
    except PermissionError:
        print("refused", path)
"""


class Term:
    """The users, the exchange and the config folder of one run."""

    def __init__(self, top: Path):
        self.users = Users(top)
        self.exchange = top / "exchange"
        self.config_dir = top / "etc-jupyter"  # stands for the hub's /etc/jupyter
        self.course: Path | None = None
        self.unconfigured = None  # the fetch without the students' config

    def nbgrader(self, who: str, *args: str, config: bool = True):
        env = {"JUPYTER_CONFIG_PATH": str(self.config_dir)} if config else {}
        return self.users.run(who, [str(self.users.python), "-m", "nbgrader", *args], **env)

    def course_tool(self, *args: str):
        return self.users.run(
            "teacher", [str(self.users.python), str(ROOT / "tools" / "course.py"), *args]
        )


def ok(done) -> str:
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    return log


@pytest.fixture(scope="module")
def term():
    try:
        check_machine()
    except Unavailable as error:
        if os.environ.get(REQUIRE):
            pytest.fail(f"{REQUIRE} is set, but: {error}")
        pytest.skip(f"no real Unix users here: {error}")
    top = Path(tempfile.mkdtemp(prefix="dpkit-exchange-", dir="/tmp"))
    top.chmod(0o755)  # every user reaches the exchange and the shared Python through it
    made = Term(top)
    try:
        try:
            for name in ("teacher", "alice", "bob"):
                made.users.add(name)
            python_for_everyone(made.users, "alice")
        except Unavailable as error:
            if os.environ.get(REQUIRE):
                pytest.fail(f"{REQUIRE} is set, but: {error}")
            pytest.skip(f"no real Unix users here: {error}")
        term_of_one_week(made)
        yield made
    finally:  # the users, their homes and the exchange, whatever happened
        made.users.remove()


def term_of_one_week(made: Term) -> None:
    made.exchange.mkdir()
    made.exchange.chmod(0o1777)  # as deploy/jupyterhub/exchange.yaml's Job
    made.course = made.users.home("teacher") / COURSE_ID
    ok(made.course_tool("new", str(made.course), "--course-id", COURSE_ID,
                        "--exchange", str(made.exchange)))  # fmt: skip
    ok(made.course_tool("release", str(made.course), WEEK))
    # The admin's step: the students' config where every server reads it.
    made.config_dir.mkdir(mode=0o755)
    written = made.course / course_tool.FOR_STUDENTS / "nbgrader_config.py"
    (made.config_dir / "nbgrader_config.py").write_text(written.read_text())
    (made.config_dir / "nbgrader_config.py").chmod(0o644)
    made.unconfigured = made.nbgrader(
        "alice", "fetch_assignment", WEEK, "--course", COURSE_ID, config=False
    )
    for student in ("alice", "bob"):
        ok(made.nbgrader(student, "fetch_assignment", WEEK))
        released = made.users.home(student) / WEEK / NOTEBOOK
        ok(made.users.run(student, [str(made.users.python), "-c", EDIT, str(released), student]))
        ok(made.nbgrader(student, "submit", WEEK))
    ok(made.course_tool("collect", str(made.course), WEEK))


def inbound(term) -> Path:
    return term.exchange / COURSE_ID / "inbound"


def test_without_the_students_config_fetching_fails_as_before(term):
    log = term.unconfigured.stdout + term.unconfigured.stderr
    assert term.unconfigured.returncode != 0, log
    assert "Unwritable directory" in log and "/usr/local/share/nbgrader/exchange" in log, log


def test_the_students_config_is_the_course_id_and_the_exchange(term):
    text = (term.config_dir / "nbgrader_config.py").read_text()
    assert text == course_tool.student_config_text(COURSE_ID, term.exchange)


def test_the_release_is_readable_and_inbound_is_write_only_for_students(term):
    mode = stat.S_IMODE((inbound(term)).stat().st_mode)
    assert mode == 0o2733, oct(mode)
    assert inbound(term).stat().st_uid == term.users.uid("teacher")
    for student in ("alice", "bob"):
        fetched = term.users.home(student) / WEEK / NOTEBOOK
        assert fetched.stat().st_uid == term.users.uid(student)
        assert "YOUR CODE HERE" in fetched.read_text()


def test_each_submission_is_its_students_own(term):
    found = {p.name.split("+")[0]: p for p in inbound(term).iterdir()}
    assert set(found) == {term.users.made["alice"], term.users.made["bob"]}, sorted(found)
    for student in ("alice", "bob"):
        folder = found[term.users.made[student]]
        assert folder.stat().st_uid == term.users.uid(student)
        assert len(folder.name.split("+")) == 4, "nbgrader's random part is missing"
        assert f"({student} was here)" in (folder / NOTEBOOK).read_text()


@pytest.mark.parametrize("student, other", [("bob", "alice"), ("alice", "bob")])
def test_a_student_cannot_find_the_others_submission(term, student, other):
    other_login = term.users.made[other]
    looked = ok(term.users.run(student, [str(term.users.python), "-c", LOOK, str(inbound(term)),
                                         str(term.users.home(other))]))  # fmt: skip
    assert f"refused {inbound(term)}" in looked, looked
    assert f"refused {term.users.home(other)}" in looked, looked
    listed = ok(term.nbgrader(student, "list", "--inbound"))
    assert other_login not in listed, listed
    cached = ok(term.nbgrader(student, "list", "--cached"))
    assert f"{term.users.made[student]} {WEEK}" in cached and other_login not in cached, cached


def test_the_teacher_collects_both_submissions(term):
    for student in ("alice", "bob"):
        collected = term.course / "submitted" / term.users.made[student] / WEEK / NOTEBOOK
        assert collected.exists(), f"{student}'s submission was not collected"
        assert f"({student} was here)" in collected.read_text()
        other = "bob" if student == "alice" else "alice"
        assert f"({other} was here)" not in collected.read_text()

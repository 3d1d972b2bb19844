"""A graded course with nbgrader: one assignment per exercise, released week by week.

    python tools/course.py new COURSE [--course-id ID] [--exchange DIR] [--ref REF]
                                      [--repository OWNER/NAME]
    python tools/course.py student-config [--course-id ID] --exchange DIR   # print it
    python tools/course.py release COURSE ex03      # generate_assignment + release_assignment
    python tools/course.py collect COURSE ex03      # what the students submitted
    python tools/course.py autograde COURSE ex03    # run every check; scores in gradebook.db
    python tools/course.py feedback COURSE ex03     # generate_feedback + release_feedback
    python tools/course.py grades COURSE ex03       # a table: student, notebook, score

(`make course-new`, `make course-release A=ex03`, ... run the same.) ``new`` writes the
course's ``nbgrader_config.py`` (course id, the exchange folder students fetch from and
submit to, a cell timeout long enough for the exercises that start clusters) and one
source assignment per exercise, ``ex01`` ... ``ex10``, each holding its solution notebook
with the Colab badge and install cell of the *exercise* (``exercises/NN_*.ipynb``) at the
ref ``--ref`` (default ``student``, the branch ``make student-copy`` writes for) of the
repository (``--repository``, default pyproject's): a released notebook never opens, clones
or changes into ``solutions/``, and never installs from a ref that holds them. ``new``
refuses ``main``, the launch ref and every local branch or tag of this repository that has a
solutions/ folder; publish the student copy at that ref before the first release (README,
"Teaching with it"). The hints (folded markdown) are kept: nbgrader releases markdown cells
as they are. Running ``new`` again refreshes the source notebooks from solutions/ (with the
ref it is given) and leaves grades alone.

``new`` also writes the students' config, ``COURSE/for_students/nbgrader_config.py``: the
course id and the exchange folder, nothing else. Every student's server must read it from a
Jupyter config folder (on a hub, ``/etc/jupyter/nbgrader_config.py``: deploy/jupyterhub/
mounts it there); without it a student's nbgrader looks for its default exchange,
/usr/local/share/nbgrader/exchange, and stops with "Unwritable directory". ``student-config``
prints the same file without creating anything (for a hub's config, before the course
exists). Students then use nbgrader's own commands with no flags (README, "Teaching with
it"): ``nbgrader fetch_assignment ex03``, ``nbgrader submit ex03``, ``nbgrader
fetch_feedback ex03``, or JupyterLab's menu Nbgrader > Assignment List.

Grading runs the check cells, which call the course's checker (``dpkit_checks``, installed
from checks/ beside dpkit by ``make env``): ``autograde`` stops, saying how to install it,
when this Python lacks it. ``autograde`` is nbgrader's, with one step replaced (the config
``new`` writes says so): each submission runs in a fresh Python of its own, rebuilt from
the instructor's release with only the answer cells taken from it, and a check counts only
if nothing an answer could change to pass it has changed (tools/grading.py says how).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import colab  # noqa: E402
import leaks  # noqa: E402
import nbio  # noqa: E402

SOLUTIONS = nbio.ROOT / "solutions"
CHECKER = "dpkit_checks"  # the course's checker (checks/), which the check cells call
GRADING = Path(__file__).resolve().parent / "grading.py"  # autograde's grading process
GRADING_MODULE = "dpkit_course_grading"  # its name in nbgrader's process
DEFAULT_EXCHANGE = "exchange"  # beside the course, unless --exchange names another folder
#: The ref released notebooks install from unless --ref names another: the student copy's
#: branch (tools/student_copy.py --ref, make student-copy STUDENT_REF=...), without solutions/.
DEFAULT_REF = "student"
FOR_STUDENTS = "for_students"  # COURSE/for_students/nbgrader_config.py: the students' config
STEPS = {
    "release": [["generate_assignment", "--force"], ["release_assignment", "--force"]],
    "collect": [["collect", "--update"]],
    "autograde": [["autograde", "--force"]],
    "feedback": [["generate_feedback", "--force"], ["release_feedback"]],
}


def assignments(solutions: Path = SOLUTIONS) -> dict[str, Path]:
    """{assignment id: solution notebook}: ``ex03`` for solutions/03_gradient_averaging.ipynb."""
    found = {}
    for path in sorted(solutions.glob("[0-9][0-9]_*.ipynb")):
        found[f"ex{path.name[:2]}"] = path
    return found


def student_notebook(path: Path, at: str = DEFAULT_REF, repo: str | None = None):
    """The solution notebook at ``path`` with the exercise's badge and install cell, both at
    ref ``at`` of ``repo`` (by default pyproject's repository)."""
    nb = nbio.read(path)
    return colab.apply(nb, f"exercises/{path.name}", at, repo)


def check_ref(at: str, repo: str | None) -> None:
    """Stop unless released notebooks may install from ref ``at`` of ``repo``: a branch or tag
    name that, in this repository, holds no solutions/ (another repository, the student
    copy's own, is not looked into)."""
    if not re.fullmatch(r"[\w.][\w./-]*", at):
        raise SystemExit(f"error: --ref {at!r} is not a branch or tag name (e.g. student)")
    if repo is not None and not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise SystemExit(f"error: --repository {repo!r}: write OWNER/NAME")
    if repo not in (None, colab.repository()):
        return
    holding = leaks.refs_with_solutions(nbio.ROOT) | {colab.ref()}
    if at in holding:
        raise SystemExit(
            f"error: --ref {at}: that ref of {colab.repository()} holds solutions/, which a "
            "released notebook's install cell would clone; name the student copy's branch "
            f"(make student-copy STUDENT_REF=..., default {DEFAULT_REF})"
        )


def config_text(root: Path, course_id: str, exchange: Path) -> str:
    return (
        "# Written by tools/course.py new: the course's nbgrader settings.\n"
        "import importlib.util\n"
        "import sys\n"
        "\n"
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.course_id = {course_id!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        "c.Execute.timeout = 600  # seconds per cell: the exercises that start clusters\n"
        "# Autograde runs each submission in a grading process of its own, from the\n"
        "# instructor's release, not in a kernel the answers can change (tools/grading.py).\n"
        f"_spec = importlib.util.spec_from_file_location({GRADING_MODULE!r}, {str(GRADING)!r})\n"
        "_grading = importlib.util.module_from_spec(_spec)\n"
        f"sys.modules[{GRADING_MODULE!r}] = _grading\n"
        "_spec.loader.exec_module(_grading)\n"
        "c.Autograde.autograde_preprocessors = _grading.autograde_preprocessors()\n"
        f"c.IsolatedExecute.course = {str(root)!r}\n"
        f"c.IsolatedExecute.exchange = {str(exchange)!r}\n"
        "c.IsolatedExecute.timeout = 600\n"
    )


def student_config_text(course_id: str, exchange: Path) -> str:
    """The nbgrader config every student's server reads: the course and its exchange. No
    CourseDirectory.root: a student fetches into, and submits from, the folder they work in."""
    return (
        "# Written by tools/course.py: the students' nbgrader settings. Put it where every\n"
        "# student's server reads it, e.g. /etc/jupyter/nbgrader_config.py (deploy/jupyterhub/).\n"
        "c = get_config()\n"
        f"c.CourseDirectory.course_id = {course_id!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
    )


def _course_id(course_id: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", course_id):
        raise SystemExit(f"error: --course-id {course_id!r}: use letters, digits, '.', '_', '-'")
    return course_id


def new(
    root: Path,
    course_id: str,
    exchange: Path | None,
    at: str = DEFAULT_REF,
    repo: str | None = None,
) -> list[str]:
    """Create or refresh the course folder, its notebooks installing from ref ``at`` of
    ``repo``; return the assignment ids."""
    _course_id(course_id)
    check_ref(at, repo)
    root = root.resolve()
    exchange = (exchange or root.parent / DEFAULT_EXCHANGE).resolve()
    if not exchange.exists():  # every student writes into it; the sticky bit keeps them apart
        exchange.mkdir(parents=True)
        exchange.chmod(0o1777)
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(config_text(root, course_id, exchange), "utf-8")
    (root / FOR_STUDENTS).mkdir(exist_ok=True)
    students = root / FOR_STUDENTS / "nbgrader_config.py"
    students.write_text(student_config_text(course_id, exchange), "utf-8")
    found = assignments()
    for name, path in found.items():
        folder = root / "source" / name
        folder.mkdir(parents=True, exist_ok=True)
        nbio.write(student_notebook(path, at, repo), folder / path.name)
    return list(found)


def nbgrader(root: Path, *args: str) -> str:
    """Run one nbgrader command in the course folder; raise with its output if it fails."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "TF_CPP_MIN_LOG_LEVEL": "3", "DPKIT_WIDGETS": "text"}
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    log = done.stdout + done.stderr
    if done.returncode != 0 or "| ERROR]" in log:
        # its errors first (a submission that changed the grader's files names them), then
        # the end of its log
        errors = "\n".join(line for line in log.splitlines() if "| ERROR]" in line)
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{errors[:3000]}\n{log[-3000:]}")
    return log


def _check(root: Path, assignment: str) -> None:
    """Stop, saying what to do, unless ``root`` is a course folder and ``assignment`` one of
    its assignments."""
    known = assignments()
    if assignment not in known:
        raise SystemExit(f"error: no assignment {assignment!r}; the course has {', '.join(known)}")
    if not (root / "nbgrader_config.py").exists():
        raise SystemExit(f"error: {root} is not a course folder: run `tools/course.py new {root}`")


def run_step(step: str, root: Path, assignment: str) -> None:
    _check(root, assignment)
    if step == "autograde" and importlib.util.find_spec(CHECKER) is None:
        # Without it every check cell fails at its import and every student scores 0.
        raise SystemExit(
            f"error: the exercises' checks ({CHECKER}) are not installed in {sys.executable}: "
            f"run `{sys.executable} -m pip install -e {nbio.ROOT / 'checks'}` (make env does)"
        )
    for args in STEPS[step]:
        print(f"course: nbgrader {args[0]} {assignment}", flush=True)
        nbgrader(root, args[0], assignment, *args[1:])


def grades(root: Path, assignment: str) -> list[tuple[str, str, float, float]]:
    """(student, notebook, score, max score) for every graded notebook of ``assignment``."""
    from nbgrader.api import Gradebook, MissingEntry

    _check(root, assignment)
    none_yet = SystemExit(
        f"error: {assignment} has no grades in {root} yet: release it, then collect and "
        f"autograde what was handed in (make course-release A={assignment}, course-collect, "
        "course-autograde)"
    )
    if not (root / "gradebook.db").exists():  # opening it would create it
        raise none_yet
    rows = []
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as book:
        try:
            found = book.find_assignment(assignment)
        except MissingEntry:
            raise none_yet from None
        for notebook in found.notebooks:
            for submission in notebook.submissions:
                rows.append(
                    (submission.student.id, notebook.name, submission.score, submission.max_score)
                )
    return sorted(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("new", help="create or refresh a course folder")
    made.add_argument("course", type=Path)
    made.add_argument("--course-id", default="dpkit")
    made.add_argument("--exchange", type=Path, help="nbgrader's exchange folder")
    made.add_argument(
        "--ref",
        default=DEFAULT_REF,
        help="the branch or tag of the student copy the released notebooks install from",
    )
    made.add_argument("--repository", help="OWNER/NAME of the student copy, if not this one")
    told = sub.add_parser("student-config", help="print the config every student's server reads")
    told.add_argument("--course-id", default="dpkit")
    told.add_argument("--exchange", type=Path, required=True, help="the exchange on their servers")
    for step in (*STEPS, "grades"):
        one = sub.add_parser(step, help=f"{step} one assignment")
        one.add_argument("course", type=Path)
        one.add_argument("assignment", help="ex01 ... (one per exercise)")
    args = parser.parse_args(argv)
    if args.command == "new":
        names = new(args.course, args.course_id, args.exchange, args.ref, args.repository)
        print(f"course: {args.course} with assignments {', '.join(names)}")
        print(
            f"course: released notebooks install from {args.ref} of "
            f"{args.repository or colab.repository()}: publish the student copy there "
            f"(make student-copy STUDENT_REF={args.ref}"
            + (f" STUDENT_REPOSITORY={args.repository}" if args.repository else "")
            + ") before the first release"
        )
        print(
            f"course: the students' config is {args.course / FOR_STUDENTS / 'nbgrader_config.py'}"
        )
    elif args.command == "student-config":
        if not args.exchange.is_absolute():  # students' servers start in other folders
            raise SystemExit(f"error: --exchange {args.exchange}: give an absolute path")
        print(student_config_text(_course_id(args.course_id), args.exchange), end="")
    elif args.command == "grades":
        for student, notebook, score, top in grades(args.course.resolve(), args.assignment):
            print(f"{student:20s} {notebook:40s} {score:g}/{top:g}")
    else:
        try:
            run_step(args.command, args.course.resolve(), args.assignment)
        except RuntimeError as error:  # nbgrader failed: its own words, not a traceback
            print(f"course: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

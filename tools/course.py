"""A graded course with nbgrader: one assignment per exercise, released week by week.

    python tools/course.py new COURSE [--course-id ID] [--exchange DIR]
    python tools/course.py release COURSE ex03      # generate_assignment + release_assignment
    python tools/course.py collect COURSE ex03      # what the students submitted
    python tools/course.py autograde COURSE ex03    # run every check; scores in gradebook.db
    python tools/course.py feedback COURSE ex03     # generate_feedback + release_feedback
    python tools/course.py grades COURSE ex03       # a table: student, notebook, score

(`make course-new`, `make course-release A=ex03`, ... run the same.) ``new`` writes the
course's ``nbgrader_config.py`` (course id, the exchange folder students fetch from and
submit to, a cell timeout long enough for the exercises that start clusters) and one
source assignment per exercise, ``ex01`` ... ``ex10``, each holding its solution notebook
with the Colab badge and install cell of the *exercise* (``exercises/NN_*.ipynb``): a
released notebook never opens, clones or changes into ``solutions/``. The hints (folded
markdown) are kept: nbgrader releases markdown cells as they are. Running ``new`` again
refreshes the source notebooks from solutions/ and leaves grades alone.

Students use nbgrader's own commands against the same exchange (README, "Teaching with it"):
``nbgrader fetch_assignment ex03 --course ID``, ``nbgrader submit ex03 --course ID``,
``nbgrader fetch_feedback ex03 --course ID``.

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
import nbio  # noqa: E402

SOLUTIONS = nbio.ROOT / "solutions"
CHECKER = "dpkit_checks"  # the course's checker (checks/), which the check cells call
GRADING = Path(__file__).resolve().parent / "grading.py"  # autograde's grading process
GRADING_MODULE = "dpkit_course_grading"  # its name in nbgrader's process
DEFAULT_EXCHANGE = "exchange"  # beside the course, unless --exchange names another folder
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


def student_notebook(path: Path):
    """The solution notebook at ``path`` with the exercise's badge and install cell."""
    nb = nbio.read(path)
    return colab.apply(nb, f"exercises/{path.name}")


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


def new(root: Path, course_id: str, exchange: Path | None) -> list[str]:
    """Create or refresh the course folder; return the assignment ids."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", course_id):
        raise SystemExit(f"error: --course-id {course_id!r}: use letters, digits, '.', '_', '-'")
    root = root.resolve()
    exchange = (exchange or root.parent / DEFAULT_EXCHANGE).resolve()
    if not exchange.exists():  # every student writes into it; the sticky bit keeps them apart
        exchange.mkdir(parents=True)
        exchange.chmod(0o1777)
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(config_text(root, course_id, exchange), "utf-8")
    found = assignments()
    for name, path in found.items():
        folder = root / "source" / name
        folder.mkdir(parents=True, exist_ok=True)
        nbio.write(student_notebook(path), folder / path.name)
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
    for step in (*STEPS, "grades"):
        one = sub.add_parser(step, help=f"{step} one assignment")
        one.add_argument("course", type=Path)
        one.add_argument("assignment", help="ex01 ... (one per exercise)")
    args = parser.parse_args(argv)
    if args.command == "new":
        names = new(args.course, args.course_id, args.exchange)
        print(f"course: {args.course} with assignments {', '.join(names)}")
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

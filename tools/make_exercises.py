"""Generate exercises/ from solutions/: `make exercises`; `--check` verifies they are current.

In a solution notebook, each answer sits between two marker lines:

    ### BEGIN SOLUTION  optional hint for the learner
    ...the answer...
    ### END SOLUTION

The exercise keeps everything else and puts, at the marker's indentation,

    # TODO: optional hint for the learner
    raise NotImplementedError()

Outputs are cleared, and a first cell names the solution it was generated from.
Never edit an exercise by hand: edit the solution and run this again.

Both notebooks also get nbgrader's cell metadata, written from the same markers, so that a
teacher can run `nbgrader generate_assignment` on the solutions and `nbgrader autograde` on
what learners hand in (README, "Teaching with it"):

- a cell with a marked region is a solution cell (`answer-1`, `answer-2`, ... in order);
- a code cell tagged `check` is a graded test cell worth POINTS_PER_CHECK point(s), named
  after its docstring ("Check 3a: ..." -> `check-3a`) and locked;
- every other cell is locked (read-only): nbgrader restores it before grading.

The solutions are rewritten in place when their metadata is stale; `--check` reports it.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import colab  # noqa: E402
import nbio  # noqa: E402

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
DEFAULT_HINT = "write your code here"
POINTS_PER_CHECK = 1
NBGRADER_SCHEMA = 3
CHECK_NAME = re.compile(r'^[ \t]*(?:#[^\n]*\n[ \t]*)*"""\s*Check (\w+):', re.MULTILINE)


class MarkerError(ValueError):
    """A solution region is not closed, not opened, or nested."""


def stub_source(source: str, where: str = "cell") -> str:
    """Replace each marked solution region of one cell's source by a hint and a raise."""
    out: list[str] = []
    inside = False
    for number, line in enumerate(source.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            if inside:
                raise MarkerError(
                    f"{where}, line {number}: {BEGIN} inside another region; "
                    f"close the first with {END}."
                )
            indent = line[: len(line) - len(line.lstrip())]
            hint = stripped[len(BEGIN) :].strip(" :-") or DEFAULT_HINT
            out += [f"{indent}# TODO: {hint}", f"{indent}raise NotImplementedError()"]
            inside = True
        elif stripped.startswith(END):
            if not inside:
                raise MarkerError(f"{where}, line {number}: {END} without a {BEGIN} before it.")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise MarkerError(f"{where}: {BEGIN} is never closed; add a {END} line.")
    return "\n".join(out)


def header_cell(solution_name: str) -> nbformat.NotebookNode:
    """The exercise's first cell: where it comes from, named but not linked (the website and
    every other copy a student reads must not lead to a solution), and how to work in it."""
    cell = nbformat.v4.new_markdown_cell(
        f"*Exercise generated from `solutions/{solution_name}` by `tools/make_exercises.py`; "
        "edit the solution, not this file, then run `make exercises`.*\n\n"
        "Replace each `raise NotImplementedError()` with your code and run the check cell "
        "after it: it passes when your answer is right, and says what is wrong when it is "
        "not. Stuck? Open the folded hints above the task one at a time: the idea, the API, "
        "then the steps."
    )
    cell.id = "generated-header"
    return cell


def grading_metadata(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """A copy of `nb` whose cells carry nbgrader's metadata (see the module docstring)."""
    nb = copy.deepcopy(nb)
    answers = 0
    for index, cell in enumerate(nb.cells):
        source = nbio.code_source(cell)
        meta = {"grade": False, "locked": True, "solution": False, "task": False}
        if cell.cell_type == "code" and BEGIN in source:
            answers += 1
            meta.update(grade_id=f"answer-{answers}", locked=False, solution=True)
        elif cell.cell_type == "code" and nbio.has_tag(cell, "check"):
            found = CHECK_NAME.search(source)
            if not found:
                raise MarkerError(
                    f"solutions/{name}, cell {index}: a check cell must open with a docstring "
                    '"""Check N: ...""" (its name becomes the nbgrader grade id).'
                )
            meta.update(grade_id=f"check-{found.group(1)}", grade=True, points=POINTS_PER_CHECK)
        else:
            meta["grade_id"] = f"cell-{cell.get('id') or index}"
        cell.metadata["nbgrader"] = {**meta, "schema_version": NBGRADER_SCHEMA}
    return nb


def make_exercise(solution: nbformat.NotebookNode, solution_name: str) -> nbformat.NotebookNode:
    """The exercise notebook for one solution notebook."""
    # The exercise's own Colab badge and install cell (tools/colab.py), then nbgrader's metadata.
    nb = colab.apply(copy.deepcopy(solution), f"exercises/{solution_name}")
    nb = grading_metadata(nb, solution_name)
    found = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        source = nbio.code_source(cell)
        if BEGIN in source:
            found += 1
            cell.source = stub_source(source, f"solutions/{solution_name}, cell {index}")
        elif END in source:
            raise MarkerError(f"solutions/{solution_name}, cell {index}: {END} without {BEGIN}.")
        cell.outputs = []
        cell.execution_count = None
    if not found:
        raise MarkerError(f"solutions/{solution_name} has no {BEGIN} region: nothing to exercise.")
    nb.cells.insert(0, header_cell(solution_name))
    return nb


def expected(
    solutions_dir: Path, only: set[str] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """(exercise file name -> the text it must have, solution name -> the text it must have),
    for every solution or for the names in ``only``."""
    exercises, solutions = {}, {}
    for path in sorted(solutions_dir.glob("*.ipynb")):
        if only and path.name not in only:
            continue
        solution = nbio.read(path)
        solutions[path.name] = nbio.dumps(grading_metadata(solution, path.name))
        exercises[path.name] = nbio.dumps(make_exercise(solution, path.name))
    return exercises, solutions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail if any exercise differs from its solution's",
    )
    parser.add_argument("--solutions", type=Path, default=nbio.ROOT / "solutions")
    parser.add_argument("--exercises", type=Path, default=nbio.ROOT / "exercises")
    parser.add_argument(
        "only",
        nargs="*",
        metavar="NAME",
        help="write only these notebooks (e.g. solutions/03_gradient_averaging.ipynb)",
    )
    args = parser.parse_args(argv)
    only = {Path(name).name for name in args.only}

    if only and not args.check:
        missing = sorted(n for n in only if not (args.solutions / n).exists())
        if missing:
            print(f"error: no solutions/{', '.join(missing)}", file=sys.stderr)
            return 2
    try:
        wanted, solutions = expected(args.solutions, None if args.check else only)
    except MarkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    present = {p.name for p in args.exercises.glob("*.ipynb")}
    if args.check:
        stale = [
            n
            for n, text in wanted.items()
            if n not in present or (args.exercises / n).read_text(encoding="utf-8") != text
        ]
        orphans = sorted(present - set(wanted))
        unmarked = [
            n
            for n, text in solutions.items()
            if (args.solutions / n).read_text(encoding="utf-8") != text
        ]
        for name in unmarked:
            print(f"solutions/{name} lacks current nbgrader metadata: run `make exercises`")
        for name in stale:
            print(f"exercises/{name} is out of date with solutions/{name}: run `make exercises`")
        for name in orphans:
            print(f"exercises/{name} has no solutions/{name}: delete it or add the solution")
        if stale or orphans or unmarked:
            return 1
        print(f"exercises up to date ({len(wanted)} notebook(s))")
        return 0
    if only:
        present = set()  # remove no exercise when asked for some
    for name, text in solutions.items():
        if (args.solutions / name).read_text(encoding="utf-8") != text:
            nbio.write_text(text, args.solutions / name)
            print(f"updated the nbgrader metadata of solutions/{name}")
    args.exercises.mkdir(exist_ok=True)
    for name, text in wanted.items():
        (args.exercises / name).write_text(text, encoding="utf-8")
        print(f"wrote exercises/{name}")
    for name in sorted(present - set(wanted)):
        (args.exercises / name).unlink()
        print(f"removed exercises/{name} (its solution is gone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

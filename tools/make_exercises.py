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
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbio  # noqa: E402

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
DEFAULT_HINT = "write your code here"


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
    cell = nbformat.v4.new_markdown_cell(
        f"*Exercise generated from [`solutions/{solution_name}`](../solutions/{solution_name}) "
        "by `tools/make_exercises.py`; edit the solution, not this file, then run "
        "`make exercises`.*\n\n"
        "Replace each `raise NotImplementedError()` with your code and run the check cell "
        "after it: it passes when your answer is right. Stuck? The solution notebook has "
        "the answers."
    )
    cell.id = "generated-header"
    return cell


def make_exercise(solution: nbformat.NotebookNode, solution_name: str) -> nbformat.NotebookNode:
    """The exercise notebook for one solution notebook."""
    nb = copy.deepcopy(solution)
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


def expected(solutions_dir: Path) -> dict[str, str]:
    """exercise file name -> the text it must have."""
    return {
        path.name: nbio.dumps(make_exercise(nbio.read(path), path.name))
        for path in sorted(solutions_dir.glob("*.ipynb"))
    }


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
    args = parser.parse_args(argv)

    try:
        wanted = expected(args.solutions)
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
        for name in stale:
            print(f"exercises/{name} is out of date with solutions/{name}: run `make exercises`")
        for name in orphans:
            print(f"exercises/{name} has no solutions/{name}: delete it or add the solution")
        if stale or orphans:
            return 1
        print(f"exercises up to date ({len(wanted)} notebook(s))")
        return 0
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

"""Read and write notebooks in one normalised form, so diffs show only real changes.

Used by make_exercises.py and run_notebooks.py (and the tests). Normal form: nbformat 4,
keys sorted, one-space indent (nbformat's own writer), a fixed kernelspec, no
machine-specific metadata (Python version, timings), a trailing newline.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def read(path: str | Path) -> nbformat.NotebookNode:
    """Read a notebook as nbformat 4."""
    return nbformat.read(str(path), as_version=4)


def normalise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop metadata that changes from machine to machine or run to run (in place)."""
    nb.metadata = nbformat.from_dict(
        {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    )
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # nbclient's per-cell timestamps
        cell.metadata.pop("collapsed", None)
        cell.metadata.pop("scrolled", None)
        if cell.cell_type == "code":
            for output in cell.outputs:
                output.get("metadata", {}).pop("execution", None)
    return nb


def dumps(nb: nbformat.NotebookNode) -> str:
    """The normal-form text of a notebook."""
    nbformat.validate(nb)
    return nbformat.writes(normalise(nb)).rstrip("\n") + "\n"


def write(nb: nbformat.NotebookNode, path: str | Path) -> None:
    """Write a notebook in normal form (atomically: a crash leaves the old file intact)."""
    write_text(dumps(nb), path)


def write_text(text: str, path: str | Path) -> None:
    """Write a notebook's text atomically: a crash leaves the old file intact."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def code_source(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def has_tag(cell, tag: str) -> bool:
    return tag in cell.get("metadata", {}).get("tags", [])


#: nbgrader's markers around an answer in a solution's code cell (tools/make_exercises.py).
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def answer_regions(solutions: Path) -> list[tuple[Path, int, list[str]]]:
    """``[(notebook, cell index, lines), ...]``: the lines between each pair of markers of
    every solution notebook in ``solutions``, as written, in order."""
    found = []
    for path in sorted(Path(solutions).glob("*.ipynb")):
        for index, cell in enumerate(read(path).cells):
            if cell.cell_type != "code":
                continue
            inside, lines = False, []
            for line in code_source(cell).split("\n"):
                if line.strip().startswith(BEGIN):
                    inside, lines = True, []
                elif line.strip().startswith(END):
                    inside = False
                    found.append((path, index, lines))
                elif inside:
                    lines.append(line)
    return found

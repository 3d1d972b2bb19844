"""Markers as cell metadata: the checked-cell tag and the figures' alt text (idempotent).

`python tools/cell_tags.py` rewrites every lesson and solution (then run `make exercises`):

* a code cell whose source has the comment line ``# NBVAL_CHECK_OUTPUT`` loses that line
  and gets the tag ``nbval-check-output`` instead, which nbval reads the same way (its
  documentation: "cell metadata tags"). The tag is then the one marker of a checked cell: the
  website shows no marker line, and tests/repo/test_notebook_hygiene.py fails if a comment
  marker comes back. Nothing else of the cell changes: its outputs stay as stored.
* each image a code cell stores gets, in its output metadata (``{"image/png": {"alt": ...}}``),
  the ``alt="..."`` text that the cell passes to ``figures.show`` (or to another dpkit call
  that draws, such as ``widgets.live_sweep``), in order: the n-th image gets the n-th
  ``alt=``. Running the cell stores the same (:mod:`dpkit.views.figures`); this tool
  brings stored outputs up to date without re-running a lesson.

`--check` writes nothing and lists what is not so; it exits 1 if anything is.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbio  # noqa: E402

MARKER = "# NBVAL_CHECK_OUTPUT"
CHECK_TAG = "nbval-check-output"
IMAGE = "image/png"
FOLDERS = ("lessons", "solutions")


def is_checked(cell) -> bool:
    """Whether nbval compares this cell's outputs (it carries the tag)."""
    return cell.cell_type == "code" and nbio.has_tag(cell, CHECK_TAG)


def has_marker_comment(cell) -> bool:
    return cell.cell_type == "code" and any(
        line.strip() == MARKER for line in nbio.code_source(cell).split("\n")
    )


def move_marker(cell) -> bool:
    """The comment line becomes the tag (in place); True if the cell changed."""
    if not has_marker_comment(cell):
        return False
    lines = nbio.code_source(cell).split("\n")
    cell.source = "\n".join(line for line in lines if line.strip() != MARKER)
    tags = cell.metadata.setdefault("tags", [])
    if CHECK_TAG not in tags:
        tags.insert(0, CHECK_TAG)
    return True


def declared_alts(source: str) -> list[str]:
    """The ``alt=`` strings of the calls in a cell's code, in the order they are written."""
    tree = ast.parse(TransformerManager().transform_cell(source))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "alt":
                    found.append((keyword.value.lineno, keyword.value.col_offset, keyword.value))
    alts = []
    for _, _, value in sorted(found, key=lambda f: f[:2]):
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            raise ValueError(
                f"alt={ast.unparse(value)} is not a plain string: write the alt text in the "
                "cell as a string literal, so that tools/cell_tags.py can store it"
            )
        alts.append(" ".join(value.value.split()))
    return alts


def images(cell) -> list:
    return [o for o in cell.get("outputs", []) if IMAGE in o.get("data", {})]


def store_alts(cell, where: str) -> tuple[bool, list[str]]:
    """Write the cell's declared alt texts into its stored images; (changed, problems)."""
    if cell.cell_type != "code":
        return False, []
    shown = images(cell)
    try:
        alts = declared_alts(nbio.code_source(cell))
    except (SyntaxError, ValueError) as err:
        return False, [f"{where}: {err}"] if shown else []
    if not shown:
        return False, []
    if len(alts) != len(shown):
        return False, [
            f"{where}: stores {len(shown)} image(s) but declares {len(alts)} alt text(s); end "
            'each figure with figures.show(fig, alt="what it shows")'
        ]
    changed = False
    for output, alt in zip(shown, alts):
        meta = output.setdefault("metadata", {}).setdefault(IMAGE, {})
        if meta.get("alt") != alt:
            meta["alt"] = alt
            changed = True
    return changed, []


def problems(nb, relpath: str) -> list[str]:
    """What is left to migrate in a notebook (empty when it is current)."""
    out = []
    for index, cell in enumerate(nb.cells):
        where = f"{relpath} cell {index}"
        if has_marker_comment(cell):
            out.append(f"{where}: the comment {MARKER!r}; tag the cell {CHECK_TAG!r} instead")
        if cell.cell_type == "code":
            wanted = declared_alts_or_none(cell)
            for number, output in enumerate(images(cell)):
                alt = output.get("metadata", {}).get(IMAGE, {}).get("alt", "")
                if not alt.strip():
                    out.append(f"{where}: image {number} has no alt text")
                elif wanted is not None and number < len(wanted) and alt != wanted[number]:
                    out.append(f"{where}: image {number}'s alt text differs from the cell's alt=")
    return out


def declared_alts_or_none(cell) -> list[str] | None:
    try:
        return declared_alts(nbio.code_source(cell))
    except (SyntaxError, ValueError):
        return None


def migrate(nb, relpath: str) -> tuple[bool, list[str]]:
    """Move markers to tags and store alt texts (in place); (changed, problems)."""
    changed, bad = False, []
    for index, cell in enumerate(nb.cells):
        changed |= move_marker(cell)
        moved, problem = store_alts(cell, f"{relpath} cell {index}")
        changed |= moved
        bad += problem
    return changed, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; report problems")
    parser.add_argument("paths", nargs="*", help="notebooks (default: lessons/ and solutions/)")
    args = parser.parse_args(argv)
    paths = [Path(p).resolve() for p in args.paths] or [
        p for folder in FOLDERS for p in sorted((nbio.ROOT / folder).glob("*.ipynb"))
    ]
    bad = []
    for path in paths:
        relpath = path.relative_to(nbio.ROOT).as_posix()
        nb = nbio.read(path)
        if args.check:
            bad += problems(nb, relpath)
            continue
        changed, problem = migrate(nb, relpath)
        bad += problem
        if changed:
            nbio.write(nb, path)
            print(f"wrote {relpath}: check markers as tags, alt texts in stored images")
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

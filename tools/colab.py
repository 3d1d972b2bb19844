"""Open in Colab: the badge in each notebook's title cell and the cell that installs dpkit there.

`python tools/colab.py` writes both into every lesson and solution (exercises get theirs
from tools/make_exercises.py, with their own path); `--check` writes nothing and fails if
a notebook lacks them or names another notebook's path. tests/repo/test_notebook_hygiene.py
runs the same check.

The badge opens the notebook's own path in the repository named by pyproject.toml's
[project.urls] Repository (the one place the address is written). The install cell sits
just before the Setup heading and does nothing outside Colab. On Colab it clones the
repository once per session (the lessons read files beside them: images, deploy/, the
exercises they link to), installs the package next to Colab's own TensorFlow (skipped when
dpkit already imports), and changes into the notebook's folder, so every relative path
works as it does locally.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbio  # noqa: E402

CLONE = "/content/dpkit"  # where the install cell puts the repository on Colab
CELL_ID_SUFFIX = "colab"
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE = re.compile(r"\[!\[Open in Colab\]\(" + re.escape(BADGE_IMAGE) + r"\)\]\(([^)]+)\)")


def repository() -> str:
    """``owner/name`` of the GitHub repository, from pyproject.toml's [project.urls]."""
    # A regular expression, not tomllib: Python 3.10 has no tomllib.
    text = (nbio.ROOT / "pyproject.toml").read_text(encoding="utf-8")
    url = re.search(r'^Repository\s*=\s*"([^"]*)"', text, re.MULTILINE).group(1)
    found = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?", url)
    if not found:
        raise ValueError(
            f"[project.urls] Repository must be a https://github.com/OWNER/NAME URL, got {url!r}"
        )
    return found.group(1)


def badge_url(relpath: str) -> str:
    """The Colab address of a notebook at ``relpath`` (e.g. ``lessons/02_towers.ipynb``)."""
    return f"https://colab.research.google.com/github/{repository()}/blob/main/{relpath}"


def badge(relpath: str) -> str:
    return f"[![Open in Colab]({BADGE_IMAGE})]({badge_url(relpath)})"


def install_source(folder: str) -> str:
    """The install cell for a notebook in ``folder`` (lessons, solutions or exercises)."""
    return (
        "# On Colab only (elsewhere this cell does nothing): fetch the workbook, install dpkit\n"
        "# beside Colab's own TensorFlow, and work in this notebook's folder.\n"
        'if "google.colab" in str(type(get_ipython())):\n'
        f"    !cd {Path(CLONE).parent} && (test -d {Path(CLONE).name} || "
        f"git clone -q --depth 1 https://github.com/{repository()})\n"
        f"    !python -c 'import dpkit' 2>/dev/null || pip install -q {CLONE}\n"
        f"    %cd {CLONE}/{folder}"
    )


def is_install_cell(cell) -> bool:
    return cell.cell_type == "code" and str(cell.get("id", "")).endswith(f"-{CELL_ID_SUFFIX}")


def apply(nb: nbformat.NotebookNode, relpath: str) -> nbformat.NotebookNode:
    """Put the badge and install cell for ``relpath`` into ``nb`` (in place; idempotent)."""
    title = next(c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("# "))
    lines = [line for line in title.source.split("\n") if not BADGE.fullmatch(line.strip())]
    while len(lines) > 1 and lines[1] == "" and lines[2:3] == [""]:
        del lines[1]
    lines[1:1] = ["", badge(relpath)]
    title.source = "\n".join(lines)

    source = install_source(relpath.split("/")[0])
    installs = [c for c in nb.cells if is_install_cell(c)]
    if installs:  # keep the cell (its id, count and outputs), bring its code up to date
        installs[0].source = source
        nb.cells = [c for c in nb.cells if not is_install_cell(c) or c is installs[0]]
        return nb
    setup = next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source == "## Setup"
    )
    cell = nbformat.v4.new_code_cell(source)
    cell.id = f"{title.get('id', 'nb').split('-')[0]}-{CELL_ID_SUFFIX}"
    nb.cells.insert(setup, cell)
    return nb


def problems(nb: nbformat.NotebookNode, relpath: str) -> list[str]:
    """What is missing or wrong about this notebook's badge and install cell."""
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found += [(cell, url) for url in BADGE.findall(cell.source)]
    out = []
    if len(found) != 1:
        out.append(f"{relpath}: {len(found)} Open-in-Colab badges, want exactly 1")
    elif found[0][1] != badge_url(relpath):
        out.append(
            f"{relpath}: its badge opens {found[0][1]}, not its own path {badge_url(relpath)}"
        )
    installs = [c for c in nb.cells if is_install_cell(c)]
    if len(installs) != 1:
        out.append(f"{relpath}: {len(installs)} Colab install cells, want exactly 1")
    elif installs[0].source != install_source(relpath.split("/")[0]):
        out.append(f"{relpath}: its Colab install cell differs from tools/colab.py's")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; report problems")
    args = parser.parse_args(argv)
    bad = []
    for folder in ("lessons", "solutions") + (("exercises",) if args.check else ()):
        for path in sorted((nbio.ROOT / folder).glob("*.ipynb")):
            relpath = f"{folder}/{path.name}"
            nb = nbio.read(path)
            if args.check:
                bad += problems(nb, relpath)
            elif problems(nb, relpath):
                nbio.write(apply(nb, relpath), path)
                print(f"wrote the Colab badge and install cell of {relpath}")
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

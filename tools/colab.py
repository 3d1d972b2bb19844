"""Open in Colab: the badge in each notebook's title cell and the cell that installs dpkit there.

`python tools/colab.py` writes both into every lesson and solution (exercises get theirs
from tools/make_exercises.py, with their own path); `--check` writes nothing and fails if
a notebook lacks them or names another notebook's path. tests/repo/test_notebook_hygiene.py
runs the same check.

The badge opens the notebook's own path in the repository named by pyproject.toml's
[project.urls] Repository (the one place the address is written), at the git ref of
pyproject's [tool.dpkit.launch] (the one place the ref is written; the website's launch
buttons and README's Binder badge follow the same two). The install cell sits just before
the Setup heading, is tagged `colab-install` (the website hides it) and does nothing
outside Colab. On Colab it clones the repository at that ref once per session (the lessons
read files beside them: images, deploy/, the exercises they link to), installs the package
next to Colab's own TensorFlow with %pip (tools/colab_install.py: skipped when dpkit already
imports; it stops the notebook and asks for a restart when pip replaced a package the session
had imported), installs the course's checker (checks/) the same way in a solution or an
exercise, whose check cells call it (a lesson's cell does not), and changes into the
notebook's folder, so every relative path works as it does locally. The clone is named
after CLONE whatever the repository is called (a student copy may live in a repository of
its own).

A notebook handed to students from somewhere else (tools/course.py releases the exercises
from the student copy's ref) passes ``ref`` and ``repository`` to :func:`apply`: its badge and
install cell then open that ref instead of pyproject's.
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
INSTALL_TAG = "colab-install"  # the install cell's tag: the website (tools/site.py) hides it
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


def ref() -> str:
    """The git ref every launch opens, from pyproject.toml's [tool.dpkit.launch] ``ref``."""
    text = (nbio.ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(r"^\[tool\.dpkit\.launch\]\n(.*?)(?:^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    found = table and re.search(r'^ref\s*=\s*"([^"]*)"', table.group(1), re.MULTILINE)
    if not found or not re.fullmatch(r"[\w.][\w./-]*", found.group(1)):
        raise ValueError(
            'pyproject.toml needs [tool.dpkit.launch] with ref = "BRANCH-OR-TAG" (e.g. "main"), '
            f"the git ref the launch buttons open; got {found.group(1) if found else None!r}"
        )
    return found.group(1)


def badge_url(relpath: str, at: str | None = None, repo: str | None = None) -> str:
    """The Colab address of a notebook at ``relpath`` (e.g. ``lessons/02_towers.ipynb``), in
    ``repo`` at ref ``at`` (by default pyproject's repository and launch ref)."""
    return (
        f"https://colab.research.google.com/github/{repo or repository()}/blob/"
        f"{at or ref()}/{relpath}"
    )


def binder_url(relpath: str) -> str:
    """The mybinder.org address that opens the notebook at ``relpath`` in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{repository()}/{ref()}?urlpath=lab/tree/{relpath}"


def download_url(relpath: str) -> str:
    """The raw file of the notebook at ``relpath``, at the launch ref."""
    return f"https://raw.githubusercontent.com/{repository()}/{ref()}/{relpath}"


def badge(relpath: str, at: str | None = None, repo: str | None = None) -> str:
    return f"[![Open in Colab]({BADGE_IMAGE})]({badge_url(relpath, at, repo)})"


#: Folders whose notebooks have check cells: their install cell installs the course's checker
#: too (checks/, the dpkit-checks distribution), which a lesson never needs.
CHECKED = ("solutions", "exercises")


def install_source(folder: str, at: str | None = None, repo: str | None = None) -> str:
    """The install cell for a notebook in ``folder`` (lessons, solutions or exercises) that
    clones ``repo`` at ref ``at`` (by default pyproject's repository and launch ref)."""
    repo = repo or repository()
    # git names the clone after the repository; a copy in another repository names it CLONE's
    into = "" if repo.split("/")[1] == Path(CLONE).name else f" {Path(CLONE).name}"
    checker = (
        "    # the course's checker, which this notebook's check cells call (dpkit-checks)\n"
        f'    runpy.run_path("{CLONE}/tools/colab_install.py")["install"]("{CLONE}/checks")\n'
        if folder in CHECKED
        else ""
    )
    return (
        "# On Colab only (elsewhere this cell does nothing): fetch the workbook, install dpkit\n"
        "# beside Colab's own TensorFlow, and work in this notebook's folder.\n"
        'if "google.colab" in str(type(get_ipython())):\n'
        f"    !cd {Path(CLONE).parent} && (test -d {Path(CLONE).name} || "
        f"git clone -q --depth 1 -b {at or ref()} https://github.com/{repo}{into})\n"
        "    import runpy\n\n"
        f'    runpy.run_path("{CLONE}/tools/colab_install.py")["install"]("{CLONE}")\n'
        f"{checker}"
        f"    %cd {CLONE}/{folder}"
    )


def is_install_cell(cell) -> bool:
    return cell.cell_type == "code" and str(cell.get("id", "")).endswith(f"-{CELL_ID_SUFFIX}")


def apply(
    nb: nbformat.NotebookNode, relpath: str, at: str | None = None, repo: str | None = None
) -> nbformat.NotebookNode:
    """Put the badge and install cell for ``relpath`` into ``nb`` (in place; idempotent), both
    opening ``repo`` at ref ``at`` (by default pyproject's repository and launch ref)."""
    title = next(c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("# "))
    lines = [line for line in title.source.split("\n") if not BADGE.fullmatch(line.strip())]
    while len(lines) > 1 and lines[1] == "" and lines[2:3] == [""]:
        del lines[1]
    lines[1:1] = ["", badge(relpath, at, repo)]
    title.source = "\n".join(lines)

    source = install_source(relpath.split("/")[0], at, repo)
    installs = [c for c in nb.cells if is_install_cell(c)]
    if installs:  # keep the cell (its id, count and outputs), bring its code and tag up to date
        installs[0].source = source
        tags = installs[0].metadata.setdefault("tags", [])
        if INSTALL_TAG not in tags:
            tags.append(INSTALL_TAG)
        nb.cells = [c for c in nb.cells if not is_install_cell(c) or c is installs[0]]
        return nb
    setup = next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source == "## Setup"
    )
    cell = nbformat.v4.new_code_cell(source)
    cell.id = f"{title.get('id', 'nb').split('-')[0]}-{CELL_ID_SUFFIX}"
    cell.metadata["tags"] = [INSTALL_TAG]
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
    elif not nbio.has_tag(installs[0], INSTALL_TAG):
        out.append(f"{relpath}: its Colab install cell is not tagged {INSTALL_TAG!r}")
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

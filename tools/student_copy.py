"""The student copy: the workbook without its answers, to publish as a branch or repository.

    python tools/student_copy.py OUT [--ref student] [--repository OWNER/NAME]
    python tools/student_copy.py --check OUT     # only look for answers in OUT

(`make student-copy OUT=...` runs it.) OUT receives the committed files a student needs: the
lessons, the exercises, dpkit, the exercises' checks (checks/, which the check cells call), the
Makefile, the set-up files and the deployment examples, but not ``solutions/``, ``tests/`` (the
wrong-answer tables hold near-answers) or ``browser_tests/``. In the copy, pyproject's
``[tool.dpkit.launch] ref`` (and, with ``--repository``, its Repository address) name where the
copy will be published, and every Colab badge, install cell, Binder badge and repo2docker
command is rewritten to match, so a student who opens a notebook on Colab clones the copy,
never the branch that holds the solutions. Then OUT is checked: no file may hold an answer
region of a solution (the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``,
compared line by line without indentation, blank lines or comments), a notebook may hold no
marker, and no folder may be named ``solutions``. The exercises lose their first cell, which
tells the instructor how they are made from their solutions (tools/leaks.py searches the copy
more finely: tests/repo/test_leaks.py). Publish it with, e.g., ``git -C OUT init && git -C OUT
add -A && git -C OUT commit -m student && git -C OUT push <remote> HEAD:student``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import colab  # noqa: E402
import nbio  # noqa: E402

# deploy/jupyterhub/ is the teacher's: its guide clones the full repository to run the course.
LEFT_OUT = ("solutions/", "tests/", "browser_tests/", ".ci/", ".github/", "deploy/jupyterhub/")
BEGIN, END = nbio.BEGIN, nbio.END
#: Answer regions shorter than this (in meaningful lines and characters) are too generic to
#: search for ("return total / count" may well appear in dpkit itself).
MIN_LINES, MIN_CHARS = 2, 40
NOTE = (
    "> **Student copy.** This copy has the lessons and the exercises but not their solutions\n"
    "> or the tests; `make lab` works as below, `make test` does not. It was made by\n"
    "> `tools/student_copy.py` from the instructor's repository.\n\n"
)


def tracked(root: Path) -> list[str]:
    """The files git tracks under ``root`` (the copy holds nothing that is not committed)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    return [p for p in listing.split("\0") if p]


def meaningful(code: str) -> list[str]:
    """The lines of ``code`` that say something: stripped, no blanks, no comments."""
    return [s for s in (line.strip() for line in code.split("\n")) if s and not s.startswith("#")]


def answer_regions(solutions: Path) -> list[tuple[str, list[str]]]:
    """[(where, meaningful lines), ...] of every answer region long enough to search for."""
    regions = []
    for path, index, lines in nbio.answer_regions(solutions):
        kept = meaningful("\n".join(lines))
        if len(kept) >= MIN_LINES and len("".join(kept)) >= MIN_CHARS:
            regions.append((f"{path.name} cell {index}", kept))
    return regions


def text_of(path: Path) -> str | None:
    """A file's text; a notebook's cell sources one after another; None for binary files."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    if path.suffix == ".ipynb":
        nb = nbio.read(path)
        return "\n".join(
            nbio.code_source(c) if c.cell_type == "code" else c.source for c in nb.cells
        )
    return text


def leaks(out: Path, solutions: Path) -> list[str]:
    """Every answer, marker or solutions folder found in ``out``; empty when it is clean."""
    found = [
        f"{p.relative_to(out)}: a solutions folder" for p in out.rglob("solutions") if p.is_dir()
    ]
    regions = answer_regions(solutions)
    for path in sorted(p for p in out.rglob("*") if p.is_file() and ".git" not in p.parts):
        text = text_of(path)
        if text is None:
            continue
        rel = path.relative_to(out)
        if path.suffix == ".ipynb" and (BEGIN in text or END in text):
            found.append(f"{rel}: a solution marker")
        lines = "\n".join(meaningful(text))
        for where, region in regions:
            if "\n".join(region) in lines:
                found.append(f"{rel}: the answer of {where}")
    return found


def build(out: Path, ref: str, repository: str | None, root: Path = nbio.ROOT) -> int:
    """Write the student copy into ``out`` (which must not exist); return the files copied."""
    if out.exists():
        raise SystemExit(f"error: {out} exists; give a new folder (the copy is written whole)")
    if not re.fullmatch(r"[\w.][\w./-]*", ref):
        raise SystemExit(f"error: --ref {ref!r} is not a branch or tag name (e.g. student)")
    files = [p for p in tracked(root) if not p.startswith(LEFT_OUT)]
    for rel in files:
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    _point_at(out, ref, repository)
    return len(files)


def _point_at(out: Path, ref: str, repository: str | None) -> None:
    """Make the copy's launch ref, badges and install cells name where it is published."""
    old_repo, old_ref = colab.repository(), colab.ref()
    new_repo = repository or old_repo
    pyproject = out / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    text = re.sub(
        r'(^\[tool\.dpkit\.launch\]\n(?:[^\[].*\n)*?ref\s*=\s*)"[^"]*"',
        rf'\1"{ref}"',
        text,
        flags=re.M,
    )
    text = text.replace(f"https://github.com/{old_repo}", f"https://github.com/{new_repo}")
    pyproject.write_text(text, encoding="utf-8")
    readme = out / "README.md"
    text = readme.read_text(encoding="utf-8").replace(
        f"/v2/gh/{old_repo}/{old_ref}?", f"/v2/gh/{new_repo}/{ref}?"
    )
    readme.write_text(NOTE + text, encoding="utf-8")
    # repo2docker of the bare address would build the default branch, which holds solutions/.
    for path in (readme, out / "binder" / "environment.yml"):
        text = re.sub(
            rf"repo2docker https://github\.com/{re.escape(old_repo)}\b",
            f"repo2docker --ref {ref} https://github.com/{new_repo}",
            path.read_text(encoding="utf-8"),
        )
        path.write_text(text, encoding="utf-8")
    # The copy's own tools/colab.py reads the copy's pyproject: run it there.
    code = (
        "import sys, pathlib; sys.path.insert(0, 'tools'); import colab, nbio\n"
        "colab.main([])\n"
        "for p in sorted(pathlib.Path('exercises').glob('*.ipynb')):\n"
        "    nb = nbio.read(p)\n"
        "    nb.cells = [c for c in nb.cells if c.get('id') != 'generated-header']\n"
        "    nbio.write(colab.apply(nb, 'exercises/' + p.name), p)\n"
        "sys.exit(colab.main(['--check']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=out, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(
            f"error: the copy's badges did not come out right:\n{done.stdout}{done.stderr}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="a new folder for the copy")
    parser.add_argument("--ref", default="student", help="the branch or tag it will be pushed as")
    parser.add_argument("--repository", help="OWNER/NAME if it goes to another repository")
    parser.add_argument("--check", action="store_true", help="only check OUT for answers")
    args = parser.parse_args(argv)
    if not args.check:
        count = build(args.out, args.ref, args.repository)
        print(f"student copy: {count} files in {args.out}, launching from {args.ref}")
    found = leaks(args.out, nbio.ROOT / "solutions")
    for line in found:
        print(f"answer in the student copy: {line}")
    if not found:
        print(f"student copy: no answer found in {args.out}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

"""What a student receives, searched for the answers and for the ways to them.

    python tools/leaks.py PATH...          # folders or files: print each leak, exit 1 if any
    python tools/leaks.py --refs PATH...   # also refuse launches of this repository's refs
                                           # that hold solutions/ (a student copy, a release)

Three kinds of leak (issue 45, "Answers out of reach"):

* **an answer line**: a line of an answer region of solutions/ (between ``### BEGIN
  SOLUTION`` and ``### END SOLUTION``) of at least MIN_CHARS characters, found anywhere in a
  file's text, whitespace ignored: a notebook's cells and outputs, a web page's text without its
  tags. A line a student is given anyway is not searched for: one that also appears in the
  lessons, in dpkit/, or in a solution outside its answers and hints (the code around an
  answer, the bug an exercise asks to fix), such as ``with tf.GradientTape() as tape:``;
* **a way to a solution**: a link or web address into a ``solutions`` folder, anywhere; and,
  with ``refs``, a Colab, Binder, GitHub or raw address, a ``git clone`` or a ``repo2docker``
  of this repository at a ref that holds solutions/ (``main``, the launch ref, any local or
  remote branch or tag with a solutions/ folder) or at no ref at all (the default branch);
* **a hint that gives the answer away**: a hints cell (folded ``<summary>Hint`` blocks) holding
  more than HINT_SHARE of the lines of an answer of its notebook (lines without whitespace, as
  substrings of the hint; blank lines, comments and lone brackets or ``else:`` not counted).

Each leak is one line, ``PATH: what: the text found (where it comes from)``. Nothing here runs
a notebook or builds a page: tests/repo/test_leaks.py builds what students get (the student
copy and its website; tests/course/test_grading.py the released assignments) and hands it,
with the exercises, to :func:`scan`. tools/course.py refuses to release from a ref that
:func:`refs_with_solutions` names.
"""

from __future__ import annotations

import argparse
import html
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbio  # noqa: E402

BEGIN, END = nbio.BEGIN, nbio.END
MIN_CHARS = 25  # shorter answer lines ("return averaged") say too little to search for
HINT_SHARE = 1 / 3  # the most of an answer's lines its hints may hold
#: Lines that carry no step of an answer: blank, a comment, brackets alone, a bare keyword.
FILLER = re.compile(r"^(#.*|[\s()\[\]{},:;]*|(else|try|finally|pass|continue|break)\s*:?)$")
URL = re.compile(r"""https?://[^\s"'<>()\[\]`\\]+""")
#: A relative link's target in Markdown or HTML: ``](target)``, ``href="target"``, ``src=...``.
TARGET = re.compile(r"""\]\(([^)\s]+)\)|(?:href|src)=["']([^"']+)["']""")
#: A command that fetches a repository, and the option that names its ref.
FETCH = re.compile(r"(?:git clone|repo2docker)\b[^\n]*")
FETCH_REF = re.compile(r"\s(?:-b|--branch|--ref)[ =](\S+)")
#: Where a web address names a repository and a ref: (owner/name, ref or None).
AT_REF = (
    re.compile(r"colab\.research\.google\.com/github/([\w.-]+/[\w.-]+)/blob/([^/\s]+)"),
    re.compile(r"mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/([^/?\s]+)"),
    re.compile(r"raw\.githubusercontent\.com/([\w.-]+/[\w.-]+)/([^/\s]+)"),
    re.compile(
        r"github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?(?:/(?:blob|tree|raw|commits?)/([^/\s]+)|/?$)"
    ),
)
SUMMARY_HINT = "<summary>Hint"


def squeeze(text: str) -> str:
    """``text`` without whitespace: how lines are compared."""
    return re.sub(r"\s+", "", text)


@dataclass
class Answer:
    notebook: str  # "03_gradient_averaging.ipynb"
    cell: int
    lines: list[str]  # its lines that carry a step (stripped, FILLER left out)

    @property
    def where(self) -> str:
        return f"solutions/{self.notebook} cell {self.cell}"


def answers(solutions: Path) -> list[Answer]:
    """Every answer region of every solution notebook, in order."""
    return [
        Answer(path.name, index, [s for s in map(str.strip, lines) if not FILLER.fullmatch(s)])
        for path, index, lines in nbio.answer_regions(solutions)
    ]


def is_hints(cell) -> bool:
    return cell.cell_type == "markdown" and (
        nbio.has_tag(cell, "hints") or SUMMARY_HINT in nbio.code_source(cell)
    )


def _outside_answers(source: str) -> str:
    kept, inside = [], False
    for line in source.split("\n"):
        if line.strip().startswith(BEGIN):
            inside = True
        elif line.strip().startswith(END):
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def given(root: Path) -> str:
    """Squeezed text a student is given whatever happens: the lessons, dpkit/, and the
    solutions outside their answers and hints."""
    parts = [p.read_text(encoding="utf-8") for p in sorted((root / "dpkit").rglob("*.py"))]
    for path in sorted((root / "lessons").glob("*.ipynb")):
        parts += [nbio.code_source(c) for c in nbio.read(path).cells]
    for path in sorted((root / "solutions").glob("*.ipynb")):
        parts += [
            _outside_answers(nbio.code_source(c)) for c in nbio.read(path).cells if not is_hints(c)
        ]
    return squeeze("\n".join(parts))


def searched(found: list[Answer], common: str) -> dict[str, tuple[str, str]]:
    """{squeezed line: (line, where)}: the answer lines long enough to search for and not
    given anyway (``common``, squeezed)."""
    lines = {}
    for answer in found:
        for line in answer.lines:
            key = squeeze(line)
            if len(line) >= MIN_CHARS and key not in common:
                lines.setdefault(key, (line, answer.where))
    return lines


def held(hint: str, answer: Answer) -> list[str]:
    """The lines of ``answer`` that ``hint`` (a markdown cell's source) holds."""
    text = squeeze(hint)
    return [line for line in answer.lines if squeeze(line) in text]


def hint_problems(nb, name: str, found: list[Answer]) -> list[str]:
    """Each hints cell of notebook ``nb`` (named like its solution) that holds more than
    HINT_SHARE of an answer of that solution."""
    mine = [a for a in found if a.notebook == name and a.lines]
    out = []
    for index, cell in enumerate(nb.cells):
        if not is_hints(cell):
            continue
        for answer in mine:
            lines = held(nbio.code_source(cell), answer)
            if len(lines) > HINT_SHARE * len(answer.lines):
                out.append(
                    f"hints of cell {index}: {len(lines)} of the {len(answer.lines)} lines of "
                    f"the answer ({answer.where}), e.g. {lines[0]!r}"
                )
    return out


def refs_with_solutions(root: Path) -> set[str]:
    """The refs of ``root``'s repository that hold a solutions/ folder, by the names a launch
    would use: ``main``, ``master``, and every local branch, remote branch (without its
    remote's name) and tag whose tree has one."""
    listing = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags", "refs/remotes"],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.split()
    full = [n for n in listing if not n.endswith("/HEAD")]
    answered = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        cwd=root,
        input="".join(f"{n}:solutions\n" for n in full),
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    refs = {"main", "master"}
    for name, line in zip(full, answered):
        if line.split()[1:2] == ["tree"]:
            short = re.sub(r"^refs/(heads|tags)/|^refs/remotes/[^/]+/", "", name)
            refs.add(short)
    return refs


def way_problems(text: str, repository: str | None, refs: set[str] | None) -> list[str]:
    """Links and addresses in ``text`` that lead to a solution (see the module docstring).
    ``repository`` (owner/name) and ``refs``: this repository and its refs that hold
    solutions; without them only links into a solutions folder are looked for."""
    out = []
    if refs:
        for command in FETCH.findall(text):
            urls = URL.findall(command)
            branch = FETCH_REF.search(command)
            mine = [u for u in urls if repository and f"github.com/{repository}" in u]
            if mine and (branch is None or branch.group(1) in refs):
                ref = f"ref {branch.group(1)}" if branch else "the default branch"
                out.append(f"a fetch of {ref}, which holds solutions/: {command.strip()!r}")
        text = FETCH.sub("", text)
    for url in URL.findall(text):
        url = url.rstrip(".,;:*_")
        if re.search(r"/solutions(/|$|#|\?)", url):
            out.append(f"an address into solutions/: {url}")
            continue
        if not refs:
            continue
        for pattern in AT_REF:
            found = pattern.search(url)
            if found and found.group(1) == repository:
                ref = found.group(2)
                if ref is None or ref in refs:
                    why = f"ref {ref}" if ref else "no ref (the default branch)"
                    out.append(f"an address at {why}, which holds solutions/: {url}")
                break
    for match in TARGET.finditer(text):
        target = match.group(1) or match.group(2)
        if not URL.match(target) and re.search(r"(^|/)solutions(/|$|#)", target):
            out.append(f"a link into solutions/: {target}")
    return out


def _outputs_text(cell) -> list[str]:
    texts = []
    for output in cell.get("outputs", []):
        text = output.get("text", "")
        texts.append(text if isinstance(text, str) else "".join(text))
        for mime in ("text/plain", "text/html", "text/markdown"):
            value = output.get("data", {}).get(mime)
            if value:
                texts.append(value if isinstance(value, str) else "".join(value))
    return texts


def page_text(path: Path) -> str | None:
    """What a file says: a notebook's cells and text outputs; a web page's text, its tags
    stripped (the links are kept beside it); None for a binary file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    if path.suffix == ".ipynb":
        nb = nbio.read(path)
        parts = []
        for cell in nb.cells:
            parts += [nbio.code_source(cell), *_outputs_text(cell)]
        return "\n".join(parts)
    if path.suffix in (".html", ".htm"):
        links = " ".join(f'href="{m}"' for m in re.findall(r'(?:href|src)="([^"]*)"', text))
        return html.unescape(re.sub(r"<[^>]+>", "", text)) + "\n" + links
    return text


def scan(
    paths: list[Path],
    root: Path = nbio.ROOT,
    *,
    repository: str | None = None,
    refs: set[str] | None = None,
    found: list[Answer] | None = None,
) -> list[str]:
    """Every leak in the files under ``paths`` (folders or files), as
    ``PATH: what`` lines; ``root`` holds the solutions, lessons and dpkit/ compared against."""
    found = answers(root / "solutions") if found is None else found
    lines = searched(found, given(root))
    names = {a.notebook for a in found}
    out = []
    for top in paths:
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            if ".git" in path.parts:
                continue
            rel = path.relative_to(top.parent if top.is_file() else top).as_posix()
            text = page_text(path)
            if text is None:
                continue
            if path.suffix == ".ipynb" and path.name in names:
                nb = nbio.read(path)
                out += [f"{rel}: {p}" for p in hint_problems(nb, path.name, found)]
            squeezed = squeeze(text)
            for key, (line, where) in lines.items():
                if key in squeezed:
                    out.append(f"{rel}: an answer line: {line} ({where})")
            out += [f"{rel}: {p}" for p in way_problems(text, repository, refs)]
    return out


def main(argv: list[str] | None = None) -> int:
    import colab

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument(
        "--refs", action="store_true", help="refuse this repository's refs with solutions/"
    )
    args = parser.parse_args(argv)
    refs = refs_with_solutions(nbio.ROOT) | {colab.ref()} if args.refs else None
    problems = scan(args.paths, repository=colab.repository(), refs=refs)
    for line in problems:
        print(line)
    print(f"leaks: {len(problems)} found in {', '.join(map(str, args.paths))}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

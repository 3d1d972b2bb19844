"""The repository's one layout map (``[tool.dpkit.layout]`` in pyproject.toml), read and shown.

``python tools/layout.py`` writes the tables of dpkit/README.md (between its ``layout``
markers) and the module list in dpkit/__init__.py's docstring from the map; ``--check``
writes nothing and fails, naming the file, when either differs. tests/repo/test_layout.py
checks the same (so make test fails then) and the imports of every file against the map.
"""

from __future__ import annotations

import fnmatch
import json
import pathlib
import re
import sys
import textwrap

if sys.version_info >= (3, 11):
    import tomllib
else:  # the test extra installs tomli there
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = "dpkit/README.md"
INIT = "dpkit/__init__.py"
BEGIN, END = "<!-- layout: written by tools/layout.py -->", "<!-- end of layout -->"
DOC_BEGIN, DOC_END = "Its modules (written by tools/layout.py):", "(end of the list)"
#: The folders the map fences: every .py file under them belongs to a tier.
FENCED = ("dpkit", "checks", "tools", "benchmarks", "tests", "browser_tests")
#: Folders that hold a distribution of their own (its pyproject.toml beside its package):
#: a module's import name starts below them (checks/dpkit_checks/ex01.py is dpkit_checks.ex01).
DISTRIBUTIONS = ("checks",)


def load(root: pathlib.Path = ROOT) -> dict:
    """The map: ``{"tier": [{name, paths, imports, own, says}, ...], "modules": {...}, ...}``."""
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)["tool"]["dpkit"]["layout"]


def files(root: pathlib.Path = ROOT) -> list[str]:
    """Every .py file the map fences, relative to ``root`` (``conftest.py`` included)."""
    found = [
        p for d in FENCED for p in (root / d).rglob("*.py") if ".ipynb_checkpoints" not in p.parts
    ]
    found += [root / "conftest.py"] if (root / "conftest.py").exists() else []
    return sorted(str(p.relative_to(root)) for p in found)


def tier_of(path: str, layout: dict) -> dict | None:
    """The first tier whose ``paths`` match ``path`` (``**`` spans folders), or ``None``."""
    for tier in layout["tier"]:
        for pattern in tier["paths"]:
            if _match(path, pattern):
                return tier
    return None


def _match(path: str, pattern: str) -> bool:
    if "**" not in pattern:
        return fnmatch.fnmatchcase(path, pattern) and path.count("/") == pattern.count("/")
    head, _, tail = pattern.partition("**/")
    return path.startswith(head) and fnmatch.fnmatchcase(path[len(head) :].rsplit("/", 1)[-1], tail)


def module_name(path: str) -> str:
    """``dpkit/summaries/board.py`` -> ``dpkit.summaries.board``; ``checks/dpkit_checks/ex01.py``
    -> ``dpkit_checks.ex01``."""
    parts = list(pathlib.PurePosixPath(path).with_suffix("").parts)
    if parts[0] in DISTRIBUTIONS:
        parts.pop(0)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def lesson_code(path: pathlib.Path) -> str:
    """A notebook's code cells as one Python text, each shell (``!``) or magic (``%``) line
    made ``pass``, so that ``ast`` can parse it."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return re.sub(r"^(\s*)[%!].*$", r"\1pass", code, flags=re.M)


def first_lessons(root: pathlib.Path = ROOT) -> dict[str, int]:
    """``{"dpkit.towers": 2, ...}``: the first lesson whose code imports each module."""
    first = {}
    for path in sorted((root / "lessons").glob("[0-9][0-9]_*.ipynb")):
        code = lesson_code(path)
        pattern = r"from (dpkit(?:\.\w+)?) import (?:\(([^)]*)\)|([\w, ]+))"
        for source, many, one in re.findall(pattern, code):
            for name in (many or one).replace("\n", " ").split(","):
                name = name.split(" as ")[0].strip()  # "board as board_view": the module
                if name:
                    first.setdefault(f"{source}.{name}", int(path.name[:2]))
    return first


def _tier_rows(layout: dict) -> list[str]:
    rows = ["| tier | files | may import | what it is |", "|---|---|---|---|"]
    for tier in layout["tier"]:
        where = ", ".join(f"`{p}`" for p in tier["paths"])
        may = ", ".join(tier["imports"]) or "nothing else"
        if tier.get("own", True) is False:
            may += " (not its own tier)"
        rows.append(f"| {tier['name']} | {where} | {may} | {tier['says']} |")
    return rows


def _module_rows(layout: dict, lessons: dict[str, int]) -> list[str]:
    rows = ["| module | tier | first lesson | the idea |", "|---|---|---|---|"]
    for name, idea in layout["modules"].items():
        path = name.replace(".", "/")
        path = (
            f"dpkit/{path}/__init__.py" if (ROOT / "dpkit" / path).is_dir() else f"dpkit/{path}.py"
        )
        tier = tier_of(path, layout)
        lesson = lessons.get(f"dpkit.{name}")
        rows.append(
            f"| `{name}` | {tier['name'] if tier else '?'} | "
            f"{'' if lesson is None else f'{lesson:02d}'} | {idea} |"
        )
    return rows


def readme_section(layout: dict, lessons: dict[str, int]) -> str:
    return "\n".join([BEGIN, "", *_tier_rows(layout), "", *_module_rows(layout, lessons), "", END])


def init_list(layout: dict, lessons: dict[str, int]) -> str:
    lines = [DOC_BEGIN, ""]
    for name, idea in layout["modules"].items():
        lesson = lessons.get(f"dpkit.{name}")
        tier = tier_of(f"dpkit/{name.replace('.', '/')}.py", layout)
        where = f"lesson {lesson:02d}" if lesson is not None else "no lesson imports it"
        if tier and tier["name"] != "lesson":
            where = tier["name"] + ("" if lesson is None else f", lesson {lesson:02d}")
        lines += textwrap.wrap(f"* ``{name}`` ({where}): {idea}.", 96, subsequent_indent="  ")
    return "\n".join([*lines, "", DOC_END])


def _replace(text: str, begin: str, end: str, new: str, what: str) -> str:
    if begin not in text or end not in text:
        raise SystemExit(
            f"{what} has no {begin!r} ... {end!r} markers: add them where the tables go"
        )
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return head + new + tail


def wanted(root: pathlib.Path = ROOT) -> dict[str, str]:
    """What dpkit/README.md and dpkit/__init__.py should hold, from the map."""
    layout, lessons = load(root), first_lessons(root)
    readme = (root / README).read_text(encoding="utf-8")
    init = (root / INIT).read_text(encoding="utf-8")
    return {
        README: _replace(readme, BEGIN, END, readme_section(layout, lessons), README),
        INIT: _replace(init, DOC_BEGIN, DOC_END, init_list(layout, lessons), INIT),
    }


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for rel, text in wanted().items():
        path = ROOT / rel
        if path.read_text(encoding="utf-8") != text:
            stale.append(rel)
            if not check:
                path.write_text(text, encoding="utf-8")
    if check and stale:
        print(f"layout: {', '.join(stale)} differ from pyproject's map: run python tools/layout.py")
        return 1
    print("layout: " + ("current" if not stale else f"wrote {', '.join(stale)}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The repository's layout against its one map (pyproject.toml's ``[tool.dpkit.layout]``).

Nothing here imports dpkit or TensorFlow: the files are parsed with ``ast``, and each
problem names the file and line that breaks a rule.

* every .py file of dpkit/, checks/, tools/, benchmarks/, tests/ and browser_tests/ is on the map;
* a file imports only modules of the tiers its row allows (``imports``, and its own tier
  unless ``own = false``: a test module never imports another test module). A bare import of
  a module in the file's own folder counts as one: browser_tests/ has no ``__init__.py`` and
  is on ``sys.path``, so ``import test_lab_browser`` there imports a test module;
* a lesson module imports only modules of its own or earlier lessons (the lesson of a module
  is the first notebook in lessons/ that imports it), but for the map's ``ahead`` pairs;
* the imports have no cycle, at module level or inside functions;
* in dpkit/, checks/ and benchmarks/ only ``dpkit/plumbing/procs.py`` starts processes;
* no module of dpkit/ or checks/ is over ``MAX_LINES`` lines, and no module of dpkit/,
  checks/, tools/ or benchmarks/ uses another module's underscore name;
* the course's checker (checks/, the ``dpkit_checks`` package) stays apart from the learner's
  library: no lesson imports it, no dpkit module imports or starts it, and dpkit holds no
  check module;
* dpkit/README.md's tables and dpkit/__init__.py's module list are the map's
  (``python tools/layout.py`` writes them), and every dpkit module has a row in it.
"""

from __future__ import annotations

import ast
import copy
import json
import pathlib
import re
from dataclasses import dataclass, field

import pytest

from tools import layout as the_map

ROOT = the_map.ROOT
MAX_LINES = 500
PROCS = "dpkit.plumbing.procs"
CHILD = "dpkit.plumbing.procs.Child instead"
#: The top-level names whose modules the map fences.
FENCED = {"dpkit", "dpkit_checks", "tools", "benchmarks", "tests", "browser_tests", "conftest"}
#: The course's checker: its own distribution (checks/), which the learner's library never reaches.
CHECKER = "dpkit_checks"


@dataclass
class Module:
    name: str  # "dpkit.summaries.board"
    where: str  # "dpkit/summaries/board.py"
    tree: ast.Module
    lines: int
    tier: dict | None
    # (imported fenced module, line), for every import that runs (module or function level)
    imports: list = field(default_factory=list)
    # local name -> fenced module it is bound to by an import
    aliases: dict = field(default_factory=dict)

    @property
    def is_package(self) -> bool:
        return self.where.endswith("__init__.py")

    @property
    def tier_name(self) -> str:
        return self.tier["name"] if self.tier else "(not on the map)"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _skipped_at_run_time(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks (they never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _load(root: pathlib.Path = ROOT, layout: dict | None = None) -> dict[str, Module]:
    layout = the_map.load(root) if layout is None else layout
    modules = {}
    for rel in the_map.files(root):
        text = (root / rel).read_text(encoding="utf-8")
        tree = ast.parse(text, filename=rel)
        name = the_map.module_name(rel)
        modules[name] = Module(
            name, rel, tree, len(text.splitlines()), the_map.tier_of(rel, layout)
        )
    for module in modules.values():
        _read_imports(module, modules)
    return modules


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name.split(".")
    if not module.is_package:
        package = package[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _fenced(module: Module, modules: dict[str, Module], name: str) -> str | None:
    """The fenced module an absolute import of ``name`` reaches, or ``None`` if unfenced.

    A name outside :data:`FENCED` is a sibling when the importer's folder holds a fenced
    module or package of that first name: a folder with no ``__init__.py`` (browser_tests/)
    is on ``sys.path``, so ``import test_lab_browser`` there is ``browser_tests.test_lab_browser``.
    """
    first = name.split(".")[0]
    if first in FENCED:
        return name
    folder = ".".join(pathlib.PurePosixPath(module.where).parent.parts)
    if folder and f"{folder}.{first}" in modules:
        return f"{folder}.{name}"
    return None


def _read_imports(module: Module, modules: dict[str, Module]) -> None:
    skipped = _skipped_at_run_time(module.tree)
    for node in ast.walk(module.tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = _fenced(module, modules, alias.name)
                if name is None:
                    continue
                module.imports.append((name, node.lineno))
                # ``import a.b`` binds ``a``; ``import a.b as c`` binds ``c`` to ``a.b``
                folder = name[: len(name) - len(alias.name)]  # "" or a sibling's "folder."
                module.aliases[alias.asname or alias.name.split(".")[0]] = (
                    name if alias.asname else folder + alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            if not node.level:
                source = _fenced(module, modules, source)
            if source is None or source.split(".")[0] not in FENCED:
                continue
            module.imports.append((source, node.lineno))
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:  # a submodule, not a name inside ``source``
                    module.imports.append((full, node.lineno))
                    module.aliases[alias.asname or alias.name] = full


def _problem(module: Module, line: int, text: str) -> str:
    return f"{module.where}:{line}: {text}"


def _runs_first(module: Module, imported: str) -> list[str]:
    """What importing ``imported`` executes that ``module`` has not run already.

    Importing ``dpkit.a.b`` runs ``dpkit``, ``dpkit.a`` first; a package's own ``__init__``
    has already run when one of its modules imports a sibling, so it is left out.
    """
    parts = imported.split(".")
    own = module.name.split(".")
    if not module.is_package:
        own = own[:-1]
    chain = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return [m for m in chain if own[: len(m.split("."))] != m.split(".") and m != module.name]


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return _load()


@pytest.fixture(scope="module")
def layout() -> dict:
    return the_map.load()


def _report(problems: list[str], rule: str) -> None:
    assert not problems, f"{rule}:\n  " + "\n  ".join(problems)


# --- the rules ------------------------------------------------------------------------------


def off_the_map(modules) -> list[str]:
    return [f"{m.where}: no tier's paths match it" for m in modules.values() if m.tier is None]


def test_every_file_is_on_the_map(modules):
    _report(off_the_map(modules), "files pyproject.toml's [tool.dpkit.layout] does not place")


def long_modules(modules) -> list[str]:
    return [
        f"{m.where}: {m.lines} lines (split it by idea)"
        for m in modules.values()
        if m.where.startswith(("dpkit/", "checks/")) and m.lines > MAX_LINES
    ]


def test_every_dpkit_and_checker_module_is_at_most_500_lines(modules):
    _report(long_modules(modules), f"modules over {MAX_LINES} lines")


def process_starts(modules) -> list[str]:
    problems = []
    for m in modules.values():
        if m.name == PROCS or m.name.split(".")[0] not in ("dpkit", CHECKER, "benchmarks"):
            continue
        for node in ast.walk(m.tree):
            popen = (isinstance(node, ast.Attribute) and node.attr == "Popen") or (
                isinstance(node, ast.Name) and node.id == "Popen"
            )
            imported = isinstance(node, ast.ImportFrom) and node.module == "subprocess"
            called = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("subprocess", "os")
                and node.func.attr
                in ("run", "call", "check_call", "check_output", "Popen")
                + ("system", "spawnv", "spawnl", "execv", "execvp")
            )
            if popen or imported or called:
                problems.append(_problem(m, node.lineno, "starts a process: use " + CHILD))
    return problems


def test_only_procs_starts_processes(modules):
    _report(process_starts(modules), "processes started outside dpkit/plumbing/procs.py")


def _private_use(m: Module, modules: dict[str, Module], owner: str, name: str) -> bool:
    """Whether ``name`` of module ``owner`` is one ``m`` may not use."""
    if not _is_private(name) or owner == m.name:
        return False
    submodule = f"{owner}.{name}"
    if submodule in modules:  # a private module: fine inside its own package
        return not (m.name.startswith(owner + ".") or m.name == owner)
    return True


def _dotted(node: ast.Attribute) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def private_uses(modules) -> list[str]:
    problems = []
    for m in modules.values():
        if m.name.split(".")[0] not in ("dpkit", CHECKER, "tools", "benchmarks"):
            continue
        for node in ast.walk(m.tree):
            if isinstance(node, ast.ImportFrom):
                source = _absolute(m, node)
                if source.split(".")[0] not in FENCED:
                    continue
                for alias in node.names:
                    if _private_use(m, modules, source, alias.name):
                        problems.append(
                            _problem(m, node.lineno, f"imports {alias.name} from {source}")
                        )
            elif isinstance(node, ast.Attribute):
                parts = _dotted(node)
                if parts is None or parts[0] not in m.aliases:
                    continue
                owner, rest = m.aliases[parts[0]], parts[1:]
                while rest and f"{owner}.{rest[0]}" in modules:
                    if _private_use(m, modules, owner, rest[0]):
                        break
                    owner, rest = f"{owner}.{rest[0]}", rest[1:]
                if rest and _private_use(m, modules, owner, rest[0]):
                    problems.append(
                        _problem(m, node.lineno, f"uses {owner}.{rest[0]} ({'.'.join(parts)})")
                    )
    return sorted(set(problems))


def test_no_module_uses_another_modules_underscore_names(modules):
    _report(
        private_uses(modules),
        "underscore names used across modules (make the name public, or move it to plumbing)",
    )


def _graph(modules: dict[str, Module]) -> dict[str, dict[str, int]]:
    """importer -> {imported module: line of the first such import}."""
    graph = {name: {} for name in modules}
    for m in modules.values():
        for imported, line in m.imports:
            for target in _runs_first(m, imported):
                if target in modules:
                    graph[m.name].setdefault(target, line)
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph[v]:
                groups.append(set(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for group in groups:  # walk inside the group from its first module back to it
        start = min(group)
        path, seen = [start], {start}
        while True:
            step = min(w for w in graph[path[-1]] if w in group)
            if step == start or step in seen:
                cycles.append([*path[path.index(step) :], step])
                break
            path.append(step)
            seen.add(step)
    return cycles


def import_cycles(modules) -> list[str]:
    graph = _graph(modules)
    problems = []
    for cycle in _cycles(graph):
        steps = [f"{modules[a].where}:{graph[a][b]} imports {b}" for a, b in zip(cycle, cycle[1:])]
        problems.append(" -> ".join(cycle) + "\n    " + "\n    ".join(steps))
    return problems


def test_imports_have_no_cycle(modules):
    _report(import_cycles(modules), "import cycles (lazy imports inside functions count)")


#: Packages whose ``__init__`` any file may run on the way to a module inside them.
OPEN_PACKAGES = {"dpkit", "tests", "tools", "benchmarks", "browser_tests"}


def upward_imports(modules) -> list[str]:
    problems = []
    for m in modules.values():
        if m.tier is None:
            continue
        allowed = set(m.tier["imports"]) | ({m.tier_name} if m.tier.get("own", True) else set())
        for imported, line in m.imports:
            for target in _runs_first(m, imported):
                if target not in modules or target in OPEN_PACKAGES:
                    continue
                tier = modules[target].tier_name
                if tier not in allowed:
                    may = ", ".join(sorted(allowed)) or "nothing"
                    problems.append(
                        _problem(
                            m, line, f"{m.tier_name} imports {target} ({tier}); it may import {may}"
                        )
                    )
    return sorted(set(problems))


def test_imports_go_down_the_tiers(modules):
    _report(upward_imports(modules), "imports the map does not allow (pyproject.toml)")


# --- the course's checker, apart from the learner's library ---------------------------------


def lessons_using_the_checker(root: pathlib.Path = ROOT) -> list[str]:
    """Every code cell of lessons/*.ipynb that names the checker (an import, ``-m``, ``%run``)."""
    problems = []
    for path in sorted((root / "lessons").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(cells):
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and re.search(rf"\b{CHECKER}\b", source):
                problems.append(
                    f"lessons/{path.name} cell {index}: names {CHECKER}; a lesson imports dpkit "
                    "only (the checks are the exercises')"
                )
    return problems


def test_no_lesson_uses_the_checker():
    _report(lessons_using_the_checker(), "lessons that reach the course's checker")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        is_expr = isinstance(body, list) and bool(body) and isinstance(body[0], ast.Expr)
        first = body[0].value if is_expr else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.add(id(first))
    return found


def checker_in_the_library(modules) -> list[str]:
    """dpkit's part in the checker: a check module inside dpkit, an import of the checker (at
    module level or in a function), a string naming one of its modules (``-m dpkit_checks.x``),
    code rewritten at run time (an assignment to a function's ``__code__``)."""
    problems = []
    for m in modules.values():
        parts = m.name.split(".")
        if parts[0] != "dpkit":
            continue
        if m.tier_name == "checks" or any(
            p in ("exercises", CHECKER) or re.fullmatch(r"ex\d\d", p) for p in parts[1:]
        ):
            problems.append(f"{m.where}: a check module in dpkit; it belongs in checks/{CHECKER}/")
        for imported, line in m.imports:
            if imported.split(".")[0] == CHECKER:
                problems.append(_problem(m, line, f"imports {imported}: dpkit never reaches it"))
        docstrings = _docstrings(m.tree)
        for node in ast.walk(m.tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and re.search(rf"\b{CHECKER}\b", node.value)
            ):
                problems.append(_problem(m, node.lineno, f"names {CHECKER} in {node.value!r}"))
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in [t for x in targets for t in ast.walk(x)]:
                if isinstance(target, ast.Attribute) and target.attr == "__code__":
                    problems.append(_problem(m, node.lineno, "rewrites a function's __code__"))
    return sorted(set(problems))


def test_dpkit_holds_no_part_of_the_checker(modules):
    _report(checker_in_the_library(modules), "the course's checker inside the learner's library")


def test_the_checker_is_its_own_distribution_and_not_dpkits(modules):
    """dpkit's package list names no checker package; checks/ builds dpkit_checks on its own;
    every file of checks/dpkit_checks/ is on the checks tier."""
    top = the_map.tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = top["tool"]["setuptools"]["packages"]
    assert all(p == "dpkit" or p.startswith("dpkit.") for p in packages), packages
    assert not [p for p in packages if "exercises" in p or CHECKER in p], packages
    own = the_map.tomllib.loads((ROOT / "checks" / "pyproject.toml").read_text(encoding="utf-8"))
    assert own["project"]["name"] == "dpkit-checks"
    assert own["tool"]["setuptools"]["packages"] == [CHECKER]
    assert "dpkit" in own["project"]["dependencies"]
    checker = [m for m in modules.values() if m.name.split(".")[0] == CHECKER]
    assert {m.name for m in checker} >= {f"{CHECKER}.ex{n:02d}" for n in range(1, 11)}
    assert {m.tier_name for m in checker} == {"checks"}, [(m.where, m.tier_name) for m in checker]


def test_the_checker_rules_catch_what_they_are_for(tmp_path):
    (tmp_path / "lessons").mkdir()
    lesson = {
        "cells": [
            {"cell_type": "markdown", "source": ["the checks are in dpkit_checks"]},
            {"cell_type": "code", "source": ["from dpkit import towers\n"]},
            {"cell_type": "code", "source": ["from dpkit_checks import ex02\n"]},
        ]
    }
    (tmp_path / "lessons" / "02_towers.ipynb").write_text(json.dumps(lesson))
    assert lessons_using_the_checker(tmp_path) == [
        "lessons/02_towers.ipynb cell 2: names dpkit_checks; a lesson imports dpkit only "
        "(the checks are the exercises')"
    ]
    layout = copy.deepcopy(FAKE_LAYOUT)
    layout["tier"].insert(
        0,
        {
            "name": "checks",
            "paths": ["checks/dpkit_checks/*.py"],
            "imports": ["lesson"],
            "says": "",
        },
    )
    modules = _fake(
        tmp_path,
        {
            "dpkit/__init__.py": "",
            "dpkit/towers.py": '"""Checked by dpkit_checks."""\nx = 1\n',
            "dpkit/exercises/__init__.py": "",
            "dpkit/exercises/ex02.py": "",
            "dpkit/bench.py": "def f():\n    import dpkit_checks.ex02\n",
            "dpkit/meter.py": "ARGV = ['-m', 'dpkit_checks.workers']\n",
            "dpkit/checking.py": "def off(f, g):\n    f.__code__ = g.__code__\n",
            "checks/dpkit_checks/__init__.py": "",
            "checks/dpkit_checks/ex02.py": "from dpkit import towers\n",
        },
        layout,
    )
    assert modules["dpkit_checks.ex02"].tier_name == "checks"
    # the checker may import the lesson tier; the lesson tier may not import the checker
    assert upward_imports(modules) == [
        "dpkit/bench.py:2: lesson imports dpkit_checks (checks); it may import lesson, plumbing",
        "dpkit/bench.py:2: lesson imports dpkit_checks.ex02 (checks); it may import lesson, "
        "plumbing",
    ]
    assert checker_in_the_library(modules) == [
        "dpkit/bench.py:2: imports dpkit_checks.ex02: dpkit never reaches it",
        "dpkit/checking.py:2: rewrites a function's __code__",
        "dpkit/exercises/__init__.py: a check module in dpkit; it belongs in checks/dpkit_checks/",
        "dpkit/exercises/ex02.py: a check module in dpkit; it belongs in checks/dpkit_checks/",
        "dpkit/meter.py:1: names dpkit_checks in 'dpkit_checks.workers'",
    ]


def later_lesson_imports(modules, lessons: dict[str, int], ahead) -> list[str]:
    ahead = {tuple(pair) for pair in ahead}
    problems = []
    for m in modules.values():
        if m.tier_name != "lesson":
            continue
        top = ".".join(m.name.split(".")[:2])  # a package's modules belong to its lesson
        for imported, line in m.imports:
            target = ".".join(imported.split(".")[:2])
            if target == top or (top, target) in ahead or target not in modules:
                continue
            if modules[target].tier_name != "lesson":
                continue
            if lessons.get(target, -1) > lessons.get(top, 99):
                problems.append(
                    _problem(
                        m,
                        line,
                        f"{top} (lesson {lessons[top]:02d}) imports {target}, which lesson "
                        f"{lessons[target]:02d} introduces: move what both need down a tier",
                    )
                )
    return sorted(set(problems))


def test_lesson_modules_import_only_earlier_lessons(modules, layout):
    lessons = the_map.first_lessons()
    assert lessons["dpkit.devices"] == 0 and lessons["dpkit.launcher"] == 8, lessons
    _report(
        later_lesson_imports(modules, lessons, layout["ahead"]),
        "imports of a later lesson's module",
    )


def test_the_lesson_order_check_sees_the_kept_exceptions(modules):
    found = {
        p.split(": ")[1].split(" (")[0]
        for p in later_lesson_imports(modules, the_map.first_lessons(), ahead=[])
    }
    assert found == {"dpkit.towers", "dpkit.compat", "dpkit.cards"}, found


def mapped_modules(modules) -> set[str]:
    """The dpkit modules the map's module table must name (programs have their registry)."""
    names = set()
    for m in modules.values():
        parts = m.name.split(".")
        if parts[0] != "dpkit" or m.tier_name in ("programs", "package") or parts[-1] == "__main__":
            continue
        if m.is_package and m.tier_name != "lesson":
            continue  # dpkit.views, dpkit.cli, dpkit.plumbing: folders, not ideas
        if parts[1] == "summaries":
            names.add("summaries")
            continue
        names.add(".".join(parts[1:]))
    return names


def test_the_map_names_every_dpkit_module(modules, layout):
    named, there = set(layout["modules"]), mapped_modules(modules)
    assert named == there, (
        f"in pyproject.toml's [tool.dpkit.layout.modules] but no module: {sorted(named - there)}; "
        f"modules with no row there: {sorted(there - named)}"
    )


def test_readme_and_package_docstring_are_written_from_the_map():
    stale = [rel for rel, text in the_map.wanted().items() if (ROOT / rel).read_text() != text]
    assert not stale, f"{stale} differ from pyproject.toml's map: run python tools/layout.py"


# --- the checker itself, on small made-up repositories -------------------------------------

FAKE_LAYOUT = {
    "tier": [
        {"name": "plumbing", "paths": ["dpkit/plumbing/*.py"], "imports": [], "says": ""},
        {
            "name": "lesson",
            "paths": ["dpkit/[a-z]*.py", "dpkit/summaries/*.py"],
            "imports": ["plumbing"],
            "says": "",
        },
        {
            "name": "programs",
            "paths": ["dpkit/programs/*.py"],
            "imports": ["lesson", "plumbing"],
            "says": "",
        },
        {"name": "package", "paths": ["dpkit/__init__.py"], "imports": [], "says": ""},
        {
            "name": "support",
            "paths": ["tests/support/*.py", "tests/__init__.py"],
            "imports": ["lesson"],
            "says": "",
        },
        {
            "name": "tests",
            "paths": ["tests/**/*.py", "browser_tests/*.py"],
            "imports": ["support", "lesson"],
            "own": False,
            "says": "",
        },
    ],
    "modules": {},
    "ahead": [],
}


def _fake(tmp_path, files: dict[str, str], layout=FAKE_LAYOUT) -> dict[str, Module]:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return _load(tmp_path, copy.deepcopy(layout))


def test_the_checks_catch_what_they_are_for(tmp_path):
    modules = _fake(
        tmp_path,
        {
            "dpkit/__init__.py": "",
            "dpkit/plumbing/__init__.py": "",
            "dpkit/plumbing/procs.py": "import subprocess\nsubprocess.Popen(['x'])\n",
            "dpkit/plumbing/checks.py": "from dpkit import data\n",
            "dpkit/data.py": "",
            "dpkit/devices.py": "from dpkit.plumbing import checks\nfrom dpkit import bench\n",
            "dpkit/bench.py": (
                "from dpkit import devices as d\n"
                "def f():\n    from dpkit.programs import throughput\n"
                "    return d._current, d.MAX\n"
            ),
            "dpkit/towers.py": "from dpkit.devices import _check_count\nimport subprocess\n"
            "subprocess.run(['x'])\n",
            "dpkit/programs/__init__.py": "",
            "dpkit/programs/throughput.py": "import dpkit.bench\nx = dpkit.bench._emit\n",
            "dpkit/summaries/__init__.py": "from dpkit.summaries import board\n",
            "dpkit/summaries/_paths.py": "",
            "dpkit/summaries/board.py": "from dpkit.summaries import _paths, writers\n",
            "dpkit/summaries/writers.py": "from dpkit import summaries\n",
            "dpkit/stray/thing.py": "",
            "tests/__init__.py": "",
            "tests/support/__init__.py": "",
            "tests/support/helper.py": "from dpkit import data\n",
            "tests/unit/test_a.py": (
                "from tests.support import helper\nfrom tests.unit import test_b\n"
            ),
            "tests/unit/test_b.py": "import dpkit.programs.throughput\n",
            # test modules that import a sibling by its bare name (browser_tests/ is on
            # sys.path); json is no sibling, and tests/unit/test_b is in another folder
            "browser_tests/test_c.py": "import json\nimport test_d\nfrom test_d import Lab\n",
            "browser_tests/test_d.py": "import test_b\nLab = object\n",
        },
    )
    assert off_the_map(modules) == ["dpkit/stray/thing.py: no tier's paths match it"]
    assert [c[0] for c in _cycles(_graph(modules))] == ["dpkit.bench"]  # bench -> devices
    assert process_starts(modules) == ["dpkit/towers.py:3: starts a process: use " + CHILD]
    assert private_uses(modules) == [
        "dpkit/bench.py:4: uses dpkit.devices._current (d._current)",
        "dpkit/programs/throughput.py:2: uses dpkit.bench._emit (dpkit.bench._emit)",
        "dpkit/towers.py:1: imports _check_count from dpkit.devices",
    ]  # not summaries/board.py's use of its own package's _paths
    assert import_cycles(modules) == [
        "dpkit.bench -> dpkit.devices -> dpkit.bench\n"
        "    dpkit/bench.py:1 imports dpkit.devices\n"
        "    dpkit/devices.py:2 imports dpkit.bench"
    ]
    assert upward_imports(modules) == [
        "browser_tests/test_c.py:2: tests imports browser_tests.test_d (tests); it may import "
        "lesson, support",
        "browser_tests/test_c.py:3: tests imports browser_tests.test_d (tests); it may import "
        "lesson, support",
        "dpkit/bench.py:3: lesson imports dpkit.programs (programs); it may import lesson, "
        "plumbing",
        "dpkit/bench.py:3: lesson imports dpkit.programs.throughput (programs); it may import "
        "lesson, plumbing",
        "dpkit/plumbing/checks.py:1: plumbing imports dpkit.data (lesson); it may import plumbing",
        "tests/unit/test_a.py:2: tests imports tests.unit.test_b (tests); it may import lesson, "
        "support",
        "tests/unit/test_b.py:1: tests imports dpkit.programs (programs); it may import lesson, "
        "support",
        "tests/unit/test_b.py:1: tests imports dpkit.programs.throughput (programs); it may "
        "import lesson, support",
    ]


def test_the_lesson_order_check_names_the_late_import(tmp_path):
    modules = _fake(
        tmp_path,
        {
            "dpkit/__init__.py": "",
            "dpkit/towers.py": "from dpkit import bench\n",
            "dpkit/bench.py": "",
        },
    )
    lessons = {"dpkit.towers": 2, "dpkit.bench": 5}
    assert later_lesson_imports(modules, lessons, ahead=[]) == [
        "dpkit/towers.py:1: dpkit.towers (lesson 02) imports dpkit.bench, which lesson 05 "
        "introduces: move what both need down a tier"
    ]
    assert later_lesson_imports(modules, lessons, ahead=[["dpkit.towers", "dpkit.bench"]]) == []


def test_dpkit_readme_names_every_registered_program_once():
    """dpkit/README.md's program table (the one hand-written table) against the registry."""
    tree = ast.parse((ROOT / "dpkit" / "programs" / "__init__.py").read_text())
    (registry,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["PROGRAMS"]
    ]
    registered = {key.value for key in registry.keys}
    readme = (ROOT / "dpkit" / "README.md").read_text()
    table = readme.split("## Programs", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    named = [name for row in rows for name in re.findall(r"`(\w+)`", row)]
    assert sorted(named) == sorted(registered), (named, registered)


def test_each_lesson_modules_docstring_names_the_lesson_that_introduces_it(layout):
    """The first "lesson NN" a module's docstring names is the first lesson that imports it."""
    lessons, wrong = the_map.first_lessons(), []
    for name in layout["modules"]:
        first = lessons.get(f"dpkit.{name}")
        if first is None:
            continue
        path = ROOT / "dpkit" / (name.replace(".", "/") + ".py")
        if not path.exists():
            path = path.with_suffix("") / "__init__.py"
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        said = re.search(r"[Ll]essons? (\d\d)", doc)
        if not said or int(said.group(1)) != first:
            wrong.append(f"{name}: says {said and said.group(0)!r}, first imported in {first:02d}")
    assert not wrong, wrong


# ----------------------------------------------------------------------------- closures

#: Issue 44's bar: the dpkit lines behind any one lesson, readable in one sitting.
CLOSURE_BAR = 3000
#: What each lesson's closure may not grow past (the lines it had when the ratchet was set;
#: lower a number when a lesson's library shrinks). Lessons 05-10 are over the bar.
CLOSURE_CEILINGS = {
    "00": 1090, "01": 1520, "02": 2450, "03": 1790, "04": 1790, "05": 5700,
    "06": 3480, "07": 4010, "08": 3560, "09": 4930, "10": 4270,
}  # fmt: skip
#: dpkit's lines, checker apart (issue 44's bar: below 11,000), may not grow past this.
DPKIT_CEILING = 12420


def lesson_imports(path: pathlib.Path, modules: dict[str, Module]) -> set[str]:
    """The dpkit modules a lesson's code cells import (shell and magic lines left out)."""
    found = set()
    for node in ast.walk(ast.parse(the_map.lesson_code(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "dpkit"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dpkit":
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names} & set(modules)
    return found


def closure(start: set[str], modules: dict[str, Module]) -> set[str]:
    """Every module that importing ``start`` can run: imports inside functions included, and
    the packages of each module (``import a.b`` runs ``a``)."""
    graph, seen, todo = _graph(modules), set(), list(start)
    while todo:
        name = todo.pop()
        if name in seen or name not in modules:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))] + list(graph[name])
    return seen


def test_the_closure_follows_imports_inside_functions_and_packages(tmp_path):
    fake = _fake(
        tmp_path,
        {
            "dpkit/__init__.py": "",
            "dpkit/a.py": "def f():\n    from dpkit import b\n",
            "dpkit/b.py": "from dpkit.sub import c\n",
            "dpkit/sub/__init__.py": "",
            "dpkit/sub/c.py": "x = 1\n",
            "dpkit/d.py": "import dpkit.a\n",
        },
    )
    assert closure({"dpkit.a"}, fake) == {"dpkit", "dpkit.a", "dpkit.b", "dpkit.sub", "dpkit.sub.c"}
    assert "dpkit.d" not in closure({"dpkit.a"}, fake)


def test_each_lessons_closure_is_printed_and_none_grows(modules, capsys):
    rows, grown = [], []
    for path in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb")):
        names = closure(lesson_imports(path, modules), modules)
        lines = sum(modules[n].lines for n in names)
        number = path.name[:2]
        over = f"{lines - CLOSURE_BAR:+,} against the bar" if lines > CLOSURE_BAR else "within"
        rows.append(f"  lesson {number}: {lines:5,} lines in {len(names):2} modules ({over})")
        if lines > CLOSURE_CEILINGS[number]:
            grown.append(f"lesson {number}: {lines} lines, ceiling {CLOSURE_CEILINGS[number]}")
    total = sum(m.lines for n, m in modules.items() if n.split(".")[0] == "dpkit")
    rows.append(f"  dpkit: {total:,} lines (bar: below 11,000; ceiling {DPKIT_CEILING:,})")
    with capsys.disabled():
        print("\nthe dpkit lines behind each lesson (its import closure):\n" + "\n".join(rows))
    assert not grown, f"a lesson's library grew past its ceiling: {grown}"
    assert total <= DPKIT_CEILING, f"dpkit grew to {total} lines (ceiling {DPKIT_CEILING})"

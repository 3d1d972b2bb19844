"""The layout rules of dpkit (``dpkit/README.md``), read from the source with ``ast``.

Nothing here imports dpkit or TensorFlow: each check parses the files and names the module
and line that breaks a rule.

* no module is over ``MAX_LINES`` lines;
* only ``dpkit/_procs.py`` starts processes (``subprocess.Popen``);
* no module uses another module's underscore name (plumbing modules, ``dpkit._procs`` and
  ``dpkit._checks``, are underscore *modules* with public names inside: they are fine);
* the imports among dpkit's modules, at module level and inside functions, have no cycle;
* imports go down the tiers: plumbing imports no other dpkit module, and lesson modules
  never import ``dpkit.programs``;
* a lesson module imports only modules of its own or earlier lessons (the lesson of a
  module is the first notebook in lessons/ that imports it), but for the known exceptions
  in ``AHEAD``.
"""

from __future__ import annotations

import ast
import json
import pathlib
import re
from dataclasses import dataclass, field

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpkit"
MAX_LINES = 500
CHILD = "dpkit._procs.Child instead"


@dataclass
class Module:
    name: str  # "dpkit.summaries.board"
    path: pathlib.Path
    tree: ast.Module
    lines: int
    # (imported dpkit module, line), for every import that runs (module or function level)
    imports: list = field(default_factory=list)
    # local name -> dpkit module it is bound to by an import
    aliases: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return str(self.path.relative_to(ROOT))

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def tier(self) -> str:
        parts = self.name.split(".")
        if self.name == "dpkit" or parts[-1] == "__main__" and len(parts) == 2:
            return "entry"  # dpkit/__init__.py, and the command line (it runs programs)
        if parts[1] == "programs":
            return "program"
        if parts[1].startswith("_"):
            return "plumbing"
        return "lesson"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_plumbing(module: str) -> bool:
    return len(module.split(".")) == 2 and _is_private(module.split(".")[1])


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


def _load() -> dict[str, Module]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text, filename=str(path))
        name = _module_name(path)
        modules[name] = Module(name, path, tree, len(text.splitlines()))
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


def _read_imports(module: Module, modules: dict[str, Module]) -> None:
    skipped = _skipped_at_run_time(module.tree)
    for node in ast.walk(module.tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "dpkit":
                    continue
                module.imports.append((alias.name, node.lineno))
                if alias.asname:
                    module.aliases[alias.asname] = alias.name
                else:
                    module.aliases["dpkit"] = "dpkit"
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            if source.split(".")[0] != "dpkit":
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

    Importing ``dpkit.a.b`` runs ``dpkit.a`` first; a package's own ``__init__`` has
    already run when one of its modules imports a sibling, so it is left out.
    """
    parts = imported.split(".")
    own = module.name.split(".")
    if not module.is_package:
        own = own[:-1]
    chain = [".".join(parts[:i]) for i in range(2, len(parts) + 1)]
    return [m for m in chain if own[: len(m.split("."))] != m.split(".") and m != module.name]


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return _load()


def _report(problems: list[str], rule: str) -> None:
    assert not problems, f"{rule}:\n  " + "\n  ".join(problems)


def long_modules(modules) -> list[str]:
    return [
        f"{m.where}: {m.lines} lines (split it by idea)"
        for m in modules.values()
        if m.lines > MAX_LINES
    ]


def test_every_module_is_at_most_500_lines(modules):
    _report(long_modules(modules), f"modules over {MAX_LINES} lines")


def process_starts(modules) -> list[str]:
    problems = []
    for m in modules.values():
        if m.name == "dpkit._procs":
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
                and node.func.value.id == "subprocess"
            )
            if popen or imported or called:
                problems.append(_problem(m, node.lineno, "starts a process: use " + CHILD))
    return problems


def test_only_procs_starts_processes(modules):
    _report(process_starts(modules), "processes started outside dpkit/_procs.py")


def _private_use(m: Module, modules: dict[str, Module], owner: str, name: str) -> bool:
    """Whether ``name`` of dpkit module ``owner`` is one ``m`` may not use."""
    if not _is_private(name) or _is_plumbing(owner) or owner == m.name:
        return False
    submodule = f"{owner}.{name}"
    if submodule in modules:  # a private module: fine for plumbing and its own package
        inside = m.name.startswith(owner + ".") or m.name == owner
        return not (_is_plumbing(submodule) or inside)
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
        for node in ast.walk(m.tree):
            if isinstance(node, ast.ImportFrom):
                source = _absolute(m, node)
                if source.split(".")[0] != "dpkit":
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


def upward_imports(modules) -> list[str]:
    problems = []
    for m in modules.values():
        for imported, line in m.imports:
            for target in _runs_first(m, imported):
                if target not in modules or target == "dpkit":
                    continue
                tier = modules[target].tier
                if m.tier == "plumbing" and tier != "plumbing":
                    problems.append(
                        _problem(
                            m,
                            line,
                            f"plumbing imports {target} (plumbing imports no other dpkit module)",
                        )
                    )
                if m.tier == "lesson" and tier in ("program", "entry"):
                    problems.append(
                        _problem(
                            m,
                            line,
                            f"lesson module imports {target}: start a program by name "
                            "(_procs.program_argv), never import it",
                        )
                    )
    return sorted(set(problems))


def test_imports_go_down_the_tiers(modules):
    _report(upward_imports(modules), "imports that go up the tiers")


#: Lesson-module imports of a later lesson's module, kept on purpose: lesson 02's tower step
#: (towers, and its TF1 twin in compat) averages with the gradients module that lesson 03
#: explains; lesson 02 writes the average inline first.
AHEAD = {("dpkit.towers", "dpkit.gradients"), ("dpkit.compat", "dpkit.gradients")}


def first_lessons(root: pathlib.Path = ROOT) -> dict[str, int]:
    """``{"dpkit.towers": 2, ...}``: the first lesson whose code imports each module."""
    first = {}
    for path in sorted((root / "lessons").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        names = [
            n
            for group in re.findall(r"from dpkit import ([\w, ]+)", code)
            for n in group.split(",")
        ]
        names += re.findall(r"from dpkit\.(\w+)", code)
        for name in names:
            first.setdefault(f"dpkit.{name.strip()}", int(path.name[:2]))
    return first


def later_lesson_imports(modules, lessons: dict[str, int]) -> list[str]:
    problems = []
    for m in modules.values():
        top = ".".join(m.name.split(".")[:2])  # a package's modules belong to its lesson
        for imported, line in m.imports:
            target = ".".join(imported.split(".")[:2])
            if m.tier != "lesson" or target == top or (top, target) in AHEAD:
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


def test_lesson_modules_import_only_earlier_lessons(modules):
    lessons = first_lessons()
    assert lessons["dpkit.devices"] == 0 and lessons["dpkit.launcher"] == 8, lessons
    _report(later_lesson_imports(modules, lessons), "imports of a later lesson's module")


def test_the_lesson_order_check_sees_the_known_exceptions(modules, monkeypatch):
    monkeypatch.setitem(globals(), "AHEAD", set())
    found = {
        p.split(": ")[1].split(" (")[0] for p in later_lesson_imports(modules, first_lessons())
    }
    assert found == {"dpkit.towers", "dpkit.compat"}, found


# --- the checker itself, on small made-up packages ------------------------------------------


def _fake(tmp_path, monkeypatch, files: dict[str, str]) -> dict[str, Module]:
    for rel, text in files.items():
        path = tmp_path / "dpkit" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path / "dpkit")
    return _load()


def test_the_checks_catch_what_they_are_for(tmp_path, monkeypatch):
    modules = _fake(
        tmp_path,
        monkeypatch,
        {
            "__init__.py": "",
            "_procs.py": "import subprocess\nsubprocess.Popen(['x'])\n",
            "_checks.py": "from dpkit import data\n",
            "data.py": "",
            "devices.py": "from dpkit import _checks, bench\n_checks.whole(1, 'n')\n",
            "bench.py": (
                "from dpkit import devices as d\n"
                "def f():\n    from dpkit.programs import throughput\n"
                "    return d._current, d.MAX\n"
            ),
            "towers.py": "from dpkit.devices import _check_count\nimport subprocess\n"
            "subprocess.run(['x'])\n",
            "programs/__init__.py": "",
            "programs/throughput.py": "import dpkit.bench\nx = dpkit.bench._emit\n",
            "summaries/__init__.py": "from dpkit.summaries import board\n",
            "summaries/_paths.py": "",
            "summaries/board.py": "from dpkit.summaries import _paths, writers\n",
            "summaries/writers.py": "from dpkit import summaries\n",
        },
    )
    assert [c[0] for c in _cycles(_graph(modules))] == ["dpkit.bench"]  # bench -> devices
    assert process_starts(modules) == ["dpkit/towers.py:3: starts a process: use " + CHILD]
    assert private_uses(modules) == [
        "dpkit/bench.py:4: uses dpkit.devices._current (d._current)",
        "dpkit/programs/throughput.py:2: uses dpkit.bench._emit (dpkit.bench._emit)",
        "dpkit/towers.py:1: imports _check_count from dpkit.devices",
    ]  # not _checks (plumbing), nor summaries/board.py's use of its own package's _paths
    assert import_cycles(modules) == [
        "dpkit.bench -> dpkit.devices -> dpkit.bench\n"
        "    dpkit/bench.py:1 imports dpkit.devices\n"
        "    dpkit/devices.py:1 imports dpkit.bench"
    ]
    never = ": start a program by name (_procs.program_argv), never import it"
    assert upward_imports(modules) == [
        "dpkit/_checks.py:1: plumbing imports dpkit.data (plumbing imports no other dpkit module)",
        "dpkit/bench.py:3: lesson module imports dpkit.programs.throughput" + never,
        "dpkit/bench.py:3: lesson module imports dpkit.programs" + never,
    ]

"""Where dpkit imports TensorFlow (and Keras, which imports it): at the top of a module, but in
the modules that must import without it, listed below with the reason; there each function
imports it where it needs it.

Importing TensorFlow takes about 5 s of one core (TF 2.21). Who must not pay for it:

* :data:`ENTRY_POINTS`: each with its reason;
* every module a lesson that runs no TensorFlow imports (lesson 09: the cost model);
* and every dpkit module those reach by their own module-level imports.

Read from the source with ``ast`` (nothing here imports dpkit or TensorFlow); a problem names
the file and line.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re

from tests.support.paths import ROOT
from tools import layout as the_map

#: Modules that must import without TensorFlow, and why.
ENTRY_POINTS = {
    "dpkit.cli.main": "`dpkit --help`, `--version` and a bad `dpkit task` flag answer at once",
    "dpkit.bench": "`dpkit --help` builds its parser from bench and devices; a sweep's parent",
    "dpkit.devices": "`dpkit --help` builds its parser from bench and devices",
    "dpkit.launcher": "`dpkit task` reads and checks its flags before TensorFlow loads",
    "dpkit.slurm": "`dpkit task --slurm` checks the Slurm environment before TensorFlow loads",
    "dpkit.plumbing.procs": "tools/one_node_slurm.py, and the first import of every program",
    "dpkit.plumbing.contract": "tools/model_cards.py and tests/repo read the contract",
    "dpkit.programs.server": "it checks its port before TensorFlow's import (a taken port: retry)",
    "dpkit.programs.pinned": "it pins its core first: TensorFlow sizes thread pools on import",
    "dpkit.programs.collective": "it pins its core first, as the pinned program does",
    "dpkit.cluster": "a parent that only starts, kills and stops task processes (a test's, a "
    "notebook cell's) runs no TensorFlow: 5 s saved in each",
    "dpkit.report": "tests/support/standin_throughput.py: a throughput child without TensorFlow",
    "dpkit.summaries": "TensorBoard and the log readers; it loads each submodule on first use",
    "dpkit.summaries.writers": "`dpkit bench`'s parent takes runs_root from it (cli.main)",
}

TF = re.compile(r"^(tensorflow|keras)(\.|$)")


@functools.cache
def _path(module: str) -> pathlib.Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.cache
def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _top_level(tree: ast.Module):
    """The import statements that run when the module is imported: not inside a function,
    nor under ``if TYPE_CHECKING:``."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))


def _imported(node, module: str) -> list[str]:
    """The modules an import statement names (``from dpkit import a``: ``dpkit.a`` if it is a
    module, else ``dpkit``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    assert not node.level, f"{module}: a relative import; dpkit spells its imports in full"
    base = node.module
    return [f"{base}.{a.name}" if _path(f"{base}.{a.name}") else base for a in node.names]


def _with_packages(module: str) -> list[str]:
    """``dpkit.a.b`` runs ``dpkit``, ``dpkit.a`` and ``dpkit.a.b``."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def tensorflow_at_import(start: str) -> list[str]:
    """Each module-level import of TensorFlow or Keras that importing ``start`` runs, as
    ``file:line: import (reached by a <- b <- start)``."""
    seen, problems, todo = {}, [], [(m, None) for m in _with_packages(start)]
    while todo:
        module, parent = todo.pop()
        if module in seen or _path(module) is None:
            continue
        seen[module] = parent
        path = _path(module)
        for node in _top_level(_tree(path)):
            for name in _imported(node, module):
                if TF.match(name):
                    chain, at = [module], parent
                    while at is not None:
                        chain.append(at)
                        at = seen[at]
                    where = path.relative_to(ROOT)
                    problems.append(
                        f"{where}:{node.lineno}: import {name} (importing {' <- '.join(chain)})"
                    )
                elif name.split(".")[0] == "dpkit":
                    todo.extend((m, module) for m in _with_packages(name) if m not in seen)
    return problems


def lessons_without_tensorflow() -> dict[str, list[str]]:
    """``{lesson: [dpkit modules it imports]}`` for each lesson whose code imports neither
    TensorFlow nor Keras."""
    found = {}
    for path in sorted((ROOT / "lessons").glob("*.ipynb")):
        tree = ast.parse(the_map.lesson_code(path))
        names = [
            n
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for n in _imported(node, "")
        ]
        if not any(TF.match(n) for n in names):
            found[path.name] = sorted({n for n in names if n.startswith("dpkit.")})
    return found


def tf_free_modules() -> dict[str, str]:
    """Every module that must import without TensorFlow, with its reason (entry points,
    lessons without TensorFlow, then what they import)."""
    wanted = dict(ENTRY_POINTS)
    for lesson, modules in lessons_without_tensorflow().items():
        for module in modules:
            wanted.setdefault(module, f"{lesson} runs no TensorFlow and imports it")
    return wanted


def test_lesson_09_runs_no_tensorflow():
    # the rule below reaches the cost model's modules through this lesson
    assert "dpkit.scaling" in lessons_without_tensorflow().get("09_predicting_scale.ipynb", [])


def test_the_modules_that_must_import_without_tensorflow_do():
    problems = []
    for module, why in sorted(tf_free_modules().items()):
        problems += [
            f"{p}: {module} must import without TensorFlow ({why})"
            for p in tensorflow_at_import(module)
        ]
    assert not problems, "\n".join(problems)


def test_every_other_module_imports_tensorflow_at_the_top():
    free = set()
    for module in tf_free_modules():
        free |= _reached(module)
    problems = []
    for path in sorted((ROOT / "dpkit").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if module in free:
            continue
        tree = _tree(path)
        top = {id(n) for n in _top_level(tree)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                names = [n for n in _imported(node, module) if TF.match(n)]
                private = [n for n in names if n.startswith("tensorflow.python")]
                if names and names != private:  # TensorFlow's private modules: where used
                    where = path.relative_to(ROOT)
                    problems.append(
                        f"{where}:{node.lineno}: import {names[0]} inside a function: nothing "
                        f"imports {module} without TensorFlow, so import it at the top"
                    )
    assert not problems, "\n".join(problems)


def _reached(start: str) -> set[str]:
    """``start`` and every dpkit module its module-level imports reach."""
    seen, todo = set(), _with_packages(start)
    while todo:
        module = todo.pop()
        if module in seen or _path(module) is None:
            continue
        seen.add(module)
        for node in _top_level(_tree(_path(module))):
            todo += [
                m
                for n in _imported(node, module)
                if n.startswith("dpkit")
                for m in _with_packages(n)
            ]
    return seen

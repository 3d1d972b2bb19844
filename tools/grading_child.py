"""The process that grades one submission: started by tools/grading.py, never by hand.

It reads its job on stdin before any learner code runs (the cells to run, in the order the
instructor released them, each marked ``instructor``, ``student`` or ``check``; the secret
that authenticates its reports; the folders to protect), then runs the cells one by one
in a namespace of its own, as a notebook kernel would (IPython's syntax, the last
expression shown), capturing what each prints, and reports each cell on the pipe it was
given: one line, ``repr`` of a dict holding the secret.

What it does so that the learner's code, which runs here, cannot decide a grade:

* Before the first learner cell it imports everything the instructor's cells import (the
  checker included) and takes a :class:`grading_audit.Baseline`, then installs the audit
  hook (:func:`grading_audit.install_hook`).
* A check cell runs only if :meth:`~grading_audit.Baseline.problems` finds nothing, and
  passes only if it runs to its end without raising anything (``SystemExit`` too) and the
  audit after it finds nothing. It runs with the builtins module and the names the
  instructor's cells bound (the checker module, the data passed to it), whatever a
  learner's cell rebound; the learner's own names (their answers) are theirs.
* Its own code and the audit's run from private copies (not in ``sys.modules``) with a
  private copy of the builtins, and the functions it calls after learner code has run were
  taken before it did. The verdict goes out as ``repr`` of plain data (no json, whose
  module a learner could patch).

Bootstrapped by tools/grading.py's ``BOOT``: ``python -c BOOT this_file``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import linecache
import os
import sys
import tempfile
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
LIMIT = 1 << 20  # bytes of a cell's stdout, and of its stderr, reported (nbgrader trims more)


def _private(path: str) -> dict:
    """The module at ``path`` run into a dict of its own, with its own copy of the builtins."""
    scope = {"__name__": "_grading_" + os.path.basename(path)[:-3], "__file__": path}
    scope["__builtins__"] = dict(vars(builtins))
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), scope)
    return scope


def _imports(tree) -> list[str]:
    """Every module an instructor's cell imports (absolute imports; ``from a import b``
    names ``a`` and ``a.b``, which may be a module)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def _import_all(names) -> None:
    """Import ``names``, then what the checker's modules among them import inside their
    functions (``import keras`` in a check), and ``numpy.testing``, which numpy imports
    only when asked: in the picture, they are held (a module imported later is not)."""
    for name in [*names, "numpy.testing"]:
        with contextlib.suppress(BaseException):
            importlib.import_module(name)
    for name in names:
        path = getattr(sys.modules.get(name), "__file__", None) or ""
        if name.startswith("dpkit_checks.") and path.endswith(".py"):
            with contextlib.suppress(BaseException), open(path, encoding="utf-8") as f:
                for inner in _imports(ast.parse(f.read())):
                    with contextlib.suppress(BaseException):
                        importlib.import_module(inner)


class Capture:
    """Whatever this process writes to its stdout and stderr (file descriptors 1 and 2, so
    a warning TensorFlow prints from C++ too), cell by cell."""

    def __init__(self):
        self.streams = (sys.stdout, sys.stderr)
        self.files = []
        for fd in (1, 2):
            handle, path = tempfile.mkstemp(prefix="dpkit-grading-")
            os.close(handle)  # again, appending: every write goes to the end, even after a truncate
            handle = os.open(path, os.O_RDWR | os.O_APPEND)
            os.unlink(path)
            os.dup2(handle, fd)
            self.files.append(handle)
        self._truncate, self._read, self._size = os.ftruncate, os.pread, os.fstat

    def start(self) -> None:
        sys.stdout, sys.stderr = self.streams  # whatever a learner's cell put there
        for handle in self.files:
            self._truncate(handle, 0)

    def stop(self) -> tuple[str, str]:
        for stream in self.streams:
            with contextlib.suppress(Exception):
                stream.flush()
        out = []
        for handle in self.files:
            size = min(self._size(handle).st_size, LIMIT)
            out.append(self._read(handle, size, 0).decode("utf-8", "replace") if size else "")
        return out[0], out[1]


def _error(exc: BaseException) -> dict:
    try:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    except BaseException:
        lines = [f"{type(exc).__name__}\n"]
    try:
        evalue = str(exc)
    except BaseException:
        evalue = "(cannot be printed)"
    return {"ename": type(exc).__name__, "evalue": evalue, "traceback": lines}


def main() -> None:
    audit = _private(os.path.join(HERE, "grading_audit.py"))
    job = ast.literal_eval(sys.stdin.read())  # repr of plain data, from the grader
    sys.stdin.close()
    token, cells = job["token"], job["cells"]
    write, results = os.write, job["results"]

    def report(entry: dict) -> None:
        entry["token"] = token
        data = (repr(entry) + "\n").encode("utf-8", "replace")
        while data:
            data = data[write(results, data) :]

    from IPython.core.inputtransformer2 import TransformerManager
    from IPython.core.interactiveshell import InteractiveShell

    transform = TransformerManager().transform_cell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)  # for !commands and %magics in a cell
    main_module = types.ModuleType("__main__")
    sys.modules["__main__"] = main_module
    ns = main_module.__dict__
    ns.update(__builtins__=builtins, get_ipython=shell.get_ipython)

    compiled = []
    for index, cell in enumerate(cells):
        name = f"<cell {index + 1}>"
        try:
            source = transform(cell["source"])
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
            tree = ast.parse(source, name)
        except BaseException as exc:
            compiled.append((None, None, _error(exc), []))
            continue
        last = None
        if cell["kind"] != "check" and tree.body and isinstance(tree.body[-1], ast.Expr):
            last = compile(ast.Expression(tree.body.pop().value), name, "eval")
        body = compile(tree, name, "exec")
        modules = _imports(tree) if cell["kind"] != "student" else []
        compiled.append((body, last, None, modules))
    wanted = [m for body, last, err, mods in compiled for m in mods]

    capture = Capture()
    baseline = None
    bound: dict = {}  # names the instructor's cells bound, and to what
    shadows = {name for name in vars(builtins) if not name.startswith("__")}
    run_exec, run_eval = exec, eval
    for index, (cell, (body, last, failed, _)) in enumerate(zip(cells, compiled)):
        kind = cell["kind"]
        if baseline is None and kind != "instructor":
            _import_all(wanted)  # what the checks use, imported before learner code runs
            baseline = audit["Baseline"]()
            problems = baseline.problems
            audit["install_hook"](job["protected"], job["allowed"], baseline)
        entry = {"cell": index, "outputs": []}
        capture.start()
        error, value = failed, None
        if kind == "check":
            entry["passed"] = False
            found = problems() if baseline is not None else []
            if found:
                error = {
                    "ename": "GradingRefused",
                    "evalue": "this check did not run: code run before it changed the grader: "
                    + "; ".join(found[:5]),
                    "traceback": [],
                }
            elif error is None:
                scope = {k: v for k, v in ns.items() if k not in shadows or k in bound}
                scope.update(bound, __builtins__=builtins)
                try:
                    run_exec(body, scope)
                except BaseException as exc:
                    error = _error(exc)
                found = problems() if baseline is not None else []
                if found and error is None:
                    error = {
                        "ename": "GradingRefused",
                        "evalue": "this check does not count: the grader was changed while it ran: "
                        + "; ".join(found[:5]),
                        "traceback": [],
                    }
                entry["passed"] = error is None
        elif error is None:
            if kind == "instructor":  # the instructor's names, whatever a learner's cell rebound
                ns.update(bound, __builtins__=builtins)
            before = dict(ns)
            try:
                run_exec(body, ns)
                if last is not None:
                    value = run_eval(last, ns)
            except BaseException as exc:
                error = _error(exc)
            if kind == "instructor":
                for k, v in list(ns.items()):
                    if before.get(k, before) is not v:
                        bound[k] = v
                for k in [k for k in before if k not in ns]:  # the cell's `del`s
                    bound.pop(k, None)
        out, err = capture.stop()
        if out:
            entry["outputs"].append({"output_type": "stream", "name": "stdout", "text": out})
        if err:
            entry["outputs"].append({"output_type": "stream", "name": "stderr", "text": err})
        if value is not None and error is None:
            try:
                text = repr(value)
            except BaseException:
                text = "(cannot be shown)"
            entry["outputs"].append({"output_type": "execute_result", "text": text})
        if error is not None:
            entry["outputs"].append({"output_type": "error", **error})
        report(entry)
    report({"end": True})

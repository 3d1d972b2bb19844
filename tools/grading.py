"""Autograding whose checks an answer cell cannot overwrite: nbgrader's autograde, with
each submission run in a fresh process of its own instead of in a kernel.

nbgrader's ``autograde`` restores the read-only cells of a submission, runs the notebook in
a kernel and gives a check cell its points when it raised nothing. The learner's cells run
first in that same kernel, so one line of theirs,
``dpkit_checks.ex01.check_average_update = lambda f: "Check 2 passed"``, passed a check: the
check cell was the instructor's, the module it called was whatever the learner left.

Here :class:`IsolatedExecute` takes the place of nbgrader's ``Execute`` (tools/course.py
writes it into the course's ``nbgrader_config.py``). For each submitted notebook it

* rebuilds the notebook from the instructor's released copy (``release/<assignment>/``):
  every cell in the instructor's order with the instructor's source, except the answer
  cells, which are the learner's (cells the learner added run after the cell they follow);
  a check the learner deleted or edited is the instructor's again;
* runs it in a new Python (tools/grading_child.py) in the submission's folder, which takes a
  picture of itself before the first learner cell and runs a check only while nothing that
  could decide it has changed (tools/grading_audit.py), refuses writes to the grader's
  files, and reports each cell on a pipe, with a secret given on its stdin;
* fills the outputs in: a check cell holds what it printed, and an error unless the process
  reported, with the secret, that it passed. A report without the secret, a process that
  ends or hangs (``timeout`` s for a cell), or a grader's file changed while it ran (the
  course folder, the checker, dpkit, these tools, Python's folders), leaves every check
  with an error, and the last also logs an error, so ``course.py autograde`` fails.

nbgrader then scores the cells as always (an error, or anything on stderr, is 0).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib.util
import os
import secrets
import select
import signal
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer, Unicode

HERE = Path(__file__).resolve().parent
CHILD = HERE / "grading_child.py"

#: ``python -c BOOT CHILD``: no folder of the submission's on the import path (a learner's
#: ``dpkit_checks/`` handed in beside the notebook must not shadow the checker), and the
#: grading code run from a private copy, not importable by name.
BOOT = """\
import os, sys
sys.path[:] = [p for p in sys.path if p not in ('', os.getcwd())]
def _boot(path, log=os.dup(2)):
    scope = {'__name__': '_grading_child', '__file__': path}
    scope['__builtins__'] = dict(vars(__builtins__))
    with open(path, encoding='utf-8') as f:
        exec(compile(f.read(), path, 'exec'), scope)
    try:
        scope['main']()
    except BaseException:
        import traceback
        os.write(log, traceback.format_exc().encode())
        raise SystemExit(3)
_boot(sys.argv[1])
"""


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def plan(release, submitted) -> list[tuple[str, object]]:
    """``[(kind, cell)]``: the notebook to grade, built from the instructor's ``release`` and
    the learner's ``submitted`` notebook. ``kind`` is ``instructor``, ``student`` or
    ``check`` for a code cell (``markdown`` else)."""
    known = {_meta(c).get("grade_id") for c in release.cells} - {None}
    theirs, added, last = {}, {}, None
    for cell in submitted.cells:
        grade_id = _meta(cell).get("grade_id")
        if grade_id in known and grade_id not in theirs:
            theirs[grade_id], last = cell, grade_id
        else:  # a cell the learner added: theirs, not graded, after the cell it follows
            extra = copy.deepcopy(cell)
            extra.get("metadata", {}).pop("nbgrader", None)
            added.setdefault(last, []).append(extra)
    cells = [("student" if c.cell_type == "code" else "markdown", c) for c in added.get(None, [])]
    for mine in release.cells:
        meta, grade_id = _meta(mine), _meta(mine).get("grade_id")
        answer = bool(meta.get("solution"))
        cell = copy.deepcopy(theirs.get(grade_id, mine))
        if not answer or cell.cell_type != mine.cell_type:
            cell = copy.deepcopy(mine)
        if "nbgrader" in cell.get("metadata", {}) or meta:
            cell.metadata["nbgrader"] = copy.deepcopy(meta)  # the instructor's, not theirs
        if mine.cell_type != "code":
            kind = "markdown"
        elif answer:
            kind = "student"
        elif meta.get("grade"):
            kind = "check"
        else:
            kind = "instructor"
        cells.append((kind, cell))
        for extra in added.get(grade_id, []) if grade_id else []:
            cells.append(("student" if extra.cell_type == "code" else "markdown", extra))
    return cells


def code_folders() -> list[Path]:
    """The code grading runs: these tools, the checker and dpkit."""
    found = [HERE]
    for package in ("dpkit", "dpkit_checks"):
        spec = importlib.util.find_spec(package)
        found += [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    return found


def protected_folders(course: Path, exchange: Path | None = None) -> list[str]:
    """Folders the grading process must not write into: the course, the exchange, the code
    grading runs (:func:`code_folders`), Python's own folders (what the next submission
    imports) and the grader's home (its startup files; Keras's and the caches' folders
    excepted, see :func:`allowed_folders`)."""
    found = [course, *code_folders()]
    if exchange:
        found.append(exchange)
    found += [Path(p) for p in (sys.prefix, sys.base_prefix, *site.getsitepackages())]
    found += [Path(site.getusersitepackages()), Path.home()]
    found += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    tmp = Path(tempfile.gettempdir()).resolve()
    # never the temporary folder or one holding it (a home of /): what runs writes there
    return sorted({str(p.resolve()) for p in found if not tmp.is_relative_to(p.resolve())})


def allowed_folders(workdir: Path) -> list[str]:
    """Where the grading process may write inside those: the submission's folder, and the
    caches Keras, matplotlib and others keep in the home folder."""
    home = Path.home()
    keras = os.environ.get("KERAS_HOME") or home / ".keras"
    found = [workdir, keras, home / ".cache", home / ".config" / "matplotlib", home / ".matplotlib"]
    return [str(Path(p).resolve()) for p in found]


#: Written by nbgrader itself, not read by grading: left out of the fingerprint.
UNWATCHED = (".nbgrader.log",)


def fingerprint(trees: list[Path], tops: list[Path], skip: Path) -> dict:
    """``{path: (inode, size, mtime, ctime)}`` of every file under ``trees`` (``skip``
    excepted) and of the entries directly in ``tops`` (a ``.pth`` file added to Python's
    folders). A change of a file's contents or times changes its ctime, which no process
    can set back."""
    found = {}

    def note(path: str) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        found[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    skip_text = str(skip)
    for tree in trees:
        for folder, dirs, files in os.walk(tree):
            if folder == skip_text or folder.startswith(skip_text + os.sep):
                dirs[:] = []
                continue
            note(folder)
            for name in files:
                if name not in UNWATCHED:
                    note(os.path.join(folder, name))
    for top in tops:
        try:
            names = os.listdir(top)
        except OSError:
            continue
        note(str(top))
        for name in names:
            note(os.path.join(top, name))
    return found


class Outcome:
    """What the grading process reported: ``reports`` ({cell index: report}), and why the
    run stopped short (``problem``: a timeout, an ended process, a forged report)."""

    def __init__(self):
        self.reports: dict[int, dict] = {}
        self.problem = ""  # the run's problem, every check's error
        self.tampered = False
        self.running = None  # the cell running when it stopped


def run(cells: list[dict], workdir: Path, *, timeout: float, protected, allowed) -> Outcome:
    """Run ``cells`` (``{"kind", "source"}``) in a fresh grading process in ``workdir``."""
    token = secrets.token_hex(32)
    read_end, write_end = os.pipe()
    job = {
        "token": token,
        "cells": cells,
        "results": write_end,
        "protected": list(protected),
        "allowed": list(allowed),
    }
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    outcome = Outcome()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", BOOT, str(CHILD)],
            cwd=workdir,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            pass_fds=(write_end,),
            start_new_session=True,
            env=env,
        )
        os.close(write_end)
        try:
            proc.stdin.write(repr(job).encode("utf-8"))
            proc.stdin.close()
            _read(read_end, token, timeout, len(cells), outcome)
            if not outcome.problem:
                proc.wait(timeout=60)  # its exit: what dpkit started stopped (atexit)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            os.close(read_end)
            # the grading process and whatever is left in its process group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if not outcome.problem and len(outcome.reports) < len(cells):
            outcome.running = len(outcome.reports)
            outcome.problem = "the grading process ended before this cell ran"
        if outcome.problem and not outcome.tampered and proc.returncode not in (0, None):
            log.seek(0)
            tail = log.read()[-1500:].decode("utf-8", "replace").strip()
            outcome.problem += f" (exit code {proc.returncode})" + (f": {tail}" if tail else "")
    return outcome


def _read(fd: int, token: str, timeout: float, count: int, outcome: Outcome) -> None:
    """Read the grading process's reports until its last, a timeout, or a forged one."""
    buffer, deadline = b"", time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            outcome.running = len(outcome.reports)
            outcome.problem = f"a cell ran longer than {timeout:g} s: the grading stopped"
            return
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            outcome.running = len(outcome.reports)
            outcome.problem = "the grading process ended before this cell ran"
            return
        buffer += chunk
        if len(buffer) > 1 << 26 and b"\n" not in buffer:  # 64 MB and no end of a report
            outcome.tampered = True
            outcome.problem = "something other than the grader wrote to its report channel"
            return
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                entry = ast.literal_eval(line.decode("utf-8"))
                genuine = isinstance(entry, dict) and entry.get("token") == token
            except Exception:
                genuine = False
            if genuine and entry.get("end") and len(outcome.reports) == count:
                return
            if not genuine or entry.get("cell") != len(outcome.reports):
                outcome.tampered = True
                outcome.problem = "something other than the grader wrote to its report channel"
                return
            outcome.reports[entry["cell"]] = entry
            deadline = time.monotonic() + timeout


def _output(out: dict, count: int):
    kind = out.get("output_type")
    if kind == "stream":
        return nbformat.v4.new_output("stream", name=out["name"], text=out["text"])
    if kind == "execute_result":
        data = {"text/plain": out["text"]}
        return nbformat.v4.new_output("execute_result", data=data, execution_count=count)
    return nbformat.v4.new_output(
        "error", ename=out["ename"], evalue=out["evalue"], traceback=list(out["traceback"])
    )


def fill(cells: list[tuple[str, object]], outcome: Outcome) -> None:
    """Put the reported outputs into the code cells; a check holds an error unless reported
    passed (and nothing else went wrong)."""
    code = [(kind, cell) for kind, cell in cells if kind != "markdown"]
    for index, (kind, cell) in enumerate(code):
        cell.outputs, cell.execution_count = [], None
        report = outcome.reports.get(index)
        if report is not None:
            cell.execution_count = index + 1
            for out in report["outputs"]:
                if kind != "check" or out["output_type"] == "stream":
                    cell.outputs.append(_output(out, index + 1))
        passed = report is not None and report.get("passed") is True and not outcome.tampered
        if kind == "check" and (outcome.tampered or not passed):
            error = [o for o in (report or {}).get("outputs", []) if o["output_type"] == "error"]
            if error and not outcome.tampered:
                cell.outputs.append(_output(error[0], index + 1))
            else:
                why = outcome.problem or "this check did not pass"
                evalue = f"this check does not count: {why}"
                cell.outputs.append(
                    _output({"ename": "GradingRefused", "evalue": evalue, "traceback": []}, 0)
                )
        elif report is None and index == outcome.running:
            problem = {"ename": "GradingStopped", "evalue": outcome.problem, "traceback": []}
            cell.outputs.append(_output(problem, 0))


class IsolatedExecute(NbGraderPreprocessor):
    """nbgrader's ``Execute``, replaced: run the submission, rebuilt from the instructor's
    release, in a fresh grading process (this module's docstring)."""

    timeout = Integer(600, help="Seconds a cell may run.").tag(config=True)
    course = Unicode("", help="The course folder (its release/ holds the instructor's copy).").tag(
        config=True
    )
    exchange = Unicode("", help="nbgrader's exchange folder, which grading must not write.").tag(
        config=True
    )

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        course = Path(self.course or os.getcwd()).resolve()
        workdir = Path(resources.get("metadata", {}).get("path") or os.getcwd()).resolve()
        released = course / "release" / info["assignment"] / f"{info['notebook']}.ipynb"
        if not released.exists():
            raise RuntimeError(f"no released copy of {info['notebook']} at {released}: release it")
        cells = plan(nbformat.read(released, as_version=4), nb)
        jobs = [{"kind": k, "source": c.source} for k, c in cells if k != "markdown"]
        protected = protected_folders(course, Path(self.exchange) if self.exchange else None)
        trees = [course, *code_folders()]
        tops = [Path(p) for p in sys.path if p and Path(p).is_dir()]
        before = fingerprint(trees, tops, workdir)
        allowed = allowed_folders(workdir)
        outcome = run(jobs, workdir, timeout=self.timeout, protected=protected, allowed=allowed)
        after = fingerprint(trees, tops, workdir)
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        if changed:
            outcome.tampered = True
            outcome.problem = f"grading files changed while it ran: {', '.join(changed[:5])}"
            self.log.error(
                "%s of %s changed the grader's files while graded; every check scores 0. "
                "Changed: %s",
                info["notebook"],
                info["student"],
                ", ".join(changed),
            )
        fill(cells, outcome)
        seen = set()
        for _, cell in cells:  # a cell the learner copied keeps the id of the one it copies
            if cell.get("id") in seen:
                cell["id"] = secrets.token_hex(4)
            seen.add(cell.get("id"))
        nb.cells = [cell for _, cell in cells]
        return nb, resources


def autograde_preprocessors() -> list:
    """nbgrader's autograde preprocessors with :class:`IsolatedExecute` for ``Execute``
    (the course's nbgrader_config.py sets them)."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    default = list(Autograde.class_traits()["autograde_preprocessors"].default())
    if Execute not in default:
        raise RuntimeError("this nbgrader autogrades without its Execute: update tools/grading.py")
    return [IsolatedExecute if p is Execute else p for p in default]

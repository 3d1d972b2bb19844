"""Run a solution notebook in one live kernel, then try other answers in it.

`tests/course/test_solutions.py` runs each solution in it (the run nbval would make), and
`tests/course/test_wrong_answers.py` then tries wrong answers: executing the whole
notebook once per wrong answer would take minutes, so the notebook runs once and each
answer re-runs only the cells from its answer cell to its check cell. The cells an answer
ran are "dirty"; before a later answer, the dirty cells above its own answer cell run again
as written, so that it starts from the solution's state. Dirty cells that the next answer
runs itself are not run twice: exercise 08's answers 3 each start a cluster of four
TensorFlow processes, and cleaning up after one only to start the same cluster again for
the next doubled the cost of that exercise's table.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from nbclient import NotebookClient

from dpkit.plumbing import contract
from tests.support.notebooks import ROOT, make_exercises, nbio
from tests.wrong_answers.base import Wrong

BEGIN = make_exercises.BEGIN


@dataclass
class Outcome:
    """What one check cell did: its error (if any) and its printed text."""

    ename: str | None
    evalue: str
    text: str
    stderr: str = ""

    @property
    def passed(self) -> bool:
        return self.ename is None and "passed" in self.text


def check_name(cell) -> str | None:
    """'3a' for a check cell whose docstring starts "Check 3a:", else None."""
    if cell.cell_type != "code" or not nbio.has_tag(cell, "check"):
        return None
    found = make_exercises.CHECK_NAME.search(nbio.code_source(cell))
    return found.group(1) if found else None


def outcome(cell) -> Outcome:
    outputs = cell.get("outputs", [])
    errors = [o for o in outputs if o.output_type == "error"]
    streams = [o for o in outputs if o.output_type == "stream"]
    text = "".join(o.get("text", "") for o in streams if o.name == "stdout")
    stderr = "".join(o.get("text", "") for o in streams if o.name == "stderr")
    if errors:
        return Outcome(errors[0].ename, errors[0].evalue, text, stderr)
    return Outcome(None, "", text, stderr)


class AnswerKernel:
    """One solution notebook executed in a kernel that stays up for more answers."""

    def __init__(self, path: Path, timeout: int = 600):
        contract.quiet_tensorflow(os.environ)  # the kernel inherits it
        os.environ.setdefault(contract.WIDGETS, "text")
        self.path = path
        self.nb = nbio.read(path)
        self.answers = [
            i
            for i, c in enumerate(self.nb.cells)
            if c.cell_type == "code" and BEGIN in nbio.code_source(c)
        ]
        self.checks = {check_name(c): i for i, c in enumerate(self.nb.cells) if check_name(c)}
        self.client = NotebookClient(
            copy.deepcopy(self.nb),
            timeout=timeout,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        )
        self._kernel = None
        self._dirty: set[int] = set()  # cells an attempt ran after its wrong answer

    def __enter__(self) -> AnswerKernel:
        self._kernel = self.client.setup_kernel()
        self._kernel.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._kernel.__exit__(*exc)

    def _run(self, index: int, source: str | None = None):
        """Execute cell `index` of the notebook (or `source` in its place); return the cell."""
        cell = copy.deepcopy(self.nb.cells[index])
        if source is not None:
            cell.source = source
        if cell.cell_type == "code":
            cell.outputs = []
            self.client.execute_cell(cell, index)
        return cell

    def run_all(self) -> dict[str, Outcome]:
        """Run the notebook as written; {check name: outcome}. The cells, with the outputs
        of this run, are kept in ``self.ran``."""
        results = {}
        self.ran = []
        for index, _cell in enumerate(self.nb.cells):
            ran = self._run(index)
            self.ran.append(ran)
            name = check_name(ran)
            if name:
                results[name] = outcome(ran)
        return results

    def _prelude(self, start: int) -> list[int]:
        """The code cells after the check or answer before `start` (none before a first check)."""
        marks = [i for i in [*self.answers, *self.checks.values()] if i < start]
        if not marks or max(marks) < min(self.checks.values()):
            return []
        return [i for i in range(max(marks) + 1, start) if self.nb.cells[i].cell_type == "code"]

    def attempt(self, wrong: Wrong) -> Outcome:
        """Put `wrong` in its answer cell, run on to its check cell; return the check's outcome.

        The cells in between run too (a later answer may build on this one); check cells
        other than the target are skipped. First, every cell above the answer cell that an
        earlier attempt left dirty runs again as written, and so do the cells that prepare
        the answer (after the check or answer before it: exercise 08's free ports and fresh
        log folder), in notebook order, so that each attempt starts from what they make, not
        from what an earlier attempt left there; the notebook's set-up, before its first
        check, runs only once.
        """
        if not 1 <= wrong.answer <= len(self.answers):
            raise ValueError(f"{self.path.name} has no answer {wrong.answer}")
        if wrong.check not in self.checks:
            raise ValueError(f"{self.path.name} has no check {wrong.check!r}: {list(self.checks)}")
        start, stop = self.answers[wrong.answer - 1], self.checks[wrong.check]
        if stop < start:
            raise ValueError(f"check {wrong.check} comes before answer {wrong.answer}")
        between = [i for i in range(start + 1, stop) if not check_name(self.nb.cells[i])]
        source = wrong.swapped_into(nbio.code_source(self.nb.cells[start]))
        for index in cleaning(self._dirty, self._prelude(start), start):
            self._run(index)
        # Dirty from here on: this answer, the cells after it up to its check, and the cells
        # an earlier attempt left dirty below the check (nothing has run them since).
        self._dirty = {i for i in self._dirty if i > stop} | {start, *between}
        self._run(start, source)
        for index in between:
            self._run(index)
        return outcome(self._run(stop))


def cleaning(dirty: set[int], prelude: list[int], start: int) -> list[int]:
    """The cells to run as written before an attempt at the answer in cell `start`: the
    dirty cells above it and the cells that prepare it, in notebook order."""
    return sorted({i for i in dirty if i < start} | set(prelude))


def compared(outputs) -> list:
    """What nbval compares of a cell's outputs, as make test runs it (tests/support/nbval_plugin.py)
    the text of each output but stderr, consecutive streams of one name joined."""
    kept = []
    for o in outputs:
        if o.output_type == "stream":
            if o.name == "stderr":
                continue
            if kept and kept[-1][0] == o.name:
                kept[-1] = (o.name, kept[-1][1] + o.text)
                continue
            kept.append((o.name, o.text))
        elif o.output_type == "error":
            kept.append(("error", o.ename, o.evalue))
        else:
            kept.append((o.output_type, o.get("data", {}).get("text/plain", "")))
    return kept


def matches(result: Outcome, wrong: Wrong) -> str | None:
    """None when `result` is the failure `wrong` should cause, else what went otherwise."""
    if result.ename is None:
        return f"the check passed ({result.text.strip()[-200:]!r})"
    if result.ename != "AssertionError":
        return f"the check failed with {result.ename}: {result.evalue[:300]} (want an assertion)"
    if not re.search(wrong.expect, result.evalue):
        return f"the check said {result.evalue[:300]!r}, which does not match {wrong.expect!r}"
    return None


RUNS = ROOT / "solutions" / "runs"


def entries(folder: Path) -> set:
    return set(folder.iterdir()) if folder.exists() else set()


@contextlib.contextmanager
def solution_kernel(name: str):
    """The solution notebook `name` executed once in a live kernel, its checks' outcomes kept
    (``solution_outcomes``) with what it wrote under solutions/runs (``solution_runs``).

    A wrong answer may write where the solution does not (a chief that lost its --logdir
    writes to runs/ beside the notebook): what was not there before is removed at the end.
    """
    existed = RUNS.exists()
    try:
        with AnswerKernel(ROOT / "solutions" / name) as k:
            k.solution_outcomes = k.run_all()
            k.solution_runs = entries(RUNS)
            yield k
    finally:
        if not existed:
            shutil.rmtree(RUNS, ignore_errors=True)

"""Run each checked cell's mutants and say which the checked output catches: `make mutants`.

    python tools/mutants.py [-j 2] [--record] [lessons/03_gradient_averaging.ipynb ...]

A lesson runs cell by cell in its own kernel (cwd lessons/, the environment nbval's kernels
get). After a checked cell that carries mutants (tools/mutant_specs.py says where and how),
each mutant runs: its ``patch``, then its chain (the code cells from ``from`` to the checked
cell, with its ``replace`` substitutions), then ``undo`` and the chain again as written. The
mutant is *killed* when the checked cell's output under it differs from the stored output as
nbval compares them (stdout and text results; stderr ignored; an exception anywhere in the
chain counts as a change), else it *survives*. Before the first mutant of a chain the chain
runs once as written, and after each mutant again: both must give the stored output, or the
chain is not a faithful re-run (it depends on state it changes) and the run fails, since a
kill there would prove nothing. Python's and NumPy's random states (Keras draws its
initializers' seeds from Python's) are set to the plain run's at the chain's start before
each run of it. A ``fresh`` mutant runs cells 0..checked in a new kernel.

Printed per lesson: checked cells, mutants, killed, survivors with their bugs. Exit status 1
when a mutant not marked ``survives`` survives, one so marked is killed (the note is stale), a
chain does not reproduce, a lesson cell fails, or a checked cell has no mutant. Each lesson's
result is written to runs/mutants/NN.json; with --record, also its fingerprint to
tests/mutants_record.json (what tests/repo/test_mutants.py reads).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutant_specs as specs  # noqa: E402
import nbio  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of an IPython traceback
RUNS = specs.ROOT / "runs" / "mutants"
RECORD = specs.ROOT / "tests" / "mutants_record.json"


class SpecError(Exception):
    """A mutant's own code (before, patch) failed: a fault of the mutant, not a kill."""


def comparable(outputs) -> str:
    """A cell's outputs as nbval compares them here: stdout and text results, not stderr."""
    parts = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream" and out.get("name") == "stdout":
            text = out.get("text", "")
            parts.append(text if isinstance(text, str) else "".join(text))
        elif kind in ("execute_result", "display_data"):
            text = out.get("data", {}).get("text/plain", "")
            parts.append("[result] " + (text if isinstance(text, str) else "".join(text)))
        elif kind == "error":
            parts.append(f"[error] {out.get('ename')}: {out.get('evalue')}")
    return "".join(parts)


class Kernel:
    """One kernel running cells of one notebook, cell by cell, as nbclient runs them."""

    def __init__(self, path: Path, nb, timeout: int):
        from nbclient import NotebookClient

        self.client = NotebookClient(  # its own copy: nbclient stores run cells in it
            copy.deepcopy(nb),
            timeout=timeout,
            kernel_name="python3",
            interrupt_on_timeout=True,
            record_timing=False,
            resources={"metadata": {"path": str(path.parent)}},
        )
        self.stack = contextlib.ExitStack()
        self.stack.enter_context(self.client.setup_kernel())

    def run(self, source: str, index: int):
        """Run source as cell ``index``; return (outputs, error text or None)."""
        cell = nbio.nbformat.v4.new_code_cell(source)
        try:
            self.client.execute_cell(cell, index)
        except Exception as err:  # CellExecutionError, timeouts, a dead kernel
            return cell.outputs, f"{type(err).__name__}: {str(err).strip()[-300:]}"
        return cell.outputs, None

    def close(self):
        with contextlib.suppress(Exception):
            self.stack.close()


def environment() -> None:
    from dpkit.plumbing import contract

    contract.quiet_tensorflow(os.environ)  # the kernels inherit what nbval's get
    os.environ.setdefault(contract.WIDGETS, "text")


# The random states a chain starts from: Python's (Keras draws each initializer's seed from
# it) and NumPy's, saved before a chain's first cell in the plain run and set again before
# each run of the chain, so that a chain re-run builds the same models, and set back after a
# checked cell's mutants, so that the cells after it draw what they drew in the plain run.
RANDOM_SAVE = """import random as _dpkit_random, numpy as _dpkit_np
_dpkit_states = globals().get("_dpkit_states", {{}})
_dpkit_states[{key!r}] = (_dpkit_random.getstate(), _dpkit_np.random.get_state())"""
RANDOM_SET = """_dpkit_random.setstate(_dpkit_states[{key!r}][0])
_dpkit_np.random.set_state(_dpkit_states[{key!r}][1])"""


def run_chain(kernel, nb, checked, mutant, mutated):
    """The checked cell's comparable output after the chain, or an [error ...] line.

    ``before`` runs first, then (mutated) the patch, then the random states of the chain's
    start are set; a failing ``before`` or patch is the mutant's error.
    """
    for key in ("before", "patch") if mutated else ("before",):
        if mutant.get(key):
            _, error = kernel.run(mutant[key], checked)
            if error and mutated:
                raise SpecError(f"its {key} failed: {error}")
            if error:
                return f"[its {key} failed] {error}"
    first = specs.chain(nb, checked, mutant)[0]
    kernel.run(RANDOM_SET.format(key=first), checked)
    for i in specs.chain(nb, checked, mutant):
        source = specs.mutated_source(nb, i, mutant) if mutated else nbio.code_source(nb.cells[i])
        outputs, error = kernel.run(source, i)
        if error:
            return f"[raised in cell {i}] {ANSI.sub('', error).splitlines()[-1]}"
    return comparable(outputs)


def run_fresh(path, nb, checked, mutant, timeout):
    """A fresh mutant: cells 0..checked, patched and substituted, in a new kernel."""
    kernel = Kernel(path, nb, timeout)
    try:
        start = specs.index_of(nb, mutant["from"]) if "from" in mutant else 0
        patch = mutant.get("patch")
        for i in specs.chain(nb, checked, mutant):
            if patch and i >= start:  # the patch runs once, before cell `from`
                _, error = kernel.run(patch, i)
                if error:
                    return None, f"its patch failed: {error}"
                patch = None
            outputs, error = kernel.run(specs.mutated_source(nb, i, mutant), i)
            if error:
                return f"[raised in cell {i}] {ANSI.sub('', error).splitlines()[-1]}", None
        return comparable(outputs), None
    finally:
        kernel.close()


def run_lesson(path: Path, timeout: int, only: set | None = None) -> dict:
    nb = nbio.read(path)
    stored = [comparable(c.get("outputs", [])) for c in nb.cells]
    checked = specs.checked_indexes(nb)
    result = {"lesson": path.name, "path": str(path), "fingerprint": specs.fingerprint(nb)}
    result.update(cells=[], errors=[])
    for i in checked:
        result["errors"] += specs.problems(nb, i)
    if result["errors"]:
        return result
    starts = {  # where chains start: the random states there are saved
        specs.chain(nb, i, m)[0]
        for i in checked
        for m in specs.mutants_of(nb.cells[i])
        if not m.get("fresh") and (not only or nb.cells[i].get("id") in only)
    }
    began = time.perf_counter()
    kernel = Kernel(path, nb, timeout)
    try:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if i in starts:
                kernel.run(RANDOM_SAVE.format(key=i), i)
            outputs, error = kernel.run(nbio.code_source(cell), i)
            if error:
                result["errors"].append(f"cell {i} failed in the plain run: {error}")
                return result
            if i not in checked or (only and cell.get("id") not in only):
                continue
            row = {"index": i, "id": cell.get("id"), "mutants": []}
            result["cells"].append(row)
            if comparable(outputs) != stored[i]:
                result["errors"].append(f"cell {i}: the plain run differs from the stored output")
                continue
            controlled = set()  # the chain starts already run once as written
            kernel.run(RANDOM_SAVE.format(key=f"after {i}"), i)
            for mutant in specs.mutants_of(cell):
                seen = {"bug": mutant["bug"], "survives": mutant.get("survives")}
                t0 = time.perf_counter()
                if mutant.get("fresh"):
                    out, error = run_fresh(path, nb, i, mutant, timeout)
                    if error:
                        result["errors"].append(f"cell {i}: {mutant['bug']}: {error}")
                else:
                    start = specs.chain(nb, i, mutant)[0]
                    if start not in controlled:
                        again = run_chain(kernel, nb, i, mutant, mutated=False)
                        if again != stored[i]:
                            result["errors"].append(
                                f"cell {i}: its chain from {mutant.get('from')!r} run again "
                                f"as written does not give the stored output:\n{again}"
                            )
                            continue  # a kill there would prove nothing: not run
                        controlled.add(start)
                    try:
                        out = run_chain(kernel, nb, i, mutant, mutated=True)
                    except SpecError as err:
                        out = None
                        result["errors"].append(f"cell {i}: {mutant['bug']}: {err}")
                    if mutant.get("undo"):
                        _, error = kernel.run(mutant["undo"], i)
                        if error:
                            result["errors"].append(f"cell {i}: {mutant['bug']}: undo: {error}")
                    again = run_chain(kernel, nb, i, mutant, mutated=False)
                    if again != stored[i]:
                        result["errors"].append(
                            f"cell {i}: after '{mutant['bug']}' and its undo, the chain does "
                            f"not give the stored output again:\n{again}"
                        )
                seen["killed"] = out is not None and out != stored[i]
                seen["output"] = out
                seen["seconds"] = round(time.perf_counter() - t0, 1)
                row["mutants"].append(seen)
            kernel.run(RANDOM_SET.format(key=f"after {i}"), i)
    finally:
        kernel.close()
        result["seconds"] = round(time.perf_counter() - began, 1)
    return result


def verdict(result: dict) -> tuple[list[str], bool]:
    """Report lines for one lesson's result, and whether it passes."""
    mutants = [m for row in result["cells"] for m in row["mutants"]]
    killed = sum(m["killed"] for m in mutants)
    census = specs.census(Path(result["path"]))
    lines = [
        f"{result['lesson']}: {census['checked']} checked cells, {census['mutants']} mutants, "
        f"{killed} killed, {len(mutants) - killed} survived ({result.get('seconds', 0)} s)"
    ]
    ok = not result["errors"] and not census["without"]
    for row in result["cells"]:
        for m in row["mutants"]:
            if not m["killed"]:
                known = f" (known: {m['survives']})" if m["survives"] else ""
                lines.append(f"  SURVIVED cell {row['index']} ({row['id']}): {m['bug']}{known}")
                ok = ok and bool(m["survives"])
            elif m["survives"]:
                lines.append(f"  KILLED, marked 'survives' (stale): {row['index']}: {m['bug']}")
                ok = False
    for index in census["without"]:
        lines.append(f"  NO MUTANT: checked cell {index}")
    lines += [f"  ERROR {e}" for e in result["errors"]]
    return lines, ok


def record(results: list[dict]) -> None:
    """Store each passing lesson's fingerprint and counts (atomically)."""
    table = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    for result in results:
        mutants = [m for row in result["cells"] for m in row["mutants"]]
        table[result["lesson"]] = {
            "fingerprint": result["fingerprint"],
            "mutants": len(mutants),
            "killed": sum(m["killed"] for m in mutants),
            "known_survivors": sum(not m["killed"] and bool(m["survives"]) for m in mutants),
            "seconds": result.get("seconds"),
        }
    text = json.dumps(dict(sorted(table.items())), indent=1) + "\n"
    tmp = RECORD.with_name(f".{RECORD.name}.tmp")
    tmp.write_text(text)
    tmp.replace(RECORD)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, help="lessons at a time")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    parser.add_argument("--record", action="store_true", help="store passing lessons' records")
    parser.add_argument("--out", type=Path, default=RUNS, help="folder of the JSON results")
    parser.add_argument("--only", help="comma-separated checked cell ids: run only their mutants")
    parser.add_argument("lessons", nargs="*", type=Path)
    args = parser.parse_args(argv)
    if args.only and (args.record or args.jobs > 1):
        parser.error("--only runs part of a lesson: not with --record or -j")
    paths = [p.resolve() for p in args.lessons] or specs.lesson_paths()
    args.out.mkdir(parents=True, exist_ok=True)
    outs = [args.out / f"{p.stem[:2]}.json" for p in paths]
    for out in outs:
        out.unlink(missing_ok=True)  # no stale result stands in for a lesson that failed
    if len(paths) > 1 and args.jobs > 1:  # one child process per lesson, jobs at a time
        base = [sys.executable, __file__, "--timeout", str(args.timeout), "--out", str(args.out)]
        running, codes = [], []
        for path in paths:
            while len(running) >= args.jobs:
                codes += [p.wait() for p in running[:1]]
                running = running[1:]
            running.append(subprocess.Popen(base + [str(path)], stdout=subprocess.DEVNULL))
        codes += [p.wait() for p in running]
        results = [json.loads(o.read_text()) for o in outs if o.exists()]
    else:
        environment()
        results = []
        for path, out in zip(paths, outs):
            print(f"mutants of {path.name} ...", flush=True)
            only = set(args.only.split(",")) if args.only else None
            result = run_lesson(path, args.timeout, only)
            tmp = out.with_name(f".{out.name}.tmp")
            tmp.write_text(json.dumps(result, indent=1) + "\n")
            tmp.replace(out)
            results.append(result)
    passed = len(results) == len(paths)
    for result in results:
        lines, ok = verdict(result)
        print("\n".join(lines), flush=True)
        passed = passed and ok
    if args.record:
        record([r for r in results if verdict(r)[1]])
    print(f"mutants: {'every lesson passed' if passed else 'FAILED'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

"""The mutants of the lessons' checked cells, as their cells' metadata says (no kernel here).

A cell tagged ``nbval-check-output`` states a claim; its mutants are plausible bugs in what
the claim is about, each of which must change that cell's checked output (tools/mutants.py
runs them). They live in the checked cell's metadata::

    "dpkit": {"mutants": [{
        "bug": "averages the gradients twice",      # what is wrong, in words (required)
        "from": "l03-average",                       # id of the first cell to re-run
                                                     #   (default: the checked cell itself)
        "before": "python run before every run of the chain, as written or mutated",
                                                     #   e.g. reset the weights it trains
        "patch": "python run in the kernel first",   # e.g. monkeypatch a dpkit function
        "undo": "python restoring what patch changed",
        "replace": [["l03-average", "old text", "new text"], ...],
                                                     # source substitutions in cells of the chain
        "fresh": true,                               # run cells 0..checked in a new kernel
                                                     #   instead (for state that cannot be
                                                     #   re-run, such as the device split)
        "survives": "why this one is known to survive (the check is weak)"
    }]}

The chain is every code cell from ``from`` to the checked cell, inclusive, in order. A mutant
with ``survives`` is a recorded weakness: the runner reports it and fails if it is killed (the
note is then stale) as it fails on any other survivor.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbio  # noqa: E402
from cell_tags import CHECK_TAG  # noqa: E402

ROOT = nbio.ROOT
LESSONS = ROOT / "lessons"
KEYS = {"bug", "from", "before", "patch", "undo", "replace", "fresh", "survives"}


def lesson_paths() -> list[Path]:
    return sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))


def checked_indexes(nb) -> list[int]:
    return [
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and nbio.has_tag(c, CHECK_TAG)
    ]


def mutants_of(cell) -> list[dict]:
    return list(cell.get("metadata", {}).get("dpkit", {}).get("mutants", []))


def index_of(nb, cell_id: str) -> int | None:
    for i, c in enumerate(nb.cells):
        if c.get("id") == cell_id:
            return i
    return None


def chain(nb, checked: int, mutant: dict) -> list[int]:
    """The code cells a mutant re-runs, ending with the checked cell."""
    if mutant.get("fresh"):
        start = 0
    else:
        start = index_of(nb, mutant["from"]) if "from" in mutant else checked
    return [i for i in range(start, checked + 1) if nb.cells[i].cell_type == "code"]


def mutated_source(nb, index: int, mutant: dict) -> str:
    source = nbio.code_source(nb.cells[index])
    for cell_id, old, new in mutant.get("replace", []):
        if nb.cells[index].get("id") == cell_id:
            source = source.replace(old, new)
    return source


def problems(nb, checked: int) -> list[str]:
    """What is wrong with the mutants of checked cell ``checked`` (empty: nothing)."""
    cell = nb.cells[checked]
    where = f"cell {checked} ({cell.get('id')})"
    found = []
    for n, mutant in enumerate(mutants_of(cell)):
        at = f"{where} mutant {n}"
        if not isinstance(mutant, dict) or not mutant.get("bug"):
            found.append(f"{at}: needs a 'bug' saying what is wrong")
            continue
        unknown = set(mutant) - KEYS
        if unknown:
            found.append(f"{at}: unknown keys {sorted(unknown)}")
        if "from" in mutant:
            start = index_of(nb, mutant["from"])
            if start is None or start > checked:
                found.append(f"{at}: 'from' {mutant['from']!r} is no cell at or before it")
                continue
        if not (mutant.get("patch") or mutant.get("replace")):
            found.append(f"{at}: changes nothing (no 'patch', no 'replace')")
        ids = {nb.cells[i].get("id") for i in chain(nb, checked, mutant)}
        for entry in mutant.get("replace", []):
            if not (isinstance(entry, list) and len(entry) == 3):
                found.append(f"{at}: 'replace' entries are [cell id, old, new]")
                continue
            cell_id, old, new = entry
            if cell_id not in ids:
                found.append(f"{at}: replaces in {cell_id!r}, which is not in its chain")
            elif old not in nbio.code_source(nb.cells[index_of(nb, cell_id)]) or old == new:
                found.append(f"{at}: {old!r} is not in {cell_id!r}'s source (or equals the new)")
    return found


def fingerprint(nb) -> str:
    """A hash of what a mutant run depends on: every code cell's source and mutants."""
    parts = [
        [nbio.code_source(c), mutants_of(c), nbio.has_tag(c, CHECK_TAG)]
        for c in nb.cells
        if c.cell_type == "code"
    ]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def census(path: Path) -> dict:
    """Checked cells, those without a mutant, mutants and their problems, of one lesson."""
    nb = nbio.read(path)
    checked = checked_indexes(nb)
    return {
        "lesson": path.name,
        "checked": len(checked),
        "without": [i for i in checked if not mutants_of(nb.cells[i])],
        "mutants": sum(len(mutants_of(nb.cells[i])) for i in checked),
        "survives": sum(1 for i in checked for m in mutants_of(nb.cells[i]) if m.get("survives")),
        "problems": [p for i in checked for p in problems(nb, i)],
        "fingerprint": fingerprint(nb),
    }

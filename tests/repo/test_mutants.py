"""Every checked claim has a mutant, each mutant is well formed, and the last runs are current.

A checked cell (tag nbval-check-output) carries in its metadata at least one mutant: a
plausible bug in what its claim is about, which tools/mutants.py runs and which must change
the cell's checked output (tools/mutant_specs.py: the form). make test-mutants runs the
mutants of CI_LESSONS in CI; the others' runs are `make mutants`, whose record
(tests/mutants_record.json) must match each such lesson's code cells and mutants as they are
now: a lesson changed since its run is stale. Nothing here runs a kernel.
"""

import json
import re
import sys

import pytest

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import mutant_specs as specs  # noqa: E402

LESSONS = specs.lesson_paths()
RECORD = ROOT / "tests" / "mutants_record.json"

#: The lessons whose mutants make test-mutants runs in CI (keep equal to the Makefile's).
CI_LESSONS = ["00", "02", "03"]

#: Lessons whose checked cells do not all have mutants yet (issue 43, item 2). It can only
#: shrink: a lesson listed here whose every checked cell has a mutant fails the test below.
PENDING = {"05", "06", "07", "08"}


def ids(paths):
    return [p.name[:2] for p in paths]


def test_ci_lessons_are_the_makefiles():
    makefile = (ROOT / "Makefile").read_text()
    line = re.search(r"^MUTANT_CI_LESSONS := (.*)$", makefile, re.M).group(1)
    assert line.split() == CI_LESSONS


def test_census_per_lesson(capsys):
    """Prints, per lesson: checked cells, mutants, those marked as known survivors."""
    with capsys.disabled():
        print()
        for path in LESSONS:
            c = specs.census(path)
            print(
                f"  {c['lesson'][:2]}: {c['checked']:3d} checked cells, {c['mutants']:3d} mutants "
                f"({c['survives']} known survivors), {len(c['without'])} cells without one"
            )


COMPLETE = [p for p in LESSONS if p.name[:2] not in PENDING]
RECORDED = [p for p in COMPLETE if p.name[:2] not in CI_LESSONS]


@pytest.mark.parametrize("path", COMPLETE, ids=ids(COMPLETE))
def test_every_checked_cell_has_a_mutant(path):
    census = specs.census(path)
    assert not census["without"], (
        f"checked cells with no mutant: {census['without']} (cell indexes from 0): give each "
        "a plausible bug that must change its output (tools/mutant_specs.py), or untag it"
    )


def test_the_pending_lessons_are_still_pending(capsys):
    """PENDING names what is not done (no skip hides it): each lesson there still has checked
    cells without a mutant, and the count is printed."""
    with capsys.disabled():
        for lesson in sorted(PENDING):
            path = next(p for p in LESSONS if p.name[:2] == lesson)
            without = specs.census(path)["without"]
            assert without, f"lesson {lesson} is complete: take it out of PENDING"
            print(f"  pending: lesson {lesson}, {len(without)} checked cells without a mutant")


@pytest.mark.parametrize("path", LESSONS, ids=ids(LESSONS))
def test_every_mutant_is_well_formed(path):
    assert specs.census(path)["problems"] == []


@pytest.mark.parametrize("path", LESSONS, ids=ids(LESSONS))
def test_no_mutant_sits_on_an_unchecked_cell(path):
    nb = specs.nbio.read(path)
    checked = set(specs.checked_indexes(nb))
    stray = [i for i, c in enumerate(nb.cells) if specs.mutants_of(c) and i not in checked]
    assert stray == [], "mutants on cells nbval does not check: they test nothing"


@pytest.mark.parametrize("path", RECORDED, ids=ids(RECORDED))
def test_the_last_mutant_run_is_current(path):
    """Lessons outside CI's mutant run: their recorded run must be of the lesson as it is."""
    table = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    entry = table.get(path.name)
    assert entry, f"no recorded mutant run: python tools/mutants.py --record {path.name}"
    assert entry["fingerprint"] == specs.fingerprint(specs.nbio.read(path)), (
        f"{path.name} changed since its mutant run: make mutants (which records passing runs)"
    )
    assert entry["killed"] + entry.get("known_survivors", 0) == entry["mutants"]


def test_the_fingerprint_sees_a_changed_code_cell_and_a_changed_mutant():
    nb = specs.nbio.read(LESSONS[0])
    before = specs.fingerprint(nb)
    cell = nb.cells[specs.checked_indexes(nb)[0]]
    cell.metadata.setdefault("dpkit", {})["mutants"] = [{"bug": "x", "patch": "y = 1"}]
    changed_mutant = specs.fingerprint(nb)
    cell.source += "\n"
    assert len({before, changed_mutant, specs.fingerprint(nb)}) == 3

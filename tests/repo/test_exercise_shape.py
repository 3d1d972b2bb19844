"""The exercises' shape: one per lesson, hints in three folded tiers, short check cells.

Read from the solution notebooks (the exercises are generated from them, and nbgrader
releases them): every lesson after 00 has an exercise; before each marked answer sits a
markdown cell tagged ``hints`` whose three ``<details>`` blocks open one at a time (the
idea, then the API, then the steps in words; tests/repo/test_leaks.py holds each hints cell
to at most a third of its answer's lines); each check cell is a few lines that call a check
function of ``dpkit_checks``, where the check's code lives and is tested.
"""

from __future__ import annotations

import re

import pytest

from tests.support.notebooks import LESSONS, SOLUTIONS, nbio

BEGIN = "### BEGIN SOLUTION"
TIERS = ("Hint 1 · the idea", "Hint 2 · the API", "Hint 3 · the steps")
SUMMARY = re.compile(r"<details>\s*<summary>(.*?)</summary>(.*?)</details>", re.DOTALL)
#: The most lines of code (blank lines, comments and the docstring aside) a check cell holds.
CHECK_LINES = 12


def hint_tiers(markdown: str) -> list[tuple[str, str]]:
    """[(summary, body), ...] of the folded blocks of one markdown cell, in order."""
    return [(m.group(1).strip(), m.group(2).strip()) for m in SUMMARY.finditer(markdown)]


def code_lines(source: str) -> list[str]:
    """The lines of a check cell that do something: no blanks, comments or docstring."""
    text = re.sub(r'^\s*"""[\s\S]*?"""', "", source, count=1)
    return [line for line in text.split("\n") if line.strip() and not line.strip().startswith("#")]


def test_every_lesson_after_the_first_has_an_exercise():
    lessons = {p.name[:2] for p in LESSONS} - {"00"}
    exercises = {p.name[:2] for p in SOLUTIONS}
    assert lessons <= exercises, f"lessons without an exercise: {sorted(lessons - exercises)}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_each_answer_has_three_tiers_of_folded_hints(path):
    hints = None  # the hints cell seen since the last answer
    for index, cell in enumerate(nbio.read(path).cells):
        if cell.cell_type == "markdown" and nbio.has_tag(cell, "hints"):
            hints = cell
        elif cell.cell_type == "code" and BEGIN in nbio.code_source(cell):
            where = f"{path.name} cell {index}"
            assert hints is not None, f"{where}: no markdown cell tagged 'hints' before it"
            tiers = hint_tiers(hints.source)
            assert tuple(s for s, _ in tiers) == TIERS, (
                f"{where}: its hints' <details> summaries are {[s for s, _ in tiers]}, "
                f"not {list(TIERS)}"
            )
            assert all(body for _, body in tiers), f"{where}: a hint tier is empty"
            hints = None


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_check_cells_are_short_and_call_a_library_check(path):
    cells = nbio.read(path).cells
    checks = [c for c in cells if c.cell_type == "code" and nbio.has_tag(c, "check")]
    assert checks, f"{path.name} has no check cells"
    for cell in checks:
        source = nbio.code_source(cell)
        name = source.strip().split("\n")[0][:60]
        lines = code_lines(source)
        assert len(lines) <= CHECK_LINES, (
            f"{path.name} {name}: {len(lines)} lines of code; move the work into a function "
            f"of dpkit_checks (at most {CHECK_LINES} here)"
        )
        assert "dpkit_checks" in source, f"{path.name} {name}: calls no dpkit_checks check"


def test_the_tier_reader_sees_order_and_bodies():
    text = (
        "<details><summary>Hint 1 · the idea</summary>\n\nsplit it\n\n</details>\n"
        "<details>\n<summary>Hint 2 · the API</summary>\n\n`tf.split`\n</details>"
    )
    assert hint_tiers(text) == [
        ("Hint 1 · the idea", "split it"),
        ("Hint 2 · the API", "`tf.split`"),
    ]
    cell = '"""Check 1: x.\n\nmore"""\n# why\nfrom dpkit_checks import ex01\n\nf()'
    assert code_lines(cell) == ["from dpkit_checks import ex01", "f()"]

"""The student copy holds no answer, and every launch in it opens the copy, not main."""

from __future__ import annotations

import re

import pytest

from tests.support.notebooks import nbio
from tests.support.paths import ROOT
from tools import colab, student_copy


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "dpkit-student"
    student_copy.build(out, "student-fall", None)
    return out


def test_the_copy_has_the_lessons_and_exercises_and_no_solutions_or_tests(copy):
    committed = [p for p in student_copy.tracked(ROOT) if p.startswith("lessons/")]
    assert committed and all((copy / p).exists() for p in committed)
    assert list((copy / "exercises").glob("*.ipynb"))
    assert not (copy / "solutions").exists() and not (copy / "tests").exists()
    assert student_copy.leaks(copy, ROOT / "solutions") == []


def test_every_launch_opens_the_copy(copy):
    repo = colab.repository()
    assert 'ref = "student-fall"' in (copy / "pyproject.toml").read_text(encoding="utf-8")
    for folder in ("lessons", "exercises"):
        for path in (copy / folder).glob("*.ipynb"):
            text = nbio.dumps(nbio.read(path))
            badges = re.findall(r"colab\.research\.google\.com/github/([^)\s\"]+)", text)
            assert badges and all(
                b == f"{repo}/blob/student-fall/{folder}/{path.name}" for b in badges
            ), f"{folder}/{path.name}: {badges}"
            assert "-b student-fall " in text and "solutions" not in text, path.name
    readme = (copy / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("> **Student copy.**")
    assert (
        f"/v2/gh/{repo}/student-fall?" in readme and f"/v2/gh/{repo}/{colab.ref()}?" not in readme
    )


def test_a_planted_answer_is_found(tmp_path):
    regions = student_copy.answer_regions(ROOT / "solutions")
    assert regions, "no answer region long enough to search for"
    where, lines = regions[0]
    (tmp_path / "notes.py").write_text("x = 1\n    " + "\n        ".join(lines) + "\n", "utf-8")
    found = student_copy.leaks(tmp_path, ROOT / "solutions")
    assert found == [f"notes.py: the answer of {where}"]
    (tmp_path / "notes.py").unlink()
    (tmp_path / "solutions").mkdir()
    assert student_copy.leaks(tmp_path, ROOT / "solutions") == ["solutions: a solutions folder"]

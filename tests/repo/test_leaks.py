"""Answers out of reach: what a student receives holds no answer and no way to one.

tools/leaks.py searches files for three kinds of leak: a line of a solution's answer, a link or
address into solutions/ (or, for what students get, a launch or clone of a ref that holds
solutions/), and a hints cell holding more than a third of its answer's lines. Here it first
finds leaks planted on purpose, each named; then it searches, and must find nothing in:

* exercises/ and the pages of the instructor's website made from them and from the lessons
  (staged as tools/website.py stages them; that site launches ``main`` by design, so only
  links into solutions/ count there), and the hints in solutions/ themselves;
* the student copy (tools/student_copy.py, built here at ref ``student``), where a launch,
  clone or address of a ref of this repository that holds solutions/ counts too;
* the student copy's own website: its staged pages and config always; built with Jupyter Book
  when that is installed (``make site`` installs it; make test-site and make test-browser run
  that test);
* the Colab badge and install cell that tools/course.py gives released notebooks (the released
  assignments themselves are searched in tests/course/test_grading.py, which builds them).

About 15 s (the student copy is built and its site staged), plus about 15 s to build its site.
"""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from tests.support.notebooks import EXERCISES, SOLUTIONS, nbio
from tests.support.paths import ROOT
from tools import colab, course, leaks, student_copy, website

#: What the student copy holds on purpose, each with why; every entry must still be found (a
#: stale entry fails), and nothing else may be.
ALLOWED = {
    ("pyproject.toml", "https://github.com/"): (
        "[project.urls] Repository: the project's address, which tools/colab.py reads; no page "
        "shows it as a link"
    ),
    ("checks/dpkit_checks/ex05.py", "for n, rates in windows.items():"): "a loop over a dict",
    ("checks/dpkit_checks/ex07.py", "for index in range(len(addresses))"): "a loop over a job",
    ("checks/dpkit_checks/ex08.py", "for job, addresses in jobs.items()"): "a loop over jobs",
    ("checks/dpkit_checks/ex08.py", "jobs = {job: addresses for"): (
        "the check lists the tasks it expects, as the answer does (the checker is shipped: "
        "the check cells call it)"
    ),
    ("checks/dpkit_checks/ex09.py", "return predicted, row.efficiency"): (
        "the check's reference prediction, which the answer must equal"
    ),
}


def refs() -> set[str]:
    """The refs of this repository a student must never be sent to."""
    return leaks.refs_with_solutions(ROOT) | {colab.ref()}


def unexpected(found: list[str]) -> list[str]:
    """``found`` without the ALLOWED entries; fails if an ALLOWED entry was not found."""

    def allowed(line, rel, text):
        return line.startswith(f"{rel}: ") and text in line

    stale = [key for key in ALLOWED if not any(allowed(line, *key) for line in found)]
    assert not stale, f"ALLOWED entries no longer found (remove them): {stale}"
    return [line for line in found if not any(allowed(line, *key) for key in ALLOWED)]


def run_in_copy(copy, *args: str) -> None:
    """Run the copy's own tools/website.py (which reads the copy's files) in the copy."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "tools/website.py", *args],
        cwd=copy,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("leaks") / "dpkit-student"
    student_copy.build(out, course.DEFAULT_REF, None)
    return out


# --- the checker finds what is planted --------------------------------------------------------


def test_a_solution_line_planted_in_a_hint_is_named(tmp_path):
    found = leaks.answers(ROOT / "solutions")
    answer = max(found, key=lambda a: len(a.lines))  # the longest answer
    nb = nbio.read(ROOT / "exercises" / answer.notebook)
    assert leaks.hint_problems(nb, answer.notebook, found) == []
    hints = [c for c in nb.cells if leaks.is_hints(c)]
    planted = answer.lines[: len(answer.lines) // 3 + 1]  # just over a third
    hints[0].source += "\n\n```python\n" + "\n".join(planted) + "\n```\n"
    nbio.write(nb, tmp_path / answer.notebook)
    problems = leaks.scan([tmp_path])
    share = f"hints of cell {nb.cells.index(hints[0])}: {len(planted)} of the "
    assert any(share in p and answer.where in p for p in problems), problems
    searched = {line for line, _ in leaks.searched(found, leaks.given(ROOT)).values()}
    named = [p for p in problems if ": an answer line: " in p]
    assert named and all(p.endswith(f" ({answer.where})") for p in named), problems
    assert {p.split(": an answer line: ")[1].rsplit(" (", 1)[0] for p in named} == {
        line for line in planted if line in searched
    }


def test_a_hint_may_hold_a_third_of_its_answers_lines_but_no_more():
    answer = leaks.Answer("x.ipynb", 1, ["a = 1", "b = 2", "c = a + b"])
    cell = nbformat.v4.new_markdown_cell("<summary>Hint 3</summary>\n`a = 1`", id="h")
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert leaks.hint_problems(nb, "x.ipynb", [answer]) == []
    cell.source += " then `b=2`"  # whitespace does not hide a line
    assert leaks.hint_problems(nb, "x.ipynb", [answer]) == [
        "hints of cell 0: 2 of the 3 lines of the answer (solutions/x.ipynb cell 1), e.g. 'a = 1'"
    ]


def test_links_and_launches_to_solutions_are_named(tmp_path):
    repo = colab.repository()
    page = tmp_path / "page.html"
    page.write_text(
        f'<p>See <a href="https://github.com/{repo}/blob/student/solutions/01_one_device.ipynb">'
        'the answer</a> or <a href="../solutions/02_towers.html">this</a>.</p>\n'
        f'<a href="https://mybinder.org/v2/gh/{repo}/main?urlpath=lab">Binder</a>\n'
        f'<a href="https://github.com/{repo}">Repository</a>\n'
        f'<a href="https://github.com/{repo}/tree/student">fine</a>\n'
        f'<a href="https://colab.research.google.com/github/{repo}/blob/student/x.ipynb">fine</a>\n'
        f"<pre>git clone -b main https://github.com/{repo}\n"
        f"git clone -q -b student https://github.com/{repo} dpkit\n"
        f"repo2docker https://github.com/{repo}</pre>\n",
        encoding="utf-8",
    )
    problems = leaks.scan([page], repository=repo, refs=refs())
    assert [p.split(": ", 2)[1] for p in problems] == [
        "a fetch of ref main, which holds solutions/",
        "a fetch of the default branch, which holds solutions/",
        "an address into solutions/",
        "an address at ref main, which holds solutions/",
        "an address at no ref (the default branch), which holds solutions/",
        "a link into solutions/",
    ], problems
    # Without refs (the instructor's own site launches main) only solutions/ counts.
    assert len(leaks.scan([page])) == 2


# --- what students receive --------------------------------------------------------------------


def test_the_exercises_and_the_sites_pages_leak_nothing(tmp_path):
    found = leaks.answers(ROOT / "solutions")
    for path in SOLUTIONS:  # the hints' source
        assert leaks.hint_problems(nbio.read(path), path.name, found) == [], path.name
    assert EXERCISES and leaks.scan([ROOT / "exercises"], found=found) == []
    pages = website.stage(tmp_path / "site-src")
    assert pages["exercises"]
    assert leaks.scan([tmp_path / "site-src"], found=found) == []


def test_the_student_copy_leaks_nothing(copy):
    found = leaks.scan([copy], repository=colab.repository(), refs=refs())
    assert unexpected(found) == []


def test_the_student_copys_website_leaks_nothing(copy):
    """Its staged pages (every lesson and exercise as the site shows them, index, SOURCES)
    and its _config.yml, from which the launch and Repository buttons are made."""
    run_in_copy(copy, "--stage")
    staged = copy / "runs" / "site-src"
    config = (staged / "_config.yml").read_text(encoding="utf-8")
    # The theme wants the bare address; the buttons take the branch beside it (and
    # tools/website.py points the Repository button at it: the built test below reads it).
    assert '"branch": "student"' in config
    assert f'"url": "https://github.com/{colab.repository()}"' in config
    pages = [staged / "lessons", staged / "exercises", staged / "index.md", staged / "SOURCES.md"]
    assert leaks.scan(pages, repository=colab.repository(), refs=refs()) == []


def test_the_student_copys_built_website_leaks_nothing(copy):
    """The HTML Jupyter Book makes of the copy: its text, and every link of every button."""
    pytest.importorskip("jupyter_book", reason="Jupyter Book is missing: run `make site` once")
    run_in_copy(copy)
    site = copy / "site"
    html = sorted(site.rglob("*.html"))
    assert any(p.parent.name == "exercises" for p in html)
    buttons = "".join(p.read_text(encoding="utf-8") for p in html)
    assert f'href="https://github.com/{colab.repository()}/tree/student"' in buttons
    assert leaks.scan([site], repository=colab.repository(), refs=refs()) == []


def test_a_released_notebooks_badge_and_install_cell_open_the_student_ref():
    for path in SOLUTIONS:
        nb = course.student_notebook(path)
        launch = [c for c in nb.cells if colab.is_install_cell(c) or colab.BADGE.search(c.source)]
        text = "\n".join(nbio.code_source(c) for c in launch)
        assert len(launch) == 2 and f" -b {course.DEFAULT_REF} " in text, path.name
        assert leaks.way_problems(text, colab.repository(), refs()) == [], path.name
    with pytest.raises(SystemExit, match="--ref main: that ref of .* holds solutions/"):
        course.check_ref("main", None)
    course.check_ref("main", "someone/dpkit-student")  # the copy's own repository: its main

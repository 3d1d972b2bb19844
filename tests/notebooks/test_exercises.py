"""Exercises: generated from solutions byte for byte, with stubs where the answers were."""

import pytest

from tests.support.notebooks import (
    EXERCISES,
    ROOT,
    SOLUTIONS,
    make_exercises,
    nbio,
)

SOURCE = '''def f(x):
    """Doc."""
    ### BEGIN SOLUTION  square it
    y = x * x
    return y
    ### END SOLUTION

### BEGIN SOLUTION
top = 1
### END SOLUTION
print("kept")'''


def test_stub_replaces_each_region_with_hint_and_raise_at_its_indentation():
    assert (
        make_exercises.stub_source(SOURCE)
        == '''def f(x):
    """Doc."""
    # TODO: square it
    raise NotImplementedError()

# TODO: write your code here
raise NotImplementedError()
print("kept")'''
    )


@pytest.mark.parametrize(
    "source, words",
    [
        ("### BEGIN SOLUTION\nx = 1", "never closed"),
        ("x = 1\n### END SOLUTION", "without a ### BEGIN SOLUTION"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside another region"),
    ],
)
def test_broken_markers_are_reported(source, words):
    with pytest.raises(make_exercises.MarkerError, match=words):
        make_exercises.stub_source(source)


def test_every_solution_has_a_current_exercise(capsys):
    """Regenerates every exercise in memory and compares it with the committed file."""
    assert SOLUTIONS, "no solution notebooks found"
    assert make_exercises.main(["--check"]) == 0, capsys.readouterr().out
    assert {p.name for p in EXERCISES} == {p.name for p in SOLUTIONS}


def test_check_detects_a_hand_edited_exercise(tmp_path):
    source = SOLUTIONS[0]
    (tmp_path / "solutions").mkdir()
    (tmp_path / "exercises").mkdir()
    (tmp_path / "solutions" / source.name).write_bytes(source.read_bytes())
    edited = (ROOT / "exercises" / source.name).read_text(encoding="utf-8")
    edited = edited.replace("raise NotImplementedError()", "pass", 1)
    (tmp_path / "exercises" / source.name).write_text(edited, encoding="utf-8")
    args = [
        "--check",
        "--solutions",
        str(tmp_path / "solutions"),
        "--exercises",
        str(tmp_path / "exercises"),
    ]
    assert make_exercises.main(args) == 1


def test_exercises_have_the_generated_header_and_no_answers():
    for path in EXERCISES:
        nb = nbio.read(path)
        header = nb.cells[0].source
        assert header.startswith(f"*Exercise generated from `solutions/{path.name}` ")
        assert "](" not in header, "the header names its solution and never links to it"
        text = path.read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text


# That each check cell fails on its stub is tests/course/test_stubs.py's (make test-course);
# that it passes on its solution, tests/course/test_solutions.py's.

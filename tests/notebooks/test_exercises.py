"""Exercises: generated from solutions byte for byte; each check cell fails on the stub.

(Each check passes on the solution and fails on the wrong answers: test_wrong_answers.py.)"""

import pytest

from tests.support.notebooks import (
    EXERCISES,
    ROOT,
    SOLUTIONS,
    errors,
    execute,
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
        assert nb.cells[0].source.startswith(f"*Exercise generated from [`solutions/{path.name}`]")
        text = path.read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text


def _check_cells(nb):
    cells = [c for c in nb.cells if c.cell_type == "code" and nbio.has_tag(c, "check")]
    assert cells, "a solution notebook needs check cells (tagged 'check')"
    return cells


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.name)
def test_check_cells_fail_on_the_stubs(path):
    nb = execute(path, allow_errors=True)
    for cell in _check_cells(nb):
        assert errors(cell), f"check cell passed on the unsolved exercise:\n{cell.source[:200]}"
        assert set(errors(cell)) <= {"NotImplementedError", "NameError", "AssertionError"}


# That every check passes on its solution is asserted by tests/notebooks/test_wrong_answers.py,
# which runs each solution once before trying wrong answers in it.

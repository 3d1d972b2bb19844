"""tools/mutants.py's verdicts, on a small notebook in a real kernel: it can fail.

A mutant that changes the checked output is killed; one that does not survives and fails
the run, unless marked ``survives`` (then it is reported, and it is being killed that fails
the run); a chain that does not give the stored output when run again is an error, not a kill.
"""

import sys

import nbformat

from tests.support.notebooks import nbio
from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import mutants  # noqa: E402


def notebook(tmp_path, checked_source, stored, mutants_list, before=("x = 2", "y = x * 2")):
    cells = [nbformat.v4.new_code_cell(s, id=f"c{i}") for i, s in enumerate(before)]
    check = nbformat.v4.new_code_cell(checked_source, id="check")
    check.metadata = {"tags": ["nbval-check-output"], "dpkit": {"mutants": mutants_list}}
    check.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored)]
    nb = nbformat.v4.new_notebook(cells=[*cells, check])
    path = tmp_path / "99_fake.ipynb"
    nbio.write(nb, path)
    return path


def run(path):
    mutants.environment()
    result = mutants.run_lesson(path, timeout=60)
    lines, ok = mutants.verdict(result)
    print("\n".join(lines))
    return result, lines, ok


def test_a_bug_that_changes_the_output_is_killed_and_one_that_does_not_survives(tmp_path):
    path = notebook(
        tmp_path,
        "print('y is even:', y % 2 == 0)",
        "y is even: True\n",
        [
            {"bug": "adds one", "from": "c1", "replace": [["c1", "x * 2", "x * 2 + 1"]]},
            {
                "bug": "another x (the check holds for any x)",
                "from": "c0",
                "patch": "pass",
                "replace": [["c0", "x = 2", "x = 3"]],
            },
            {"bug": "x made odd by a patch", "from": "c1", "patch": "x = 2.5", "undo": "x = 2"},
        ],
    )
    result, lines, ok = run(path)
    verdicts = [m["killed"] for m in result["cells"][0]["mutants"]]
    assert verdicts == [True, False, True]
    assert not ok and any("SURVIVED" in line and "any x" in line for line in lines)
    assert result["errors"] == []  # every chain ran again to the stored output


def test_a_known_survivor_passes_and_a_killed_one_marked_so_fails(tmp_path):
    survivor = {
        "bug": "another x",
        "from": "c0",
        "replace": [["c0", "x = 2", "x = 3"]],
        "survives": "the check holds for any x",
    }
    path = notebook(tmp_path, "print('y is even:', y % 2 == 0)", "y is even: True\n", [survivor])
    assert run(path)[2]
    stale = dict(survivor, replace=[["c0", "x = 2", "x = 2.5"]])
    path = notebook(tmp_path, "print('y is even:', y % 2 == 0)", "y is even: True\n", [stale])
    result, lines, ok = run(path)
    assert not ok and any("stale" in line for line in lines)


def test_an_exception_under_the_mutant_kills_it_and_a_fresh_kernel_runs_from_the_top(tmp_path):
    path = notebook(
        tmp_path,
        "print(y)",
        "4\n",
        [
            {"bug": "a name that is not there", "from": "c1", "replace": [["c1", "x *", "z *"]]},
            {"bug": "x is 3 from the start", "fresh": True, "replace": [["c0", "2", "3"]]},
        ],
    )
    result, lines, ok = run(path)
    found = result["cells"][0]["mutants"]
    assert [m["killed"] for m in found] == [True, True] and ok
    assert "NameError" in found[0]["output"] and found[1]["output"] == "6\n"


def test_a_chain_that_does_not_reproduce_is_an_error_not_a_kill(tmp_path):
    path = notebook(
        tmp_path,
        "print(x)",
        "3\n",
        [{"bug": "counts from 5", "patch": "x = 5", "undo": "x = 3"}],
        before=("x = 2", "x += 1"),
    )
    # The chain is the checked cell alone; it reproduces. From c1 it does not (x += 1 again).
    assert run(path)[2]
    nb = nbio.read(path)
    nb.cells[-1].metadata["dpkit"]["mutants"][0]["from"] = "c1"
    nbio.write(nb, path)
    result, lines, ok = run(path)
    assert not ok and any("does not give the stored output" in e for e in result["errors"])


def test_a_chain_that_draws_random_numbers_draws_the_same_again(tmp_path):
    """The random states of the chain's start are set before each run of it (Keras draws its
    initializers' seeds from Python's), so a chain that draws is a faithful re-run."""
    path = notebook(
        tmp_path,
        "print(round(x, 6), round(float(np.random.rand()), 6))",
        "0.844422 0.548814\n",
        [{"bug": "twice the draw", "from": "c1", "replace": [["c1", "random()", "random() * 2"]]}],
        before=(
            "import random\nimport numpy as np\nrandom.seed(0)\nnp.random.seed(0)",
            "x = random.random()",
        ),
    )
    result, lines, ok = run(path)
    assert ok and result["errors"] == [], lines
    assert result["cells"][0]["mutants"][0]["output"] == "1.688844 0.548814\n"

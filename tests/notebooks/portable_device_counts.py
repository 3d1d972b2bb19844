"""make test-portable: the lessons at another device count state the same claims.

Not collected by make test (the name does not start with test_): make test-portable
passes it by name, under oneDNN and one intra-op thread. Each lesson runs through
papermill with another NUM_DEVICES (and a batch that still divides); every checked cell
(tagged nbval-check-output) must end its lines with the same True/False as the stored run. The
counts in those lines may change with the device count; the verdicts may not.
"""

from __future__ import annotations

import re

import pytest

from dpkit.plumbing import contract
from tests.support.notebooks import ROOT, nbio

# (lesson, parameters): a device count other than the stored run's, and a batch that fits it.
# The order balances make test-portable's three workers: xdist's load scheduling hands this
# file's six tests out in pairs, in order (test_verdicts... first), so one worker runs lesson
# 10 (its longest), one 02 then 00, one 04 then 03.
RUNS = [
    # 2 divides the perceptron's parameter count: the shards come out even this time.
    ("lessons/10_making_data_parallelism_pay.ipynb", {"NUM_DEVICES": 2}),
    ("lessons/02_towers.ipynb", {"NUM_DEVICES": 3, "GLOBAL_BATCH_SIZE": 63, "NUM_STEPS": 20}),
    ("lessons/00_setup_and_devices.ipynb", {"NUM_DEVICES": 3}),
    ("lessons/04_all_reduce_and_mirrored.ipynb", {"NUM_DEVICES": 2}),
    ("lessons/03_gradient_averaging.ipynb", {"NUM_DEVICES": 2, "UNEVEN_BATCH_SIZE": 9}),
]

VERDICT = re.compile(r"\b(True|False)\s*$")


def verdicts(nb) -> list[list[str]]:
    """For each checked cell in order, the True/False that end its printed lines."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or not nbio.has_tag(cell, "nbval-check-output"):
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        found.append([m.group(1) for line in text.splitlines() if (m := VERDICT.search(line))])
    return found


def test_verdicts_reads_the_booleans_that_end_lines():
    nb = nbio.nbformat.v4.new_notebook()
    cell = nbio.nbformat.v4.new_code_cell("print(...)", metadata={"tags": ["nbval-check-output"]})
    cell.outputs = [
        nbio.nbformat.v4.new_output("stream", text="4 devices: True\nshape (3,)\nx: False\n")
    ]
    nb.cells = [nbio.nbformat.v4.new_code_cell("print(1)"), cell]
    assert verdicts(nb) == [["True", "False"]]


@pytest.mark.parametrize("lesson, parameters", RUNS, ids=[r[0].split("/")[1] for r in RUNS])
def test_the_claims_hold_at_another_device_count(lesson, parameters, tmp_path, monkeypatch):
    import papermill

    monkeypatch.setenv(contract.WIDGETS, "text")
    monkeypatch.setenv(contract.RUNS, str(tmp_path / "runs"))
    path = ROOT / lesson
    out = tmp_path / path.name
    papermill.execute_notebook(
        str(path),
        str(out),
        parameters=parameters,
        cwd=str(path.parent),
        progress_bar=False,
        execution_timeout=900,
    )
    stored, now = verdicts(nbio.read(path)), verdicts(nbio.read(out))
    assert len(stored) == len(now)
    changed = [
        f"checked cell {i + 1}: stored {s}, now {n}"
        for i, (s, n) in enumerate(zip(stored, now))
        if s != n
    ]
    assert not changed, f"{lesson} with {parameters}: claims changed:\n" + "\n".join(changed)

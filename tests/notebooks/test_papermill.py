"""Lessons run through papermill with other parameters, as README's "Shrink a lesson" says.

Each run uses papermill's own command line from the notebook's folder, in this
environment, with DPKIT_WIDGETS=text, and must finish without an error; the values are
not the defaults, so a cell that silently assumed the default (4 devices, a batch of 64)
fails here. A value a lesson cannot use must stop it in the cell after the parameters,
before any work, naming what is allowed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dpkit.plumbing import contract, procs
from tests.support.notebooks import ROOT, nbio

PAPERMILL = Path(sys.executable).parent / "papermill"

# (notebook, papermill arguments): other device counts and batch sizes, fewer steps.
RUNS = [
    ("lessons/00_setup_and_devices.ipynb", ["-p", "NUM_DEVICES", "3"]),
    (
        "lessons/01_one_device.ipynb",
        [
            "-p",
            "BATCH_SIZE",
            "16",
            "-p",
            "NUM_STEPS",
            "2",
            "-p",
            "COMPARE_STEPS",
            "1",
            "-p",
            "SEED",
            "7",
        ],
    ),
    (
        "lessons/06_tensorboard.ipynb",
        ["-p", "NUM_DEVICES", "3", "-p", "GLOBAL_BATCH_SIZE", "9", "-p", "NUM_STEPS", "2"]
        + ["-p", "LOG_EVERY", "1", "-p", "MLP_STEPS", "1", "-p", "PROFILE_STEPS", "1"]
        + ["-p", "LAUNCH_TENSORBOARD", "False"],
    ),
]


def papermill(notebook: str, args: list[str], tmp_path: Path):
    path = ROOT / notebook
    out = tmp_path / path.name
    env = procs.child_env({contract.WIDGETS: "text", contract.RUNS: str(tmp_path / "runs")})
    command = [str(PAPERMILL), str(path), str(out), *args, "--cwd", str(path.parent)]
    done = subprocess.run(
        [*command, "--no-progress-bar", "--execution-timeout", "900"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return done, (nbio.read(out) if out.exists() else None)


@pytest.mark.parametrize("notebook, args", RUNS, ids=[f"{n}:{' '.join(a)}" for n, a in RUNS])
def test_lesson_finishes_with_other_parameters(notebook, args, tmp_path):
    done, nb = papermill(notebook, args, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    injected = [c for c in nb.cells if nbio.has_tag(c, "injected-parameters")]
    assert len(injected) == 1 and args[2] in injected[0].source  # the values reached it
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "every cell ran"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def test_a_value_the_lesson_cannot_use_stops_it_at_once(tmp_path):
    done, nb = papermill("lessons/02_towers.ipynb", ["-p", "NUM_DEVICES", "0"], tmp_path)
    assert done.returncode != 0
    errors = [
        (i, o)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert len(errors) == 1
    index, error = errors[0]
    assert nb.cells[index].id.endswith("-params"), "stopped in the check after the parameters"
    assert error.ename == "ValueError" and "NUM_DEVICES = 0" in error.evalue
    assert "a whole number from 1 to" in error.evalue
    later = [c for c in nb.cells[index + 1 :] if c.cell_type == "code"]
    assert later and not any(c.execution_count for c in later), "nothing ran after it"

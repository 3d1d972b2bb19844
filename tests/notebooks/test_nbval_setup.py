"""The nbval set-up can fail: a changed claim fails; stderr and unchecked cells are not compared."""

import subprocess
import sys

import nbformat

from tests.support.notebooks import ROOT, nbio

CHECKED = {"tags": ["nbval-check-output"]}  # the marker of a checked cell (tools/cell_tags.py)


def _notebook(path, claim_output, stderr_output):
    checked = nbformat.v4.new_code_cell(
        "import sys\nprint(6 * 7)\nprint('noise', file=sys.stderr)", metadata=CHECKED
    )
    checked.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=claim_output),
        nbformat.v4.new_output("stream", name="stderr", text=stderr_output),
    ]
    # a warning that appears at run time and was never stored
    new_warning = nbformat.v4.new_code_cell(
        "print('ok')\nprint('a new warning', file=sys.stderr)", metadata=CHECKED
    )
    new_warning.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ok\n")]
    unchecked = nbformat.v4.new_code_cell("print(id(object()))")
    unchecked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="123\n")]
    for count, cell in enumerate([checked, new_warning, unchecked], 1):
        cell.execution_count = count
    nb = nbformat.v4.new_notebook(cells=[checked, new_warning, unchecked])
    nbio.write(nb, path)


def _nbval(path):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(path),
            "--nbval-lax",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.support.nbval_plugin",
            "-q",
            "--rootdir",
            str(ROOT),
            "-c",
            str(ROOT / "pyproject.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def test_nbval_passes_a_true_claim_despite_other_stderr(tmp_path):
    path = tmp_path / "good.ipynb"
    _notebook(path, "42\n", "a different warning\n")
    proc = _nbval(path)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_nbval_fails_a_changed_claim(tmp_path):
    path = tmp_path / "bad.ipynb"
    _notebook(path, "41\n", "noise\n")
    proc = _nbval(path)
    assert proc.returncode == 1 and "41" in proc.stdout, proc.stdout[-2000:]

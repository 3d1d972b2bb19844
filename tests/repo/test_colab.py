"""Open in Colab: every notebook's badge names its own path; the install cell is guarded,
quiet and idempotent (tools/colab.py writes both)."""

import os
import runpy
import subprocess
import sys

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tests.support.notebooks import EXERCISES, LESSONS, ROOT, nbio

sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402

ALL = LESSONS + [ROOT / "solutions" / p.name for p in EXERCISES] + EXERCISES


def relpath(path):
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", ALL, ids=[relpath(p) for p in ALL])
def test_badge_names_its_own_path_and_install_cell_is_current(path):
    assert colab.problems(nbio.read(path), relpath(path)) == []
    title = nbio.read(path).cells[0 if path.parent.name != "exercises" else 1].source
    assert title.startswith("# ") and colab.badge(relpath(path)) in title.split("\n")[:3]


def test_the_check_catches_a_badge_pointing_elsewhere_and_a_missing_cell():
    nb = nbio.read(LESSONS[1])
    other = relpath(LESSONS[2])
    assert any("not its own path" in p for p in colab.problems(nb, other))
    nb.cells = [c for c in nb.cells if not colab.is_install_cell(c)]
    assert any("0 Colab install cells" in p for p in colab.problems(nb, relpath(LESSONS[1])))


def test_the_check_catches_an_install_cell_without_its_tag():
    nb = nbio.read(LESSONS[1])
    cell = next(c for c in nb.cells if colab.is_install_cell(c))
    assert nbio.has_tag(cell, colab.INSTALL_TAG)
    cell.metadata["tags"].remove(colab.INSTALL_TAG)
    assert any("not tagged" in p for p in colab.problems(nb, relpath(LESSONS[1])))
    colab.apply(nb, relpath(LESSONS[1]))
    assert colab.problems(nb, relpath(LESSONS[1])) == []


def test_every_launch_follows_the_one_ref_in_pyproject(tmp_path, monkeypatch):
    """The ref is written once ([tool.dpkit.launch]); badge, Binder, download and the clone
    all change with it, and a missing or odd ref is refused, naming the fix."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert text.count("[tool.dpkit.launch]") == 1
    monkeypatch.setattr(colab.nbio, "ROOT", tmp_path)
    (tmp_path / "pyproject.toml").write_text(text.replace('ref = "main"', 'ref = "class-2027"'))
    lesson = "lessons/02_towers.ipynb"
    assert colab.badge_url(lesson).endswith(f"/blob/class-2027/{lesson}")
    assert colab.binder_url(lesson).endswith(f"/class-2027?urlpath=lab/tree/{lesson}")
    assert colab.download_url(lesson).endswith(f"/class-2027/{lesson}")
    assert " -b class-2027 " in colab.install_source("lessons")
    for bad in ('ref = "a b"', "", 'ref = ""'):
        (tmp_path / "pyproject.toml").write_text(text.replace('ref = "main"', bad))
        with pytest.raises(ValueError, match=r"\[tool\.dpkit\.launch\].*ref = "):
            colab.ref()


def test_apply_is_idempotent_and_keeps_the_title_text():
    nb = nbio.read(LESSONS[0])
    before = nbio.dumps(nb)
    again = nbio.dumps(colab.apply(nbio.read(LESSONS[0]), relpath(LESSONS[0])))
    assert again == before


class Recorder:
    """Stands in for IPython's shell: records shell escapes and line magics."""

    def __init__(self):
        self.calls = []

    def system(self, command):
        self.calls.append(("!", command))

    def run_line_magic(self, name, line, *args):
        self.calls.append(("%", f"{name} {line}"))


def run_cell_as(module: str, source: str):
    """Run the cell with a recording shell whose class lives in `module`; the install
    script's call is recorded, not run (tests/process/test_colab_install.py runs it)."""
    shell_class = type("Shell", (Recorder,), {"__module__": module})
    shell = shell_class()
    code = TransformerManager().transform_cell(source)

    def installer(path):
        return {"install": lambda folder: shell.calls.append(("install", f"{path} {folder}"))}

    saved, runpy.run_path = runpy.run_path, installer
    try:
        exec(code, {"get_ipython": lambda: shell})
    finally:
        runpy.run_path = saved
    return shell.calls


@pytest.mark.parametrize("folder", ["lessons", "solutions", "exercises"])
def test_install_cell_acts_on_colab_only(folder):
    source = colab.install_source(folder)
    assert run_cell_as("ipykernel.zmqshell", source) == []  # Jupyter, papermill, nbval
    calls = run_cell_as("google.colab._shell", source)
    # a notebook with check cells installs the course's checker (checks/) too; a lesson not
    checker = ["install"] if folder in ("solutions", "exercises") else []
    assert [kind for kind, _ in calls] == ["!", "install", *checker, "%"]
    assert "git clone -q" in calls[0][1] and colab.repository() in calls[0][1]
    assert calls[1][1] == "/content/dpkit/tools/colab_install.py /content/dpkit"
    if checker:
        assert calls[2][1] == "/content/dpkit/tools/colab_install.py /content/dpkit/checks"
    assert calls[-1][1] == f"cd /content/dpkit/{folder}"


def test_install_commands_clone_once(tmp_path):
    """The clone line runs for real (git replaced by a logger): a second run clones nothing."""
    calls = run_cell_as("google.colab._shell", colab.install_source("lessons"))
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho "git $*" >> {log}; mkdir -p dpkit\n')
    (bin_dir / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    for _ in range(2):
        for kind, command in calls:
            if kind == "!":
                command = command.replace("/content", str(tmp_path))
                subprocess.run(["sh", "-c", command], env=env, check=True)
    lines = log.read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"git clone -q --depth 1 -b {colab.ref()} https://github.com/")


def test_a_notebook_for_a_student_copy_opens_and_clones_its_ref(tmp_path):
    """apply(..., at, repo), as tools/course.py calls it: the badge and the clone name the
    copy's ref and repository, and the clone lands where the cell looks for it (CLONE) even
    when the copy's repository has another name."""
    nb = colab.apply(nbio.read(EXERCISES[0]), relpath(EXERCISES[0]), "term-2", "me/dpkit-student")
    text = nbio.dumps(nb)
    assert f"me/dpkit-student/blob/term-2/{relpath(EXERCISES[0])}" in text
    assert f"github.com/{colab.repository()}" not in text and "-b main" not in text
    source = colab.install_source("exercises", "term-2", "me/dpkit-student")
    calls = run_cell_as("google.colab._shell", source)
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir()
    fake = f'#!/bin/sh\necho "git $*" >> {log}; for last; do :; done; mkdir -p "$last"\n'
    (bin_dir / "git").write_text(fake)
    (bin_dir / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    command = calls[0][1].replace("/content", str(tmp_path))
    subprocess.run(["sh", "-c", command], env=env, check=True)
    clone = "git clone -q --depth 1 -b term-2 https://github.com/me/dpkit-student dpkit"
    assert log.read_text().strip() == clone
    assert (tmp_path / "dpkit").is_dir() and calls[-1][1] == "cd /content/dpkit/exercises"

"""The Colab install cell, run in a stand-in Colab: installs, restarts when it must, else goes on.

The stand-in is an IPython shell whose class lives in ``google.colab._shell`` (the cell asks
exactly that of ``type(get_ipython())``). It runs the install cell that tools/colab.py writes
into every notebook, with ``/content`` moved into a temporary folder that already holds the
"clone": a tiny project ``fakebook`` that needs ``standin>=2``. pip installs from local
wheels only, into a target folder on the stand-in's path (``PIP_*`` variables), so nothing
touches this environment and no network is needed. Three sessions:

* ``standin`` 1.0 installed and imported: pip upgrades it, so the cell must stop, naming
  ``standin 1.0 -> 2.0``, and say to restart;
* ``standin`` 1.0 installed, never imported: the cell installs and goes on into the folder;
* after the restart (``fakebook`` installed): the cell installs nothing.

Then an exercise's cell against a lesson's: the clone also holds ``checks/`` (a tiny
``fakechecks``, standing for the course's checker), which only the exercise's cell installs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tools import colab

SHELL = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
from google.colab._shell import Shell
shell = Shell.instance()
for line in sys.argv[2:]:
    shell.run_cell(line)
result = shell.run_cell(open(sys.argv[1]).read())
error = result.error_in_exec
print("RESULT " + json.dumps({
    "error": type(error).__name__ if error else None,
    "message": str(error) if error else "",
    "cwd": __import__("os").getcwd(),
}))
"""


def _project(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text(f"VERSION = {version!r}\n", encoding="utf-8")
    deps = ", ".join(json.dumps(r) for r in requires)
    (folder / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{name}"
            version = "{version}"
            dependencies = [{deps}]

            [tool.setuptools]
            packages = ["{name}"]
            """),
        encoding="utf-8",
    )
    return folder


def _pip(*args: str, env=None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def colab_like(tmp_path_factory):
    """(run, site): run(session_lines) runs the install cell in a fresh stand-in session."""
    top = tmp_path_factory.mktemp("colab")
    wheels = top / "wheels"
    for version in ("1.0", "2.0"):
        source = _project(top / f"standin-{version}", "standin", version, [])
        _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source))
    content = top / "content"
    clone = _project(content / "dpkit", "fakebook", "0.1", ["standin>=2"])
    (clone / "tools").mkdir()
    (clone / "tools" / "colab_install.py").write_text(
        (ROOT / "tools" / "colab_install.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (clone / "lessons").mkdir()
    (clone / "exercises").mkdir()
    # the course's checker beside it: installed by the cell of an exercise, not of a lesson
    _project(clone / "checks", "fakechecks", "0.1", [])
    shell = top / "shim" / "google" / "colab"  # a namespace package beside the real google.*
    shell.mkdir(parents=True)
    (shell / "__init__.py").write_text("", encoding="utf-8")
    (shell / "_shell.py").write_text(
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "class Shell(InteractiveShell):\n    pass\n",
        encoding="utf-8",
    )
    for folder in ("lessons", "exercises"):
        cell = colab.install_source(folder).replace(colab.CLONE, str(clone))
        cell = cell.replace(f"cd {Path(colab.CLONE).parent} ", f"cd {content} ")
        (top / f"cell-{folder}.py").write_text(cell, encoding="utf-8")
    (top / "shell.py").write_text(SHELL, encoding="utf-8")

    def run(site: Path, *session: str, folder: str = "lessons") -> dict:
        env = {
            **os.environ,
            "PYTHONPATH": f"{site}{os.pathsep}{top / 'shim'}",
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheels),
            "PIP_TARGET": str(site),
            "PIP_UPGRADE": "1",
            # pip reads a "no-" option's variable inverted: "0" turns build isolation off, so
            # the clone builds with this environment's setuptools, offline.
            "PIP_NO_BUILD_ISOLATION": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        done = subprocess.run(
            [sys.executable, str(top / "shell.py"), str(top / f"cell-{folder}.py"), *session],
            cwd=top,
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
        assert lines, done.stdout + done.stderr
        return {**json.loads(lines[-1][len("RESULT ") :]), "out": done.stdout}

    def fresh_site(name: str) -> Path:
        site = top / name
        _pip(
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheels),
            "--target",
            str(site),
            "standin==1.0",
        )
        return site

    return run, fresh_site, clone


def test_the_cell_stops_and_asks_for_a_restart_when_pip_replaces_an_imported_package(colab_like):
    run, fresh_site, _ = colab_like
    site = fresh_site("site-imported")
    result = run(site, "import standin")
    assert result["error"] == "RestartNeeded", result["out"]
    assert "standin 1.0 -> 2.0" in result["message"] and "Restart the session" in result["message"]
    # After the restart: fakebook is installed, so the cell installs nothing and goes on.
    again = run(site)
    assert again["error"] is None, again["out"]
    assert "fakebook is installed already" in again["out"]


def test_the_cell_goes_on_when_nothing_imported_was_replaced(colab_like):
    run, fresh_site, clone = colab_like
    result = run(fresh_site("site-quiet"))
    assert result["error"] is None, result["out"]
    assert "installed fakebook; pip also installed or upgraded: standin 2.0" in result["out"]
    assert result["cwd"] == str(clone / "lessons")


def test_an_exercises_cell_installs_the_checker_too_and_a_lessons_cell_does_not(colab_like):
    run, fresh_site, clone = colab_like
    lesson = run(fresh_site("site-lesson"))
    assert lesson["error"] is None, lesson["out"]
    assert "fakechecks" not in lesson["out"]
    exercise = run(fresh_site("site-exercise"), folder="exercises")
    assert exercise["error"] is None, exercise["out"]
    assert "installed fakebook" in exercise["out"], exercise["out"]
    assert "installed fakechecks" in exercise["out"], exercise["out"]
    assert exercise["cwd"] == str(clone / "exercises")

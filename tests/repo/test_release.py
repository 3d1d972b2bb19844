"""tools/release.py in a clone of this repository: one commit that pins every launch to its own
tag, the tag on that commit, and refusals that say what to do.

The clone gets the working tree's tools/ first (committed there), so the release code under
test is this tree's. What the release wrote is read back from the files themselves (the
notebooks' text, README, pyproject through tomllib), not through tools/colab.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from tools import release

COLAB_LINK = re.compile(
    r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/([^/]+)/"
)
CLONE_LINE = re.compile(r"git clone -q --depth 1 -b (\S+) https://github\.com/")


def _git(clone, *args):
    return subprocess.run(
        ["git", *args], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()


def _release(clone, *args):
    return subprocess.run(
        [sys.executable, "tools/release.py", *args],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    where = tmp_path_factory.mktemp("release") / "dpkit"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(where)], check=True)
    for name in ("release.py", "colab.py", "make_exercises.py", "nbio.py"):
        shutil.copy(ROOT / "tools" / name, where / "tools" / name)
    _git(where, "add", "tools")
    _git(
        where,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "tools",
        "--allow-empty",
    )
    _git(where, "config", "user.name", "Instructor")
    _git(where, "config", "user.email", "instructor@example.org")
    return where


def _launch_refs(clone) -> dict[str, set[str]]:
    """{notebook: the refs its Colab links and its install cell's clone name}."""
    refs = {}
    for folder in ("lessons", "solutions", "exercises"):
        for path in sorted((clone / folder).glob("*.ipynb")):
            text = path.read_text(encoding="utf-8")
            refs[f"{folder}/{path.name}"] = set(COLAB_LINK.findall(text)) | set(
                CLONE_LINE.findall(text.replace('\\"', '"'))
            )
    return refs


def test_a_release_pins_every_launch_to_its_own_tag_then_unpins(clone):
    assert {r for refs in _launch_refs(clone).values() for r in refs} == {"main"}
    run = _release(clone, "0.9.0")
    assert run.returncode == 0, run.stderr + _git(clone, "status", "--porcelain")
    assert _git(clone, "tag", "--points-at", "HEAD") == "v0.9.0"
    assert _git(clone, "status", "--porcelain") == ""
    pyproject = (clone / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'^version = "([^"]*)"', pyproject, re.M) == ["0.9.0"]
    assert re.findall(r'^ref = "([^"]*)"', pyproject, re.M) == ["v0.9.0"]
    refs = _launch_refs(clone)
    assert len(refs) >= 30 and all(r == {"v0.9.0"} for r in refs.values()), refs
    assert "mybinder.org/v2/gh/dpkit/dpkit/v0.9.0?" in (clone / "README.md").read_text("utf-8")

    with pytest.MonkeyPatch.context() as patch:  # refused before anything is written
        patch.setattr(release, "ROOT", clone)
        with pytest.raises(release.ReleaseError, match="the tag v0.9.0 exists already"):
            release.release("0.9.0", "v0.9.0", tag=True)

    back = _release(clone, "--unpin")
    assert back.returncode == 0, back.stderr
    assert all(r == {"main"} for r in _launch_refs(clone).values())
    assert _git(clone, "tag", "--points-at", "HEAD") == ""


@pytest.mark.parametrize(
    "args, says",
    [
        (["0.9"], "is not a version: write X.Y.Z"),
        ([], "give a version"),
        (["1.0.0", "--unpin"], "not both"),
    ],
)
def test_bad_arguments_are_refused(args, says, capsys):
    assert release.main(args) == 1
    assert says in capsys.readouterr().err


def test_a_dirty_tree_is_refused(clone, monkeypatch):
    monkeypatch.setattr(release, "ROOT", clone)  # refused before anything is written
    (clone / "README.md").write_text("edited\n", encoding="utf-8")
    try:
        with pytest.raises(release.ReleaseError, match="the working tree has changes"):
            release.release("0.9.1", "v0.9.1", tag=True)
        assert _git(clone, "tag", "--list", "v0.9.1") == ""
    finally:
        _git(clone, "checkout", "--", "README.md")
